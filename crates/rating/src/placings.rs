//! Whole games where every player is their own side, placed by the game (French Tarot's
//! 3, 4 or 5 seats, each placed by cumulative score, equal scores sharing a placing).
//!
//! SPEC 6's several-opponent form, read for such games:
//!
//! - A player's opponents are **all the other players** (`J = players - 1`), with their
//!   ratings before the game, so the weights `w(n, m)` apply (from two opponents on) as in
//!   any several-opponent game.
//! - `S(n)` is **the mean of the player's results against each opponent**: 1 for an
//!   opponent placed below them, 0.5 for one placed level, 0 for one placed above
//!   ([`Score::placed`]). The first scores 1, the last 0, the others in between (at four
//!   players without ties: 1, 2/3, 1/3, 0). With equal ratings every `E(n)` is 0.5 and the
//!   scores sum to `players / 2`, so the changes sum to zero: the game moves points between
//!   its players and creates none. Scoring 1 for the winner alone and 0 for everyone else
//!   would make the scores sum to 1 against expectations summing to `players / 2`: every
//!   game would take `K * (players / 2 - 1)` points out of the pool (16 at 4 players), and
//!   every rating would sink.
//!
//! As in [`crate::teams`], every change comes from the ratings everybody had before the
//! game, and a game is rated whole: if any player has an opponent more than
//! [`crate::MAX_GAP`] away, [`each_alone`] fails and nobody's rating changes. The numbers
//! are SPEC 6's evaluation order exactly (the crate docs); the score is one more exact
//! value, `half points / (2 * J)` in one correctly rounded division.

use crate::elo::{RatingChange, change};
use crate::error::RatingError;
use crate::inputs::{KFactor, Opponents, Rating, Score};

/// A placing in a game: 1 is first; players placed level share a placing.
pub type Placing = u32;

/// `S(n)` of a player placed `mine` against opponents placed `others`: the mean of 1 per
/// opponent placed below (a larger placing), 0.5 per opponent level, 0 per opponent above.
///
/// Fails without opponents ([`RatingError::NoOpponents`]).
pub fn placing_score(
    mine: Placing,
    others: impl IntoIterator<Item = Placing>,
) -> Result<Score, RatingError> {
    let (mut wins, mut draws, mut losses) = (0u32, 0u32, 0u32);
    for other in others {
        let tally = match mine.cmp(&other) {
            std::cmp::Ordering::Less => &mut wins,
            std::cmp::Ordering::Equal => &mut draws,
            std::cmp::Ordering::Greater => &mut losses,
        };
        *tally = tally.saturating_add(1);
    }
    Score::placed(wins, draws, losses)
}

/// The seats of a player's opponents at a table of `seats` seats where each seat is its
/// own side: every other seat, clockwise from the seat after theirs.
pub fn opponent_seats(seat: usize, seats: usize) -> impl Iterator<Item = usize> + Clone {
    (1..seats).map(move |offset| (seat + offset) % seats)
}

/// Every player's change in a game where each player is their own side: `by_seat[s]` is
/// the rating before the game and the placing of the player on seat `s`. The changes come
/// back by seat; each player's opponents are all the other players, clockwise from the
/// seat after theirs ([`opponent_seats`]), and their score is [`placing_score`].
///
/// Fails with fewer than two players ([`RatingError::NoOpponents`]) or if any player has
/// an opponent more than [`crate::MAX_GAP`] away.
pub fn each_alone(
    by_seat: &[(Rating, Placing)],
    k: KFactor,
) -> Result<Vec<RatingChange>, RatingError> {
    let seats = by_seat.len();
    if seats < 2 {
        return Err(RatingError::NoOpponents);
    }
    by_seat
        .iter()
        .enumerate()
        .map(|(seat, &(rating, placing))| {
            let others = opponent_seats(seat, seats).map(|s| by_seat[s]);
            let score = placing_score(placing, others.clone().map(|(_, p)| p))?;
            let opponents = Opponents::new(others.map(|(r, _)| r).collect())?;
            change(rating, opponents, score, k)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::{DEFAULT_K, TeamOutcome, four_seats};
    use proptest::prelude::*;

    fn r(v: f64) -> Rating {
        Rating::new(v).unwrap()
    }

    fn game(ratings: &[f64], placings: &[Placing]) -> Vec<RatingChange> {
        let by_seat: Vec<(Rating, Placing)> = ratings
            .iter()
            .zip(placings)
            .map(|(&v, &p)| (r(v), p))
            .collect();
        each_alone(&by_seat, DEFAULT_K).unwrap()
    }

    fn after(changes: &[RatingChange]) -> Vec<f64> {
        changes.iter().map(|c| c.after().value()).collect()
    }

    /// `|got - expected| <= 1e-12`: the hand values below are exact to 16 digits.
    fn close(got: f64, expected: f64) {
        assert!((got - expected).abs() <= 1e-12, "{got} vs {expected}");
    }

    fn mean(numerator: u64, denominator: u64) -> Score {
        let Score::Mean(m) =
            Score::recorded(numerator as f64 / denominator as f64, denominator as usize).unwrap()
        else {
            panic!("{numerator}/{denominator} is not a mean")
        };
        assert_eq!((m.numerator(), m.denominator()), (numerator, denominator));
        Score::Mean(m)
    }

    #[test]
    fn scores_are_the_mean_of_the_results_against_each_opponent() {
        assert_eq!(placing_score(1, [2, 3]), Ok(Score::Win));
        assert_eq!(placing_score(3, [1, 2]), Ok(Score::Loss));
        assert_eq!(placing_score(2, [1, 3]), Ok(Score::Draw));
        assert_eq!(placing_score(1, [1, 1]), Ok(Score::Draw));
        // Four players: 2/3 and 1/3, in lowest terms whatever the counts.
        assert_eq!(placing_score(2, [1, 3, 4]), Ok(mean(2, 3)));
        assert_eq!(placing_score(3, [1, 2, 4]), Ok(mean(1, 3)));
        assert_eq!(Score::placed(4, 0, 2), Ok(mean(2, 3)));
        // Five with ties: (3 + 0.5) / 4 = 7/8 and 0.5 / 4 = 1/8.
        assert_eq!(placing_score(1, [1, 3, 4, 4]), Ok(mean(7, 8)));
        assert_eq!(placing_score(4, [1, 1, 3, 4]), Ok(mean(1, 8)));
        assert_eq!(mean(7, 8).value(), 0.875);
        assert_eq!(mean(2, 3).value(), 2.0 / 3.0);
        assert_eq!(mean(2, 3).opposite(), mean(1, 3));
        assert_eq!(placing_score(1, []), Err(RatingError::NoOpponents));
        // One opponent: SPEC 6's win, draw, loss.
        assert_eq!(placing_score(2, [1]), Ok(Score::Loss));
        assert_eq!(placing_score(1, [1]), Ok(Score::Draw));
    }

    #[test]
    fn recorded_scores_read_back_only_as_means_of_that_many_opponents() {
        assert_eq!(Score::recorded(2.0 / 3.0, 3), Ok(mean(2, 3)));
        assert_eq!(Score::recorded(-0.0, 3), Ok(Score::Loss));
        assert_eq!(Score::recorded(0.5, 1), Ok(Score::Draw));
        assert_eq!(Score::recorded(0.25, 2), Ok(mean(1, 4)));
        // 0.25 is no mean of results against three opponents (sixths only), nor is a
        // third off by one ulp, nor anything outside 0..=1.
        for (value, opponents) in [
            (0.25, 3),
            (0.25, 1),
            (f64::from_bits((1.0f64 / 3.0).to_bits() + 1), 3),
            (1.5, 4),
            (-0.125, 4),
            (f64::NAN, 4),
            (f64::INFINITY, 4),
        ] {
            let err = Score::recorded(value, opponents).unwrap_err();
            assert!(
                matches!(err, RatingError::NotAMeanScore { .. }),
                "{value} against {opponents}: {err}"
            );
        }
        assert_eq!(Score::recorded(1.0, 0), Err(RatingError::NoOpponents));
        let message = Score::recorded(0.25, 3).unwrap_err().to_string();
        assert_eq!(
            message,
            "a score against 3 opponents is 1, 0, 0.5 or a whole number of half points out of 6, got 0.25"
        );
    }

    #[test]
    fn three_equal_players() {
        // E = 1 / (1 + (1 + 1) / 2) = 0.5 for everyone; S = 1, 0.5, 0: +16, 0, -16.
        let changes = game(&[1500.0; 3], &[2, 1, 3]);
        assert_eq!(after(&changes), vec![1500.0, 1516.0, 1484.0]);
        assert!(changes.iter().all(|c| c.expectation() == 0.5));
        assert_eq!(changes[0].score(), Score::Draw);
        // Seat 0's opponents: seat 1 then seat 2; seat 2's: seat 0 then seat 1.
        assert_eq!(changes[0].opponents().count(), 2);
        assert_eq!(opponent_seats(2, 3).collect::<Vec<_>>(), vec![0, 1]);
    }

    #[test]
    fn four_equal_players_are_zero_sum() {
        // S = 1, 2/3, 1/3, 0 against E = 0.5: 32 * 1/2 = 16, 32 * 1/6 = 5.333..
        let changes = game(&[1500.0; 4], &[4, 1, 3, 2]);
        let got = after(&changes);
        assert_eq!(got[0], 1484.0);
        assert_eq!(got[1], 1516.0);
        close(got[2], 1494.6666666666667);
        close(got[3], 1505.3333333333333);
        // The exact bits: 1500 + 32 * (2/3 - 0.5), each operation rounded once.
        assert_eq!(
            got[3].to_bits(),
            (1500.0 + 32.0 * (2.0f64 / 3.0 - 0.5)).to_bits()
        );
        close(got.iter().map(|a| a - 1500.0).sum(), 0.0);
    }

    #[test]
    fn five_players_with_ties() {
        // Placings 1, 1, 3, 4, 4 (two share first, two share fourth): S = 7/8, 7/8, 1/2,
        // 1/8, 1/8, summing to 5/2. Equal ratings: 1500 + 32 * (7/8 - 1/2) = 1512, 1500,
        // 1500 - 12 = 1488.
        let changes = game(&[1500.0; 5], &[1, 3, 4, 1, 4]);
        assert_eq!(
            after(&changes),
            vec![1512.0, 1500.0, 1488.0, 1512.0, 1488.0]
        );
        assert_eq!(changes[1].score(), Score::Draw);
        assert_eq!(changes[2].score(), mean(1, 8));
        assert!(changes.iter().all(|c| c.opponents().count() == 4));
        // Everyone level: a draw for all, nobody moves.
        let level = game(&[1500.0; 5], &[1; 5]);
        assert_eq!(after(&level), vec![1500.0; 5]);
    }

    #[test]
    fn weights_apply_from_a_gap_of_100() {
        // 1600, 1500, 1400, placed 3, 1, 2 (values to 17 digits from 40-digit arithmetic).
        // Seat 0 (1600), against 1500 (e = 100, w = 0.9) and 1400 (e = 200, w = 0.8):
        // mean = (10^-0.25 * 0.9 + 10^-0.5 * 0.8) / 2 = 0.37954470274239228,
        // E = 1 / 1.37954470274239228 = 0.72487683654766922; below both, S = 0:
        // 1600 - 32 * E = 1576.8039412304746.
        let changes = game(&[1600.0, 1500.0, 1400.0], &[3, 1, 2]);
        let weights: Vec<Vec<f64>> = changes.iter().map(RatingChange::weights).collect();
        // Seat 0's opponents are seats 1 then 2; seat 1's are 2 then 0; seat 2's 0 then 1.
        assert_eq!(weights[0], vec![0.9, 0.8]);
        assert_eq!(weights[1], vec![0.9, 1.1]);
        assert_eq!(weights[2], vec![1.2, 1.1]);
        close(changes[0].expectation(), 0.7248768365476692);
        close(changes[0].after().value(), 1576.8039412304746);
        // Seat 1 (1500), against 1400 (w = 0.9) and 1600 (e = -100, w = 1.1): mean =
        // (10^-0.25 * 0.9 + 10^0.25 * 1.1) / 2, E = 0.44820794258254059; above both, S = 1:
        // 1500 + 32 * (1 - E) = 1517.6573458373587.
        close(changes[1].expectation(), 0.4482079425825406);
        close(changes[1].after().value(), 1517.6573458373587);
        // Seat 2 (1400), against 1600 (w = 1.2) and 1500 (w = 1.1): E = 0.25803653021130337;
        // between them, S = 0.5: 1400 + 32 * (0.5 - E) = 1407.7428310332383.
        close(changes[2].expectation(), 0.2580365302113034);
        close(changes[2].after().value(), 1407.7428310332383);
        // A single opponent keeps weight 1 (SPEC's two-player formula): two players placed
        // are a two-player game.
        let two = game(&[1600.0, 1400.0], &[2, 1]);
        assert_eq!(two[0].weights(), vec![1.0]);
        close(two[0].after().value(), 1575.6880983472653);
    }

    #[test]
    fn two_placed_players_are_spec_6s_two_player_game() {
        // Rated alone against each other, two players placed 1 and 2 are SPEC 6's two-player
        // game: the same bits as a win and a loss of `change`.
        let changes = game(&[1523.25, 1488.5], &[1, 2]);
        let won = change(r(1523.25), Opponents::one(r(1488.5)), Score::Win, DEFAULT_K).unwrap();
        assert_eq!(changes[0], won);
        // And nothing of the team games moved: a Jeu du 10 table still rates as before.
        let seated = four_seats([r(1500.0); 4], TeamOutcome::FirstWon, DEFAULT_K).unwrap();
        assert_eq!(seated[0].after().value(), 1516.0);
    }

    #[test]
    fn a_game_with_a_gap_too_large_is_not_rated_at_all() {
        let by_seat = [(r(1500.0), 1), (r(2500.0), 2), (r(1500.0), 3)];
        let err = each_alone(&by_seat, DEFAULT_K).unwrap_err();
        assert!(matches!(err, RatingError::GapTooLarge { .. }), "{err}");
        assert_eq!(
            each_alone(&[(r(1500.0), 1)], DEFAULT_K),
            Err(RatingError::NoOpponents)
        );
        assert_eq!(each_alone(&[], DEFAULT_K), Err(RatingError::NoOpponents));
    }

    fn table() -> impl Strategy<Value = (Vec<f64>, Vec<Placing>)> {
        (3usize..=5).prop_flat_map(|seats| {
            (
                prop::collection::vec(1000.0f64..1450.0, seats),
                prop::collection::vec(1u32..=5, seats),
            )
        })
    }

    proptest! {
        /// Equal ratings: the changes of any placing sum to zero (up to rounding).
        #[test]
        fn equal_ratings_are_zero_sum(
            rating in -3_000.0f64..6_000.0,
            placings in (3usize..=5).prop_flat_map(|n| prop::collection::vec(1u32..=5, n)),
        ) {
            let changes = game(&vec![rating; placings.len()], &placings);
            let total: f64 = changes.iter().map(|c| c.after().value() - rating).sum();
            prop_assert!(total.abs() <= 1e-9, "{}", total);
            let scores: f64 = changes.iter().map(|c| c.score().value()).sum();
            prop_assert!((scores - placings.len() as f64 / 2.0).abs() <= 1e-12);
        }

        /// Whatever the ratings: each player's score is the mean of their results, each
        /// change is `change` against every other player, reads back from its double, and
        /// a player alone in first place gains while one alone in last place loses.
        #[test]
        fn every_change_is_consistent((ratings, placings) in table()) {
            let changes = game(&ratings, &placings);
            let alone_at = |placing: Placing| placings.iter().filter(|p| **p == placing).count() == 1;
            let best = placings.iter().min().copied().unwrap();
            let worst = placings.iter().max().copied().unwrap();
            for (seat, c) in changes.iter().enumerate() {
                let others: Vec<usize> = opponent_seats(seat, ratings.len()).collect();
                let opponents = Opponents::new(others.iter().map(|&s| r(ratings[s])).collect()).unwrap();
                let score = placing_score(placings[seat], others.iter().map(|&s| placings[s])).unwrap();
                let alone = change(r(ratings[seat]), opponents, score, DEFAULT_K).unwrap();
                prop_assert_eq!(&alone, c);
                let recorded = Score::recorded(c.score().value(), others.len()).unwrap();
                prop_assert_eq!(recorded, c.score());
                if placings[seat] == best && alone_at(best) {
                    prop_assert_eq!(c.score(), Score::Win);
                    prop_assert!(c.after() > c.before());
                }
                if placings[seat] == worst && alone_at(worst) {
                    prop_assert_eq!(c.score(), Score::Loss);
                    prop_assert!(c.after() < c.before());
                }
            }
        }

        /// Scores read back from their doubles, for any tally of up to five opponents.
        #[test]
        fn means_round_trip(wins in 0u32..5, draws in 0u32..5, losses in 0u32..5) {
            prop_assume!(wins + draws + losses > 0);
            let score = Score::placed(wins, draws, losses).unwrap();
            let opponents = (wins + draws + losses) as usize;
            prop_assert_eq!(Score::recorded(score.value(), opponents), Ok(score));
            let exact = (2.0 * f64::from(wins) + f64::from(draws)) / (2.0 * opponents as f64);
            prop_assert_eq!(score.value().to_bits(), exact.to_bits());
            if let Score::Mean(_) = score {
                prop_assert!(score.value() > 0.0 && score.value() < 1.0 && score.value() != 0.5);
            }
        }
    }
}
