//! In-process limiter (embedded default): a map of lockout states behind a mutex.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use uuid::Uuid;

use super::{AttemptLimiter, LimiterError, Policies, Subject};
use crate::domain::{LockoutState, PENDING_TTL_SECS, RetryAfter};

/// Entries beyond which a failure first prunes states whose retention has passed.
const PRUNE_ABOVE: usize = 10_000;

/// What the limiter keeps per subject.
#[derive(Debug, Default)]
struct Entry {
    /// The lockout state.
    state: LockoutState,
    /// Time (epoch seconds) after which the entry may be forgotten.
    forget_at: i64,
    /// Admitted attempts not yet settled, with their admission time.
    pending: Vec<(Uuid, i64)>,
}

/// Limits attempts within one process.
#[derive(Debug, Default)]
pub struct MemoryLimiter {
    /// Policies per kind of subject.
    policies: Policies,
    /// State per subject.
    states: Mutex<HashMap<Subject, Entry>>,
}

impl MemoryLimiter {
    /// A limiter with `policies`.
    pub fn new(policies: Policies) -> Self {
        Self {
            policies,
            states: Mutex::new(HashMap::new()),
        }
    }

    fn settle(&self, subject: &Subject, attempt: Uuid, now: i64, change: impl FnOnce(&mut Entry)) {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if states.len() > PRUNE_ABOVE {
            states.retain(|_, e| e.forget_at > now || !e.pending.is_empty());
        }
        let entry = states.entry(subject.clone()).or_default();
        entry.pending.retain(|(id, _)| *id != attempt);
        change(entry);
    }
}

#[async_trait]
impl AttemptLimiter for MemoryLimiter {
    async fn check(&self, subject: &Subject, now: i64) -> Result<Option<RetryAfter>, LimiterError> {
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(states.get(subject).and_then(|e| e.state.retry_after(now)))
    }

    async fn admit(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<Option<RetryAfter>, LimiterError> {
        let policy = self.policies.for_subject(subject);
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = states.entry(subject.clone()).or_default();
        entry
            .pending
            .retain(|(_, since)| now.saturating_sub(*since) < PENDING_TTL_SECS);
        let pending = u32::try_from(entry.pending.len()).unwrap_or(u32::MAX);
        let wait = entry.state.admits(policy, pending, now);
        if wait.is_none() {
            entry.pending.push((attempt, now));
            entry.forget_at = entry.forget_at.max(now.saturating_add(PENDING_TTL_SECS));
        }
        Ok(wait)
    }

    async fn record_failure(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<Option<RetryAfter>, LimiterError> {
        let policy = self.policies.for_subject(subject);
        let mut wait = None;
        self.settle(subject, attempt, now, |entry| {
            entry.state = entry.state.after_failure(policy, now);
            entry.forget_at = now.saturating_add(policy.retention_secs(&entry.state, now));
            wait = entry.state.retry_after(now);
        });
        Ok(wait)
    }

    async fn record_success(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<(), LimiterError> {
        let policy = self.policies.for_subject(subject);
        self.settle(subject, attempt, now, |entry| {
            entry.state = entry.state.after_success(policy);
        });
        Ok(())
    }

    async fn release(&self, subject: &Subject, attempt: Uuid) -> Result<(), LimiterError> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = states.get_mut(subject) {
            entry.pending.retain(|(id, _)| *id != attempt);
        }
        Ok(())
    }

    async fn forget(&self, subject: &Subject) -> Result<(), LimiterError> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        states.remove(subject);
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
            assert_eq!(
                limiter
                    .record_failure(&who, Uuid::now_v7(), 100)
                    .await
                    .unwrap(),
                None
            );
        }
        assert_eq!(
            limiter
                .record_failure(&who, Uuid::now_v7(), 100)
                .await
                .unwrap(),
            Some(RetryAfter(60))
        );
        assert_eq!(
            limiter.check(&who, 130).await.unwrap(),
            Some(RetryAfter(30))
        );
        assert_eq!(limiter.check(&who, 160).await.unwrap(), None);
        limiter
            .record_success(&who, Uuid::now_v7(), 160)
            .await
            .unwrap();
        assert_eq!(limiter.check(&who, 160).await.unwrap(), None);
    }

    #[tokio::test]
    async fn forgets_a_subject() {
        let limiter = MemoryLimiter::default();
        let who = Subject::Username("carol".into());
        for _ in 0..5 {
            limiter
                .record_failure(&who, Uuid::now_v7(), 100)
                .await
                .unwrap();
        }
        assert!(limiter.check(&who, 100).await.unwrap().is_some());
        limiter.forget(&who).await.unwrap();
        assert_eq!(limiter.check(&who, 100).await.unwrap(), None);
        assert!(limiter.states.lock().unwrap().is_empty());
    }
}
