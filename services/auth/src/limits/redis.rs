//! Redis limiter: state shared by every replica, each transition one atomic Lua script.

use std::fmt;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionManager;
use uuid::Uuid;

use super::{AttemptLimiter, LimiterError, Policies, Subject};
use crate::domain::{PENDING_TTL_SECS, RetryAfter};

/// The fields of the lockout state in the subject's hash. Attempts in flight are fields of
/// the same hash (`p:<attempt id>` = admission time), so every transition touches one key
/// (and works on a Redis Cluster).
const STATE_FIELDS: [&str; 5] = [
    "failures",
    "window_start",
    "level",
    "locked_until",
    "last_failure",
];

/// `admits` of `domain::lockout`, transcribed, after dropping attempts pending for longer
/// than the TTL. KEYS[1] is the subject's hash; ARGV: now, max_failures, window, pending_ttl,
/// the attempt's field. Returns 0 if admitted (and records the attempt as pending), else
/// the seconds to wait.
const ADMIT_LUA: &str = r"
local now = tonumber(ARGV[1])
local max_failures = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local pending_ttl = tonumber(ARGV[4])
local all = redis.call('HGETALL', KEYS[1])
local failures = 0
local window_start = 0
local locked_until = 0
local pending = 0
for i = 1, #all, 2 do
  local field = all[i]
  local value = tonumber(all[i + 1]) or 0
  if field == 'failures' then failures = value
  elseif field == 'window_start' then window_start = value
  elseif field == 'locked_until' then locked_until = value
  elseif string.sub(field, 1, 2) == 'p:' then
    if now - value >= pending_ttl then
      redis.call('HDEL', KEYS[1], field)
    else
      pending = pending + 1
    end
  end
end
if locked_until > now then return locked_until - now end
if now - window_start >= window then failures = 0 end
if failures + pending >= max_failures then return 1 end
redis.call('HSET', KEYS[1], ARGV[5], now)
if redis.call('TTL', KEYS[1]) < pending_ttl then redis.call('EXPIRE', KEYS[1], pending_ttl) end
return 0
";

/// `after_failure` of `domain::lockout`, transcribed, settling the attempt. KEYS[1] is the
/// subject's hash; ARGV: now, max_failures, window, base_lock, max_lock, level_reset, the
/// attempt's field. Returns locked_until. Kept line-for-line parallel to the Rust so the two
/// are easy to compare; the conformance test runs the same scenario on both.
const FAILURE_LUA: &str = r"
redis.call('HDEL', KEYS[1], ARGV[7])
local now = tonumber(ARGV[1])
local max_failures = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local base_lock = tonumber(ARGV[4])
local max_lock = tonumber(ARGV[5])
local level_reset = tonumber(ARGV[6])
local v = redis.call('HMGET', KEYS[1], 'failures', 'window_start', 'level', 'locked_until', 'last_failure')
local failures = tonumber(v[1]) or 0
local window_start = tonumber(v[2]) or 0
local level = tonumber(v[3]) or 0
local locked_until = tonumber(v[4]) or 0
local last_failure = tonumber(v[5]) or 0
if level > 0 and now - last_failure >= level_reset then level = 0 end
if now - window_start >= window then
  failures = 0
  window_start = now
end
failures = failures + 1
last_failure = now
if failures >= max_failures then
  level = level + 1
  local doublings = math.min(level - 1, 62)
  local lock = math.max(math.min(base_lock * (2 ^ doublings), max_lock), 0)
  locked_until = now + lock
  failures = 0
  window_start = now
end
redis.call('HSET', KEYS[1], 'failures', failures, 'window_start', window_start, 'level', level,
  'locked_until', string.format('%d', locked_until), 'last_failure', last_failure)
local keep = math.max(locked_until - now, window, level_reset, 1)
redis.call('EXPIRE', KEYS[1], math.floor(keep))
return string.format('%d', locked_until)
";

/// Limits attempts across replicas through Redis.
#[derive(Clone)]
pub struct RedisLimiter {
    /// Auto-reconnecting connection, cheap to clone per call.
    connection: ConnectionManager,
    /// Prefix of every key, so deployments (and tests) sharing a Redis stay apart.
    namespace: String,
    /// Policies per kind of subject.
    policies: Policies,
    /// The failure transition, loaded once per server (EVALSHA, falling back to EVAL).
    failure: Script,
    /// The admission check.
    admit: Script,
}

impl fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl RedisLimiter {
    /// Connects to `url` (`redis://host:port/db`); keys start with `namespace`.
    pub async fn connect(
        url: &str,
        namespace: &str,
        policies: Policies,
    ) -> Result<Self, LimiterError> {
        let client = redis::Client::open(url).map_err(|e| LimiterError(e.to_string()))?;
        let connection = client
            .get_connection_manager()
            .await
            .map_err(|e| LimiterError(e.to_string()))?;
        Ok(Self {
            connection,
            namespace: namespace.to_owned(),
            policies,
            failure: Script::new(FAILURE_LUA),
            admit: Script::new(ADMIT_LUA),
        })
    }

    fn key(&self, subject: &Subject) -> String {
        format!("{}:lockout:{}", self.namespace, subject.storage_id())
    }
}

/// The hash field marking `attempt` as in flight.
fn pending_field(attempt: Uuid) -> String {
    format!("p:{attempt}")
}

fn err(e: redis::RedisError) -> LimiterError {
    LimiterError(e.to_string())
}

fn retry_after(locked_until: Option<i64>, now: i64) -> Option<RetryAfter> {
    locked_until
        .filter(|until| *until > now)
        .map(|until| RetryAfter(until.saturating_sub(now)))
}

#[async_trait]
impl AttemptLimiter for RedisLimiter {
    async fn check(&self, subject: &Subject, now: i64) -> Result<Option<RetryAfter>, LimiterError> {
        let mut con = self.connection.clone();
        let until: Option<i64> = redis::cmd("HGET")
            .arg(self.key(subject))
            .arg("locked_until")
            .query_async(&mut con)
            .await
            .map_err(err)?;
        Ok(retry_after(until, now))
    }

    async fn admit(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<Option<RetryAfter>, LimiterError> {
        let p = self.policies.for_subject(subject);
        let mut con = self.connection.clone();
        let wait: i64 = self
            .admit
            .key(self.key(subject))
            .arg(now)
            .arg(p.max_failures)
            .arg(p.window_secs)
            .arg(PENDING_TTL_SECS)
            .arg(pending_field(attempt))
            .invoke_async(&mut con)
            .await
            .map_err(err)?;
        Ok((wait > 0).then_some(RetryAfter(wait)))
    }

    async fn record_failure(
        &self,
        subject: &Subject,
        attempt: Uuid,
        now: i64,
    ) -> Result<Option<RetryAfter>, LimiterError> {
        let p = self.policies.for_subject(subject);
        let mut con = self.connection.clone();
        let until: i64 = self
            .failure
            .key(self.key(subject))
            .arg(now)
            .arg(p.max_failures)
            .arg(p.window_secs)
            .arg(p.base_lock_secs)
            .arg(p.max_lock_secs)
            .arg(p.level_reset_secs)
            .arg(pending_field(attempt))
            .invoke_async(&mut con)
            .await
            .map_err(err)?;
        Ok(retry_after(Some(until), now))
    }

    async fn record_success(
        &self,
        subject: &Subject,
        attempt: Uuid,
        _now: i64,
    ) -> Result<(), LimiterError> {
        // One HDEL: the attempt settles and, when the policy says so, the state is cleared
        // (other attempts in flight stay counted).
        let mut command = redis::cmd("HDEL");
        command.arg(self.key(subject)).arg(pending_field(attempt));
        if self.policies.for_subject(subject).reset_on_success {
            command.arg(&STATE_FIELDS[..]);
        }
        let mut con = self.connection.clone();
        let _: i64 = command.query_async(&mut con).await.map_err(err)?;
        Ok(())
    }

    async fn release(&self, subject: &Subject, attempt: Uuid) -> Result<(), LimiterError> {
        let mut con = self.connection.clone();
        let _: i64 = redis::cmd("HDEL")
            .arg(self.key(subject))
            .arg(pending_field(attempt))
            .query_async(&mut con)
            .await
            .map_err(err)?;
        Ok(())
    }

    async fn forget(&self, subject: &Subject) -> Result<(), LimiterError> {
        let mut con = self.connection.clone();
        let _: i64 = redis::cmd("DEL")
            .arg(self.key(subject))
            .query_async(&mut con)
            .await
            .map_err(err)?;
        Ok(())
    }
}

/// Deletes every key under `namespace` (tests clean up after themselves with this).
pub async fn delete_namespace(url: &str, namespace: &str) -> Result<(), LimiterError> {
    let client = redis::Client::open(url).map_err(err)?;
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .map_err(err)?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{namespace}:*"))
        .query_async(&mut con)
        .await
        .map_err(err)?;
    if !keys.is_empty() {
        let _: i64 = redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut con)
            .await
            .map_err(err)?;
    }
    Ok(())
}
