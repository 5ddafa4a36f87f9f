-- Dead letters can be re-driven by an operator (`fairdeal-admin dead-letters redrive`): the
-- request is stamped here, the consumer applies the letter again through its handler and
-- stamps the outcome (in the same transaction as the handler's effects when it succeeds).
ALTER TABLE bus_dead_letters ADD COLUMN redrive_requested_at TIMESTAMPTZ;
ALTER TABLE bus_dead_letters ADD COLUMN redriven_at TIMESTAMPTZ;
ALTER TABLE bus_dead_letters ADD COLUMN redrive_error TEXT;
