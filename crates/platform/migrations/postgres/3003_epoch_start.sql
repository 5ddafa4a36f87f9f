-- Where each lease's epoch starts in the service's event store: the position of the last
-- event committed when the lease was taken (fairdeal_platform::ownership::Keeper records it
-- after the takeover committed, before the new owner decides anything). Every event of the
-- partition at or below it was written under an earlier epoch, every later one under this
-- one; NULL until recorded. A projection that reaches an event the owner cannot have seen
-- (at or below it) wakes the owner (fairdeal_platform::ownership::Wake).
ALTER TABLE partition_leases ADD COLUMN IF NOT EXISTS since_position BIGINT;
