//! Round arithmetic on a chain's schedule: round 1 is published at the genesis time and
//! round `r` at `genesis + (r - 1) * period` (drand's `TimeOfRound`); round 0 is never
//! published. Times are Unix seconds, passed in by the caller: nothing here reads a clock.
//!
//! Every function is total: an out-of-range input is a [`RoundError`], never a wrapped or
//! saturated value.

use std::num::NonZeroU64;

/// Why a round or a time could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoundError {
    /// A chain's period must be at least one second.
    #[error("the period must be at least 1 second")]
    ZeroPeriod,
    /// Round 0 is the chain's genesis and has no signature.
    #[error("round 0 is never published (rounds start at 1)")]
    RoundZero,
    /// The time is before the chain's first round.
    #[error("time {time} is before the chain's genesis time {genesis_time}")]
    BeforeGenesis {
        /// The time asked about.
        time: u64,
        /// The chain's genesis time (round 1).
        genesis_time: u64,
    },
    /// The round's time does not fit in 64 bits of Unix seconds.
    #[error("round {round} is too far in the future: its time does not fit in 64 bits")]
    TimeOverflow {
        /// The round asked about.
        round: u64,
    },
    /// The round does not fit in 64 bits.
    #[error("the round number does not fit in 64 bits")]
    RoundOverflow,
}

/// When a chain publishes its rounds: its genesis time (round 1) and its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Schedule {
    /// Unix time, in seconds, of round 1.
    genesis_time: u64,
    /// Seconds between two rounds; never zero, so every division below is defined.
    period: NonZeroU64,
}

impl Schedule {
    /// A schedule; an error when `period_seconds` is 0.
    pub const fn new(genesis_time: u64, period_seconds: u64) -> Result<Self, RoundError> {
        match NonZeroU64::new(period_seconds) {
            Some(period) => Ok(Self {
                genesis_time,
                period,
            }),
            None => Err(RoundError::ZeroPeriod),
        }
    }

    /// Unix time, in seconds, of round 1.
    pub const fn genesis_time(&self) -> u64 {
        self.genesis_time
    }

    /// Seconds between two rounds.
    pub const fn period_seconds(&self) -> u64 {
        self.period.get()
    }

    /// The Unix time at which `round` is published: `genesis + (round - 1) * period`.
    pub fn round_time(&self, round: u64) -> Result<u64, RoundError> {
        let periods = round.checked_sub(1).ok_or(RoundError::RoundZero)?;
        periods
            .checked_mul(self.period.get())
            .and_then(|offset| self.genesis_time.checked_add(offset))
            .ok_or(RoundError::TimeOverflow { round })
    }

    /// The latest round published at or before `time` (drand's `CurrentRound`):
    /// `floor((time - genesis) / period) + 1`. Before genesis there is none, an error.
    pub fn round_at(&self, time: u64) -> Result<u64, RoundError> {
        let since_genesis =
            time.checked_sub(self.genesis_time)
                .ok_or(RoundError::BeforeGenesis {
                    time,
                    genesis_time: self.genesis_time,
                })?;
        (since_genesis / self.period.get())
            .checked_add(1)
            .ok_or(RoundError::RoundOverflow)
    }

    /// The first round published at or after `time`: 1 up to genesis, then
    /// `ceil((time - genesis) / period) + 1`. Its signature cannot exist before `time`.
    pub fn first_round_at_or_after(&self, time: u64) -> Result<u64, RoundError> {
        match time.checked_sub(self.genesis_time) {
            None | Some(0) => Ok(1),
            Some(since_genesis) => since_genesis
                .div_ceil(self.period.get())
                .checked_add(1)
                .ok_or(RoundError::RoundOverflow),
        }
    }

    /// The round to bind to a commitment made at `time`: the first round at or after `time`,
    /// plus `margin` rounds. With the margin, the round is still in the future even if the
    /// committing clock is up to `margin * period` seconds behind the beacon's, or the
    /// commitment takes that long to be published.
    pub fn round_after(&self, time: u64, margin: u64) -> Result<u64, RoundError> {
        self.first_round_at_or_after(time)?
            .checked_add(margin)
            .ok_or(RoundError::RoundOverflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Quicknet's schedule (see `chain::QUICKNET`).
    fn quicknet() -> Schedule {
        Schedule::new(1_692_803_367, 3).unwrap()
    }

    #[test]
    fn quicknet_rounds_and_times() {
        let s = quicknet();
        assert_eq!(s.round_time(1), Ok(1_692_803_367));
        assert_eq!(s.round_time(2), Ok(1_692_803_370));
        assert_eq!(s.round_time(1000), Ok(1_692_803_367 + 999 * 3));
        assert_eq!(s.round_at(1_692_803_367), Ok(1));
        assert_eq!(s.round_at(1_692_803_369), Ok(1));
        assert_eq!(s.round_at(1_692_803_370), Ok(2));
        // 2026-01-01T00:00:00Z.
        assert_eq!(s.round_at(1_767_225_600), Ok(24_807_412));
        assert_eq!(s.round_time(24_807_412), Ok(1_767_225_600));
    }

    #[test]
    fn the_first_round_at_or_after_a_time() {
        let s = quicknet();
        assert_eq!(s.first_round_at_or_after(0), Ok(1));
        assert_eq!(s.first_round_at_or_after(1_692_803_367), Ok(1));
        assert_eq!(s.first_round_at_or_after(1_692_803_368), Ok(2));
        assert_eq!(s.first_round_at_or_after(1_692_803_370), Ok(2));
        assert_eq!(s.first_round_at_or_after(1_692_803_371), Ok(3));
        assert_eq!(s.round_after(1_692_803_368, 0), Ok(2));
        assert_eq!(s.round_after(1_692_803_368, 10), Ok(12));
    }

    #[test]
    fn out_of_range_inputs_are_errors() {
        let s = quicknet();
        assert_eq!(Schedule::new(0, 0), Err(RoundError::ZeroPeriod));
        assert_eq!(s.round_time(0), Err(RoundError::RoundZero));
        assert_eq!(
            s.round_time(u64::MAX),
            Err(RoundError::TimeOverflow { round: u64::MAX })
        );
        assert_eq!(
            s.round_at(1_692_803_366),
            Err(RoundError::BeforeGenesis {
                time: 1_692_803_366,
                genesis_time: 1_692_803_367
            })
        );
        assert_eq!(
            s.round_after(u64::MAX, u64::MAX),
            Err(RoundError::RoundOverflow)
        );
        let every_second = Schedule::new(0, 1).unwrap();
        assert_eq!(
            every_second.round_at(u64::MAX),
            Err(RoundError::RoundOverflow)
        );
        assert_eq!(
            every_second.first_round_at_or_after(u64::MAX),
            Err(RoundError::RoundOverflow)
        );
        assert_eq!(every_second.round_time(u64::MAX), Ok(u64::MAX - 1));
    }

    fn schedules() -> impl Strategy<Value = Schedule> {
        (any::<u64>(), 1..=86_400u64).prop_map(|(g, p)| Schedule::new(g, p).unwrap())
    }

    proptest! {
        #[test]
        fn a_round_is_the_round_at_its_own_time(s in schedules(), round in 1..=u64::MAX) {
            match s.round_time(round) {
                Ok(time) => prop_assert_eq!(s.round_at(time), Ok(round)),
                Err(e) => prop_assert_eq!(e, RoundError::TimeOverflow { round }),
            }
        }

        #[test]
        fn the_round_at_a_time_is_the_last_one_published(s in schedules(), time in any::<u64>()) {
            match s.round_at(time) {
                Ok(round) => {
                    prop_assert!(s.round_time(round)? <= time);
                    if let Some(next) = round.checked_add(1)
                        && let Ok(next_time) = s.round_time(next)
                    {
                        prop_assert!(next_time > time);
                    }
                }
                Err(e) => prop_assert!(time < s.genesis_time(), "{e}"),
            }
        }

        #[test]
        fn the_first_round_after_a_time_is_not_published_before_it(
            s in schedules(),
            time in any::<u64>(),
            margin in 0..1_000u64,
        ) {
            if let Ok(first) = s.first_round_at_or_after(time) {
                if let Ok(at) = s.round_time(first) {
                    prop_assert!(at >= time);
                }
                if first > 1 {
                    prop_assert!(s.round_time(first - 1)? < time);
                }
                if let Ok(with_margin) = s.round_after(time, margin) {
                    prop_assert_eq!(with_margin, first + margin);
                }
            }
        }
    }
}
