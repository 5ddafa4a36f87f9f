//! The commitments whose drand round may still have to be bound: the `pending_drand_rounds`
//! table beside the event store (migrations/), read when the service starts so that it
//! restarts their binders (a binder is a task of the process that committed; a restart
//! between the commit and the round would otherwise leave the round unbound until a deal or a
//! board generation asks for it).
//!
//! A row is written before the commitment event (as a sealed seed is): a row whose event
//! never got appended is harmless (the start finds no commitment and deletes the row once it is
//! an hour old, so that a commit still in flight in another replica keeps its row). A row is
//! deleted once its commitment has nothing left to bind (bound, revealed, or a table's client
//! seed fixed). The log stays the only truth: a row only says "look at this commitment".

use std::sync::Arc;

use async_trait::async_trait;
use fairdeal_db::{Backend, Db};
use sqlx::{Pool, Row};
use uuid::Uuid;

/// Most rows read at a start (far more than the commitments awaiting a round at any time).
pub const MAX_PENDING: i64 = 100_000;

/// A commitment whose drand round may still have to be bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// `table` or `tournament` (`DrandSubject::SUBJECT`).
    pub subject: String,
    /// The table's or tournament's id.
    pub id: Uuid,
    /// Unix seconds when the row was written.
    pub created_at: u64,
}

/// The `pending_drand_rounds` table.
#[async_trait]
pub trait PendingRounds: Send + Sync + std::fmt::Debug {
    /// Records that `subject` `id` has a drand round to bind (once; again is a no-op).
    async fn insert(&self, subject: &str, id: Uuid, now: u64) -> Result<(), sqlx::Error>;
    /// The recorded commitments, oldest first, at most [`MAX_PENDING`].
    async fn list(&self) -> Result<Vec<Pending>, sqlx::Error>;
    /// Forgets `subject` `id` (absent: a no-op).
    async fn remove(&self, subject: &str, id: Uuid) -> Result<(), sqlx::Error>;
}

/// The pending rounds of the service's database.
pub type PendingStore = Arc<dyn PendingRounds>;

/// The pending-round table of `db`, whichever backend it is on.
pub fn pending_store(db: &Db) -> PendingStore {
    fairdeal_db::on_db!(db, pool => Arc::new(PendingTable { pool: pool.clone() }))
}

/// [`PendingRounds`] over one backend's pool.
#[derive(Debug)]
struct PendingTable<DB: Backend> {
    /// The service's pool.
    pool: Pool<DB>,
}

fairdeal_db::for_each_backend! { DB =>
    #[async_trait]
    impl PendingRounds for PendingTable<DB> {
        async fn insert(&self, subject: &str, id: Uuid, now: u64) -> Result<(), sqlx::Error> {
            sqlx::query(
                "INSERT INTO pending_drand_rounds (subject, subject_id, created_at) \
                 VALUES ($1, $2, $3) ON CONFLICT (subject, subject_id) DO NOTHING",
            )
            .bind(subject)
            .bind(DB::store_uuid(id))
            .bind(i64::try_from(now).unwrap_or(i64::MAX))
            .execute(&self.pool)
            .await?;
            Ok(())
        }

        async fn list(&self) -> Result<Vec<Pending>, sqlx::Error> {
            let rows = sqlx::query(
                "SELECT subject, subject_id, created_at FROM pending_drand_rounds \
                 ORDER BY created_at, subject, subject_id LIMIT $1",
            )
            .bind(MAX_PENDING)
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    let created_at: i64 = row.try_get("created_at")?;
                    Ok(Pending {
                        subject: row.try_get("subject")?,
                        id: DB::load_uuid(row.try_get("subject_id")?, "subject_id")?,
                        created_at: u64::try_from(created_at).unwrap_or(0),
                    })
                })
                .collect()
        }

        async fn remove(&self, subject: &str, id: Uuid) -> Result<(), sqlx::Error> {
            sqlx::query("DELETE FROM pending_drand_rounds WHERE subject = $1 AND subject_id = $2")
                .bind(subject)
                .bind(DB::store_uuid(id))
                .execute(&self.pool)
                .await?;
            Ok(())
        }
    }
}
