//! Escalating lockout against password guessing, as a pure state transition.
//!
//! Each subject (a username key, or a client address) has a small state. Failures are counted
//! in a fixed window; reaching the limit locks the subject for a time that doubles with each
//! lockout (its *level*), capped. A quiet period with no failure resets the level. Attempts
//! while locked are refused before any password work and are not counted (they must not
//! extend the lock an attacker is already sitting out, nor cost hashing time).
//!
//! Attempts in flight count too. An attempt is *admitted* before its password is checked
//! and stays pending until its result is recorded: a subject admits no more attempts than
//! the failures it has left in its window, so a burst of concurrent guesses cannot all pass
//! the lock check before the first failure is counted. A pending attempt whose result never
//! comes (its process died) stops counting after [`PENDING_TTL_SECS`].
//!
//! The in-memory limiter applies these functions directly; the Redis limiter runs the same
//! rules in a Lua script (see `limits::redis`), and one conformance test runs both.

/// How long an admitted attempt counts as in flight at most (a password check takes well
/// under a second; this only bounds the slots held by a process that died mid-attempt).
pub const PENDING_TTL_SECS: i64 = 60;

/// How a kind of subject is limited. All durations in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LockoutPolicy {
    /// Failures within `window_secs` that trigger a lockout.
    pub max_failures: u32,
    /// Length of the failure-counting window.
    pub window_secs: i64,
    /// First lockout's length; each further one doubles it.
    pub base_lock_secs: i64,
    /// Longest lockout.
    pub max_lock_secs: i64,
    /// Quiet time (no failure) after which the level returns to zero.
    pub level_reset_secs: i64,
    /// Whether a successful login clears the state (per username yes; per address no, or one
    /// valid account would launder a spraying attack from that address).
    pub reset_on_success: bool,
}

impl LockoutPolicy {
    /// Per username: 5 failures in 15 minutes lock for 1 minute, then 2, 4, ... up to 1 hour.
    pub const USERNAME: Self = Self {
        max_failures: 5,
        window_secs: 15 * 60,
        base_lock_secs: 60,
        max_lock_secs: 60 * 60,
        level_reset_secs: 24 * 60 * 60,
        reset_on_success: true,
    };

    /// Per client address: 30 failures in 15 minutes (shared NATs hold many players), then the
    /// same escalation.
    pub const ADDRESS: Self = Self {
        max_failures: 30,
        window_secs: 15 * 60,
        base_lock_secs: 60,
        max_lock_secs: 60 * 60,
        level_reset_secs: 24 * 60 * 60,
        reset_on_success: false,
    };

    /// Length of the lockout at `level` (1-based): `base * 2^(level-1)`, capped.
    pub fn lock_secs(&self, level: u32) -> i64 {
        let doublings = level.saturating_sub(1).min(62);
        self.base_lock_secs
            .saturating_mul(1i64 << doublings)
            .min(self.max_lock_secs)
            .max(0)
    }

    /// How long the state must be kept after `now` (for expiry in Redis or pruning in memory).
    pub fn retention_secs(&self, state: &LockoutState, now: i64) -> i64 {
        let lock_left = state.locked_until.saturating_sub(now);
        lock_left
            .max(self.window_secs)
            .max(self.level_reset_secs)
            .max(1)
    }
}

/// The limiter's memory of one subject. All times in seconds since the epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockoutState {
    /// Failures in the current window.
    pub failures: u32,
    /// Start of the current window.
    pub window_start: i64,
    /// Lockouts so far (drives the doubling).
    pub level: u32,
    /// Locked until this time (exclusive).
    pub locked_until: i64,
    /// Time of the last failure (drives the level reset).
    pub last_failure: i64,
}

/// How long to wait before trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(pub i64);

impl LockoutState {
    /// `Some` while locked.
    pub fn retry_after(&self, now: i64) -> Option<RetryAfter> {
        (self.locked_until > now).then(|| RetryAfter(self.locked_until.saturating_sub(now)))
    }

    /// Whether one more attempt may start at `now` while `pending` others are in flight:
    /// `None` if so, otherwise how long to wait (the lock's rest, or 1 s while the attempts
    /// in flight use up the failures left in the window).
    pub fn admits(&self, policy: &LockoutPolicy, pending: u32, now: i64) -> Option<RetryAfter> {
        if let Some(wait) = self.retry_after(now) {
            return Some(wait);
        }
        let failures = if now.saturating_sub(self.window_start) >= policy.window_secs {
            0
        } else {
            self.failures
        };
        (failures.saturating_add(pending) >= policy.max_failures).then_some(RetryAfter(1))
    }

    /// The state after a failed attempt at `now`.
    pub fn after_failure(mut self, policy: &LockoutPolicy, now: i64) -> Self {
        if self.level > 0 && now.saturating_sub(self.last_failure) >= policy.level_reset_secs {
            self.level = 0;
        }
        if now.saturating_sub(self.window_start) >= policy.window_secs {
            self.failures = 0;
            self.window_start = now;
        }
        self.failures = self.failures.saturating_add(1);
        self.last_failure = now;
        if self.failures >= policy.max_failures {
            self.level = self.level.saturating_add(1);
            self.locked_until = now.saturating_add(policy.lock_secs(self.level));
            self.failures = 0;
            self.window_start = now;
        }
        self
    }

    /// The state after a successful attempt.
    pub fn after_success(self, policy: &LockoutPolicy) -> Self {
        if policy.reset_on_success {
            Self::default()
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: LockoutPolicy = LockoutPolicy::USERNAME;

    fn fail_n(mut s: LockoutState, n: u32, now: i64) -> LockoutState {
        for _ in 0..n {
            s = s.after_failure(&P, now);
        }
        s
    }

    #[test]
    fn locks_after_max_failures_and_escalates() {
        let s = fail_n(LockoutState::default(), 4, 1000);
        assert_eq!(s.retry_after(1000), None);
        let s = s.after_failure(&P, 1000);
        assert_eq!(s.retry_after(1000), Some(RetryAfter(60)));
        assert_eq!(s.retry_after(1060), None);
        let s = fail_n(s, 5, 1060);
        assert_eq!(s.retry_after(1060), Some(RetryAfter(120)));
        let s = fail_n(s, 5, 1180);
        assert_eq!(s.retry_after(1180), Some(RetryAfter(240)));
    }

    #[test]
    fn window_expiry_forgets_failures() {
        let s = fail_n(LockoutState::default(), 4, 1000);
        let s = s.after_failure(&P, 1000 + P.window_secs);
        assert_eq!(s.failures, 1);
        assert_eq!(s.retry_after(1000 + P.window_secs), None);
    }

    #[test]
    fn quiet_day_resets_level_and_success_resets_username() {
        let s = fail_n(LockoutState::default(), 10, 0);
        assert_eq!(s.level, 2);
        let later = P.level_reset_secs + 10;
        let s = fail_n(s, 5, later);
        assert_eq!(s.level, 1);
        assert_eq!(s.after_success(&P), LockoutState::default());
        assert_eq!(s.after_success(&LockoutPolicy::ADDRESS), s);
    }

    #[test]
    fn lock_length_is_capped() {
        assert_eq!(P.lock_secs(1), 60);
        assert_eq!(P.lock_secs(7), 3600);
        assert_eq!(P.lock_secs(u32::MAX), 3600);
    }

    proptest! {
        /// Any sequence of failures at non-decreasing times never panics, never locks longer
        /// than the cap, and a lock always ends.
        #[test]
        fn bounded(steps in proptest::collection::vec(0i64..5000, 0..200)) {
            let mut s = LockoutState::default();
            let mut now = 0i64;
            for step in steps {
                now += step;
                s = s.after_failure(&P, now);
                let wait = s.retry_after(now).map_or(0, |r| r.0);
                prop_assert!(wait <= P.max_lock_secs);
                prop_assert!(s.retry_after(now + P.max_lock_secs).is_none());
            }
        }

        #[test]
        fn total_on_extreme_times(a in any::<i64>(), b in any::<i64>(), level in any::<u32>()) {
            let s = LockoutState { failures: u32::MAX, window_start: a, level, locked_until: b, last_failure: a };
            let s = s.after_failure(&P, b);
            let _ = s.retry_after(a);
            let _ = P.retention_secs(&s, a);
        }
    }

    #[test]
    fn attempts_in_flight_use_up_the_failures_left() {
        let now = 1_000;
        let s = LockoutState::default();
        assert_eq!(s.admits(&P, 4, now), None);
        assert_eq!(s.admits(&P, 5, now), Some(RetryAfter(1)));
        let s = fail_n(s, 3, now);
        assert_eq!(s.admits(&P, 1, now), None);
        assert_eq!(s.admits(&P, 2, now), Some(RetryAfter(1)));
        // Failures of a past window no longer count.
        assert_eq!(s.admits(&P, 4, now + P.window_secs), None);
        // A lock answers with its own wait.
        let locked = fail_n(s, 2, now);
        assert_eq!(locked.admits(&P, 0, now + 10), Some(RetryAfter(50)));
    }
}
