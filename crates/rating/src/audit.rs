//! Checking a recorded rating change: what `fairdeal audit` runs for every `RatingChanged`
//! event of a game export.
//!
//! The auditor recomputes each change from the inputs the event records (the player's
//! rating before, the opponents' ratings before, the score, K) and compares the outputs
//! (the expectation and the new rating) with the recorded ones:
//!
//! - [`Exactness::Bits`]: the platform's own records must match **bit for bit**. They were
//!   computed by this crate, whose arithmetic is the same on every platform (no libm; see
//!   the crate docs), so any difference at all means a record was altered or computed
//!   from other inputs.
//! - [`Exactness::Tolerant`]: records written by another implementation of SPEC 6 (which
//!   may use its own `pow` or SPEC's literal `R(n) / (R(n) + ...)` form) must agree within
//!   [`TOLERANCE`]: `|E - E'| <= 1e-12`, and `|r' - r''| <= 1e-12 * (K + |r|)` for the
//!   new rating. Honest implementations differ by a few ulps (around `1e-16` in `E`,
//!   `1e-13` points in a rating near 1500); a wrong input, score, K, formula or rounding
//!   moves a result by many orders of magnitude more.
//!
//! For a whole game, recompute it with [`crate::four_seats`] (or [`crate::two_teams`], or
//! [`crate::each_alone`] when every player is their own side) from the players' recorded
//! ratings before it, and [`compare`] each recorded change with the
//! recomputed one of the same player: that also checks that every record names the right
//! opponents, score and K.

use std::fmt;

use crate::elo::{RatingChange, change};
use crate::error::RatingError;
use crate::inputs::{KFactor, Opponents, Rating, Score};

/// The relative tolerance of [`Exactness::Tolerant`] (see the module docs for how it
/// applies to each value).
pub const TOLERANCE: f64 = 1e-12;

/// How closely a recorded change must agree with the recomputation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Exactness {
    /// The same bits: for records this crate computed (the platform's own).
    Bits,
    /// Within [`TOLERANCE`]: for records of another implementation of SPEC 6.
    Tolerant,
}

/// A rating change as an event records it: its inputs, parsed, and its outputs as
/// recorded (any doubles: checking them is the point).
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedChange {
    /// The player's rating before the game.
    pub before: Rating,
    /// The opponents' ratings before the game.
    pub opponents: Opponents,
    /// The player's score.
    pub score: Score,
    /// The K factor.
    pub k: KFactor,
    /// The recorded expectation `E(n)`.
    pub expectation: f64,
    /// The recorded rating after the game.
    pub after: f64,
}

impl From<&RatingChange> for RecordedChange {
    /// What a service records for a change it computed.
    fn from(change: &RatingChange) -> Self {
        RecordedChange {
            before: change.before(),
            opponents: change.opponents().clone(),
            score: change.score(),
            k: change.k(),
            expectation: change.expectation(),
            after: change.after().value(),
        }
    }
}

impl RecordedChange {
    /// Recomputes the change from the recorded inputs and compares the recorded outputs
    /// with it; returns the recomputed change when they agree.
    pub fn verify(&self, exactness: Exactness) -> Result<RatingChange, Discrepancy> {
        let recomputed = change(self.before, self.opponents.clone(), self.score, self.k)
            .map_err(Discrepancy::Unratable)?;
        compare(self, &recomputed, exactness)?;
        Ok(recomputed)
    }
}

/// Compares a recorded change with a recomputed one (typically from a whole-game
/// recomputation): the inputs must be identical (the opponents in any order), the
/// outputs must agree as `exactness` says.
pub fn compare(
    recorded: &RecordedChange,
    recomputed: &RatingChange,
    exactness: Exactness,
) -> Result<(), Discrepancy> {
    let input = |field, recorded: String, recomputed: String| {
        Err(Discrepancy::Input {
            field,
            recorded,
            recomputed,
        })
    };
    if recorded.before != recomputed.before() {
        return input(
            Field::Before,
            format!("{:?}", recorded.before.value()),
            format!("{:?}", recomputed.before().value()),
        );
    }
    let (theirs, ours) = (
        recorded.opponents.ascending(),
        recomputed.opponents().ascending(),
    );
    if theirs != ours {
        return input(Field::Opponents, list(&theirs), list(&ours));
    }
    if recorded.score != recomputed.score() {
        return input(
            Field::Score,
            format!("{:?}", recorded.score.value()),
            format!("{:?}", recomputed.score().value()),
        );
    }
    if recorded.k != recomputed.k() {
        return input(
            Field::K,
            format!("{:?}", recorded.k.value()),
            format!("{:?}", recomputed.k().value()),
        );
    }
    let k = recomputed.k().value();
    let scale = k + recomputed.before().value().abs();
    agree(
        Field::Expectation,
        recorded.expectation,
        recomputed.expectation(),
        exactness,
        1.0,
    )?;
    agree(
        Field::After,
        recorded.after,
        recomputed.after().value(),
        exactness,
        scale,
    )
}

/// Whether one recorded output agrees with its recomputation: the same bits, or within
/// `TOLERANCE * scale`.
fn agree(
    field: Field,
    recorded: f64,
    recomputed: f64,
    exactness: Exactness,
    scale: f64,
) -> Result<(), Discrepancy> {
    let (agrees, allowed) = match exactness {
        Exactness::Bits => (recorded.to_bits() == recomputed.to_bits(), 0.0),
        Exactness::Tolerant => {
            let allowed = TOLERANCE * scale;
            // A NaN record fails the comparison.
            ((recorded - recomputed).abs() <= allowed, allowed)
        }
    };
    if agrees {
        Ok(())
    } else {
        Err(Discrepancy::Value {
            field,
            recorded,
            recomputed,
            allowed,
        })
    }
}

/// How much a [`Discrepancy::Value`] was allowed, for its message.
fn allowance(allowed: f64) -> String {
    if allowed == 0.0 {
        " (the bits must match)".to_owned()
    } else {
        format!(", more than the {allowed:e} allowed")
    }
}

/// `[1400, 1600]`.
fn list(ratings: &[Rating]) -> String {
    let values: Vec<String> = ratings.iter().map(|r| format!("{:?}", r.value())).collect();
    format!("[{}]", values.join(", "))
}

/// A part of a recorded change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// The player's rating before the game.
    Before,
    /// The opponents' ratings before the game.
    Opponents,
    /// The score.
    Score,
    /// The K factor.
    K,
    /// The expectation.
    Expectation,
    /// The rating after the game.
    After,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Before => "rating before",
            Field::Opponents => "opponents",
            Field::Score => "score",
            Field::K => "K",
            Field::Expectation => "expectation",
            Field::After => "rating after",
        })
    }
}

/// Why a recorded change does not check out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Discrepancy {
    /// The recorded inputs cannot be rated at all.
    #[error("the recorded inputs cannot be rated: {0}")]
    Unratable(RatingError),
    /// An input differs from the game's (wrong opponents, score, K or rating before).
    #[error("recorded {field} {recorded} is not the game's {recomputed}")]
    Input {
        /// Which input.
        field: Field,
        /// The recorded value.
        recorded: String,
        /// The value the recomputation used.
        recomputed: String,
    },
    /// An output differs from the recomputation by more than allowed.
    #[error(
        "recorded {field} {recorded:?} differs from the recomputed {recomputed:?} by {difference:?}{allowance}",
        difference = (recorded - recomputed).abs(),
        allowance = allowance(*allowed)
    )]
    Value {
        /// Which output.
        field: Field,
        /// The recorded value.
        recorded: f64,
        /// The recomputed value.
        recomputed: f64,
        /// The largest difference allowed (0 for [`Exactness::Bits`]: the bits must match).
        allowed: f64,
    },
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

    fn recorded() -> RecordedChange {
        let c = change(
            r(1600.0),
            Opponents::new(vec![r(1400.0), r(1550.0)]).unwrap(),
            Score::Win,
            DEFAULT_K,
        )
        .unwrap();
        RecordedChange::from(&c)
    }

    fn next_up(v: f64) -> f64 {
        f64::from_bits(v.to_bits() + 1)
    }

    #[test]
    fn an_honest_record_verifies_bit_for_bit() {
        let record = recorded();
        let again = record.verify(Exactness::Bits).unwrap();
        assert_eq!(RecordedChange::from(&again), record);
        assert!(record.verify(Exactness::Tolerant).is_ok());
    }

    #[test]
    fn one_ulp_fails_bits_but_passes_tolerance() {
        let mut record = recorded();
        record.after = next_up(record.after);
        let err = record.verify(Exactness::Bits).unwrap_err();
        assert!(
            matches!(err, Discrepancy::Value { field: Field::After, allowed, .. } if allowed == 0.0),
            "{err}"
        );
        assert!(err.to_string().ends_with(" (the bits must match)"), "{err}");
        assert!(record.verify(Exactness::Tolerant).is_ok());

        let mut record = recorded();
        record.expectation = next_up(record.expectation);
        assert!(record.verify(Exactness::Bits).is_err());
        assert!(record.verify(Exactness::Tolerant).is_ok());
    }

    #[test]
    fn real_errors_fail_both() {
        for (after, expectation) in [(1e-6, 0.0), (0.0, 1e-9), (f64::NAN, 0.0), (0.0, f64::NAN)] {
            let mut record = recorded();
            record.after += after;
            record.expectation += expectation;
            for exactness in [Exactness::Bits, Exactness::Tolerant] {
                let err = record.verify(exactness).unwrap_err();
                assert!(matches!(err, Discrepancy::Value { .. }), "{err}");
            }
        }
        // A rounded rating is not the rating.
        let mut record = recorded();
        record.after = record.after.round();
        let err = record.verify(Exactness::Tolerant).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "recorded rating after 1611.0 differs from the recomputed 1610.6871016309542 by 0.3128"
            ) && err.ends_with(", more than the 1.632e-9 allowed"),
            "{err}"
        );
    }

    #[test]
    fn unratable_records_say_why() {
        let mut record = recorded();
        record.opponents = Opponents::one(r(400.0));
        let err = record.verify(Exactness::Tolerant).unwrap_err();
        assert!(
            matches!(err, Discrepancy::Unratable(RatingError::GapTooLarge { .. })),
            "{err}"
        );
    }

    #[test]
    fn a_whole_game_checks_every_record_against_its_seat() {
        let by_seat = [1500.0, 1620.0, 1555.5, 1480.0].map(r);
        let game = four_seats(by_seat, TeamOutcome::SecondWon, DEFAULT_K).unwrap();
        let records: Vec<RecordedChange> = game.iter().map(RecordedChange::from).collect();
        for (record, seat) in records.iter().zip(&game) {
            compare(record, seat, Exactness::Bits).unwrap();
        }
        // Opponents listed in another order are the same opponents.
        let mut reordered = records[0].clone();
        let mut ratings = reordered.opponents.ratings().to_vec();
        ratings.reverse();
        reordered.opponents = Opponents::new(ratings).unwrap();
        compare(&reordered, &game[0], Exactness::Bits).unwrap();

        // A record that used a partner as an opponent, the wrong score, K or rating.
        let mut wrong = records[0].clone();
        wrong.opponents = Opponents::new(vec![by_seat[1], by_seat[2]]).unwrap();
        let err = compare(&wrong, &game[0], Exactness::Tolerant).unwrap_err();
        assert_eq!(
            err.to_string(),
            "recorded opponents [1555.5, 1620.0] is not the game's [1480.0, 1620.0]"
        );
        let mut wrong_score = records[1].clone();
        wrong_score.score = Score::Loss;
        let mut wrong_k = records[2].clone();
        wrong_k.k = KFactor::new(16.0).unwrap();
        // Seat 3's record checked against seat 1's change: another player's rating before.
        for (record, seat, expected) in [
            (&wrong_score, 1, Field::Score),
            (&wrong_k, 2, Field::K),
            (&records[3], 1, Field::Before),
        ] {
            let err = compare(record, &game[seat], Exactness::Tolerant).unwrap_err();
            assert!(
                matches!(err, Discrepancy::Input { field, .. } if field == expected),
                "{err}"
            );
        }
    }

    /// SPEC 6 as written, `R(n) / (R(n) + sum(R(m) * w) / J)` with the platform's `powf`
    /// and the opponents in the order given: what another implementation would compute.
    fn literal_spec(player: f64, opponents: &[f64], score: f64, k: f64) -> (f64, f64) {
        let big_r = |rating: f64| 10f64.powf(rating / 400.0);
        let j = opponents.len() as f64;
        let sum: f64 = opponents
            .iter()
            .map(|&m| {
                let e = player - m;
                let w = if opponents.len() > 1 && e.abs() >= 100.0 {
                    1.0 - e / 1000.0
                } else {
                    1.0
                };
                big_r(m) * w
            })
            .sum();
        let expectation = big_r(player) / (big_r(player) + sum / j);
        (expectation, player + k * (score - expectation))
    }

    proptest! {
        /// Another faithful implementation passes the tolerant check, for ratings and K
        /// across the range a platform sees.
        #[test]
        fn a_literal_implementation_is_within_tolerance(
            player in 0.0f64..3_000.0,
            offsets in prop::collection::vec(-998.0f64..998.0, 1..5),
            score in prop_oneof![Just(Score::Loss), Just(Score::Draw), Just(Score::Win)],
            k in 1.0f64..100.0,
        ) {
            let opponents: Vec<f64> = offsets.iter().map(|d| player + d).collect();
            let (expectation, after) = literal_spec(player, &opponents, score.value(), k);
            let record = RecordedChange {
                before: r(player),
                opponents: Opponents::new(opponents.iter().map(|&m| r(m)).collect()).unwrap(),
                score,
                k: KFactor::new(k).unwrap(),
                expectation,
                after,
            };
            prop_assert!(record.verify(Exactness::Tolerant).is_ok(), "{:?}", record);
        }
    }
}
