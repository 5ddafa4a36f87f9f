//! The rating rules of the service (pure): what a game kind is, which finished games are
//! rated, who scores what. The formula itself is crates/rating's (SPEC 6), shared with the
//! auditor and the verifier.
//!
//! - **Game kind**: the game and its deck, `jeu-du-10/dix` (40 cards) or `jeu-du-10/ruff`
//!   (36 cards): each is rated separately, every player starting at 1500. The scoring
//!   variants (penalised aces, made or nothing, trump by purchase) are the same game with
//!   other scales and are rated in their deck's kind. French Tarot is rated by its number
//!   of seats, `tarot/3`, `tarot/4` and `tarot/5`: three different games (the hands, the
//!   chien and, at five, the called king's hidden partnership differ), as the two decks
//!   are; the number of rounds only lengthens the match and is rated in the seats' kind.
//! - **Rated games**: only a game distinct people sat down to on every seat (four for Jeu
//!   du 10, three to five for Tarot). A seat a bot held from
//!   the start leaves the game unrated (a bot has no rating, and a game against bots must
//!   not feed anybody's rating); so does a player on two seats. A game in which any player
//!   has an opponent more than 999 points away is not rated either (crates/rating refuses:
//!   SPEC 6's weight breaks down there), for nobody: a game is rated whole or not at all.
//! - **Scores**: the winning team's players score 1, the others 0; a player who abandoned
//!   their seat (three consecutive timeouts, the bot finished it) scores 0 whatever the
//!   result, while their partner keeps the team's result. A player's opponents are always the
//!   other team's two players, with their ratings before the game.
//! - **Tarot** (every seat its own side, placed by its final score, equal scores sharing a
//!   placing): a player's opponents are all the other players, and their score is the mean
//!   of their results against each (1 above, 0.5 level, 0 below: crates/rating's
//!   `placings`), so the first scores 1 and the last 0. A player who abandoned their seat
//!   scores 0 whatever their placing, as in Jeu du 10; the others keep the score of their
//!   placings (against the abandoned seat's final score too).

use std::fmt;

use fairdeal_rating::placings::opponent_seats as tarot_opponent_seats;
use fairdeal_rating::{
    KFactor, Opponents, Placing, Rating, RatingChange, RatingError, Score, change, placing_score,
};
use uuid::Uuid;

/// What a rating belongs to: a game and its deck.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GameKind {
    /// Jeu du 10 with the 40-card `dix` deck.
    JeuDu10Dix,
    /// Jeu du 10 with the 36-card `ruff` deck (Ruff / Deux-Cents).
    JeuDu10Ruff,
    /// French Tarot with three players.
    Tarot3,
    /// French Tarot with four players.
    Tarot4,
    /// French Tarot with five players (the taker calls a king).
    Tarot5,
}

impl GameKind {
    /// Every kind.
    pub const ALL: [GameKind; 5] = [
        GameKind::JeuDu10Dix,
        GameKind::JeuDu10Ruff,
        GameKind::Tarot3,
        GameKind::Tarot4,
        GameKind::Tarot5,
    ];

    /// The name in events, tables and requests.
    pub const fn as_str(self) -> &'static str {
        match self {
            GameKind::JeuDu10Dix => "jeu-du-10/dix",
            GameKind::JeuDu10Ruff => "jeu-du-10/ruff",
            GameKind::Tarot3 => "tarot/3",
            GameKind::Tarot4 => "tarot/4",
            GameKind::Tarot5 => "tarot/5",
        }
    }

    /// The Tarot kind of a table of `seats` seats (3, 4 or 5), if any.
    pub const fn tarot(seats: usize) -> Option<GameKind> {
        match seats {
            3 => Some(GameKind::Tarot3),
            4 => Some(GameKind::Tarot4),
            5 => Some(GameKind::Tarot5),
            _ => None,
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
    /// The caller gave a rating per seat for another number of seats (a bug, not a game).
    #[error("{ratings} ratings for {seats} seats")]
    Ratings {
        /// The game's seats.
        seats: usize,
        /// The ratings given.
        ratings: usize,
    },
}

/// One seat's change.
#[derive(Clone, Debug, PartialEq)]
pub struct SeatChange {
    /// The seat, from 0.
    pub seat: usize,
    /// Its player.
    pub player: Uuid,
    /// Whether the player abandoned the seat (their score is a loss).
    pub abandoned: bool,
    /// The player's opponents, seat after theirs first (the order of `change`'s
    /// opponents): the other team's two players in Jeu du 10, every other player clockwise
    /// in Tarot.
    pub opponents: Vec<Uuid>,
    /// The change (crates/rating).
    pub change: RatingChange,
}

/// The seats of a player's opponents: the seat after theirs, then the seat before.
pub const fn opponent_seats(seat: usize) -> [usize; 2] {
    [(seat + 1) % 4, (seat + 3) % 4]
}

/// The players by seat, if every seat was held by a distinct person.
fn people(seats: &[Holder]) -> Result<Vec<Uuid>, Unrated> {
    let mut players: Vec<Uuid> = Vec::with_capacity(seats.len());
    for (seat, holder) in seats.iter().enumerate() {
        match holder {
            Holder::Bot => return Err(Unrated::BotSeat(seat)),
            Holder::Player { id, .. } => {
                if players.contains(id) {
                    return Err(Unrated::SamePlayerTwice(*id));
                }
                players.push(*id);
            }
        }
    }
    Ok(players)
}

/// Whether the seat's player abandoned it.
fn abandoned(holder: Holder) -> bool {
    matches!(
        holder,
        Holder::Player {
            abandoned: true,
            ..
        }
    )
}

impl FinishedGame {
    /// The four players by seat, if the game can be rated at all (four distinct people).
    pub fn players(&self) -> Result<[Uuid; 4], Unrated> {
        let players = people(&self.seats)?;
        let mut by_seat = [Uuid::nil(); 4];
        by_seat.copy_from_slice(&players);
        Ok(by_seat)
    }

    /// Every seat's change, from the players' ratings in this kind before the game (by
    /// seat): all four, or why the game is not rated.
    pub fn rate(&self, before: [Rating; 4], k: KFactor) -> Result<[SeatChange; 4], Unrated> {
        let players = self.players()?;
        let seat_change = |seat: usize| -> Result<SeatChange, Unrated> {
            let abandoned = abandoned(self.seats[seat]);
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
                opponents: vec![players[a], players[b]],
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

/// A finished French Tarot game as the rating needs it: every seat its own side, placed by
/// its final score (the higher first, equal scores sharing a placing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TarotGame {
    /// The table (the game's id).
    pub table_id: Uuid,
    /// The kind rated: `tarot/<seats>`.
    pub kind: GameKind,
    /// By seat (3, 4 or 5 of them).
    pub seats: Vec<Holder>,
    /// Each seat's final score, by seat.
    pub scores: Vec<i32>,
}

impl TarotGame {
    /// The players by seat, if the game can be rated at all (distinct people on every seat).
    pub fn players(&self) -> Result<Vec<Uuid>, Unrated> {
        people(&self.seats)
    }

    /// Each seat's placing: 1 plus the number of seats with a higher final score.
    pub fn placings(&self) -> Vec<Placing> {
        self.scores
            .iter()
            .map(|mine| {
                let above = self.scores.iter().filter(|other| *other > mine).count();
                // At most 4 seats above: the conversion cannot fail.
                1 + u32::try_from(above).unwrap_or(u32::MAX - 1)
            })
            .collect()
    }

    /// Every seat's change, from the players' ratings in this kind before the game (by
    /// seat): all of them, or why the game is not rated.
    pub fn rate(&self, before: &[Rating], k: KFactor) -> Result<Vec<SeatChange>, Unrated> {
        let players = self.players()?;
        let seats = players.len();
        if before.len() != seats {
            return Err(Unrated::Ratings {
                seats,
                ratings: before.len(),
            });
        }
        let placings = self.placings();
        (0..seats)
            .map(|seat| {
                let abandoned = abandoned(self.seats[seat]);
                let others = tarot_opponent_seats(seat, seats);
                let score = if abandoned {
                    Score::Loss
                } else {
                    placing_score(placings[seat], others.clone().map(|s| placings[s]))?
                };
                let opponents = Opponents::new(others.clone().map(|s| before[s]).collect())?;
                Ok(SeatChange {
                    seat,
                    player: players[seat],
                    abandoned,
                    opponents: others.map(|s| players[s]).collect(),
                    change: change(before[seat], opponents, score, k)?,
                })
            })
            .collect()
    }
}

/// A finished game of either shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Jeu du 10: two teams of two.
    JeuDu10(FinishedGame),
    /// French Tarot: every seat its own side.
    Tarot(TarotGame),
}

impl Finished {
    /// The table (the game's id).
    pub fn table_id(&self) -> Uuid {
        match self {
            Finished::JeuDu10(game) => game.table_id,
            Finished::Tarot(game) => game.table_id,
        }
    }

    /// The kind rated.
    pub fn kind(&self) -> GameKind {
        match self {
            Finished::JeuDu10(game) => game.kind,
            Finished::Tarot(game) => game.kind,
        }
    }

    /// The players by seat, if the game can be rated at all.
    pub fn players(&self) -> Result<Vec<Uuid>, Unrated> {
        match self {
            Finished::JeuDu10(game) => game.players().map(Vec::from),
            Finished::Tarot(game) => game.players(),
        }
    }

    /// Every seat's change from the players' ratings before the game (by seat, one per
    /// seat), or why the game is not rated.
    pub fn rate(&self, before: &[Rating], k: KFactor) -> Result<Vec<SeatChange>, Unrated> {
        match self {
            Finished::JeuDu10(game) => {
                let before: [Rating; 4] = before.try_into().map_err(|_| Unrated::Ratings {
                    seats: 4,
                    ratings: before.len(),
                })?;
                game.rate(before, k).map(Vec::from)
            }
            Finished::Tarot(game) => game.rate(before, k),
        }
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

    fn tarot(seats: Vec<Holder>, scores: Vec<i32>) -> TarotGame {
        TarotGame {
            table_id: Uuid::now_v7(),
            kind: GameKind::tarot(seats.len()).unwrap(),
            seats,
            scores,
        }
    }

    fn tarot_people(n: usize) -> Vec<Holder> {
        (0..n)
            .map(|_| Holder::Player {
                id: Uuid::now_v7(),
                abandoned: false,
            })
            .collect()
    }

    #[test]
    fn tarot_kinds_are_by_seats() {
        assert_eq!(GameKind::tarot(3), Some(GameKind::Tarot3));
        assert_eq!(GameKind::tarot(5).unwrap().as_str(), "tarot/5");
        assert_eq!(GameKind::parse("tarot/4"), Some(GameKind::Tarot4));
        assert_eq!(GameKind::tarot(2), None);
        assert_eq!(GameKind::tarot(6), None);
        assert_eq!(GameKind::parse("tarot"), None);
    }

    #[test]
    fn tarot_placings_follow_the_final_scores() {
        let g = tarot(tarot_people(5), vec![120, -300, 120, 0, 60]);
        assert_eq!(g.placings(), vec![1, 5, 1, 4, 3]);
        let changes = g.rate(&[r(1500.0); 5], DEFAULT_K).unwrap();
        // Two level first: (3 + 0.5) / 4 = 7/8; third: 2/4 = 0.5; fourth 1/4; last 0.
        let scores: Vec<f64> = changes.iter().map(|c| c.change.score().value()).collect();
        assert_eq!(scores, vec![0.875, 0.0, 0.875, 0.25, 0.5]);
        let after: Vec<f64> = changes.iter().map(|c| c.change.after().value()).collect();
        assert_eq!(after, vec![1512.0, 1484.0, 1512.0, 1492.0, 1500.0]);
        // Opponents: every other seat, clockwise from the next.
        let players = g.players().unwrap();
        assert_eq!(
            changes[3].opponents,
            vec![players[4], players[0], players[1], players[2]]
        );
        assert!(changes.iter().all(|c| c.change.opponents().count() == 4));
    }

    #[test]
    fn tarot_rates_like_the_crate() {
        let before = [r(1510.0), r(1620.0), r(1480.0), r(1390.0)];
        let g = tarot(tarot_people(4), vec![-20, 340, -160, -160]);
        let mine = g.rate(&before, DEFAULT_K).unwrap();
        let by_seat: Vec<(Rating, Placing)> = before.iter().copied().zip(g.placings()).collect();
        let crate_ = fairdeal_rating::each_alone(&by_seat, DEFAULT_K).unwrap();
        for (m, c) in mine.iter().zip(crate_.iter()) {
            assert_eq!(&m.change, c);
        }
        assert_eq!(mine[1].change.score(), Score::Win);
    }

    #[test]
    fn an_abandoned_tarot_seat_loses_and_the_others_keep_their_placings() {
        let mut seats = tarot_people(3);
        let Holder::Player { id, .. } = seats[0] else {
            unreachable!()
        };
        seats[0] = Holder::Player {
            id,
            abandoned: true,
        };
        // Seat 0 finished first but abandoned: a loss; seats 1 and 2 score against seat
        // 0's final score as placed.
        let g = tarot(seats, vec![200, 100, -300]);
        let changes = g.rate(&[r(1500.0); 3], DEFAULT_K).unwrap();
        assert!(changes[0].abandoned);
        assert_eq!(changes[0].change.score(), Score::Loss);
        assert_eq!(changes[1].change.score(), Score::Draw);
        assert_eq!(changes[2].change.score(), Score::Loss);
    }

    #[test]
    fn tarot_bots_doubled_players_and_gaps_are_not_rated() {
        let mut seats = tarot_people(4);
        seats[3] = Holder::Bot;
        let g = tarot(seats, vec![0; 4]);
        assert_eq!(g.players(), Err(Unrated::BotSeat(3)));
        assert_eq!(
            Finished::Tarot(g).rate(&[r(1500.0); 4], DEFAULT_K),
            Err(Unrated::BotSeat(3))
        );
        let mut seats = tarot_people(3);
        seats[2] = seats[0];
        let Holder::Player { id, .. } = seats[0] else {
            unreachable!()
        };
        assert_eq!(
            tarot(seats, vec![0; 3]).players(),
            Err(Unrated::SamePlayerTwice(id))
        );
        let g = tarot(tarot_people(3), vec![1, 2, 3]);
        let err = g
            .rate(&[r(2600.0), r(1500.0), r(1500.0)], DEFAULT_K)
            .unwrap_err();
        assert!(matches!(
            err,
            Unrated::Formula(RatingError::GapTooLarge { .. })
        ));
        assert_eq!(
            g.rate(&[r(1500.0); 4], DEFAULT_K),
            Err(Unrated::Ratings {
                seats: 3,
                ratings: 4
            })
        );
    }

    #[test]
    fn either_shape_rates_through_finished() {
        let jeu = game(people([false; 4]), 1);
        let both = Finished::JeuDu10(jeu.clone());
        assert_eq!((both.table_id(), both.kind()), (jeu.table_id, jeu.kind));
        assert_eq!(
            both.rate(&[r(1500.0); 4], DEFAULT_K).unwrap(),
            Vec::from(jeu.rate([r(1500.0); 4], DEFAULT_K).unwrap())
        );
        assert_eq!(
            both.rate(&[r(1500.0); 3], DEFAULT_K),
            Err(Unrated::Ratings {
                seats: 4,
                ratings: 3
            })
        );
        let t = tarot(tarot_people(3), vec![5, 4, 3]);
        assert_eq!(Finished::Tarot(t.clone()).kind(), GameKind::Tarot3);
        assert_eq!(Finished::Tarot(t.clone()).players(), t.players());
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
