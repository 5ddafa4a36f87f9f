-- Partition leases (fairdeal_platform::ownership): which replica owns each partition of a
-- service's aggregates, until when (the database's clock), and the lease's epoch, the
-- fencing token a takeover raises.
CREATE TABLE IF NOT EXISTS partition_leases (
    partition INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
