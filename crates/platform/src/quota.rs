//! Request quotas: at most `limit` requests per key within a sliding window, for work that
//! costs the service (or a third party) something whether or not it succeeds: the auth
//! service's mails per address, the chat service's messages per user. Nothing here is a
//! failure: every request counts, and a refusal only means "not now" (with how long to wait).
//!
//! - [`MemoryQuota`]: one process (the embedded default, tests).
//! - [`RedisQuota`]: shared by every replica; each decision is one Lua script on one key (a
//!   sorted set of request times), so concurrent replicas never over-admit and it works on a
//!   Redis Cluster.
//!
//! Time comes from the caller (the service's injected clock), so tests cross windows
//! without sleeping.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionManager;
use uuid::Uuid;

/// The quota's backing store failed; callers refuse the request (fail closed) rather than
/// let it through unlimited.
#[derive(Debug, thiserror::Error)]
#[error("rate limiter unavailable: {0}")]
pub struct LimiterError(pub String);

/// Counts requests per key in a sliding window of fixed length.
#[async_trait]
pub trait RequestQuota: Send + Sync + fmt::Debug {
    /// Records a request for `key` at `now` (seconds since the epoch) and returns `None`, or
    /// records nothing and returns `Some(seconds)` to wait (at least 1) when `limit` requests
    /// of `key` were recorded within the window ending at `now`.
    async fn admit(&self, key: &str, limit: u32, now: i64) -> Result<Option<i64>, LimiterError>;

    /// [`RequestQuota::admit`] as a yes or no: `true` when the request was recorded.
    async fn take(&self, key: &str, limit: u32, now: i64) -> Result<bool, LimiterError> {
        Ok(self.admit(key, limit, now).await?.is_none())
    }
}

/// Calls between two sweeps of the whole map (keys whose requests all left the window).
const SWEEP_EVERY: u64 = 1024;

#[derive(Debug, Default)]
struct MemoryState {
    /// Request times per key, oldest first, all within the window after pruning.
    keys: HashMap<String, VecDeque<i64>>,
    /// Calls since the start, to sweep now and then.
    calls: u64,
}

/// Drops the times of `times` that left the window ending at `now`.
fn prune(times: &mut VecDeque<i64>, window_secs: i64, now: i64) {
    while times
        .front()
        .is_some_and(|t| *t <= now.saturating_sub(window_secs))
    {
        times.pop_front();
    }
}

/// Quotas within one process.
#[derive(Debug)]
pub struct MemoryQuota {
    /// The window, seconds.
    window_secs: i64,
    /// Request times per key.
    state: Mutex<MemoryState>,
}

impl MemoryQuota {
    /// Quotas over a window of `window_secs` seconds.
    pub fn new(window_secs: i64) -> Self {
        Self {
            window_secs,
            state: Mutex::new(MemoryState::default()),
        }
    }
}

#[async_trait]
impl RequestQuota for MemoryQuota {
    async fn admit(&self, key: &str, limit: u32, now: i64) -> Result<Option<i64>, LimiterError> {
        let window = self.window_secs;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.calls = state.calls.wrapping_add(1);
        if state.calls.is_multiple_of(SWEEP_EVERY) {
            state.keys.retain(|_, times| {
                prune(times, window, now);
                !times.is_empty()
            });
        }
        let times = state.keys.entry(key.to_owned()).or_default();
        prune(times, window, now);
        if times.len() >= usize::try_from(limit).unwrap_or(usize::MAX) {
            // The oldest request leaves the window `window` seconds after it was made.
            let oldest = times.front().copied().unwrap_or(now);
            return Ok(Some(wait(oldest, window, now)));
        }
        times.push_back(now);
        Ok(None)
    }
}

/// KEYS[1]: the key's sorted set (member: a request id, score: its time). ARGV: now, window,
/// limit, the new request's id. Returns -1 if recorded, else the time of the oldest request
/// in the window (the quota is used up until it leaves).
const TAKE_LUA: &str = r"
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if oldest[2] then return tonumber(oldest[2]) end
  return now
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('EXPIRE', KEYS[1], window)
return -1
";

/// Seconds until a request made at `oldest` leaves a window of `window` seconds (at least 1).
fn wait(oldest: i64, window: i64, now: i64) -> i64 {
    oldest.saturating_add(window).saturating_sub(now).max(1)
}

/// Quotas shared by every replica through Redis.
#[derive(Clone)]
pub struct RedisQuota {
    /// Auto-reconnecting connection, cheap to clone per call.
    connection: ConnectionManager,
    /// Prefix of every key, so deployments (and tests) sharing a Redis stay apart.
    namespace: String,
    /// The window, seconds.
    window_secs: i64,
    /// The decision, loaded once per server (EVALSHA, falling back to EVAL).
    take: Script,
}

impl fmt::Debug for RedisQuota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisQuota")
            .field("namespace", &self.namespace)
            .field("window_secs", &self.window_secs)
            .finish_non_exhaustive()
    }
}

impl RedisQuota {
    /// Connects to `url`; keys start with `namespace`.
    pub async fn connect(
        url: &str,
        namespace: &str,
        window_secs: i64,
    ) -> Result<Self, LimiterError> {
        let client = redis::Client::open(url).map_err(|e| LimiterError(e.to_string()))?;
        let connection = client
            .get_connection_manager()
            .await
            .map_err(|e| LimiterError(e.to_string()))?;
        Ok(Self {
            connection,
            namespace: namespace.to_owned(),
            window_secs,
            take: Script::new(TAKE_LUA),
        })
    }
}

#[async_trait]
impl RequestQuota for RedisQuota {
    async fn admit(&self, key: &str, limit: u32, now: i64) -> Result<Option<i64>, LimiterError> {
        let mut con = self.connection.clone();
        let oldest: i64 = self
            .take
            .key(format!("{}:quota:{key}", self.namespace))
            .arg(now)
            .arg(self.window_secs)
            .arg(limit)
            .arg(Uuid::now_v7().to_string())
            .invoke_async(&mut con)
            .await
            .map_err(|e| LimiterError(e.to_string()))?;
        Ok((oldest >= 0).then(|| wait(oldest, self.window_secs, now)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_quota_slides() {
        let quota = MemoryQuota::new(3600);
        let t0 = 1_700_000_000;
        for i in 0..3 {
            assert!(quota.take("a", 3, t0 + i).await.unwrap());
        }
        assert!(!quota.take("a", 3, t0 + 10).await.unwrap());
        // Full until the first request leaves the window.
        assert_eq!(quota.admit("a", 3, t0 + 10).await.unwrap(), Some(3590));
        // Another key has its own count.
        assert!(quota.take("b", 3, t0 + 10).await.unwrap());
        // The first request leaves the window an hour after it was made, the next one later.
        assert!(!quota.take("a", 3, t0 + 3599).await.unwrap());
        assert!(quota.take("a", 3, t0 + 3600).await.unwrap());
        assert!(!quota.take("a", 3, t0 + 3600).await.unwrap());
        assert!(quota.take("a", 3, t0 + 3601).await.unwrap());
    }

    #[tokio::test]
    async fn memory_quota_forgets_idle_keys() {
        let quota = MemoryQuota::new(60);
        for i in 0..SWEEP_EVERY - 1 {
            assert!(quota.take(&format!("k{i}"), 1, 0).await.unwrap());
        }
        assert_eq!(quota.state.lock().unwrap().keys.len(), 1023);
        // The next call sweeps: every earlier key left its window long ago.
        assert!(quota.take("late", 1, 1000).await.unwrap());
        assert_eq!(quota.state.lock().unwrap().keys.len(), 1);
    }
}
