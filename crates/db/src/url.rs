//! [`DatabaseUrl`]: the one setting that names a service's database, parsed once.
//!
//! Two forms are accepted:
//! - `postgres://user:password@host:port/database[?options]` (or `postgresql://`): the store
//!   of record. The URL may carry a password, so it is only ever shown redacted.
//! - `sqlite://path/to/file.db` or `sqlite:path/to/file.db`, optionally with `?mode=rwc`
//!   (the file is always created when missing): the embedded default. `:memory:` is refused:
//!   the store and its consumers open several connections, and each would see its own empty
//!   in-memory database.
//!
//! A value that fits neither is a [`DatabaseUrlError`] naming what is wrong and showing the
//! value with credentials redacted and at most [`SHOWN_PREFIX`] characters of it, so a
//! 1 MB setting or a password never ends up in an error line.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use secrecy::{ExposeSecret, SecretString};
use serde::{Serialize, Serializer};

/// How many characters of a rejected value an error shows.
pub const SHOWN_PREFIX: usize = 64;

/// A parsed database URL: PostgreSQL or a SQLite file.
#[derive(Clone)]
pub enum DatabaseUrl {
    /// A PostgreSQL server (the full URL, credentials included).
    Postgres(PostgresUrl),
    /// A SQLite database file.
    Sqlite(PathBuf),
}

/// A PostgreSQL URL: the secret full form and its redacted display form.
#[derive(Clone)]
pub struct PostgresUrl {
    /// The URL to connect with (may hold a password).
    full: SecretString,
    /// The URL with user, password and query values replaced by `***`.
    shown: String,
}

impl PostgresUrl {
    /// The full URL, for the one call that connects with it.
    pub fn expose_secret(&self) -> &str {
        self.full.expose_secret()
    }

    /// The URL with its credentials redacted, for logs and `--dump-config`.
    pub fn redacted(&self) -> &str {
        &self.shown
    }
}

/// Why a database URL was refused. Shows a redacted, shortened form of the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} (got `{shown}`)")]
pub struct DatabaseUrlError {
    /// What is wrong.
    pub reason: String,
    /// The value as it may be shown: credentials redacted, at most [`SHOWN_PREFIX`]
    /// characters.
    pub shown: String,
}

impl DatabaseUrl {
    /// Whether this names a PostgreSQL server.
    pub fn is_postgres(&self) -> bool {
        matches!(self, DatabaseUrl::Postgres(_))
    }

    /// A SQLite file URL for `path` (tests and the all-in-one binary build these).
    pub fn sqlite(path: impl AsRef<Path>) -> Self {
        DatabaseUrl::Sqlite(path.as_ref().to_owned())
    }
}

impl FromStr for DatabaseUrl {
    type Err = DatabaseUrlError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let refuse = |reason: &str| DatabaseUrlError {
            reason: reason.to_owned(),
            shown: shown(value),
        };
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            let parsed = url::Url::parse(value)
                .map_err(|e| refuse(&format!("not a valid PostgreSQL URL ({e})")))?;
            if parsed.host_str().is_none_or(str::is_empty) {
                return Err(refuse("a PostgreSQL URL needs a host"));
            }
            // sqlx parses it again at connect time; parse now so a bad option is a
            // configuration error, not a start-up failure. Its message may quote the value:
            // only the kind of failure is kept.
            value
                .parse::<sqlx::postgres::PgConnectOptions>()
                .map_err(|_| refuse("not a valid PostgreSQL URL (bad port or option)"))?;
            return Ok(DatabaseUrl::Postgres(PostgresUrl {
                full: SecretString::from(value.to_owned()),
                shown: redact(&parsed),
            }));
        }
        let Some(rest) = value
            .strip_prefix("sqlite://")
            .or_else(|| value.strip_prefix("sqlite:"))
        else {
            return Err(refuse(
                "must start with postgres://, postgresql:// or sqlite://",
            ));
        };
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if path.is_empty() {
            return Err(refuse("a SQLite URL needs a file path"));
        }
        if path == ":memory:" {
            return Err(refuse(
                "an in-memory SQLite database cannot be shared by the store's connections; give a file path",
            ));
        }
        for option in query.split('&').filter(|o| !o.is_empty()) {
            if option != "mode=rwc" {
                return Err(refuse(
                    "the only SQLite option is mode=rwc (the file is created when missing)",
                ));
            }
        }
        Ok(DatabaseUrl::Sqlite(PathBuf::from(path)))
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatabaseUrl::Postgres(url) => f.write_str(url.redacted()),
            DatabaseUrl::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for DatabaseUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A rejected value as an error may show it: a URL with its credentials redacted, anything
/// else as is, cut to [`SHOWN_PREFIX`] characters.
fn shown(value: &str) -> String {
    let text = match url::Url::parse(value) {
        Ok(parsed) if parsed.has_host() => redact(&parsed),
        // Not a URL with a host. Whatever stands before an `@` may be user info: hide it,
        // keeping a scheme if there is one.
        _ => match (value.split_once("://"), value.rsplit_once('@')) {
            (Some((scheme, _)), Some((_, host))) => format!("{scheme}://***@{host}"),
            (None, Some((_, host))) => format!("***@{host}"),
            (_, None) => value.to_owned(),
        },
    };
    shorten(&text)
}

/// `text` cut to [`SHOWN_PREFIX`] characters, with `…` when cut.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_PREFIX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The URL with user, password and every query value replaced by `***` (the query may hold
/// `password=` or TLS key paths).
fn redact(url: &url::Url) -> String {
    let mut url = url.clone();
    if !url.username().is_empty() {
        // Cannot fail on a URL with a host.
        let _ = url.set_username("***");
    }
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    if url.query().is_some() {
        let keys: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
        url.query_pairs_mut()
            .clear()
            .extend_pairs(keys.iter().map(|k| (k.as_str(), "***")));
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn postgres_urls_parse_and_never_show_credentials() {
        let url: DatabaseUrl = "postgres://app:hunter2@db.internal:5433/fairdeal?sslmode=require"
            .parse()
            .unwrap();
        assert!(url.is_postgres());
        let shown = url.to_string();
        assert!(
            !shown.contains("hunter2") && !shown.contains("app"),
            "{shown}"
        );
        assert!(shown.contains("db.internal:5433/fairdeal"), "{shown}");
        assert_eq!(format!("{url:?}"), shown);
        let DatabaseUrl::Postgres(pg) = &url else {
            unreachable!()
        };
        assert!(pg.expose_secret().contains("hunter2"));
        assert!("postgresql://h/db".parse::<DatabaseUrl>().is_ok());
    }

    #[test]
    fn sqlite_urls_give_a_path() {
        for (text, path) in [
            ("sqlite://fairdeal.db?mode=rwc", "fairdeal.db"),
            ("sqlite:///var/lib/fairdeal/x.db", "/var/lib/fairdeal/x.db"),
            ("sqlite:data/x.db", "data/x.db"),
        ] {
            let url: DatabaseUrl = text.parse().unwrap();
            assert!(
                matches!(&url, DatabaseUrl::Sqlite(p) if p == Path::new(path)),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_values_name_the_problem_without_secrets_or_length() {
        let cases = [
            ("mysql://root:pw@h/db", "must start with"),
            ("sqlite://", "needs a file path"),
            ("sqlite::memory:", "in-memory"),
            ("sqlite://x.db?cache=shared", "only SQLite option"),
            ("postgres://u:pw@:5432/db", "not a valid PostgreSQL URL"),
            (
                "postgres://u:pw@h:notaport/db",
                "not a valid PostgreSQL URL",
            ),
            ("", "must start with"),
        ];
        for (text, reason) in cases {
            let error = text.parse::<DatabaseUrl>().unwrap_err();
            assert!(error.reason.contains(reason), "{text}: {error}");
            assert!(!error.to_string().contains("pw"), "{text}: {error}");
        }
        let long = format!("sqlite://{}?bad=1", "x".repeat(1_000_000));
        let error = long.parse::<DatabaseUrl>().unwrap_err();
        assert!(error.to_string().len() < 300, "{}", error.to_string().len());
    }
}
