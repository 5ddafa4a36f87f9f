-- fairdeal-bus tables (PostgreSQL). Versions 2000-2999 belong to the bus; they are tracked in
-- their own table `_fairdeal_bus_migrations` so they never clash with the event store's migrator.

-- Outbox relays: the last global position whose publish JetStream acknowledged.
CREATE TABLE bus_relay_checkpoints (
    relay      TEXT        PRIMARY KEY,
    position   BIGINT      NOT NULL CHECK (position >= 0),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Consumers: the last position (JetStream stream sequence, or global position for the embedded
-- bus) settled by the consumer, written in the same transaction as the handler's effects.
CREATE TABLE bus_consumer_positions (
    consumer   TEXT        PRIMARY KEY,
    position   BIGINT      NOT NULL CHECK (position >= 0),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Events settled (applied or dead-lettered) by each consumer, written in the same transaction as
-- the handler's effects: a redelivered event whose id is here is acknowledged without re-applying.
CREATE TABLE bus_processed_events (
    consumer     TEXT        NOT NULL,
    event_id     UUID        NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

-- Poison events a consumer gave up on, with the reason, for operators to inspect and replay.
CREATE TABLE bus_dead_letters (
    id               BIGSERIAL   PRIMARY KEY,
    consumer         TEXT        NOT NULL,
    position         BIGINT      NOT NULL,
    event_id         UUID,
    stream_id        TEXT,
    event_type       TEXT,
    attempts         INTEGER     NOT NULL,
    reason           TEXT        NOT NULL,
    payload          BYTEA       NOT NULL,
    dead_lettered_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (consumer, position)
);
