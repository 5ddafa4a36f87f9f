-- The lobby: one row per table not yet started, kept by the `tables-projections` consumer from
-- the tables' own events (a projection: rebuildable from the log).
CREATE TABLE lobby (
    table_id        TEXT    PRIMARY KEY,
    -- Log position of TableCreated: "oldest first".
    position        BIGINT  NOT NULL,
    deck            TEXT    NOT NULL,
    penalised_aces  BIGINT  NOT NULL,
    made_or_nothing BIGINT  NOT NULL,
    -- '', 'points' or 'budget'.
    purchase        TEXT    NOT NULL,
    -- -1: none.
    budget          BIGINT  NOT NULL,
    move_seconds    BIGINT  NOT NULL,
    short_code      TEXT    NOT NULL,
    -- Four characters by seat: 'o' open, 'b' bot, 'p' player.
    seats           TEXT    NOT NULL,
    open_seats      BIGINT  NOT NULL
);
CREATE INDEX lobby_by_position ON lobby (position);
