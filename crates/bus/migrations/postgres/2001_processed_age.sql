-- Processed ids are pruned by age (see BusDb::prune_processed): find a consumer's oldest fast.
CREATE INDEX bus_processed_events_age ON bus_processed_events (consumer, processed_at);
