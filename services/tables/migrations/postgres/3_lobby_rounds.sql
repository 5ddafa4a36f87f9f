-- A French Tarot table's rounds (its match is seats x rounds deals); 0 for Jeu du 10, whose
-- options are the other columns. A Tarot table's deck is tarot3, tarot4 or tarot5.
ALTER TABLE lobby ADD COLUMN rounds BIGINT NOT NULL DEFAULT 0;
