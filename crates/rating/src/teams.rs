//! Whole games between two teams: every player's change at once.
//!
//! SPEC 6: "in a team game a player's opponents are the players of the other team". So a
//! player's partners do not enter their expectation, everybody on a team gets the same
//! score, and every change is computed from the ratings everyone had *before* the game
//! (the order in which a service applies the changes cannot matter). A game is rated as a
//! whole: if any player cannot be rated (an opponent more than [`crate::MAX_GAP`] away),
//! the function fails and nobody's rating changes.
//!
//! [`two_teams`] takes teams of any sizes (Tarot's taker and partner against the defence
//! are two teams too); [`four_seats`] is the Jeu du 10 table of SPEC 5, seats 0..3 with
//! teams {0, 2} and {1, 3}.

use crate::elo::{RatingChange, change};
use crate::error::RatingError;
use crate::inputs::{KFactor, Opponents, Rating, Score};

/// How a game between two teams ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TeamOutcome {
    /// The first team won (in [`four_seats`]: seats 0 and 2, team 0 of SPEC 5).
    FirstWon,
    /// The second team won (in [`four_seats`]: seats 1 and 3, team 1).
    SecondWon,
    /// Neither team won: everybody scores 0.5.
    Drawn,
}

impl TeamOutcome {
    /// The first team's score; the second team's is its [`Score::opposite`].
    pub const fn first_team_score(self) -> Score {
        match self {
            TeamOutcome::FirstWon => Score::Win,
            TeamOutcome::SecondWon => Score::Loss,
            TeamOutcome::Drawn => Score::Draw,
        }
    }
}

/// Every player's change in a game between two teams, each team's changes in the order of
/// its players. Each player's opponents are the other team's players, as given.
///
/// Fails if a team is empty ([`RatingError::NoOpponents`]) or if any player has an
/// opponent more than [`crate::MAX_GAP`] away.
pub fn two_teams(
    teams: [&[Rating]; 2],
    outcome: TeamOutcome,
    k: KFactor,
) -> Result<[Vec<RatingChange>; 2], RatingError> {
    let [first, second] = teams;
    let first_score = outcome.first_team_score();
    Ok([
        team_changes(first, second, first_score, k)?,
        team_changes(second, first, first_score.opposite(), k)?,
    ])
}

/// The changes of one team's players against the other team.
fn team_changes(
    team: &[Rating],
    others: &[Rating],
    score: Score,
    k: KFactor,
) -> Result<Vec<RatingChange>, RatingError> {
    if team.is_empty() {
        return Err(RatingError::NoOpponents);
    }
    let opponents = Opponents::new(others.to_vec())?;
    team.iter()
        .map(|&player| change(player, opponents.clone(), score, k))
        .collect()
}

/// Every player's change in a Jeu du 10 match (SPEC 5): `by_seat[s]` is the rating of
/// the player on seat `s` before the match; teams are seats {0, 2} (first) and {1, 3}
/// (second). The changes come back by seat; each player's opponents are the two players
/// of the other team, the seat after theirs first.
pub fn four_seats(
    by_seat: [Rating; 4],
    outcome: TeamOutcome,
    k: KFactor,
) -> Result<[RatingChange; 4], RatingError> {
    let first_score = outcome.first_team_score();
    let seat = |s: usize| {
        let score = if s.is_multiple_of(2) {
            first_score
        } else {
            first_score.opposite()
        };
        let opponents = Opponents::new(vec![by_seat[(s + 1) % 4], by_seat[(s + 3) % 4]])?;
        change(by_seat[s], opponents, score, k)
    };
    Ok([seat(0)?, seat(1)?, seat(2)?, seat(3)?])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::DEFAULT_K;
    use proptest::prelude::*;

    fn r(v: f64) -> Rating {
        Rating::new(v).unwrap()
    }

    fn seats(ratings: [f64; 4]) -> [Rating; 4] {
        ratings.map(r)
    }

    #[test]
    fn four_equal_players() {
        // Each player against two 1500s: x = 1 twice, w = 1, mean = (1 + 1) / 2 = 1,
        // E = 1 / (1 + 1) = 0.5. Winners: 1500 + 32 * 0.5 = 1516; losers 1484.
        let changes = four_seats(seats([1500.0; 4]), TeamOutcome::FirstWon, DEFAULT_K).unwrap();
        let after: Vec<f64> = changes.iter().map(|c| c.after().value()).collect();
        assert_eq!(after, vec![1516.0, 1484.0, 1516.0, 1484.0]);
        assert!(changes.iter().all(|c| c.expectation() == 0.5));
        let drawn = four_seats(seats([1500.0; 4]), TeamOutcome::Drawn, DEFAULT_K).unwrap();
        assert!(drawn.iter().all(|c| c.after().value() == 1500.0));
        let second = four_seats(seats([1500.0; 4]), TeamOutcome::SecondWon, DEFAULT_K).unwrap();
        assert_eq!(second[1].after().value(), 1516.0);
        assert_eq!(second[0].score(), Score::Loss);
    }

    #[test]
    fn opponents_are_the_other_team_before_the_match() {
        let by_seat = seats([1510.0, 1620.0, 1480.0, 1390.0]);
        let changes = four_seats(by_seat, TeamOutcome::SecondWon, DEFAULT_K).unwrap();
        for (s, c) in changes.iter().enumerate() {
            assert_eq!(c.before(), by_seat[s]);
            let mut theirs = c.opponents().ratings().to_vec();
            theirs.sort();
            let mut expected = vec![by_seat[(s + 1) % 4], by_seat[(s + 3) % 4]];
            expected.sort();
            assert_eq!(theirs, expected, "seat {s}");
            let won = s % 2 == 1;
            assert_eq!(c.score(), if won { Score::Win } else { Score::Loss });
            // The same as rating the player alone against the other team.
            let alone = change(by_seat[s], c.opponents().clone(), c.score(), DEFAULT_K).unwrap();
            assert_eq!(&alone, c);
        }
        // Seat 0 (1510) against 1620 and 1390: e = -110 -> w = 1.11, e = 120 -> w = 0.88.
        assert_eq!(changes[0].weights(), vec![1.11, 0.88]);
    }

    #[test]
    fn two_teams_matches_four_seats() {
        let by_seat = seats([1700.0, 1450.0, 1525.5, 1602.25]);
        let [first, second] = two_teams(
            [&[by_seat[0], by_seat[2]], &[by_seat[1], by_seat[3]]],
            TeamOutcome::FirstWon,
            DEFAULT_K,
        )
        .unwrap();
        let seated = four_seats(by_seat, TeamOutcome::FirstWon, DEFAULT_K).unwrap();
        for (team_change, seat) in first.iter().zip([0, 2]).chain(second.iter().zip([1, 3])) {
            assert_eq!(team_change.after(), seated[seat].after(), "seat {seat}");
            assert_eq!(team_change.expectation(), seated[seat].expectation());
        }
    }

    #[test]
    fn uneven_teams_and_empty_teams() {
        // Tarot with five: taker and partner against three defenders.
        let [attack, defence] = two_teams(
            [&[r(1500.0), r(1500.0)], &[r(1500.0), r(1500.0), r(1500.0)]],
            TeamOutcome::SecondWon,
            DEFAULT_K,
        )
        .unwrap();
        assert_eq!((attack.len(), defence.len()), (2, 3));
        assert!(attack.iter().all(|c| c.after().value() == 1484.0));
        assert!(defence.iter().all(|c| c.opponents().count() == 2));
        for teams in [[&[][..], &[r(1500.0)][..]], [&[r(1500.0)][..], &[][..]]] {
            assert_eq!(
                two_teams(teams, TeamOutcome::Drawn, DEFAULT_K).unwrap_err(),
                RatingError::NoOpponents
            );
        }
    }

    #[test]
    fn a_game_with_a_gap_too_large_is_not_rated_at_all() {
        // Seat 2 is 1000 points above seat 3: nobody's rating changes.
        let by_seat = seats([1500.0, 1500.0, 2500.0, 1500.0]);
        let err = four_seats(by_seat, TeamOutcome::FirstWon, DEFAULT_K).unwrap_err();
        assert!(matches!(err, RatingError::GapTooLarge { .. }), "{err}");
        // Partners may be any distance apart: only opponents count.
        let by_seat = seats([2400.0, 1900.0, 1400.0, 1900.0]);
        assert!(four_seats(by_seat, TeamOutcome::FirstWon, DEFAULT_K).is_ok());
    }

    proptest! {
        /// With everyone at the same rating the game is zero-sum, whatever the rating.
        #[test]
        fn equal_ratings_are_zero_sum(rating in -3_000.0f64..6_000.0, first_won in any::<bool>()) {
            let outcome = if first_won { TeamOutcome::FirstWon } else { TeamOutcome::SecondWon };
            let changes = four_seats(seats([rating; 4]), outcome, DEFAULT_K).unwrap();
            let total: f64 = changes.iter().map(|c| c.after().value() - rating).sum();
            prop_assert!(total.abs() <= 1e-9, "{}", total);
        }

        /// Winners never lose points and losers never gain, whatever the seating.
        #[test]
        fn winners_gain_and_losers_lose(
            base in 0.0f64..3_000.0,
            offsets in prop::array::uniform4(-499.0f64..499.0),
            first_won in any::<bool>(),
        ) {
            let by_seat = seats(offsets.map(|d| base + d));
            let outcome = if first_won { TeamOutcome::FirstWon } else { TeamOutcome::SecondWon };
            let changes = four_seats(by_seat, outcome, DEFAULT_K).unwrap();
            for (s, c) in changes.iter().enumerate() {
                if s.is_multiple_of(2) == first_won {
                    prop_assert!(c.after() > c.before());
                } else {
                    prop_assert!(c.after() < c.before());
                }
            }
        }
    }
}
