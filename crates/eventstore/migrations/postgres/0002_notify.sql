-- Wake-ups across processes: every transaction that appends events sends one notification
-- on channel `fairdeal_events` with the schema as payload, delivered when it commits (and
-- never for one that rolls back). Readers in other processes (a second replica's relay, a
-- table's watchers) LISTEN and re-read instead of polling. PostgreSQL folds identical
-- notifications of one transaction into one.
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fairdeal_events', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify
    AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
