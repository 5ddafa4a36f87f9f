//! Time as a dependency: production code reads the system clock, tests move a manual one.

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time. Token expiry, lockout windows and link lifetimes all read it,
/// so tests can cross an expiry or a lockout window without sleeping.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// The current time as whole seconds since the Unix epoch (negative before 1970).
    fn unix_seconds(&self) -> i64 {
        unix_seconds(self.now())
    }
}

/// Whole seconds since the Unix epoch, saturating instead of overflowing.
pub fn unix_seconds(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_secs())
            .map(|s| -s)
            .unwrap_or(i64::MIN),
    }
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that only moves when told to (tests).
#[derive(Debug)]
pub struct ManualClock {
    /// The time it shows; a mutex because tests advance it while servers read it.
    now: Mutex<SystemTime>,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: SystemTime) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// A clock showing the current system time, frozen from now on.
    pub fn starting_now() -> Self {
        Self::new(SystemTime::now())
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }

    /// Sets the clock to `to`.
    pub fn set(&self, to: SystemTime) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(UNIX_EPOCH + Duration::from_secs(100));
        assert_eq!(clock.unix_seconds(), 100);
        clock.advance(Duration::from_secs(5));
        assert_eq!(clock.unix_seconds(), 105);
    }

    #[test]
    fn unix_seconds_before_epoch_is_negative() {
        assert_eq!(unix_seconds(UNIX_EPOCH - Duration::from_secs(3)), -3);
    }
}
