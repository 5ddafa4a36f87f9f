-- Projections of the rating service's own `RatingChanged` events, written by the consumer in
-- the transaction that appends the events, and rebuildable from the log (`projection::rebuild`).

-- Each player's current rating per game kind (unrounded, exactly the last event's value).
CREATE TABLE ratings (
    player_id    TEXT             NOT NULL,
    game_kind    TEXT             NOT NULL,
    rating       DOUBLE PRECISION NOT NULL,
    games_played BIGINT           NOT NULL,
    PRIMARY KEY (player_id, game_kind)
);
-- The leaderboard: highest first, ties by player id.
CREATE INDEX ratings_board ON ratings (game_kind, rating DESC, player_id);

-- Every change, keyed by its place in the player's stream `rating-<player uuid>`.
CREATE TABLE rating_history (
    player_id TEXT   NOT NULL,
    version   BIGINT NOT NULL,
    table_id  TEXT   NOT NULL,
    game_kind TEXT   NOT NULL,
    -- The event's payload (fairdeal.rating.v1.RatingChanged) as stored.
    payload   BYTEA  NOT NULL,
    PRIMARY KEY (player_id, version)
);
CREATE INDEX rating_history_by_table ON rating_history (table_id);
