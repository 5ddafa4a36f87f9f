//! The one pattern for code that runs on both backends.
//!
//! SQL is written once. PostgreSQL and SQLite both accept `$1`-style parameters,
//! `RETURNING`, `ON CONFLICT ... DO UPDATE/NOTHING` with `excluded`, and the same column
//! types once ids are TEXT (or go through [`Backend::store_uuid`]), times INTEGER and hashes
//! byte strings. On PostgreSQL every connection's `search_path` is the service's schema, so
//! table names are unqualified on both.
//!
//! Rust code that must exist for both backends (a repository's trait impl, a consumer's
//! `Handler` impl, an inherent impl over a pool) is written once inside
//! [`for_each_backend!`], which compiles it twice, with the alias it names standing for
//! `sqlx::Postgres` and then `sqlx::Sqlite`. Where the backends really differ, the body asks
//! [`Backend`] (its constants and functions are the complete list of differences), and
//! [`on_db!`] picks the instance for a [`Db`] at start:
//!
//! ```ignore
//! pub struct SeedTable<DB: Backend> { pool: sqlx::Pool<DB> }
//!
//! fairdeal_db::for_each_backend! { DB =>
//!     #[async_trait::async_trait]
//!     impl SealedSeeds for SeedTable<DB> {
//!         async fn insert(&self, seed: &SealedSeed) -> Result<(), sqlx::Error> {
//!             sqlx::query("INSERT INTO sealed_seeds (seed_id, key_id) VALUES ($1, $2)")
//!                 .bind(seed.seed_id.to_string())
//!                 .bind(&seed.key_id)
//!                 .execute(&self.pool)
//!                 .await?;
//!             Ok(())
//!         }
//!     }
//! }
//!
//! let seeds: Arc<dyn SealedSeeds> =
//!     fairdeal_db::on_db!(&db, pool => Arc::new(SeedTable { pool: pool.clone() }));
//! ```
//!
//! Why a macro rather than generic code: a generic `fn f<DB: sqlx::Database>` needs a bound
//! for every type it binds or decodes and for the executor of every connection type
//! (`for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>`, `String: Encode<DB>`,
//! ...), repeated at every use, because Rust does not imply where-clauses of a trait. Compiled
//! per backend, the same text needs none of them.

use std::future::Future;

use sqlx::{Pool, Postgres, Sqlite, Transaction};
use uuid::Uuid;

use crate::pool::{BackendKind, Db, Schema};

mod sealed {
    pub trait Sealed {}
    impl Sealed for sqlx::Postgres {}
    impl Sealed for sqlx::Sqlite {}
}

/// A database backend: PostgreSQL or SQLite. Sealed; its items are every difference between
/// the two that code written once has to know about.
pub trait Backend: sqlx::Database + sealed::Sealed {
    /// Which one this is.
    const KIND: BackendKind;

    /// The SQL function giving the larger of two values (`GREATEST` on PostgreSQL, the
    /// two-argument `MAX` on SQLite).
    const GREATEST: &'static str;

    /// The current time as a SQL expression of the type timestamp columns have here
    /// (`timestamptz` on PostgreSQL, ISO-8601 UTC text with milliseconds on SQLite, which
    /// sorts like time).
    const NOW: &'static str;

    /// A SQL expression for "`$param` seconds before now", comparable with [`Self::NOW`]'s
    /// type (`$param` is a placeholder such as `$2` bound to an integer).
    fn seconds_ago(param: &str) -> String;

    /// How a UUID column is stored: `uuid` on PostgreSQL, hyphenated TEXT on SQLite.
    type StoredUuid;

    /// A UUID as this backend binds it.
    fn store_uuid(id: Uuid) -> Self::StoredUuid;

    /// A UUID as this backend decoded it; a malformed stored value is a decode error
    /// naming the column.
    fn load_uuid(stored: Self::StoredUuid, column: &str) -> Result<Uuid, sqlx::Error>;

    /// A list of UUIDs bound as one parameter (so a statement over many ids is one text,
    /// prepared once): `uuid[]` on PostgreSQL, a JSON array of hyphenated ids on SQLite.
    type UuidList;

    /// `ids` as this backend binds a [`Self::UuidList`].
    fn uuid_list(ids: &[Uuid]) -> Self::UuidList;

    /// A SQL row source of one column, `id` (a stored UUID), from the [`Self::UuidList`]
    /// bound at `param` (such as `$2`), in list order.
    fn uuid_rows(param: &str) -> String;

    /// This backend's pool in `db`, if `db` is on this backend.
    fn pool(db: &Db) -> Option<&Pool<Self>>;

    /// `pool` as a [`Db`] (`schema` is the PostgreSQL schema; SQLite has none).
    fn db(pool: Pool<Self>, schema: &Schema) -> Db;

    /// Begins a transaction that will write. SQLite takes the write lock up front
    /// (`BEGIN IMMEDIATE`): a deferred transaction that reads before it writes fails with
    /// `SQLITE_BUSY` when another writer got in between, instead of waiting its turn.
    fn begin_write(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;
}

impl Backend for Postgres {
    const KIND: BackendKind = BackendKind::Postgres;
    const GREATEST: &'static str = "GREATEST";
    const NOW: &'static str = "now()";
    type StoredUuid = Uuid;

    fn seconds_ago(param: &str) -> String {
        format!("(now() - ({param} * interval '1 second'))")
    }

    fn store_uuid(id: Uuid) -> Uuid {
        id
    }

    fn load_uuid(stored: Uuid, _column: &str) -> Result<Uuid, sqlx::Error> {
        Ok(stored)
    }

    type UuidList = Vec<Uuid>;

    fn uuid_list(ids: &[Uuid]) -> Vec<Uuid> {
        ids.to_vec()
    }

    fn uuid_rows(param: &str) -> String {
        format!("UNNEST({param}::uuid[]) WITH ORDINALITY AS ids(id, n)")
    }

    fn pool(db: &Db) -> Option<&Pool<Self>> {
        match db {
            Db::Postgres { pool, .. } => Some(pool),
            Db::Sqlite { .. } => None,
        }
    }

    fn db(pool: Pool<Self>, schema: &Schema) -> Db {
        Db::Postgres {
            pool,
            schema: schema.clone(),
        }
    }

    async fn begin_write(pool: &Pool<Self>) -> Result<Transaction<'static, Self>, sqlx::Error> {
        pool.begin().await
    }
}

impl Backend for Sqlite {
    const KIND: BackendKind = BackendKind::Sqlite;
    const GREATEST: &'static str = "MAX";
    const NOW: &'static str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
    type StoredUuid = String;

    fn seconds_ago(param: &str) -> String {
        format!("strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || {param} || ' seconds')")
    }

    fn store_uuid(id: Uuid) -> String {
        id.hyphenated().to_string()
    }

    fn load_uuid(stored: String, column: &str) -> Result<Uuid, sqlx::Error> {
        Uuid::parse_str(&stored).map_err(|source| sqlx::Error::ColumnDecode {
            index: column.to_owned(),
            source: Box::new(source),
        })
    }

    type UuidList = String;

    fn uuid_list(ids: &[Uuid]) -> String {
        // Hyphenated ids need no escaping: the JSON is built directly.
        let mut json = String::with_capacity(2 + ids.len() * 39);
        json.push('[');
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push('"');
            json.push_str(&id.hyphenated().to_string());
            json.push('"');
        }
        json.push(']');
        json
    }

    fn uuid_rows(param: &str) -> String {
        format!("(SELECT value AS id, key AS n FROM json_each({param})) AS ids")
    }

    fn pool(db: &Db) -> Option<&Pool<Self>> {
        match db {
            Db::Sqlite { pool } => Some(pool),
            Db::Postgres { .. } => None,
        }
    }

    fn db(pool: Pool<Self>, _schema: &Schema) -> Db {
        Db::Sqlite { pool }
    }

    async fn begin_write(pool: &Pool<Self>) -> Result<Transaction<'static, Self>, sqlx::Error> {
        pool.begin_with("BEGIN IMMEDIATE").await
    }
}

/// Compiles the items that follow twice: with `$alias` standing for `sqlx::Postgres`, then
/// for `sqlx::Sqlite`, with [`Backend`]'s items in scope. See the [module docs](crate::backend).
#[macro_export]
macro_rules! for_each_backend {
    ($alias:ident => $($item:item)*) => {
        const _: () = {
            #[allow(unused_imports)]
            use $crate::__private::Postgres as $alias;
            #[allow(unused_imports)]
            use $crate::Backend as _;
            $($item)*
        };
        const _: () = {
            #[allow(unused_imports)]
            use $crate::__private::Sqlite as $alias;
            #[allow(unused_imports)]
            use $crate::Backend as _;
            $($item)*
        };
    };
}

/// Evaluates `$body` with `$pool` bound to the pool of the [`Db`] `$db`, whichever backend
/// it is on (the body is compiled once per backend). See the [module docs](crate::backend).
#[macro_export]
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::Db::Postgres { pool: $pool, .. } => $body,
            $crate::Db::Sqlite { pool: $pool } => $body,
        }
    };
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::DatabaseUrl;

    /// A repository written once for both backends.
    trait Counter {
        fn increment(&self, name: &str) -> impl Future<Output = Result<i64, sqlx::Error>>;
    }

    struct Counters<DB: Backend> {
        pool: Pool<DB>,
    }

    crate::for_each_backend! { DB =>
        impl Counter for Counters<DB> {
            async fn increment(&self, name: &str) -> Result<i64, sqlx::Error> {
                let sql = format!(
                    "INSERT INTO counters (name, value) VALUES ($1, 1) \
                     ON CONFLICT (name) DO UPDATE SET value = {}(counters.value + 1, 0) \
                     RETURNING value",
                    DB::GREATEST
                );
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .bind(name)
                    .fetch_one(&self.pool)
                    .await
            }
        }
    }

    #[tokio::test]
    async fn one_body_runs_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(
            &DatabaseUrl::sqlite(dir.path().join("c.db")),
            &Schema::new("x").unwrap(),
        )
        .await
        .unwrap();
        let Db::Sqlite { pool } = &db else {
            unreachable!()
        };
        sqlx::query("CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            .execute(pool)
            .await
            .unwrap();
        let value = on_db!(&db, pool => {
            let counters = Counters { pool: pool.clone() };
            counters.increment("a").await.unwrap();
            counters.increment("a").await.unwrap()
        });
        assert_eq!(value, 2);
        assert_eq!(
            Sqlite::load_uuid(Sqlite::store_uuid(Uuid::nil()), "id").unwrap(),
            Uuid::nil()
        );
        assert!(Sqlite::load_uuid("nope".into(), "id").is_err());
    }

    /// A list of ids bound as one parameter comes back as rows, in order, on SQLite (the
    /// PostgreSQL form is exercised by every bus consumer test).
    #[tokio::test]
    async fn a_uuid_list_is_one_parameter() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let ids: Vec<Uuid> = (1..=3u128).map(Uuid::from_u128).collect();
        let sql = format!("SELECT id FROM {} ORDER BY n", Sqlite::uuid_rows("$1"));
        let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(Sqlite::uuid_list(&ids))
            .fetch_all(&pool)
            .await
            .unwrap();
        let back: Vec<Uuid> = rows
            .into_iter()
            .map(|r| Sqlite::load_uuid(r, "id").unwrap())
            .collect();
        assert_eq!(back, ids);
        assert_eq!(Sqlite::uuid_list(&[]), "[]");
    }
}
