//! In-process limiter (embedded default): a map of lockout states behind a mutex.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;

use super::{AttemptLimiter, LimiterError, Policies, Subject};
use crate::domain::{LockoutState, RetryAfter};

/// Entries beyond which a failure first prunes states whose retention has passed.
const PRUNE_ABOVE: usize = 10_000;

/// Limits attempts within one process.
#[derive(Debug, Default)]
pub struct MemoryLimiter {
    /// Policies per kind of subject.
    policies: Policies,
    /// State per subject, with the time (epoch seconds) after which it may be forgotten.
    states: Mutex<HashMap<Subject, (LockoutState, i64)>>,
}

impl MemoryLimiter {
    /// A limiter with `policies`.
    pub fn new(policies: Policies) -> Self {
        Self {
            policies,
            states: Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait]
impl AttemptLimiter for MemoryLimiter {
    async fn check(&self, subject: &Subject, now: i64) -> Result<Option<RetryAfter>, LimiterError> {
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(states.get(subject).and_then(|(s, _)| s.retry_after(now)))
    }

    async fn record_failure(
        &self,
        subject: &Subject,
        now: i64,
    ) -> Result<Option<RetryAfter>, LimiterError> {
        let policy = self.policies.for_subject(subject);
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if states.len() > PRUNE_ABOVE {
            states.retain(|_, (_, forget_at)| *forget_at > now);
        }
        let state = states
            .get(subject)
            .map(|(s, _)| *s)
            .unwrap_or_default()
            .after_failure(policy, now);
        let forget_at = now.saturating_add(policy.retention_secs(&state, now));
        states.insert(subject.clone(), (state, forget_at));
        Ok(state.retry_after(now))
    }

    async fn record_success(&self, subject: &Subject, _now: i64) -> Result<(), LimiterError> {
        let policy = self.policies.for_subject(subject);
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if policy.reset_on_success {
            states.remove(subject);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn locks_and_recovers() {
        let limiter = MemoryLimiter::default();
        let who = Subject::Username("bob".into());
        for _ in 0..4 {
            assert_eq!(limiter.record_failure(&who, 100).await.unwrap(), None);
        }
        assert_eq!(
            limiter.record_failure(&who, 100).await.unwrap(),
            Some(RetryAfter(60))
        );
        assert_eq!(
            limiter.check(&who, 130).await.unwrap(),
            Some(RetryAfter(30))
        );
        assert_eq!(limiter.check(&who, 160).await.unwrap(), None);
        limiter.record_success(&who, 160).await.unwrap();
        assert_eq!(limiter.check(&who, 160).await.unwrap(), None);
    }
}
