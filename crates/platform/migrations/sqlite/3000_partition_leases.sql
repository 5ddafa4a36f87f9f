-- Partition leases (fairdeal_platform::ownership). The embedded default runs one process,
-- which owns everything: the table exists so both backends hold the same schema, and stays
-- empty.
CREATE TABLE IF NOT EXISTS partition_leases (
    partition INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    expires_at TEXT NOT NULL
);
