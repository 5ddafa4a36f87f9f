-- The appending statements of PgEventStore now do what two triggers did, for a tenth of the
-- server's time per appended event (a PL/pgSQL call per row, and a transition table copied
-- for every statement):
--
-- - `tx_id` is the inserting transaction's id by default. The store's INSERT leaves the
--   column to the default, and computes each position from the same pg_current_xact_id();
--   events_position_tx_check still ties the two on every row.
-- - Each appending statement sends the per-stream notifications itself (payload
--   '<schema> <stream_id> <version>', at commit, never for a rollback), as 0003's trigger did.
--
-- An INSERT from outside the store (never done by fairdeal) would now have to supply a
-- position matching its transaction and send no notification; readers still verify every
-- event's fields and hashes. During a rolling upgrade an older binary's INSERT (which omits
-- tx_id) still gets the stamp from the default; its appends wake other processes at their
-- next poll instead of at once, until it is replaced.
ALTER TABLE events ALTER COLUMN tx_id SET DEFAULT pg_current_xact_id();

DROP TRIGGER events_stamp_tx ON events;
DROP FUNCTION events_stamp_tx();

DROP TRIGGER events_notify ON events;
DROP FUNCTION events_notify();
