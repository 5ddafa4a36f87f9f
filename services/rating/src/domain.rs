//! The rating rules of the service (pure): what a game kind is, which finished games are
//! rated, who scores what. The formula itself is crates/rating's (SPEC 6), shared with the
//! auditor and the verifier.
//!
//! - **Game kind**: the game and its deck, `jeu-du-10/dix` (40 cards) or `jeu-du-10/ruff`
//!   (36 cards): each is rated separately, every player starting at 1500. The scoring
//!   variants (penalised aces, made or nothing, trump by purchase) are the same game with
//!   other scales and are rated in their deck's kind.
//! - **Rated games**: only a game four distinct people sat down to. A seat a bot held from
//!   the start leaves the game unrated (a bot has no rating, and a game against bots must
//!   not feed anybody's rating); so does a player on two seats. A game in which any player
//!   has an opponent more than 999 points away is not rated either (crates/rating refuses:
//!   SPEC 6's weight breaks down there), for nobody: a game is rated whole or not at all.
//! - **Scores**: the winning team's players score 1, the others 0; a player who abandoned
//!   their seat (three consecutive timeouts, the bot finished it) scores 0 whatever the
//!   result, while their partner keeps the team's result. A player's opponents are always the
//!   other team's two players, with their ratings before the game.

use std::fmt;

use fairdeal_rating::{KFactor, Opponents, Rating, RatingChange, RatingError, Score, change};
use uuid::Uuid;

/// What a rating belongs to: a game and its deck.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GameKind {
    /// Jeu du 10 with the 40-card `dix` deck.
    JeuDu10Dix,
    /// Jeu du 10 with the 36-card `ruff` deck (Ruff / Deux-Cents).
    JeuDu10Ruff,
}

impl GameKind {
    /// Every kind.
    pub const ALL: [GameKind; 2] = [GameKind::JeuDu10Dix, GameKind::JeuDu10Ruff];

    /// The name in events, tables and requests.
    pub const fn as_str(self) -> &'static str {
        match self {
            GameKind::JeuDu10Dix => "jeu-du-10/dix",
            GameKind::JeuDu10Ruff => "jeu-du-10/ruff",
        }
    }

    /// The kind named `name`, if any.
    pub fn parse(name: &str) -> Option<GameKind> {
        GameKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for GameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who held a seat for the whole game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A person, who may have abandoned the seat to the bot.
    Player {
        /// The player.
        id: Uuid,
        /// Whether they abandoned it.
        abandoned: bool,
    },
    /// The engine's bot, from the start.
    Bot,
}

/// A finished Jeu du 10 game as the rating needs it: seats 0..3, teams {0, 2} and {1, 3}.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedGame {
    /// The table (the game's id).
    pub table_id: Uuid,
    /// The kind rated.
    pub kind: GameKind,
    /// By seat.
    pub seats: [Holder; 4],
    /// The winning team: 0 (seats 0 and 2) or 1 (seats 1 and 3).
    pub winner: u8,
}

/// Why a finished game is not rated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unrated {
    /// A bot held a seat from the start.
    #[error("seat {0} was held by a bot")]
    BotSeat(usize),
    /// One player held two seats.
    #[error("player {0} held two seats")]
    SamePlayerTwice(Uuid),
    /// SPEC 6 cannot rate it (an opponent too far away).
    #[error("{0}")]
    Formula(#[from] RatingError),
}

/// One seat's change.
#[derive(Clone, Debug, PartialEq)]
pub struct SeatChange {
    /// The seat, 0..3.
    pub seat: usize,
    /// Its player.
    pub player: Uuid,
    /// Whether the player abandoned the seat (their score is a loss).
    pub abandoned: bool,
    /// The other team's players, seat after theirs first (the order of `change`'s opponents).
    pub opponents: [Uuid; 2],
    /// The change (crates/rating).
    pub change: RatingChange,
}

/// The seats of a player's opponents: the seat after theirs, then the seat before.
pub const fn opponent_seats(seat: usize) -> [usize; 2] {
    [(seat + 1) % 4, (seat + 3) % 4]
}

impl FinishedGame {
    /// The four players by seat, if the game can be rated at all (four distinct people).
    pub fn players(&self) -> Result<[Uuid; 4], Unrated> {
        let mut players = [Uuid::nil(); 4];
        for (seat, holder) in self.seats.iter().enumerate() {
            match holder {
                Holder::Bot => return Err(Unrated::BotSeat(seat)),
                Holder::Player { id, .. } => {
                    if players[..seat].contains(id) {
                        return Err(Unrated::SamePlayerTwice(*id));
                    }
                    players[seat] = *id;
                }
            }
        }
        Ok(players)
    }

    /// Every seat's change, from the players' ratings in this kind before the game (by
    /// seat): all four, or why the game is not rated.
    pub fn rate(&self, before: [Rating; 4], k: KFactor) -> Result<[SeatChange; 4], Unrated> {
        let players = self.players()?;
        let seat_change = |seat: usize| -> Result<SeatChange, Unrated> {
            let abandoned = matches!(
                self.seats[seat],
                Holder::Player {
                    abandoned: true,
                    ..
                }
            );
            let won = (seat % 2) as u8 == self.winner;
            let score = if won && !abandoned {
                Score::Win
            } else {
                Score::Loss
            };
            let [a, b] = opponent_seats(seat);
            let opponents = Opponents::new(vec![before[a], before[b]])?;
            Ok(SeatChange {
                seat,
                player: players[seat],
                abandoned,
                opponents: [players[a], players[b]],
                change: change(before[seat], opponents, score, k)?,
            })
        };
        Ok([
            seat_change(0)?,
            seat_change(1)?,
            seat_change(2)?,
            seat_change(3)?,
        ])
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use fairdeal_rating::{DEFAULT_K, TeamOutcome, four_seats};
    use proptest::prelude::*;

    fn game(seats: [Holder; 4], winner: u8) -> FinishedGame {
        FinishedGame {
            table_id: Uuid::now_v7(),
            kind: GameKind::JeuDu10Dix,
            seats,
            winner,
        }
    }

    fn people(abandoned: [bool; 4]) -> [Holder; 4] {
        abandoned.map(|abandoned| Holder::Player {
            id: Uuid::now_v7(),
            abandoned,
        })
    }

    fn r(v: f64) -> Rating {
        Rating::new(v).unwrap()
    }

    #[test]
    fn kinds_have_stable_names() {
        for kind in GameKind::ALL {
            assert_eq!(GameKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(GameKind::JeuDu10Dix.to_string(), "jeu-du-10/dix");
        assert_eq!(GameKind::parse("jeu-du-10"), None);
    }

    #[test]
    fn four_new_players_move_sixteen_points() {
        let g = game(people([false; 4]), 1);
        let changes = g.rate([r(1500.0); 4], DEFAULT_K).unwrap();
        let after: Vec<f64> = changes.iter().map(|c| c.change.after().value()).collect();
        assert_eq!(after, vec![1484.0, 1516.0, 1484.0, 1516.0]);
        assert_eq!(
            changes[0].opponents,
            [g.players().unwrap()[1], g.players().unwrap()[3]]
        );
    }

    #[test]
    fn the_service_rates_like_four_seats() {
        let before = [r(1510.0), r(1620.0), r(1480.0), r(1390.0)];
        let mine = game(people([false; 4]), 0).rate(before, DEFAULT_K).unwrap();
        let crate_ = four_seats(before, TeamOutcome::FirstWon, DEFAULT_K).unwrap();
        for (m, c) in mine.iter().zip(crate_.iter()) {
            assert_eq!(
                m.change.after().value().to_bits(),
                c.after().value().to_bits()
            );
        }
    }

    #[test]
    fn an_abandoned_seat_loses_and_its_partner_keeps_the_win() {
        let g = game(people([true, false, false, false]), 0);
        let changes = g.rate([r(1500.0); 4], DEFAULT_K).unwrap();
        assert_eq!(changes[0].change.score(), Score::Loss);
        assert!(changes[0].abandoned);
        assert_eq!(changes[2].change.score(), Score::Win);
        assert_eq!(changes[1].change.score(), Score::Loss);
        assert_eq!(changes[0].change.after().value(), 1484.0);
    }

    #[test]
    fn bots_and_doubled_players_are_not_rated() {
        let mut seats = people([false; 4]);
        seats[2] = Holder::Bot;
        assert_eq!(game(seats, 0).players(), Err(Unrated::BotSeat(2)));
        let mut seats = people([false; 4]);
        seats[3] = seats[1];
        let Holder::Player { id, .. } = seats[1] else {
            unreachable!()
        };
        assert_eq!(
            game(seats, 0).rate([r(1500.0); 4], DEFAULT_K),
            Err(Unrated::SamePlayerTwice(id))
        );
    }

    #[test]
    fn a_gap_too_large_rates_nobody() {
        let g = game(people([false; 4]), 0);
        let err = g
            .rate([r(2600.0), r(1500.0), r(1500.0), r(1500.0)], DEFAULT_K)
            .unwrap_err();
        assert!(matches!(
            err,
            Unrated::Formula(RatingError::GapTooLarge { .. })
        ));
    }

    proptest! {
        /// Whatever the ratings (within SPEC 6's range), winners gain, losers lose, every
        /// change uses the other team as opponents, and E stays in (0, 1).
        #[test]
        fn every_rated_game_is_consistent(
            base in 0.0f64..3000.0,
            offsets in prop::array::uniform4(-400.0f64..400.0),
            winner in 0u8..2,
            abandoned in prop::array::uniform4(any::<bool>()),
        ) {
            let g = game(people(abandoned), winner);
            let before = offsets.map(|d| r(base + d));
            let changes = g.rate(before, DEFAULT_K).unwrap();
            for c in &changes {
                let e = c.change.expectation();
                prop_assert!(e > 0.0 && e < 1.0);
                let mut theirs = c.change.opponents().ratings().to_vec();
                theirs.sort();
                let [a, b] = opponent_seats(c.seat);
                let mut expected = vec![before[a], before[b]];
                expected.sort();
                prop_assert_eq!(theirs, expected);
                let wins = (c.seat % 2) as u8 == winner && !abandoned[c.seat];
                if wins {
                    prop_assert!(c.change.after() > c.change.before());
                } else {
                    prop_assert!(c.change.after() < c.change.before());
                }
            }
        }
    }
}
