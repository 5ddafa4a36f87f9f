-- Pending turn deadlines, kept by the `tables-projections` consumer from TurnClock events
-- (deleted at GameFinished): what a (re)started replica's timer waits for. A row may be
-- stale (the player has moved since); firing it is a no-op.
CREATE TABLE deadlines (
    table_id    TEXT    PRIMARY KEY NOT NULL,
    deadline_ms INTEGER NOT NULL
);
