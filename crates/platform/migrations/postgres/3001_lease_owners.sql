-- The replicas taking part in the partition leases (fairdeal_platform::ownership::Keeper),
-- each until its heartbeat expires: what a fair share is counted over, so that a replica
-- holding nothing yet is counted and handed partitions.
CREATE TABLE IF NOT EXISTS lease_owners (
    owner TEXT PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);
