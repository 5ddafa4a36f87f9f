//! Where sealed seeds live: the `sealed_seeds` table beside the event store (same database,
//! the service's own schema on PostgreSQL; created by `migrations/`), never in an event.
//!
//! A seed row is written before the event that references it: a row whose event never got
//! appended is unreferenced and harmless, while an event naming a missing row cannot exist.
//! Rows are never updated or deleted (a revealed seed is in its reveal event; the sealed
//! copy stays for audits of the key ring).

use std::sync::Arc;

use async_trait::async_trait;
use fairdeal_db::{Backend, Db};
use sqlx::{Pool, Row};
use uuid::Uuid;

use crate::vault::SealedSeed;

/// The service's schema, both backends (tracked in `_commitment_migrations`).
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "commitment",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// The sealed-seed table.
#[async_trait]
pub trait SealedSeeds: Send + Sync + std::fmt::Debug {
    /// Stores a sealed seed.
    async fn insert(&self, sealed: &SealedSeed) -> Result<(), sqlx::Error>;
    /// Reads a sealed seed (`None` if absent).
    async fn get(&self, seed_id: Uuid) -> Result<Option<SealedSeed>, sqlx::Error>;
    /// Every key id that sealed a stored seed, with how many seeds it sealed, by key id.
    async fn key_ids(&self) -> Result<Vec<(String, u64)>, sqlx::Error>;
}

/// The sealed seeds of the service's database.
pub type SeedStore = Arc<dyn SealedSeeds>;

/// The seed store of `db`, whichever backend it is on.
pub fn seed_store(db: &Db) -> SeedStore {
    fairdeal_db::on_db!(db, pool => Arc::new(SeedTable { pool: pool.clone() }))
}

/// [`SealedSeeds`] over one backend's pool.
#[derive(Debug)]
struct SeedTable<DB: Backend> {
    /// The service's pool.
    pool: Pool<DB>,
}

fairdeal_db::for_each_backend! { DB =>
    #[async_trait]
    impl SealedSeeds for SeedTable<DB> {
        async fn insert(&self, sealed: &SealedSeed) -> Result<(), sqlx::Error> {
            sqlx::query(
                "INSERT INTO sealed_seeds (seed_id, key_id, nonce, ciphertext) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(DB::store_uuid(sealed.seed_id))
            .bind(&sealed.key_id)
            .bind(&sealed.nonce)
            .bind(&sealed.ciphertext)
            .execute(&self.pool)
            .await?;
            Ok(())
        }

        async fn get(&self, seed_id: Uuid) -> Result<Option<SealedSeed>, sqlx::Error> {
            let row = sqlx::query(
                "SELECT key_id, nonce, ciphertext FROM sealed_seeds WHERE seed_id = $1",
            )
            .bind(DB::store_uuid(seed_id))
            .fetch_optional(&self.pool)
            .await?;
            row.map(|row| {
                Ok(SealedSeed {
                    seed_id,
                    key_id: row.try_get("key_id")?,
                    nonce: row.try_get("nonce")?,
                    ciphertext: row.try_get("ciphertext")?,
                })
            })
            .transpose()
        }

        async fn key_ids(&self) -> Result<Vec<(String, u64)>, sqlx::Error> {
            let rows = sqlx::query(
                "SELECT key_id, COUNT(*) AS seeds FROM sealed_seeds \
                 GROUP BY key_id ORDER BY key_id",
            )
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    let seeds: i64 = row.try_get("seeds")?;
                    Ok((row.try_get("key_id")?, u64::try_from(seeds).unwrap_or(0)))
                })
                .collect()
        }
    }
}
