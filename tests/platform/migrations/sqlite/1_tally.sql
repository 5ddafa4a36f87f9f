-- The tally projection: total and event count per tally.
CREATE TABLE tally_totals (
    tally_id TEXT    PRIMARY KEY NOT NULL,
    total    INTEGER NOT NULL,
    events   INTEGER NOT NULL
);
