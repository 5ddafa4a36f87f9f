//! [`AnyEventStore`]: the backend chosen by a URL in the service's configuration.

use crate::error::StoreError;
use crate::postgres::PgEventStore;
use crate::sqlite::SqliteEventStore;
use crate::store::{Appended, EventStore};
use crate::version::ExpectedVersion;
use async_trait::async_trait;
use fairdeal_event::{NewEvent, RecordedEvent, StreamId};
use sqlx::sqlite::SqliteConnectOptions;
use std::str::FromStr;
use std::sync::Arc;

/// Either backend, picked at start from a URL: `postgres://…` / `postgresql://…` (the store
/// of record, in the given schema) or `sqlite://path/to/events.db` / `sqlite::memory:` (the
/// embedded default). Services that append inside their own transactions match on the
/// variant to reach the backend's `append_in_tx`.
#[derive(Debug, Clone)]
pub enum AnyEventStore {
    /// PostgreSQL.
    Postgres(PgEventStore),
    /// SQLite.
    Sqlite(SqliteEventStore),
}

impl AnyEventStore {
    /// Connects to the store at `url` and runs its migrations. `schema` is the PostgreSQL
    /// schema (ignored by SQLite, where each service has its own file or shares one log).
    pub async fn connect(url: &str, schema: &str) -> Result<Self, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres(PgEventStore::connect(url, schema).await?))
        } else if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?;
            Ok(Self::Sqlite(
                SqliteEventStore::open_with(SqliteEventStore::with_store_settings(options)).await?,
            ))
        } else {
            Err(StoreError::InvalidArgument(
                "event store URL must start with postgres://, postgresql:// or sqlite:".into(),
            ))
        }
    }

    /// The store as the trait object services hold.
    pub fn into_dyn(self) -> Arc<dyn EventStore> {
        match self {
            Self::Postgres(store) => Arc::new(store),
            Self::Sqlite(store) => Arc::new(store),
        }
    }

    fn inner(&self) -> &dyn EventStore {
        match self {
            Self::Postgres(store) => store,
            Self::Sqlite(store) => store,
        }
    }
}

#[async_trait]
impl EventStore for AnyEventStore {
    async fn append(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        self.inner().append(stream_id, expected, events).await
    }

    async fn read_stream(
        &self,
        stream_id: &StreamId,
        from_version: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        self.inner()
            .read_stream(stream_id, from_version, limit)
            .await
    }

    async fn read_all(
        &self,
        from_position: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        self.inner().read_all(from_position, limit).await
    }

    async fn head_position(&self) -> Result<u64, StoreError> {
        self.inner().head_position().await
    }

    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError> {
        self.inner().stream_version(stream_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rejects_unknown_schemes() {
        let err = AnyEventStore::connect("mysql://x", "s").await.unwrap_err();
        assert!(matches!(err, StoreError::InvalidArgument(_)));
    }

    #[tokio::test]
    async fn opens_sqlite_by_url() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("e.db").display());
        let store = AnyEventStore::connect(&url, "ignored").await.unwrap();
        assert!(matches!(store, AnyEventStore::Sqlite(_)));
        let store = store.into_dyn();
        let s = StreamId::parse("user-1").unwrap();
        store
            .append(
                &s,
                ExpectedVersion::NoStream,
                vec![NewEvent::new("t.v1.A", vec![1])],
            )
            .await
            .unwrap();
        assert_eq!(store.stream_version(&s).await.unwrap(), 1);
    }
}
