//! The commitment, dealing and tables services on port 0 over a fresh backend (temporary
//! SQLite files, or a unique PostgreSQL database with NATS), callers' tokens signed with a
//! test key, and gRPC clients.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use fairdeal_authn::{
    AccessToken, Authenticator, AuthenticatorOptions, Claims, KeySet, SigningKey, StaticKeySource,
    StaticToken, attach_bearer,
};
use fairdeal_commitment::vault::KeyRing;
use fairdeal_kit::CommonConfig;
use fairdeal_platform::Storage;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use tonic::transport::Channel;
use tonic::{Request, Status};
use uuid::Uuid;

/// Where the services keep their events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Db {
    /// Temporary SQLite files (the embedded default), in-process bus.
    Sqlite,
    /// A unique PostgreSQL database (one schema per service) and NATS JetStream.
    Postgres,
}

/// The three services, running.
pub(crate) struct TestApp {
    /// A client of the tables service (no token: add one per call with [`TestApp::as_`]).
    pub(crate) tables: TablesServiceClient<Channel>,
    /// A client of each tables replica (the first is `tables`).
    pub(crate) replicas: Vec<TablesServiceClient<Channel>>,
    signing: SigningKey,
    shutdowns: Vec<fairdeal_kit::Shutdown>,
    database: Option<fairdeal_testkit::TestDatabase>,
    prefix: Option<String>,
    storages: Vec<Storage>,
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

fn lazy(port: u16) -> Channel {
    fairdeal_kit::client::channel("url", &format!("http://127.0.0.1:{port}")).unwrap()
}

impl TestApp {
    /// Starts commitment, dealing and tables on `db`.
    pub(crate) async fn spawn(db: Db) -> TestApp {
        Self::spawn_replicas(db, 1).await
    }

    /// Starts commitment, dealing and `replicas` tables services sharing one database
    /// (more than one needs PostgreSQL).
    pub(crate) async fn spawn_replicas(db: Db, replicas: usize) -> TestApp {
        assert!(replicas == 1 || db == Db::Postgres);
        let dir = tempfile::tempdir().unwrap();
        let sqlite = |name: &str| format!("sqlite://{}", dir.path().join(name).display());
        let (urls, database) = match db {
            Db::Postgres => {
                let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
                let url = database.url().to_owned();
                ([url.clone(), url.clone(), url], Some(database))
            }
            Db::Sqlite => (
                [
                    sqlite("commitment.db"),
                    sqlite("dealing.db"),
                    sqlite("tables.db"),
                ],
                None,
            ),
        };
        let prefix = database
            .is_some()
            .then(|| fairdeal_testkit::subject_prefix("tables"));
        let signing = SigningKey::generate().unwrap();
        let keys = || KeySet::new([signing.public_key()]);
        let service_token = |name: &str| {
            Arc::new(StaticToken::new(
                signing.sign(&Claims::service(name, now(), 3600)).unwrap(),
            ))
        };

        let commitment_common = common("commitment", &urls[0], prefix.as_deref());
        let commitment_storage = Storage::open(
            &commitment_common,
            fairdeal_commitment::startup::SCHEMA,
            &[&fairdeal_commitment::seeds::MIGRATIONS],
        )
        .await
        .unwrap();
        let commitment = fairdeal_commitment::Application::assemble(
            &commitment_common,
            fairdeal_commitment::startup::Parts {
                storage: commitment_storage.clone(),
                keys: KeyRing::generate("test").unwrap(),
                authn: authenticator(keys()),
            },
        )
        .await
        .unwrap();
        let commitment_port = commitment.port();

        let dealing_common = common("dealing", &urls[1], prefix.as_deref());
        let dealing_storage =
            Storage::open(&dealing_common, fairdeal_dealing::startup::SCHEMA, &[])
                .await
                .unwrap();
        let dealing = fairdeal_dealing::Application::assemble(
            &dealing_common,
            fairdeal_dealing::startup::Parts {
                storage: dealing_storage.clone(),
                commitment: lazy(commitment_port),
                tokens: service_token("dealing"),
                authn: authenticator(keys()),
            },
        )
        .await
        .unwrap();
        let dealing_port = dealing.port();

        let tables_common = common("tables", &urls[2], prefix.as_deref());
        let mut shutdowns = vec![commitment.shutdown(), dealing.shutdown()];
        let mut storages = vec![commitment_storage, dealing_storage];
        let mut ports = vec![commitment_port, dealing_port];
        tokio::spawn(commitment.run_until_stopped());
        tokio::spawn(dealing.run_until_stopped());
        // Each replica opens the database on its own, as separate processes would.
        for _ in 0..replicas {
            let storage = Storage::open(
                &tables_common,
                fairdeal_tables::startup::SCHEMA,
                &[&fairdeal_tables::lobby::MIGRATIONS],
            )
            .await
            .unwrap();
            let tables = fairdeal_tables::Application::assemble(
                &tables_common,
                fairdeal_tables::startup::Parts {
                    storage: storage.clone(),
                    commitment: lazy(commitment_port),
                    dealing: lazy(dealing_port),
                    tokens: service_token("tables"),
                    authn: authenticator(keys()),
                },
            )
            .await
            .unwrap();
            ports.push(tables.port());
            shutdowns.push(tables.shutdown());
            storages.push(storage);
            tokio::spawn(tables.run_until_stopped());
        }
        for port in &ports {
            fairdeal_testkit::wait_until_serving(&format!("http://127.0.0.1:{port}"), "")
                .await
                .unwrap();
        }
        let replicas: Vec<_> = ports[2..]
            .iter()
            .map(|port| TablesServiceClient::new(lazy(*port)))
            .collect();
        TestApp {
            tables: replicas[0].clone(),
            replicas,
            signing,
            shutdowns,
            database,
            prefix,
            storages,
            _dir: dir,
        }
    }

    /// A player's token.
    pub(crate) fn player_token(&self, user: Uuid) -> AccessToken {
        self.signing
            .sign(&Claims::player(user, now(), 3600))
            .unwrap()
    }

    /// A service's token.
    pub(crate) fn service_token(&self, name: &str) -> AccessToken {
        self.signing
            .sign(&Claims::service(name, now(), 3600))
            .unwrap()
    }

    /// A player acting through the tables service.
    pub(crate) fn player(&self) -> Player {
        let id = Uuid::now_v7();
        Player {
            id,
            token: self.player_token(id),
            client: self.tables.clone(),
        }
    }

    /// Stops the services, deletes the JetStream streams and drops the database.
    pub(crate) async fn stop(self) {
        for s in &self.shutdowns {
            s.trigger();
        }
        if let Some(prefix) = &self.prefix {
            let js = async_nats::jetstream::new(
                async_nats::connect(fairdeal_testkit::nats_url())
                    .await
                    .unwrap(),
            );
            for service in ["commitment", "dealing", "tables"] {
                let c = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.{service}")).unwrap();
                let _ = js.delete_stream(c.stream_name()).await;
                let _ = js.delete_stream(c.dead_letter_stream_name()).await;
            }
        }
        if let Some(database) = &self.database {
            for s in &self.storages {
                s.db().close().await;
            }
            database.drop().await.unwrap();
        }
    }
}

/// `message` with `token` as its bearer.
pub(crate) fn with<T>(token: &AccessToken, message: T) -> Request<T> {
    let mut r = Request::new(message);
    attach_bearer(&mut r, token).unwrap();
    r
}

/// A player and their client.
#[derive(Clone)]
pub(crate) struct Player {
    pub(crate) id: Uuid,
    pub(crate) token: AccessToken,
    pub(crate) client: TablesServiceClient<Channel>,
}

impl Player {
    /// The same player, calling replica `client`.
    pub(crate) fn on(&self, client: &TablesServiceClient<Channel>) -> Player {
        Player {
            client: client.clone(),
            ..self.clone()
        }
    }

    pub(crate) async fn create(&self, request: pb::CreateTableRequest) -> pb::CreateTableResponse {
        self.client
            .clone()
            .create_table(with(&self.token, request))
            .await
            .unwrap()
            .into_inner()
    }

    pub(crate) async fn sit(&self, table_id: &str, seat: u32) -> Result<pb::SitResponse, Status> {
        self.client
            .clone()
            .sit(with(
                &self.token,
                pb::SitRequest {
                    table_id: table_id.to_owned(),
                    seat,
                },
            ))
            .await
            .map(|r| r.into_inner())
    }

    pub(crate) async fn leave(&self, table_id: &str) -> Result<pb::LeaveResponse, Status> {
        self.client
            .clone()
            .leave(with(
                &self.token,
                pb::LeaveRequest {
                    table_id: table_id.to_owned(),
                },
            ))
            .await
            .map(|r| r.into_inner())
    }

    pub(crate) async fn contribute(&self, table_id: &str, value: &str) -> Result<u64, Status> {
        self.client
            .clone()
            .contribute_seed(with(
                &self.token,
                pb::ContributeSeedRequest {
                    table_id: table_id.to_owned(),
                    contribution: value.to_owned(),
                },
            ))
            .await
            .map(|r| r.into_inner().version)
    }

    pub(crate) async fn view(&self, table_id: &str) -> pb::TableView {
        self.client
            .clone()
            .get_table(with(
                &self.token,
                pb::GetTableRequest {
                    table_id: table_id.to_owned(),
                },
            ))
            .await
            .unwrap()
            .into_inner()
            .table
            .unwrap()
    }

    pub(crate) async fn act(
        &self,
        table_id: &str,
        expected_version: u64,
        command_id: &str,
        action: pb::act_request::Action,
    ) -> Result<u64, Status> {
        self.client
            .clone()
            .act(with(
                &self.token,
                pb::ActRequest {
                    table_id: table_id.to_owned(),
                    expected_version,
                    command_id: command_id.to_owned(),
                    action: Some(action),
                },
            ))
            .await
            .map(|r| r.into_inner().version)
    }

    pub(crate) async fn watch(
        &self,
        table_id: &str,
        after_version: u64,
    ) -> tonic::Streaming<pb::WatchResponse> {
        self.client
            .clone()
            .watch(with(
                &self.token,
                pb::WatchRequest {
                    table_id: table_id.to_owned(),
                    after_version,
                },
            ))
            .await
            .unwrap()
            .into_inner()
    }
}
