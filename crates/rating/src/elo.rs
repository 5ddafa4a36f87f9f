//! SPEC 6 itself: the expectation `E(n)` and the change `r'(n) = r(n) + K * (S(n) - E(n))`.
//!
//! The formulas are evaluated in the fixed order the crate docs give (see the crate-level
//! "Evaluation order"), so a change is a pure function of the input bits on every
//! platform. In short, with `e = r(n) - r(m)` and `x(m) = 10^(-e / 400)` (that is
//! `R(m) / R(n)`):
//!
//! ```text
//! E(n) = 1 / (1 + (sum over m, ascending by rating, of x(m) * w(n, m)) / J)
//! ```
//!
//! which is SPEC's `R(n) / (R(n) + sum(R(m) * w(n, m)) / J)` with numerator and
//! denominator divided by `R(n)`: the same number, computed from rating differences so
//! that no `10^(r/400)` of a large rating is ever formed.

use crate::MAX_GAP;
use crate::error::RatingError;
use crate::inputs::{KFactor, Opponents, Rating, Score};
use crate::pow10::pow10;

/// Below this `|e|`, an opponent's weight is 1 (SPEC 6).
const WEIGHT_THRESHOLD: f64 = 100.0;

/// `e = r(n) - r(m)`, if the two are at most [`MAX_GAP`] apart.
fn gap(player: Rating, opponent: Rating) -> Result<f64, RatingError> {
    let e = player.value() - opponent.value();
    // An overflowing difference is infinite and fails the comparison too.
    if e.abs() <= MAX_GAP {
        Ok(e)
    } else {
        Err(RatingError::GapTooLarge {
            player: player.value(),
            opponent: opponent.value(),
        })
    }
}

/// `w(n, m)` for a gap `e`: `1 - e / 1000` when `|e| >= 100` and the player has several
/// opponents, else 1.
///
/// With a single opponent the weight is always 1: SPEC 6 gives that case as the plain
/// two-player formula `R(n) / (R(n) + R(m))`, which has no weight, and reading it as the
/// several-opponent formula with `J = 1` would give a different number whenever
/// `|e| >= 100` (1600 against 1400: 0.7981 instead of 0.7597) and would stop the two
/// players' expectations from summing to 1.
fn weight(e: f64, several: bool) -> f64 {
    if several && e.abs() >= WEIGHT_THRESHOLD {
        1.0 - e / 1000.0
    } else {
        1.0
    }
}

/// `E(n)`: the score the player is expected to make against these opponents, in (0, 1).
///
/// One opponent gives SPEC 6's two-player formula, several its weighted form. Fails only
/// when an opponent is more than [`MAX_GAP`] points away from the player. The order of
/// the opponents does not matter, to the bit.
pub fn expectation(player: Rating, opponents: &Opponents) -> Result<f64, RatingError> {
    let several = opponents.count() > 1;
    let mut sum = 0.0;
    for opponent in opponents.ascending() {
        let e = gap(player, opponent)?;
        sum += pow10(-e / 400.0) * weight(e, several);
    }
    // `count` is far below 2^53, so the conversion is exact.
    let mean = sum / opponents.count() as f64;
    Ok(1.0 / (1.0 + mean))
}

/// One player's rating change in one game: everything a `RatingChanged` event records, so
/// that anyone can recompute it ([`crate::audit`]).
///
/// Only [`change`] makes one, so `after` and `expectation` are always those of the other
/// fields.
#[derive(Clone, Debug, PartialEq)]
pub struct RatingChange {
    /// The rating before the game, `r(n)`.
    before: Rating,
    /// The rating after it, `r'(n)`, unrounded.
    after: Rating,
    /// `E(n)`, in (0, 1).
    expectation: f64,
    /// `S(n)`.
    score: Score,
    /// The K factor used.
    k: KFactor,
    /// The opponents' ratings before the game, in the order given.
    opponents: Opponents,
}

impl RatingChange {
    /// The rating before the game.
    pub fn before(&self) -> Rating {
        self.before
    }

    /// The rating after the game, unrounded (show it with [`Rating::rounded`]).
    pub fn after(&self) -> Rating {
        self.after
    }

    /// The expectation `E(n)`, in (0, 1).
    pub fn expectation(&self) -> f64 {
        self.expectation
    }

    /// The score `S(n)`.
    pub fn score(&self) -> Score {
        self.score
    }

    /// The K factor.
    pub fn k(&self) -> KFactor {
        self.k
    }

    /// The opponents' ratings before the game, in the order given.
    pub fn opponents(&self) -> &Opponents {
        &self.opponents
    }

    /// Each opponent's weight `w(n, m)`, in the order of [`RatingChange::opponents`]: 1
    /// with a single opponent or within 100 points, else `1 - e / 1000`.
    pub fn weights(&self) -> Vec<f64> {
        let several = self.opponents.count() > 1;
        self.opponents
            .ratings()
            .iter()
            .map(|m| weight(self.before.value() - m.value(), several))
            .collect()
    }
}

/// The player's new rating after a game: `r'(n) = r(n) + K * (S(n) - E(n))`.
///
/// Fails when an opponent is more than [`MAX_GAP`] points away, or (only with an absurd
/// K) when the new rating is beyond the range of a double. A win never lowers a rating
/// and a loss never raises one, since `E(n)` is strictly between 0 and 1.
pub fn change(
    player: Rating,
    opponents: Opponents,
    score: Score,
    k: KFactor,
) -> Result<RatingChange, RatingError> {
    let expectation = expectation(player, &opponents)?;
    let after = player.value() + k.value() * (score.value() - expectation);
    let after = Rating::new(after).map_err(|_| RatingError::Overflow {
        before: player.value(),
        k: k.value(),
    })?;
    Ok(RatingChange {
        before: player,
        after,
        expectation,
        score,
        k,
        opponents,
    })
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

    fn against(ratings: &[f64]) -> Opponents {
        Opponents::new(ratings.iter().map(|&v| r(v)).collect()).unwrap()
    }

    fn after(player: f64, opponents: &[f64], score: Score) -> f64 {
        change(r(player), against(opponents), score, DEFAULT_K)
            .unwrap()
            .after()
            .value()
    }

    /// `|got - expected| <= 1e-12`: the hand values below are exact to 16 digits.
    fn close(got: f64, expected: f64) {
        assert!((got - expected).abs() <= 1e-12, "{got} vs {expected}");
    }

    #[test]
    fn two_equal_players() {
        // e = 0: x = 10^0 = 1, E = 1 / (1 + 1) = 0.5, all exact.
        // Win: 1500 + 32 * (1 - 0.5) = 1516; loss: 1500 - 16 = 1484; draw: 1500.
        assert_eq!(expectation(r(1500.0), &against(&[1500.0])), Ok(0.5));
        assert_eq!(after(1500.0, &[1500.0], Score::Win), 1516.0);
        assert_eq!(after(1500.0, &[1500.0], Score::Loss), 1484.0);
        assert_eq!(after(1500.0, &[1500.0], Score::Draw), 1500.0);
    }

    #[test]
    fn sixteen_hundred_against_fourteen_hundred() {
        // Two players, e = 200: x = 10^(-200/400) = 10^-0.5 = 0.316227766016838,
        // E = 1 / 1.316227766016838 = 0.759746926647958 (no weight: J = 1).
        // Win: 1600 + 32 * 0.240253073352042 = 1607.688098347265;
        // loss: 1600 - 32 * 0.759746926647958 = 1575.688098347265.
        let e = expectation(r(1600.0), &against(&[1400.0])).unwrap();
        close(e, 0.7597469266479578);
        close(after(1600.0, &[1400.0], Score::Win), 1607.6880983472653);
        close(after(1600.0, &[1400.0], Score::Loss), 1575.6880983472653);
        // The 1400 player: x = 10^0.5 = 3.162277660168380, E = 1 / 4.162277660168380
        // = 0.240253073352042; the two expectations sum to 1 (the plain formula).
        let other = expectation(r(1400.0), &against(&[1600.0])).unwrap();
        close(other, 0.2402530733520421);
        close(e + other, 1.0);
        close(after(1400.0, &[1600.0], Score::Win), 1424.3119016527347);

        // J = 1 reads SPEC's plain two-player formula: R(n) / (R(n) + R(m)) directly.
        let plain = 10f64.powf(4.0) / (10f64.powf(4.0) + 10f64.powf(3.5));
        close(e, plain);
        // Reading it as the weighted form with J = 1 would apply w = 1 - 200/1000 = 0.8:
        // E = 1 / (1 + 0.8 * 0.316227766016838) = 0.798095926481335, and for the 1400
        // player w = 1.2: 1 / (1 + 1.2 * 3.162277660168380) = 0.208562178522541;
        // they would sum to 1.0067, so ratings would drift. That reading is not used.
        assert!((e - 0.798095926481335).abs() > 0.03);
        // Two opponents of 1400 (J = 2) do use w = 0.8: mean = (2 * 0.8 * x) / 2.
        let weighted = expectation(r(1600.0), &against(&[1400.0, 1400.0])).unwrap();
        close(weighted, 0.7980959264813351);
        let weighted_other = expectation(r(1400.0), &against(&[1600.0, 1600.0])).unwrap();
        close(weighted_other, 0.2085621785225414);
    }

    #[test]
    fn weights_on_both_sides_of_one_hundred() {
        // Player 1500 against 1401, 1400, 1600, 1650 (J = 4):
        //   1401: e =   99 -> w = 1,               x = 10^-0.2475 = 0.565587757089154
        //   1400: e =  100 -> w = 1 - 0.1  = 0.9,  x = 10^-0.25   = 0.562341325190349
        //   1600: e = -100 -> w = 1 + 0.1  = 1.1,  x = 10^0.25    = 1.778279410038923
        //   1650: e = -150 -> w = 1 + 0.15 = 1.15, x = 10^0.375   = 2.371373705661655
        // terms (ascending rating): 0.506107192671314, 0.565587757089154,
        //   1.956107351042815, 2.727079761510903; sum 5.754882062314187;
        // mean = 5.754882062314187 / 4 = 1.438720515578547;
        // E = 1 / 2.438720515578547 = 0.410051087696192.
        // Win: 1500 + 32 * 0.589948912303809 = 1518.878365193722.
        let opponents = against(&[1401.0, 1400.0, 1600.0, 1650.0]);
        let e = expectation(r(1500.0), &opponents).unwrap();
        close(e, 0.4100510876961915);
        let won = change(r(1500.0), opponents, Score::Win, DEFAULT_K).unwrap();
        assert_eq!(won.weights(), vec![1.0, 0.9, 1.1, 1.15]);
        close(won.after().value(), 1518.878365193722);
        close(
            after(1500.0, &[1401.0, 1400.0, 1600.0, 1650.0], Score::Loss),
            1486.878365193722,
        );
    }

    #[test]
    fn a_single_opponent_has_weight_one_at_any_gap() {
        let c = change(r(1600.0), against(&[1400.0]), Score::Win, DEFAULT_K).unwrap();
        assert_eq!(c.weights(), vec![1.0]);
        let c = change(r(1600.0), against(&[1400.0, 1550.0]), Score::Win, DEFAULT_K).unwrap();
        assert_eq!(c.weights(), vec![0.8, 1.0]);
    }

    #[test]
    fn opponents_at_most_999_points_away() {
        // 999 points: w = 1 - 0.999 = 0.001, x = 10^-2.4975: E = 0.9999968, still below 1.
        let e = expectation(r(2499.0), &against(&[1500.0, 1500.0])).unwrap();
        assert!(e < 1.0 && e > 0.999996, "{e}");
        let e = expectation(r(1500.0), &against(&[2499.0, 2499.0])).unwrap();
        assert!(e > 0.0 && e < 0.002, "{e}");
        let e = expectation(r(1500.0), &against(&[2499.0])).unwrap();
        assert!(e > 0.003 && e < 0.004, "{e}");
        // The next double beyond, on either side, and for one opponent too.
        let beyond = 2499.0 + 2f64.powi(-41);
        for (player, opponents) in [
            (beyond, vec![1500.0, 1500.0]),
            (1500.0, vec![1500.0, beyond]),
            (1500.0, vec![beyond]),
            (-1500.0, vec![1e308]),
        ] {
            let err = expectation(r(player), &against(&opponents)).unwrap_err();
            assert!(matches!(err, RatingError::GapTooLarge { .. }), "{err}");
        }
        // Extreme but finite ratings: the difference overflows and is refused, never NaN.
        let err = expectation(r(f64::MAX), &against(&[f64::MIN])).unwrap_err();
        assert!(matches!(err, RatingError::GapTooLarge { .. }), "{err}");
    }

    #[test]
    fn ratings_far_from_1500_work_as_well() {
        // Only differences matter: 10^(r/400) is never formed, so huge ratings are fine.
        let high = change(r(1e12 + 200.0), against(&[1e12]), Score::Loss, DEFAULT_K).unwrap();
        close(high.expectation(), 0.7597469266479578);
        let low = change(r(-3000.0), against(&[-3000.0]), Score::Win, DEFAULT_K).unwrap();
        assert_eq!(low.after().value(), -2984.0);
    }

    #[test]
    fn an_overflowing_rating_is_an_error() {
        let k = KFactor::new(f64::MAX).unwrap();
        let err = change(r(f64::MAX), against(&[f64::MAX]), Score::Win, k).unwrap_err();
        assert!(matches!(err, RatingError::Overflow { .. }), "{err}");
        // Without overflow, a huge K still gives a finite rating.
        // 1500 + 1e300 * (1 - 0.5): the 1500 is lost to rounding.
        let k = KFactor::new(1e300).unwrap();
        let c = change(r(1500.0), against(&[1500.0]), Score::Win, k).unwrap();
        assert_eq!(c.after().value(), 5e299);
    }

    #[test]
    fn the_change_records_its_inputs() {
        let c = change(
            r(1500.0),
            against(&[1600.0, 1400.0]),
            Score::Draw,
            DEFAULT_K,
        )
        .unwrap();
        assert_eq!(c.before(), r(1500.0));
        assert_eq!(c.score(), Score::Draw);
        assert_eq!(c.k(), DEFAULT_K);
        assert_eq!(c.opponents(), &against(&[1600.0, 1400.0]));
        assert_eq!(c.weights(), vec![1.1, 0.9]);
        assert_eq!(
            c.expectation(),
            expectation(r(1500.0), &against(&[1400.0, 1600.0])).unwrap()
        );
    }

    /// A player and opponents within `MAX_GAP` of them (a hair inside, so that rounding
    /// `player + d` cannot push a gap past it; the limit itself is tested above).
    fn game(max_opponents: usize) -> impl Strategy<Value = (Rating, Vec<Rating>)> {
        let d = MAX_GAP - 1e-6;
        (-5_000.0f64..8_000.0).prop_flat_map(move |player| {
            (
                Just(r(player)),
                prop::collection::vec((-d..=d).prop_map(move |d| r(player + d)), 1..=max_opponents),
            )
        })
    }

    fn any_score() -> impl Strategy<Value = Score> {
        prop_oneof![Just(Score::Loss), Just(Score::Draw), Just(Score::Win)]
    }

    fn any_k() -> impl Strategy<Value = KFactor> {
        prop_oneof![
            Just(DEFAULT_K),
            (0.001f64..1000.0).prop_map(|k| KFactor::new(k).unwrap())
        ]
    }

    proptest! {
        #[test]
        fn expectations_are_strictly_between_zero_and_one((player, opponents) in game(6)) {
            let e = expectation(player, &Opponents::new(opponents).unwrap()).unwrap();
            prop_assert!(e > 0.0 && e < 1.0, "{}", e);
        }

        #[test]
        fn two_player_changes_sum_to_zero(
            (a, b) in game(1).prop_map(|(a, o)| (a, o[0])),
            score in any_score(),
            k in any_k(),
        ) {
            let ca = change(a, Opponents::one(b), score, k).unwrap();
            let cb = change(b, Opponents::one(a), score.opposite(), k).unwrap();
            let sum = (ca.after().value() - a.value()) + (cb.after().value() - b.value());
            // Up to rounding: a few ulps of the ratings and of K * E.
            prop_assert!(sum.abs() <= 1e-9, "{}", sum);
            prop_assert!((ca.expectation() + cb.expectation() - 1.0).abs() <= 1e-15);
        }

        #[test]
        fn the_order_of_opponents_does_not_matter(
            (player, opponents) in game(6),
            seed in any::<u64>(),
            score in any_score(),
            k in any_k(),
        ) {
            let mut shuffled = opponents.clone();
            // A deterministic shuffle (rotation and reversal by the seed).
            shuffled.rotate_left((seed as usize) % opponents.len());
            if seed & 1 == 1 {
                shuffled.reverse();
            }
            let one = change(player, Opponents::new(opponents).unwrap(), score, k).unwrap();
            let other = change(player, Opponents::new(shuffled).unwrap(), score, k).unwrap();
            prop_assert_eq!(one.expectation().to_bits(), other.expectation().to_bits());
            prop_assert_eq!(one.after().value().to_bits(), other.after().value().to_bits());
        }

        #[test]
        fn wins_never_lower_and_losses_never_raise(
            (player, opponents) in game(6),
            k in any_k(),
        ) {
            let opponents = Opponents::new(opponents).unwrap();
            let won = change(player, opponents.clone(), Score::Win, k).unwrap();
            let lost = change(player, opponents.clone(), Score::Loss, k).unwrap();
            let drawn = change(player, opponents, Score::Draw, k).unwrap();
            prop_assert!(won.after() >= player);
            prop_assert!(lost.after() <= player);
            prop_assert!(lost.after() <= drawn.after() && drawn.after() <= won.after());
        }

        #[test]
        fn results_are_finite_and_every_input_is_answered(
            player in proptest::num::f64::ANY,
            opponents in prop::collection::vec(proptest::num::f64::ANY, 0..5),
            score in any_score(),
            k in proptest::num::f64::ANY,
        ) {
            // Any doubles at all: either a typed error or finite results, never a panic.
            let inputs = (
                Rating::new(player),
                opponents.into_iter().map(Rating::new).collect::<Result<Vec<_>, _>>(),
                KFactor::new(k),
            );
            if let (Ok(player), Ok(opponents), Ok(k)) = inputs
                && let Ok(opponents) = Opponents::new(opponents)
            {
                    match change(player, opponents, score, k) {
                        Ok(c) => {
                            prop_assert!(c.after().value().is_finite());
                            prop_assert!(c.expectation() > 0.0 && c.expectation() < 1.0);
                            prop_assert!(c.weights().iter().all(|w| *w > 0.0 && *w < 2.0));
                        }
                        Err(e) => {
                            let expected = matches!(
                                e,
                                RatingError::GapTooLarge { .. } | RatingError::Overflow { .. }
                            );
                            prop_assert!(expected, "{}", e);
                        }
                    }
            }
        }
    }
}
