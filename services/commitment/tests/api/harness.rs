//! The commitment service on port 0 over a fresh backend (a unique PostgreSQL database with
//! NATS, or a temporary SQLite file), callers' tokens signed with a test key, and a client.

use fairdeal_authn::{AccessToken, KeySet, SigningKey};
use fairdeal_commitment::vault::KeyRing;
use fairdeal_harness::{authenticator, common, lazy, serving as serving_on};
use fairdeal_platform::Storage;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use tonic::transport::Channel;
use uuid::Uuid;

pub(crate) use fairdeal_harness::with;

pub(crate) use fairdeal_harness::{Db, TestStore};

/// The commitment service, running.
pub(crate) struct TestApp {
    /// A client of the service.
    pub(crate) commitment: CommitmentServiceClient<Channel>,
    storage: Storage,
    common: fairdeal_kit::CommonConfig,
    keys: KeyRing,
    signing: SigningKey,
    shutdown: fairdeal_kit::Shutdown,
    /// The server's task (it returns once the server and its background tasks stopped).
    serving: tokio::task::JoinHandle<()>,
    database: Option<fairdeal_testkit::TestDatabase>,
    /// Unique NATS subject prefix (PostgreSQL runs relay to JetStream).
    prefix: Option<String>,
    _dir: tempfile::TempDir,
}

/// A running server: its client, shutdown and task.
struct Served {
    commitment: CommitmentServiceClient<Channel>,
    shutdown: fairdeal_kit::Shutdown,
    serving: tokio::task::JoinHandle<()>,
}

/// The service assembled over `storage` and served on port 0.
async fn serve(
    common: &fairdeal_kit::CommonConfig,
    storage: &Storage,
    keys: &KeyRing,
    signing: &SigningKey,
    drand: Option<fairdeal_commitment::drand::Drand>,
) -> Served {
    let app = fairdeal_commitment::Application::assemble(
        common,
        fairdeal_commitment::startup::Parts {
            storage: storage.clone(),
            keys: keys.clone(),
            authn: authenticator(KeySet::new([signing.public_key()])),
            drand,
        },
    )
    .await
    .unwrap();
    let port = app.port();
    let shutdown = app.shutdown();
    let serving = tokio::spawn(async move {
        app.run_until_stopped()
            .await
            .expect("the server stops cleanly");
    });
    serving_on(port).await;
    Served {
        commitment: CommitmentServiceClient::new(lazy(port)),
        shutdown,
        serving,
    }
}

impl TestApp {
    /// The service on `db`, sealing seeds with a generated key.
    pub(crate) async fn spawn(db: Db) -> TestApp {
        Self::spawn_with(db, None).await
    }

    /// The service on `db`, with `drand` (none: off).
    pub(crate) async fn spawn_with(
        db: Db,
        drand: Option<fairdeal_commitment::drand::Drand>,
    ) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let store = TestStore::new(db, dir.path(), "commitment").await;
        let url = store.url("commitment.db");
        let TestStore {
            database, prefix, ..
        } = store;
        let signing = SigningKey::generate().unwrap();
        let common = common("commitment", &url, prefix.as_deref());
        let storage = Storage::open(
            &common,
            fairdeal_commitment::startup::SCHEMA,
            &[&fairdeal_commitment::seeds::MIGRATIONS],
        )
        .await
        .unwrap();
        let keys = KeyRing::generate("test").unwrap();
        let served = serve(&common, &storage, &keys, &signing, drand).await;
        TestApp {
            commitment: served.commitment,
            storage,
            common,
            keys,
            signing,
            shutdown: served.shutdown,
            serving: served.serving,
            database,
            prefix,
            _dir: dir,
        }
    }

    /// Stops the server (waiting for it and its background tasks, the drand binders among
    /// them, to end) and starts a new one over the same database, seed keys and token keys,
    /// with `drand`: a restart of the service.
    pub(crate) async fn restart(
        mut self,
        drand: Option<fairdeal_commitment::drand::Drand>,
    ) -> Self {
        self.shutdown.trigger();
        (&mut self.serving).await.unwrap();
        let served = serve(
            &self.common,
            &self.storage,
            &self.keys,
            &self.signing,
            drand,
        )
        .await;
        self.commitment = served.commitment;
        self.shutdown = served.shutdown;
        self.serving = served.serving;
        self
    }

    /// The service's database and event store.
    pub(crate) fn storage(&self) -> &Storage {
        &self.storage
    }

    /// A service's token.
    pub(crate) fn service_token(&self, name: &str) -> AccessToken {
        fairdeal_harness::service_token(&self.signing, name)
    }

    /// A new table committed to as `tables` (no delayed source); its id.
    pub(crate) async fn new_table(&mut self, tables: &AccessToken) -> String {
        let table_id = Uuid::now_v7().to_string();
        self.commitment
            .create_table_commitment(with(
                tables,
                cpb::CreateTableCommitmentRequest {
                    table_id: table_id.clone(),
                    delayed_source: String::new(),
                    timelock_seconds: 0,
                },
            ))
            .await
            .unwrap();
        table_id
    }

    /// Stops the service, deletes its JetStream streams and drops the PostgreSQL database.
    pub(crate) async fn stop(self) {
        self.shutdown.trigger();
        if let Some(prefix) = &self.prefix {
            fairdeal_harness::delete_streams(prefix, ["commitment"]).await;
        }
        if let Some(database) = &self.database {
            self.storage.db().close().await;
            database.drop().await.unwrap();
        }
    }
}
