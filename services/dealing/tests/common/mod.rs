//! Test harness: both services on port 0 over a fresh backend (a unique PostgreSQL database
//! or temporary SQLite files), signed test tokens, gRPC clients, and the `fairdeal` CLI.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use fairdeal_authn::{
    AccessToken, Authenticator, AuthenticatorOptions, Claims, KeySet, SigningKey, StaticKeySource,
    StaticToken, attach_bearer,
};
use fairdeal_commitment::vault::KeyRing;
use fairdeal_kit::CommonConfig;
use fairdeal_platform::{StartError, Storage};
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_client::DealingServiceClient;
use tonic::Request;
use tonic::transport::Channel;
use uuid::Uuid;

/// Where the services keep their events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    /// A unique PostgreSQL database, dropped at the end.
    Postgres,
    /// Temporary SQLite files (the embedded default).
    Sqlite,
}

/// A running pair of services.
pub struct TestApp {
    pub commitment: CommitmentServiceClient<Channel>,
    pub dealing: DealingServiceClient<Channel>,
    /// `http://127.0.0.1:<port>` of each service.
    pub commitment_url: String,
    pub dealing_url: String,
    pub commitment_storage: Storage,
    pub dealing_storage: Storage,
    /// The commitment service's settings (for replicas of it).
    pub commitment_common: CommonConfig,
    signing: SigningKey,
    shutdowns: Vec<fairdeal_kit::Shutdown>,
    database: Option<fairdeal_testkit::TestDatabase>,
    /// Unique NATS subject prefix (PostgreSQL runs relay to JetStream).
    prefix: Option<String>,
    _dir: tempfile::TempDir,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn authenticator(keys: KeySet) -> Authenticator {
    Authenticator::new(
        Arc::new(StaticKeySource::new(keys)),
        AuthenticatorOptions::default(),
    )
}

fn common(name: &str, database_url: &str, prefix: Option<&str>) -> CommonConfig {
    let mut c = CommonConfig::with_defaults(name).unwrap();
    c.listen_addr = "127.0.0.1:0".parse().unwrap();
    c.database_url = fairdeal_kit::config::SecretUrl::new(database_url);
    if let Some(prefix) = prefix {
        c.nats_url = Some(fairdeal_kit::config::SecretUrl::new(
            fairdeal_testkit::nats_url(),
        ));
        c.subject_prefix = prefix.to_owned();
    }
    c
}

impl TestApp {
    pub async fn spawn(db: Db) -> TestApp {
        Self::spawn_with_keys(db, KeyRing::generate("test").unwrap()).await
    }

    /// Both services, the commitment service sealing seeds with `keys`.
    pub async fn spawn_with_keys(db: Db, seed_keys: KeyRing) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let (commitment_url, dealing_url, database) = match db {
            Db::Postgres => {
                let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
                let url = database.url().to_owned();
                (url.clone(), url, Some(database))
            }
            Db::Sqlite => (
                format!("sqlite://{}", dir.path().join("commitment.db").display()),
                format!("sqlite://{}", dir.path().join("dealing.db").display()),
                None,
            ),
        };
        let prefix = database
            .is_some()
            .then(|| fairdeal_testkit::subject_prefix("dealing"));
        let signing = SigningKey::generate().unwrap();
        let keys = || KeySet::new([signing.public_key()]);
        let commitment_common = common("commitment", &commitment_url, prefix.as_deref());
        let dealing_common = common("dealing", &dealing_url, prefix.as_deref());
        let commitment_storage = Storage::open(
            &commitment_common,
            fairdeal_commitment::startup::SCHEMA,
            &[&fairdeal_commitment::seeds::MIGRATIONS],
        )
        .await
        .unwrap();
        let dealing_storage =
            Storage::open(&dealing_common, fairdeal_dealing::startup::SCHEMA, &[])
                .await
                .unwrap();

        let commitment_app = fairdeal_commitment::Application::assemble(
            &commitment_common,
            fairdeal_commitment::startup::Parts {
                storage: commitment_storage.clone(),
                keys: seed_keys,
                authn: authenticator(keys()),
            },
        )
        .await
        .unwrap();
        let commitment_port = commitment_app.port();
        let dealing_token = signing
            .sign(&Claims::service("dealing", now(), 3600))
            .unwrap();
        let dealing_app = fairdeal_dealing::Application::assemble(
            &dealing_common,
            fairdeal_dealing::startup::Parts {
                storage: dealing_storage.clone(),
                commitment: fairdeal_kit::client::channel(
                    "commitment_url",
                    &format!("http://127.0.0.1:{commitment_port}"),
                )
                .unwrap(),
                tokens: Arc::new(StaticToken::new(dealing_token)),
                authn: authenticator(keys()),
            },
        )
        .await
        .unwrap();
        let dealing_port = dealing_app.port();
        let shutdowns = vec![commitment_app.shutdown(), dealing_app.shutdown()];
        tokio::spawn(commitment_app.run_until_stopped());
        tokio::spawn(dealing_app.run_until_stopped());
        for port in [commitment_port, dealing_port] {
            fairdeal_testkit::wait_until_serving(&format!("http://127.0.0.1:{port}"), "")
                .await
                .unwrap();
        }
        let channel = |port: u16| {
            Channel::from_shared(format!("http://127.0.0.1:{port}"))
                .unwrap()
                .connect_lazy()
        };
        TestApp {
            commitment_url: format!("http://127.0.0.1:{commitment_port}"),
            dealing_url: format!("http://127.0.0.1:{dealing_port}"),
            commitment: CommitmentServiceClient::new(channel(commitment_port)),
            dealing: DealingServiceClient::new(channel(dealing_port)),
            commitment_storage,
            dealing_storage,
            commitment_common,
            signing,
            shutdowns,
            database,
            prefix,
            _dir: dir,
        }
    }

    /// Starts another replica of the commitment service over the same database (a storage
    /// of its own, as another process would open) with `keys`; returns a client of it and
    /// its shutdown handle, or why it refused to start.
    pub async fn commitment_replica(
        &self,
        keys: KeyRing,
    ) -> Result<(CommitmentServiceClient<Channel>, fairdeal_kit::Shutdown), StartError> {
        let storage = Storage::open(
            &self.commitment_common,
            fairdeal_commitment::startup::SCHEMA,
            &[&fairdeal_commitment::seeds::MIGRATIONS],
        )
        .await
        .unwrap();
        let app = fairdeal_commitment::Application::assemble(
            &self.commitment_common,
            fairdeal_commitment::startup::Parts {
                storage,
                keys,
                authn: authenticator(KeySet::new([self.signing.public_key()])),
            },
        )
        .await?;
        let port = app.port();
        let shutdown = app.shutdown();
        tokio::spawn(app.run_until_stopped());
        let url = format!("http://127.0.0.1:{port}");
        fairdeal_testkit::wait_until_serving(&url, "")
            .await
            .unwrap();
        let channel = Channel::from_shared(url).unwrap().connect_lazy();
        Ok((CommitmentServiceClient::new(channel), shutdown))
    }

    pub fn player_token(&self, user: Uuid) -> AccessToken {
        self.signing
            .sign(&Claims::player(user, now(), 3600))
            .unwrap()
    }

    pub fn service_token(&self, name: &str) -> AccessToken {
        self.signing
            .sign(&Claims::service(name, now(), 3600))
            .unwrap()
    }

    /// A new table committed to through the commitment service as `tables` (no delayed
    /// source); its id.
    pub async fn new_table(&mut self, tables: &AccessToken) -> String {
        let table_id = Uuid::now_v7().to_string();
        self.commitment
            .create_table_commitment(with(
                tables,
                fairdeal_proto::fairdeal::commitment::v1::CreateTableCommitmentRequest {
                    table_id: table_id.clone(),
                    delayed_source: String::new(),
                },
            ))
            .await
            .unwrap();
        table_id
    }

    /// With NATS: waits until each service's JetStream events stream holds exactly the
    /// events of its store (the relay delivered everything, nothing twice).
    pub async fn assert_relayed(&self) {
        let Some(prefix) = &self.prefix else { return };
        let js = async_nats::jetstream::new(
            async_nats::connect(fairdeal_testkit::nats_url())
                .await
                .unwrap(),
        );
        for (service, storage) in [
            ("commitment", &self.commitment_storage),
            ("dealing", &self.dealing_storage),
        ] {
            // Every committed row (read_all would hold back events behind any open
            // transaction of the cluster, possibly another test's).
            let fairdeal_db::Db::Postgres { pool, .. } = storage.db() else {
                unreachable!("NATS runs only with PostgreSQL here")
            };
            let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
                .fetch_one(pool)
                .await
                .unwrap();
            let stored = stored as u64;
            assert!(stored > 0);
            let config = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.{service}")).unwrap();
            let mut relayed = 0;
            for _ in 0..600 {
                let mut stream = js.get_stream(config.stream_name()).await.unwrap();
                relayed = stream.info().await.unwrap().state.messages;
                if relayed >= stored {
                    break;
                }
                // The relay signals nothing to us; poll the stream's count, bounded (30 s).
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            assert_eq!(
                relayed, stored,
                "{service}: events on JetStream vs in the store"
            );
        }
    }

    /// Stops both services, deletes the JetStream streams and drops the PostgreSQL database.
    pub async fn stop(self) {
        for s in &self.shutdowns {
            s.trigger();
        }
        if let Some(prefix) = &self.prefix {
            let js = async_nats::jetstream::new(
                async_nats::connect(fairdeal_testkit::nats_url())
                    .await
                    .unwrap(),
            );
            for service in ["commitment", "dealing"] {
                let c = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.{service}")).unwrap();
                let _ = js.delete_stream(c.stream_name()).await;
                let _ = js.delete_stream(c.dead_letter_stream_name()).await;
            }
        }
        if let Some(database) = &self.database {
            self.commitment_storage.db().close().await;
            self.dealing_storage.db().close().await;
            database.drop().await.unwrap();
        }
    }
}

/// `message` with `token` as its bearer.
pub fn with<T>(token: &AccessToken, message: T) -> Request<T> {
    let mut r = Request::new(message);
    attach_bearer(&mut r, token).unwrap();
    r
}

/// The `fairdeal` CLI binary, built on first use.
pub fn cli() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let bin = dir.join("fairdeal");
    // Built (or found up to date) once per test process, so a stale binary is never used.
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "fairdeal-cli", "--bin", "fairdeal"])
            .status()
            .unwrap();
        assert!(status.success());
    });
    bin
}

/// Runs the CLI and parses each stdout line as JSON.
pub fn cli_json(args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(cli()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "fairdeal {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
