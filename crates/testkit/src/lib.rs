//! fairdeal-testkit: what every integration test needs around the real servers, in one place.
//!
//! The tests run against real PostgreSQL, Redis and NATS (with JetStream) servers, as
//! production does. `cargo xtask test` starts throwaway ones on free ports and hands their
//! URLs to the tests in `FAIRDEAL_TEST_POSTGRES_URL`, `FAIRDEAL_TEST_REDIS_URL` and
//! `FAIRDEAL_TEST_NATS_URL`; without them the tests use the standard ports on 127.0.0.1.
//! Tests share those servers, so each one works in its own space:
//!
//! - [`servers`]: the three URLs ([`postgres_url`], [`redis_url`], [`nats_url`]);
//! - [`TestDatabase`]: a fresh, uniquely named PostgreSQL database, dropped explicitly with
//!   the async [`TestDatabase::drop`] (a `Drop` impl cannot wait for the server);
//! - [`names`]: a unique NATS subject prefix ([`subject_prefix`]) and Redis key namespace
//!   ([`redis_namespace`]) per test;
//! - [`code_in_mail`]: the one-time code of the newest mail a service wrote to its mailbox
//!   directory;
//! - [`residue`]: the bytes a database keeps (the SQLite file and its log, a `pg_dump`), for
//!   tests that erased content is gone from them;
//! - `wait_until_serving` (feature `grpc`): waits until a gRPC server started on port 0
//!   reports SERVING through the standard health protocol, instead of sleeping;
//! - [`now`]: the time in Unix seconds, as tokens and the tables' clocks take it.
//!
//! This crate depends on no fairdeal crate, so any of them (the event store's conformance
//! suite included) can use it without a dependency cycle. What the services' tests share
//! on top of it (a service's settings for a test, clients, tokens) is `fairdeal-harness`;
//! helpers tied to one crate's types stay with that crate's tests (the end-to-end trace
//! recorder stays in `fairdeal-e2e`).
#![forbid(unsafe_code)]

#[cfg(feature = "grpc")]
mod grpc;
mod mailbox;
pub mod names;
mod postgres;
pub mod residue;
pub mod servers;

#[cfg(feature = "grpc")]
pub use grpc::{SERVING_PATIENCE, wait_until_serving};
pub use mailbox::code_in_mail;
pub use names::{redis_namespace, subject_prefix};
pub use postgres::{TestDatabase, url_with_database};
pub use servers::{nats_url, postgres_url, redis_url};

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in Unix seconds (a token's `iat`, a test clock's start).
pub fn now() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX)
}

/// A port free now on 127.0.0.1, for a server whose address must be known before it starts
/// (a replica announcing where it serves). Drawn below the kernel's ephemeral range (ports
/// 10000 to 32767, outside Linux's default 32768-60999), so the outgoing connections of
/// the tests running beside it, which take ephemeral ports, cannot take it before the
/// server binds it: a port got from binding port 0 was in that range, and a parallel test's
/// connection took one twice in CI runs ("address already in use"). Another test drawing
/// the same port in the same moment still could; tests accept that.
pub fn free_port() -> std::io::Result<u16> {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    const LOW: u16 = 10_000;
    const HIGH: u16 = 32_767;
    static DRAWS: AtomicU64 = AtomicU64::new(0);
    let random = RandomState::new();
    for _ in 0..64 {
        let draw = random.hash_one((DRAWS.fetch_add(1, Ordering::Relaxed), std::process::id()));
        let port = LOW + u16::try_from(draw % u64::from(HIGH - LOW + 1)).unwrap_or(0);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    // Nothing free below the ephemeral range (unlikely): any port the kernel gives.
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// What can go wrong while preparing a test's servers. Test code usually `unwrap`s it: the
/// message says which server and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The PostgreSQL server refused or failed a statement.
    #[error(
        "PostgreSQL at {url}: cannot {action} (are the test servers running? `cargo xtask test` starts them)"
    )]
    Postgres {
        /// The server's URL, password redacted.
        url: String,
        /// What was being done.
        action: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A URL that cannot name a database.
    #[error("{url} is not a URL of the form scheme://host[:port][/database][?query]")]
    InvalidUrl {
        /// The URL, password redacted.
        url: String,
    },
    /// A gRPC server did not report SERVING in time.
    #[cfg(feature = "grpc")]
    #[error("gRPC server at {url} did not report {service:?} SERVING: {reason}")]
    NotServing {
        /// The server's URL.
        url: String,
        /// The health-checked service name ("" for the whole server).
        service: String,
        /// The last thing that went wrong.
        reason: String,
    },
}

/// `url` with the password of its user info replaced by `***`, for messages.
fn redacted(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = url[scheme_end..]
        .find(['/', '?'])
        .map_or(url.len(), |i| scheme_end + i);
    let authority = &url[scheme_end..authority_end];
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!(
                "{}{user}:***@{host}{}",
                &url[..scheme_end],
                &url[authority_end..]
            ),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_is_below_the_ephemeral_range_and_bindable() {
        for _ in 0..20 {
            let port = free_port().unwrap();
            assert!((10_000..32_768).contains(&port), "{port}");
            std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        }
    }

    #[test]
    fn now_is_unix_seconds() {
        // 2026-01-01T00:00:00Z, and not milliseconds.
        let now = now();
        assert!(now > 1_767_225_600, "{now}");
        assert!(now < 100_000_000_000, "{now}");
    }

    #[test]
    fn passwords_are_redacted_and_nothing_else() {
        assert_eq!(
            redacted("postgres://u:secret@h:5432/db?sslmode=disable"),
            "postgres://u:***@h:5432/db?sslmode=disable"
        );
        assert_eq!(
            redacted("postgres://postgres@127.0.0.1:5432/postgres"),
            "postgres://postgres@127.0.0.1:5432/postgres"
        );
        assert_eq!(redacted("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redacted("not a url"), "not a url");
    }
}
