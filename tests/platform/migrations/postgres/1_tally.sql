-- The tally projection: total and event count per tally.
CREATE TABLE tally_totals (
    tally_id TEXT   PRIMARY KEY,
    total    BIGINT NOT NULL,
    events   BIGINT NOT NULL
);
