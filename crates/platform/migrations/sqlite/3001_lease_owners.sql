-- The replicas taking part in the partition leases (fairdeal_platform::ownership). Empty on
-- the embedded default, like partition_leases.
CREATE TABLE IF NOT EXISTS lease_owners (
    owner TEXT PRIMARY KEY,
    expires_at TEXT NOT NULL
);
