//! Test harness: both services on port 0 over a fresh backend (a unique PostgreSQL database
//! or temporary SQLite files), signed test tokens, gRPC clients, and the `fairdeal` CLI.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use fairdeal_authn::{AccessToken, KeySet, SigningKey, StaticToken};
use fairdeal_commitment::vault::KeyRing;
use fairdeal_harness::{authenticator, common, lazy, serving, url};
use fairdeal_kit::CommonConfig;
use fairdeal_kit::StartError;
use fairdeal_platform::Storage;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_client::DealingServiceClient;
use tonic::Status;
use tonic::transport::Channel;
use tracing_subscriber::fmt::MakeWriter;
use uuid::Uuid;

pub use fairdeal_harness::with;

pub use fairdeal_harness::{Db, TestStore};

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

impl TestApp {
    pub async fn spawn(db: Db) -> TestApp {
        Self::spawn_with_keys(db, KeyRing::generate("test").unwrap()).await
    }

    /// Both services, the commitment service sealing seeds with `keys`.
    pub async fn spawn_with_keys(db: Db, seed_keys: KeyRing) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let store = TestStore::new(db, dir.path(), "dealing").await;
        let (commitment_url, dealing_url) = (store.url("commitment.db"), store.url("dealing.db"));
        let TestStore {
            database, prefix, ..
        } = store;
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
                drand: None,
            },
        )
        .await
        .unwrap();
        let commitment_port = commitment_app.port();
        let dealing_token = fairdeal_harness::service_token(&signing, "dealing");
        let dealing_app = fairdeal_dealing::Application::assemble(
            &dealing_common,
            fairdeal_dealing::startup::Parts {
                storage: dealing_storage.clone(),
                commitment: lazy(commitment_port),
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
        serving(commitment_port).await;
        serving(dealing_port).await;
        TestApp {
            commitment_url: url(commitment_port),
            dealing_url: url(dealing_port),
            commitment: CommitmentServiceClient::new(lazy(commitment_port)),
            dealing: DealingServiceClient::new(lazy(dealing_port)),
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
                drand: None,
            },
        )
        .await?;
        let port = app.port();
        let shutdown = app.shutdown();
        tokio::spawn(app.run_until_stopped());
        serving(port).await;
        Ok((CommitmentServiceClient::new(lazy(port)), shutdown))
    }

    pub fn player_token(&self, user: Uuid) -> AccessToken {
        fairdeal_harness::player_token(&self.signing, user)
    }

    pub fn service_token(&self, name: &str) -> AccessToken {
        fairdeal_harness::service_token(&self.signing, name)
    }

    /// A new table committed to through the commitment service as `tables` (no delayed
    /// source); its id.
    pub async fn new_table(&mut self, tables: &AccessToken) -> String {
        let table_id = Uuid::now_v7().to_string();
        self.create_table(tables, &table_id, "").await.unwrap();
        table_id
    }

    /// Commits to table `table_id` as `token`, naming `delayed_source`; the table as created.
    pub async fn create_table(
        &mut self,
        token: &AccessToken,
        table_id: &str,
        delayed_source: &str,
    ) -> Result<cpb::TableCommitment, Status> {
        let request = cpb::CreateTableCommitmentRequest {
            table_id: table_id.into(),
            delayed_source: delayed_source.into(),
            timelock_seconds: 0,
        };
        let response = self
            .commitment
            .create_table_commitment(with(token, request))
            .await?;
        Ok(response.into_inner().table.unwrap())
    }

    /// Binds table `table_id`'s delayed value as `token`.
    pub async fn bind_delayed_value(
        &mut self,
        token: &AccessToken,
        table_id: &str,
        value: &str,
    ) -> Result<(), Status> {
        let request = cpb::BindTableDelayedValueRequest {
            table_id: table_id.into(),
            value: value.into(),
        };
        self.commitment
            .bind_table_delayed_value(with(token, request))
            .await?;
        Ok(())
    }

    /// Table `table_id` as anyone sees it (the public read, no token).
    pub async fn table(&mut self, table_id: &str) -> cpb::TableCommitment {
        let request = cpb::GetTableCommitmentRequest {
            table_id: table_id.into(),
        };
        let response = self.commitment.get_table_commitment(request).await.unwrap();
        response.into_inner().table.unwrap()
    }

    /// Reveals table `table_id`'s server seed as `token`: at the end of its game when
    /// `operator` and `justification` are empty, else an operator's audited reveal; the
    /// revealed table.
    pub async fn reveal(
        &mut self,
        token: &AccessToken,
        table_id: &str,
        operator: &str,
        justification: &str,
    ) -> Result<cpb::TableCommitment, Status> {
        let request = cpb::RevealTableSeedRequest {
            table_id: table_id.into(),
            operator: operator.into(),
            justification: justification.into(),
        };
        let response = self
            .commitment
            .reveal_table_seed(with(token, request))
            .await?;
        Ok(response.into_inner().table.unwrap())
    }

    /// The seed pair of the player whose token is `player`.
    pub async fn seed_pair(&mut self, player: &AccessToken) -> cpb::SeedPair {
        let request = with(player, cpb::GetSeedPairRequest::default());
        let response = self.commitment.get_seed_pair(request).await.unwrap();
        response.into_inner().pair.unwrap()
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
            fairdeal_harness::delete_streams(prefix, ["commitment", "dealing"]).await;
        }
        if let Some(database) = &self.database {
            self.commitment_storage.db().close().await;
            self.dealing_storage.db().close().await;
            database.drop().await.unwrap();
        }
    }
}

/// A log sink shared with the test: the subscriber writes to it, the test reads `text()`.
#[derive(Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogBuffer {
    type Writer = LogBuffer;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// The `fairdeal` CLI binary: the one `cargo xtask test` built with every other binary of
/// the workspace (`FAIRDEAL_DEPLOY_BIN_DIR`), or else built on first use. (Built here, it
/// is built without the tests' features, so every crate under it is compiled once more.)
pub fn cli() -> PathBuf {
    if let Some(dir) = std::env::var_os("FAIRDEAL_DEPLOY_BIN_DIR") {
        let bin = PathBuf::from(dir).join("fairdeal");
        if bin.is_file() {
            return bin;
        }
    }
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
