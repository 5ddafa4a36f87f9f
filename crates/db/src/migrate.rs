//! [`Migrations`]: a component's schema, one migration folder per backend.
//!
//! Schema lives in migrations only: a service never creates a table inline. Every
//! component (the event store, the bus, each service) ships `migrations/postgres/` and
//! `migrations/sqlite/` and tracks them in its own table `_<name>_migrations`, so the
//! components sharing one database (or one PostgreSQL schema) never clash over version
//! numbers. On PostgreSQL the tracking table and the tables the migrations create go into
//! the service's schema (the pool's `search_path`), which the first run creates.

use sqlx::AssertSqlSafe;
use sqlx::migrate::{MigrateError, Migrator};

use crate::pool::Db;

/// A component's migrations for both backends (build the two with `sqlx::migrate!`).
#[derive(Debug)]
pub struct Migrations {
    /// The component's name (a lowercase SQL identifier): its tracking table is
    /// `_<name>_migrations`.
    pub name: &'static str,
    /// `sqlx::migrate!("./migrations/postgres")`.
    pub postgres: Migrator,
    /// `sqlx::migrate!("./migrations/sqlite")`.
    pub sqlite: Migrator,
}

impl Db {
    /// Applies `migrations`' pending versions for this backend. Idempotent and safe from
    /// several processes at once (sqlx takes a lock while migrating).
    pub async fn migrate(&self, migrations: &Migrations) -> Result<(), MigrateError> {
        let table = format!("_{}_migrations", migrations.name);
        match self {
            Db::Postgres { pool, schema } => {
                let mut migrator =
                    Migrator::with_migrations(migrations.postgres.iter().cloned().collect());
                migrator.create_schema(schema.quoted());
                migrator.dangerous_set_table_name(format!("{}.{table}", schema.quoted()));
                // A session of the pool, so that migrating stays within the process's
                // connection budget, put in the schema: the migration SQL names its tables
                // unqualified, and a pool built elsewhere (tests, tools) may not set
                // `search_path` on its connections. It is closed afterwards rather than
                // returned, since the setting would outlive the migration.
                let mut conn = pool.acquire().await?;
                let in_schema = format!("SET search_path TO {}", schema.quoted());
                sqlx::raw_sql(AssertSqlSafe(in_schema))
                    .execute(&mut *conn)
                    .await?;
                let result = migrator.run(&mut *conn).await;
                conn.close().await?;
                result
            }
            Db::Sqlite { pool } => {
                let mut migrator =
                    Migrator::with_migrations(migrations.sqlite.iter().cloned().collect());
                migrator.dangerous_set_table_name(table);
                migrator.run(pool).await
            }
        }
    }
}
