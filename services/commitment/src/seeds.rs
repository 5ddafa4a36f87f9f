//! Where sealed seeds live: a `sealed_seeds` table beside the event store (same database,
//! the service's own schema on PostgreSQL), never in an event.
//!
//! A seed row is written before the event that references it: a row whose event never got
//! appended is unreferenced and harmless, while an event naming a missing row cannot exist.
//! Rows are never updated or deleted (a revealed seed is in its reveal event; the sealed
//! copy stays for audits of the key ring).

use sqlx::{AssertSqlSafe, PgPool, Row, SqlitePool};
use uuid::Uuid;

use crate::vault::SealedSeed;

/// The sealed-seed table, on the same backend as the event store.
#[derive(Clone, Debug)]
pub enum SeedStore {
    /// PostgreSQL, in `schema`.
    Postgres {
        /// The event store's pool.
        pool: PgPool,
        /// The service's schema (validated by the event store).
        schema: String,
    },
    /// SQLite (embedded default).
    Sqlite {
        /// The event store's pool.
        pool: SqlitePool,
    },
}

impl SeedStore {
    /// Creates the table if needed (idempotent).
    pub async fn migrate(&self) -> Result<(), sqlx::Error> {
        match self {
            SeedStore::Postgres { pool, schema } => {
                sqlx::query(AssertSqlSafe(format!(
                    "CREATE TABLE IF NOT EXISTS \"{schema}\".sealed_seeds (
                        seed_id uuid PRIMARY KEY,
                        key_id text NOT NULL,
                        nonce bytea NOT NULL,
                        ciphertext bytea NOT NULL,
                        created_at timestamptz NOT NULL DEFAULT now())"
                )))
                .execute(pool)
                .await?;
            }
            SeedStore::Sqlite { pool } => {
                sqlx::query(
                    "CREATE TABLE IF NOT EXISTS sealed_seeds (
                        seed_id TEXT PRIMARY KEY,
                        key_id TEXT NOT NULL,
                        nonce BLOB NOT NULL,
                        ciphertext BLOB NOT NULL,
                        created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)",
                )
                .execute(pool)
                .await?;
            }
        }
        Ok(())
    }

    /// Stores a sealed seed.
    pub async fn insert(&self, sealed: &SealedSeed) -> Result<(), sqlx::Error> {
        match self {
            SeedStore::Postgres { pool, schema } => {
                // The event committing to this seed follows on another connection: the row
                // must really be committed, even on a connection sqlx left in a transaction.
                let mut conn = pool.acquire().await?;
                fairdeal_eventstore::postgres::leave_stale_transaction(&mut conn).await?;
                sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO \"{schema}\".sealed_seeds (seed_id, key_id, nonce, ciphertext) \
                     VALUES ($1, $2, $3, $4)"
                )))
                .bind(sealed.seed_id)
                .bind(&sealed.key_id)
                .bind(&sealed.nonce)
                .bind(&sealed.ciphertext)
                .execute(&mut *conn)
                .await?;
            }
            SeedStore::Sqlite { pool } => {
                sqlx::query(
                    "INSERT INTO sealed_seeds (seed_id, key_id, nonce, ciphertext) \
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .bind(sealed.seed_id.to_string())
                .bind(&sealed.key_id)
                .bind(&sealed.nonce)
                .bind(&sealed.ciphertext)
                .execute(pool)
                .await?;
            }
        }
        Ok(())
    }

    /// Reads a sealed seed (`None` if absent).
    pub async fn get(&self, seed_id: Uuid) -> Result<Option<SealedSeed>, sqlx::Error> {
        let row = match self {
            SeedStore::Postgres { pool, schema } => sqlx::query(AssertSqlSafe(format!(
                "SELECT key_id, nonce, ciphertext FROM \"{schema}\".sealed_seeds \
                     WHERE seed_id = $1"
            )))
            .bind(seed_id)
            .fetch_optional(pool)
            .await?
            .map(|row| -> Result<_, sqlx::Error> {
                Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))
            }),
            SeedStore::Sqlite { pool } => {
                sqlx::query("SELECT key_id, nonce, ciphertext FROM sealed_seeds WHERE seed_id = ?1")
                    .bind(seed_id.to_string())
                    .fetch_optional(pool)
                    .await?
                    .map(|row| -> Result<_, sqlx::Error> {
                        Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))
                    })
            }
        };
        row.transpose().map(|found| {
            found.map(|(key_id, nonce, ciphertext)| SealedSeed {
                seed_id,
                key_id,
                nonce,
                ciphertext,
            })
        })
    }
}
