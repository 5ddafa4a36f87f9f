//! fairdeal-harness: the pieces every service's test harness had a copy of, in one place.
//!
//! [`fairdeal_testkit`] prepares the test servers (a unique database, subject prefix and
//! key namespace per test); this crate starts from there and speaks the services' own
//! types:
//!
//! - [`Db`] and [`TestStore`]: the backend a test runs on, and its database (a fresh
//!   PostgreSQL database and a NATS subject prefix, or a SQLite file);
//! - [`common`]: the settings a service runs with in a test (port 0, the test's database,
//!   NATS under the test's subject prefix or the embedded bus);
//! - [`lazy`] and [`serving`]: a channel to a server on 127.0.0.1 and waiting until it
//!   serves;
//! - [`delete_streams`]: a test's JetStream streams deleted at its end;
//! - [`authenticator`], [`player_token`], [`service_token`] and [`with`]: tokens signed with
//!   a test key, the authenticator that accepts them, and a request carrying one;
//! - `drand` (feature `drand`): a local test beacon serving a test chain's rounds over
//!   drand's HTTP API, with switches to be slow, down or lying (not drand).
//!
//! Each helper panics with a message instead of returning an error: it is test code, and a
//! failure here is the test's failure.
#![forbid(unsafe_code)]
#![allow(clippy::expect_used)]

#[cfg(feature = "drand")]
pub mod drand;

use std::sync::Arc;

use fairdeal_authn::{
    AccessToken, Authenticator, AuthenticatorOptions, Claims, KeySet, SigningKey, StaticKeySource,
    attach_bearer,
};
use fairdeal_bus::JetStreamConfig;
use fairdeal_kit::CommonConfig;
use fairdeal_kit::config::SecretUrl;
use tonic::Request;
use tonic::transport::Channel;
use uuid::Uuid;

/// Where a test's services keep their events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    /// Temporary SQLite files (the embedded default), the in-process bus.
    Sqlite,
    /// A unique PostgreSQL database (one schema per service), dropped at the end, and NATS
    /// JetStream.
    Postgres,
}

/// The database of one test.
#[derive(Debug)]
pub struct TestStore {
    /// Where the SQLite files go.
    dir: std::path::PathBuf,
    /// The PostgreSQL database, to drop at the end (none on SQLite).
    pub database: Option<fairdeal_testkit::TestDatabase>,
    /// The NATS subject prefix its relays publish under (PostgreSQL only: on SQLite the bus
    /// is in process).
    pub prefix: Option<String>,
}

impl TestStore {
    /// On `db`: a fresh PostgreSQL database and a subject prefix for `service`, or SQLite
    /// files in `dir`.
    pub async fn new(db: Db, dir: &std::path::Path, service: &str) -> TestStore {
        let (database, prefix) = match db {
            Db::Postgres => (
                Some(
                    fairdeal_testkit::TestDatabase::create()
                        .await
                        .expect("a test database"),
                ),
                Some(fairdeal_testkit::subject_prefix(service)),
            ),
            Db::Sqlite => (None, None),
        };
        TestStore {
            dir: dir.to_owned(),
            database,
            prefix,
        }
    }

    /// The URL a service keeping its events in `file` opens: on PostgreSQL the one database
    /// (each service in its own schema), on SQLite that file in the directory.
    pub fn url(&self, file: &str) -> String {
        match &self.database {
            Some(database) => database.url().to_owned(),
            None => format!("sqlite://{}", self.dir.join(file).display()),
        }
    }
}

/// How long the tokens of [`player_token`] and [`service_token`] live: longer than any test.
pub const TOKEN_SECONDS: i64 = 3600;

/// The settings service `name` runs with in a test: listening on 127.0.0.1 port 0, over
/// `database_url`, and, with a `subject_prefix`, publishing to the test NATS server
/// ([`fairdeal_testkit::nats_url`]) under that prefix; without one, on the embedded
/// in-process bus. Every other setting is its default; a test sets more fields on the
/// result (a Redis URL, a connection budget).
pub fn common(name: &str, database_url: &str, subject_prefix: Option<&str>) -> CommonConfig {
    let mut common = CommonConfig::with_defaults(name)
        .expect("the default settings load (is a FAIRDEAL_* variable set wrong?)");
    common.listen_addr = ([127, 0, 0, 1], 0).into();
    common.database_url = SecretUrl::new(database_url);
    if let Some(prefix) = subject_prefix {
        common.nats_url = Some(SecretUrl::new(fairdeal_testkit::nats_url()));
        prefix.clone_into(&mut common.subject_prefix);
    }
    common
}

/// `http://127.0.0.1:<port>`.
pub fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// A channel to the server on 127.0.0.1 `port`, as services build theirs: nothing is
/// connected until the first call. Needs a Tokio runtime.
pub fn lazy(port: u16) -> Channel {
    fairdeal_kit::client::channel("url", &url(port)).expect("a channel to 127.0.0.1")
}

/// Waits until the server on 127.0.0.1 `port` reports SERVING
/// ([`fairdeal_testkit::wait_until_serving`]).
pub async fn serving(port: u16) {
    fairdeal_testkit::wait_until_serving(&url(port), "")
        .await
        .expect("the server serves");
}

/// Deletes the JetStream streams (events and dead letters) the relays of `services` created
/// under subject prefix `prefix` on the test NATS server, so that it does not keep every
/// test's streams. A stream never created is no error.
pub async fn delete_streams<S: AsRef<str>>(prefix: &str, services: impl IntoIterator<Item = S>) {
    let js = async_nats::jetstream::new(
        async_nats::connect(fairdeal_testkit::nats_url())
            .await
            .expect("the test NATS server accepts a connection"),
    );
    for service in services {
        let streams = JetStreamConfig::new(format!("{prefix}.{}", service.as_ref()))
            .expect("a subject prefix of fairdeal_testkit::subject_prefix");
        let _ = js.delete_stream(streams.stream_name()).await;
        let _ = js.delete_stream(streams.dead_letter_stream_name()).await;
    }
}

/// An authenticator that accepts the tokens signed by one of `keys`.
pub fn authenticator(keys: KeySet) -> Authenticator {
    Authenticator::new(
        Arc::new(StaticKeySource::new(keys)),
        AuthenticatorOptions::default(),
    )
}

/// A token of player `user`, signed with `signing`, valid for [`TOKEN_SECONDS`].
pub fn player_token(signing: &SigningKey, user: Uuid) -> AccessToken {
    signing
        .sign(&Claims::player(
            user,
            fairdeal_testkit::now(),
            TOKEN_SECONDS,
        ))
        .expect("a test key signs")
}

/// A token of service `name`, signed with `signing`, valid for [`TOKEN_SECONDS`].
pub fn service_token(signing: &SigningKey, name: &str) -> AccessToken {
    signing
        .sign(&Claims::service(
            name,
            fairdeal_testkit::now(),
            TOKEN_SECONDS,
        ))
        .expect("a test key signs")
}

/// `message` with `token` as its bearer.
pub fn with<T>(token: &AccessToken, message: T) -> Request<T> {
    let mut request = Request::new(message);
    attach_bearer(&mut request, token).expect("a signed token is a header value");
    request
}

#[cfg(test)]
mod tests {
    use fairdeal_authn::Caller;

    use super::*;

    #[test]
    fn a_test_service_listens_on_port_0_and_uses_nats_only_with_a_prefix() {
        let embedded = common("dealing", "sqlite:///tmp/x.db", None);
        assert_eq!(embedded.service_name, "dealing");
        assert_eq!(embedded.listen_addr.to_string(), "127.0.0.1:0");
        assert_eq!(embedded.database_url.expose_secret(), "sqlite:///tmp/x.db");
        assert!(embedded.nats_url.is_none());

        let relayed = common("dealing", "postgres://u@h/db", Some("t.abc"));
        assert_eq!(relayed.subject_prefix, "t.abc");
        assert_eq!(
            relayed.nats_url.as_ref().map(SecretUrl::expose_secret),
            Some(fairdeal_testkit::nats_url().as_str())
        );
    }

    #[tokio::test]
    async fn tokens_pass_their_authenticator_as_who_they_name() {
        let signing = SigningKey::generate().unwrap();
        let authn = authenticator(KeySet::new([signing.public_key()]));
        let user = Uuid::now_v7();
        assert_eq!(
            authn
                .verify(player_token(&signing, user).as_str())
                .await
                .unwrap(),
            Caller::Player(user)
        );
        let tables = service_token(&signing, "tables");
        assert_eq!(
            authn.verify(tables.as_str()).await.unwrap(),
            Caller::Service("tables".to_owned())
        );
        let request = with(&tables, ());
        assert_eq!(
            request.metadata().get("authorization").unwrap(),
            format!("Bearer {}", tables.as_str()).as_str()
        );
    }
}
