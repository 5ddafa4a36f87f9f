-- Where each replica taking part in the leases serves its gRPC API: a replica that gets a
-- call for a table another owns forwards it there (fairdeal_platform::ownership::Routes).
-- Empty for a replica that cannot be reached by the others (it is never forwarded to).
ALTER TABLE lease_owners ADD COLUMN IF NOT EXISTS address TEXT NOT NULL DEFAULT '';
