-- Wake-ups per stream: the notification of an appending transaction now names each stream it
-- appended to and the stream's new last version, payload '<schema> <stream_id> <version>',
-- one per stream (a live reader of one table wakes for its table only; see fairdeal-bus's
-- `signal`). Still sent at commit only, never for a rollback. Stream ids hold no spaces.
-- Readers also accept the older payload '<schema>' (wake every reader of the schema).
CREATE OR REPLACE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    head RECORD;
BEGIN
    FOR head IN SELECT stream_id, MAX(version) AS version FROM new_events GROUP BY stream_id LOOP
        PERFORM pg_notify('fairdeal_events', TG_TABLE_SCHEMA || ' ' || head.stream_id || ' ' || head.version);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER events_notify ON events;
CREATE TRIGGER events_notify
    AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
