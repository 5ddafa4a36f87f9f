//! [`AnyEventStore`]: the store of a service's [`Db`], whichever backend it is on.

use crate::error::StoreError;
use crate::fence::Fence;
use crate::postgres::PgEventStore;
use crate::sqlite::SqliteEventStore;
use crate::store::{Appended, EventStore};
use crate::version::ExpectedVersion;
use async_trait::async_trait;
use fairdeal_db::{ConnectionBudget, Db};
use fairdeal_event::{NewEvent, RecordedEvent, StreamId};
use std::sync::Arc;

/// Either backend, following the service's [`Db`]: PostgreSQL (the store of record, in the
/// service's schema) or SQLite (the embedded default). Services that append inside their
/// own transactions match on the variant to reach the backend's `append_in_tx`.
#[derive(Debug, Clone)]
pub enum AnyEventStore {
    /// PostgreSQL.
    Postgres(PgEventStore),
    /// SQLite.
    Sqlite(SqliteEventStore),
}

impl AnyEventStore {
    /// The store in `db` (PostgreSQL: the `events` table of its schema), its migrations run,
    /// with the default [`ConnectionBudget`]'s readers and writers.
    pub async fn open(db: &Db) -> Result<Self, StoreError> {
        Self::open_with_budget(db, ConnectionBudget::default()).await
    }

    /// [`AnyEventStore::open`] with `budget`'s readers' pool and group commit writers
    /// (PostgreSQL; SQLite has no server to run out of sessions).
    pub async fn open_with_budget(db: &Db, budget: ConnectionBudget) -> Result<Self, StoreError> {
        match db {
            Db::Postgres { pool, schema } => {
                let store = PgEventStore::new(pool.clone(), schema.as_str())?
                    .with_readers(budget.readers())
                    .with_group_commit_writers(budget.writers() as usize);
                store.migrate().await?;
                Ok(Self::Postgres(store))
            }
            Db::Sqlite { pool } => {
                let store = SqliteEventStore::new(pool.clone());
                store.migrate().await?;
                Ok(Self::Sqlite(store))
            }
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

    async fn append_fenced(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        fence: &Fence,
    ) -> Result<Appended, StoreError> {
        self.inner()
            .append_fenced(stream_id, expected, events, fence)
            .await
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

    async fn committed_position(&self) -> Result<u64, StoreError> {
        self.inner().committed_position().await
    }

    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError> {
        self.inner().stream_version(stream_id).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use fairdeal_db::{DatabaseUrl, Schema};

    #[tokio::test]
    async fn opens_the_store_of_a_sqlite_db() {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::sqlite(dir.path().join("e.db"));
        let db = Db::open(&url, &Schema::new("ignored").unwrap())
            .await
            .unwrap();
        let store = AnyEventStore::open(&db).await.unwrap();
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
