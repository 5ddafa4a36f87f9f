-- Dead letters can be re-driven by an operator (see the PostgreSQL migration).
ALTER TABLE bus_dead_letters ADD COLUMN redrive_requested_at TEXT;
ALTER TABLE bus_dead_letters ADD COLUMN redriven_at TEXT;
ALTER TABLE bus_dead_letters ADD COLUMN redrive_error TEXT;
