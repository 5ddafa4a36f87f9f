//! A fresh PostgreSQL database per test, on the server [`crate::postgres_url`] names.

use sqlx::{AssertSqlSafe, Connection as _, PgConnection};
use uuid::Uuid;

use crate::{Error, redacted};

/// A fresh, empty PostgreSQL database named `fairdeal_test_<uuid>` (UUIDv7, simple form).
///
/// Drop it with the async [`TestDatabase::drop`] at the end of the test; one left behind by
/// a failed test goes away with the throwaway server `cargo xtask test` started.
#[derive(Debug, Clone)]
pub struct TestDatabase {
    /// URL of the server's maintenance database, to create and drop through.
    admin_url: String,
    /// The database's name (a plain identifier: no quoting needed).
    name: String,
    /// URL of the new database: the admin URL with its path replaced.
    url: String,
}

impl TestDatabase {
    /// Creates the database on [`crate::postgres_url`]'s server.
    pub async fn create() -> Result<Self, Error> {
        let admin_url = crate::postgres_url();
        let name = format!("fairdeal_test_{}", Uuid::now_v7().simple());
        let url = url_with_database(&admin_url, &name)?;
        execute(&admin_url, &format!("CREATE DATABASE {name}")).await?;
        Ok(Self {
            admin_url,
            name,
            url,
        })
    }

    /// The database's URL (user, host, port and query of the server's URL).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Drops the database, closing any connection still open to it. Idempotent, and takes
    /// `&self` so a harness that shares the database (behind an `Arc`) can drop it too.
    pub async fn drop(&self) -> Result<(), Error> {
        execute(
            &self.admin_url,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        )
        .await
    }
}

/// Runs one statement on a connection of its own (CREATE/DROP DATABASE cannot run inside a
/// transaction, nor on a connection to the database concerned).
async fn execute(admin_url: &str, statement: &str) -> Result<(), Error> {
    let failed = |action: &str, source| Error::Postgres {
        url: redacted(admin_url),
        action: action.to_owned(),
        source,
    };
    let mut conn = PgConnection::connect(admin_url)
        .await
        .map_err(|e| failed("connect", e))?;
    sqlx::query(AssertSqlSafe(statement.to_owned()))
        .execute(&mut conn)
        .await
        .map_err(|e| failed(statement, e))?;
    conn.close().await.map_err(|e| failed("disconnect", e))
}

/// `base` with its database path replaced by `/name`, query string kept:
/// `postgres://u@h:5432/postgres?sslmode=disable` becomes `postgres://u@h:5432/name?sslmode=disable`.
pub fn url_with_database(base: &str, name: &str) -> Result<String, Error> {
    let (without_query, query) = match base.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (base, None),
    };
    let authority_start = without_query
        .find("://")
        .map(|scheme_end| scheme_end + 3)
        .filter(|&start| start < without_query.len())
        .ok_or_else(|| Error::InvalidUrl {
            url: redacted(base),
        })?;
    let authority_end = without_query[authority_start..]
        .find('/')
        .map_or(without_query.len(), |slash| authority_start + slash);
    let mut url = format!("{}/{name}", &without_query[..authority_end]);
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_swap_only_the_path() {
        assert_eq!(
            url_with_database("postgres://postgres@127.0.0.1:5432/postgres", "x").unwrap(),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            url_with_database("postgres://u:p@h/postgres?sslmode=disable", "x").unwrap(),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(
            url_with_database("postgres://h", "x").unwrap(),
            "postgres://h/x"
        );
        assert!(url_with_database("127.0.0.1:5432", "x").is_err());
        assert!(url_with_database("postgres://", "x").is_err());
    }
}
