-- Where each lease's epoch starts in the event store (see the PostgreSQL migration). The
-- embedded default holds no leases: the column exists so both backends hold the same schema.
ALTER TABLE partition_leases ADD COLUMN since_position INTEGER;
