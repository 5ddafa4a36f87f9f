-- Projections of the rating service's own `RatingChanged` events, written by the consumer in
-- the transaction that appends the events, and rebuildable from the log (`projection::rebuild`).

-- Each player's current rating per game kind (unrounded: REAL is an IEEE 754 double).
CREATE TABLE ratings (
    player_id    TEXT    NOT NULL,
    game_kind    TEXT    NOT NULL,
    rating       REAL    NOT NULL,
    games_played INTEGER NOT NULL,
    PRIMARY KEY (player_id, game_kind)
);
-- The leaderboard: highest first, ties by player id.
CREATE INDEX ratings_board ON ratings (game_kind, rating DESC, player_id);

-- Every change, keyed by its place in the player's stream `rating-<player uuid>`.
CREATE TABLE rating_history (
    player_id TEXT    NOT NULL,
    version   INTEGER NOT NULL,
    table_id  TEXT    NOT NULL,
    game_kind TEXT    NOT NULL,
    -- The event's payload (fairdeal.rating.v1.RatingChanged) as stored.
    payload   BLOB    NOT NULL,
    PRIMARY KEY (player_id, version)
);
CREATE INDEX rating_history_by_table ON rating_history (table_id);
