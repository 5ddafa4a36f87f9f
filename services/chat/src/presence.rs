//! Presence: who is connected to which channel, i.e. holds an open `Subscribe` stream. A
//! connection is recorded with an expiry that its stream keeps pushing forward while it is
//! open, and removed when the stream ends; a replica that dies leaves connections that
//! simply expire.
//!
//! - [`MemoryPresence`]: one process (the embedded default, tests).
//! - [`RedisPresence`]: shared by every replica: one sorted set per (channel, user), members
//!   the connection ids, scores their expiry (ms), so any replica sees a connection another
//!   replica holds; the key itself expires too, so nothing outlives its connections.
//!
//! Times come from the caller (the service's injected clock).

use std::collections::HashMap;
use std::fmt;
use std::sync::PoisonError;

use async_trait::async_trait;
use fairdeal_platform::quota::LimiterError;
use redis::aio::ConnectionManager;
use uuid::Uuid;

use crate::domain::Channel;

/// Who is connected where.
#[async_trait]
pub trait Presence: Send + Sync + fmt::Debug {
    /// Records (or refreshes) connection `connection` of `user` to `channel` until
    /// `expires_ms` (Unix ms).
    async fn touch(
        &self,
        channel: Channel,
        user: Uuid,
        connection: Uuid,
        expires_ms: i64,
    ) -> Result<(), LimiterError>;
    /// Removes the connection.
    async fn leave(
        &self,
        channel: Channel,
        user: Uuid,
        connection: Uuid,
    ) -> Result<(), LimiterError>;
    /// Whether `user` has a connection to `channel` that has not expired at `now_ms`.
    async fn is_connected(
        &self,
        channel: Channel,
        user: Uuid,
        now_ms: i64,
    ) -> Result<bool, LimiterError>;
}

/// Presence within one process.
#[derive(Debug, Default)]
pub struct MemoryPresence {
    /// Connections and their expiry, per channel and user.
    connections: std::sync::Mutex<HashMap<(Channel, Uuid), HashMap<Uuid, i64>>>,
}

#[async_trait]
impl Presence for MemoryPresence {
    async fn touch(
        &self,
        channel: Channel,
        user: Uuid,
        connection: Uuid,
        expires_ms: i64,
    ) -> Result<(), LimiterError> {
        let mut all = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        all.entry((channel, user))
            .or_default()
            .insert(connection, expires_ms);
        Ok(())
    }

    async fn leave(
        &self,
        channel: Channel,
        user: Uuid,
        connection: Uuid,
    ) -> Result<(), LimiterError> {
        let mut all = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(conns) = all.get_mut(&(channel, user)) {
            conns.remove(&connection);
            if conns.is_empty() {
                all.remove(&(channel, user));
            }
        }
        Ok(())
    }

    async fn is_connected(
        &self,
        channel: Channel,
        user: Uuid,
        now_ms: i64,
    ) -> Result<bool, LimiterError> {
        let all = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(all
            .get(&(channel, user))
            .is_some_and(|conns| conns.values().any(|expires| *expires > now_ms)))
    }
}

/// Presence shared by every replica through Redis.
#[derive(Clone)]
pub struct RedisPresence {
    /// Auto-reconnecting connection, cheap to clone per call.
    connection: ConnectionManager,
    /// Prefix of every key, so deployments (and tests) sharing a Redis stay apart.
    namespace: String,
    /// How long a key outlives its last refresh, ms (garbage collection of dead replicas'
    /// connections; the scores decide presence).
    key_ttl_ms: i64,
}

impl fmt::Debug for RedisPresence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPresence")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl RedisPresence {
    /// Connects to `url`; keys start with `namespace`; keys live `key_ttl_ms` after their
    /// last refresh.
    pub async fn connect(
        url: &str,
        namespace: &str,
        key_ttl_ms: i64,
    ) -> Result<Self, LimiterError> {
        let client = redis::Client::open(url).map_err(|e| LimiterError(e.to_string()))?;
        let connection = client
            .get_connection_manager()
            .await
            .map_err(|e| LimiterError(e.to_string()))?;
        Ok(Self {
            connection,
            namespace: namespace.to_owned(),
            key_ttl_ms,
        })
    }

    fn key(&self, channel: Channel, user: Uuid) -> String {
        format!("{}:presence:{channel}:{user}", self.namespace)
    }
}

fn redis_error(error: redis::RedisError) -> LimiterError {
    LimiterError(error.to_string())
}

#[async_trait]
impl Presence for RedisPresence {
    async fn touch(
        &self,
        channel: Channel,
        user: Uuid,
        connection: Uuid,
        expires_ms: i64,
    ) -> Result<(), LimiterError> {
        let mut con = self.connection.clone();
        let key = self.key(channel, user);
        redis::pipe()
            .atomic()
            .zadd(&key, connection.to_string(), expires_ms)
            .ignore()
            .pexpire(&key, self.key_ttl_ms)
            .ignore()
            .query_async::<()>(&mut con)
            .await
            .map_err(redis_error)
    }

    async fn leave(
        &self,
        channel: Channel,
        user: Uuid,
        connection: Uuid,
    ) -> Result<(), LimiterError> {
        let mut con = self.connection.clone();
        redis::cmd("ZREM")
            .arg(self.key(channel, user))
            .arg(connection.to_string())
            .query_async::<()>(&mut con)
            .await
            .map_err(redis_error)
    }

    async fn is_connected(
        &self,
        channel: Channel,
        user: Uuid,
        now_ms: i64,
    ) -> Result<bool, LimiterError> {
        let mut con = self.connection.clone();
        // Connections expiring after now (exclusive).
        let live: i64 = redis::cmd("ZCOUNT")
            .arg(self.key(channel, user))
            .arg(format!("({now_ms}"))
            .arg("+inf")
            .query_async(&mut con)
            .await
            .map_err(redis_error)?;
        Ok(live > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_presence_expires_and_leaves() {
        let presence = MemoryPresence::default();
        let (user, a, b) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        assert!(
            !presence
                .is_connected(Channel::Lobby, user, 0)
                .await
                .unwrap()
        );
        presence.touch(Channel::Lobby, user, a, 100).await.unwrap();
        presence.touch(Channel::Lobby, user, b, 50).await.unwrap();
        assert!(
            presence
                .is_connected(Channel::Lobby, user, 60)
                .await
                .unwrap()
        );
        assert!(
            !presence
                .is_connected(Channel::Lobby, user, 100)
                .await
                .unwrap()
        );
        let table = Channel::Table(Uuid::now_v7());
        assert!(!presence.is_connected(table, user, 0).await.unwrap());
        presence.leave(Channel::Lobby, user, a).await.unwrap();
        assert!(
            presence
                .is_connected(Channel::Lobby, user, 10)
                .await
                .unwrap()
        );
        assert!(
            !presence
                .is_connected(Channel::Lobby, user, 60)
                .await
                .unwrap()
        );
        presence.leave(Channel::Lobby, user, b).await.unwrap();
        assert!(presence.connections.lock().unwrap().is_empty());
    }
}
