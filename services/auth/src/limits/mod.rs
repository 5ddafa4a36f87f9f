//! Brute-force limits on login: the [`AttemptLimiter`] port and its two adapters.
//!
//! - [`memory::MemoryLimiter`]: one process (the embedded default, tests).
//! - [`redis::RedisLimiter`]: shared by every replica; each transition is one Lua script, so
//!   concurrent replicas never lose an update.
//!
//! And the request quotas (mails per address and per client), in memory or in Redis: the
//! platform's [`fairdeal_platform::quota`], re-exported here.
//!
//! Both apply the rules of [`crate::domain::lockout`]; time comes from the caller (the
//! service's injected clock), so tests cross lockout windows without sleeping.

pub mod memory;
pub mod redis;

use std::fmt;
use std::net::IpAddr;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::domain::{LockoutPolicy, RetryAfter};

pub use fairdeal_platform::quota::{LimiterError, MemoryQuota, RedisQuota, RequestQuota};
pub use memory::MemoryLimiter;
pub use redis::RedisLimiter;

/// What is being limited.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A username's caseless key (known or not: unknown names are limited the same way, so
    /// the limiter reveals nothing about which accounts exist).
    Username(String),
    /// A client address, IPv6 reduced to its /64 (one host usually owns a whole /64).
    Address(IpAddr),
}

impl Subject {
    /// The address subject for `addr`, normalised (IPv4-mapped IPv6 to IPv4, IPv6 to /64).
    pub fn address(addr: IpAddr) -> Self {
        let addr = match addr {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
            },
            v4 => v4,
        };
        Self::Address(addr)
    }

    /// A stable identifier without personal data: usernames are hashed.
    pub fn storage_id(&self) -> String {
        match self {
            Subject::Username(key) => format!("u:{}", hex::encode(Sha256::digest(key.as_bytes()))),
            Subject::Address(addr) => format!("a:{addr}"),
        }
    }
}

impl fmt::Debug for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Subject({})", self.storage_id())
    }
}

/// The policy of each kind of subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Policies {
    /// Per username.
    pub username: LockoutPolicy,
    /// Per client address.
    pub address: LockoutPolicy,
}

impl Default for Policies {
    fn default() -> Self {
        Self {
            username: LockoutPolicy::USERNAME,
            address: LockoutPolicy::ADDRESS,
        }
    }
}

impl Policies {
    /// The policy for `subject`.
    pub fn for_subject(&self, subject: &Subject) -> &LockoutPolicy {
        match subject {
            Subject::Username(_) => &self.username,
            Subject::Address(_) => &self.address,
        }
    }
}

/// Counts failed logins and locks subjects out. `now` is seconds since the epoch.
///
/// An attempt is [admitted](AttemptLimiter::admit) before any password work, then settled
/// by exactly one of [`record_failure`](AttemptLimiter::record_failure),
/// [`record_success`](AttemptLimiter::record_success) or
/// [`release`](AttemptLimiter::release) (no verdict, e.g. the database failed); until then
/// it counts as in flight (see [`crate::domain::lockout`]).
#[async_trait]
pub trait AttemptLimiter: Send + Sync + fmt::Debug {
    /// `Some` while `subject` is locked (read only; nothing is admitted).
    async fn check(&self, subject: &Subject, now: i64) -> Result<Option<RetryAfter>, LimiterError>;
    /// Admits `attempt` (`None`) or says how long to wait (`Some`; nothing is recorded).
    async fn admit(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<Option<RetryAfter>, LimiterError>;
    /// Records a failure (settling `attempt` if it was admitted); `Some` when it (or an
    /// earlier one) locked the subject.
    async fn record_failure(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<Option<RetryAfter>, LimiterError>;
    /// Records a success (settling `attempt`; clears the state when the subject's policy
    /// says so).
    async fn record_success(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<(), LimiterError>;
    /// Settles `attempt` without a verdict.
    async fn release(&self, subject: &Subject, attempt: Uuid) -> Result<(), LimiterError>;
    /// Drops everything kept about `subject`, attempts in flight included (its account was
    /// deleted: the state is keyed by the username, and a new account of that name starts
    /// afresh).
    async fn forget(&self, subject: &Subject) -> Result<(), LimiterError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_normalised() {
        let a = Subject::address("2001:db8::1".parse().unwrap());
        let b = Subject::address("2001:db8::ffff:1".parse().unwrap());
        assert_eq!(a, b);
        assert_eq!(
            Subject::address("::ffff:10.0.0.1".parse().unwrap()),
            Subject::address("10.0.0.1".parse().unwrap())
        );
        assert_eq!(a.storage_id(), "a:2001:db8::");
    }

    #[test]
    fn usernames_are_hashed_in_storage_ids() {
        let s = Subject::Username("alice".into());
        assert!(!s.storage_id().contains("alice"));
        assert!(!format!("{s:?}").contains("alice"));
    }
}
