//! The commitment, dealing and tables services on port 0 over a fresh backend (temporary
//! SQLite files, or a unique PostgreSQL database with NATS), callers' tokens signed with a
//! test key, and gRPC clients.

use std::sync::Arc;

use fairdeal_authn::{AccessToken, KeySet, SigningKey, StaticToken};
use fairdeal_commitment::vault::KeyRing;
use fairdeal_harness::{authenticator, common, lazy, serving};
use fairdeal_kit::CommonConfig;
use fairdeal_platform::Storage;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use fairdeal_tables::clock::ManualClock;
use tokio::task::JoinHandle;
use tonic::Status;
use tonic::transport::Channel;
use uuid::Uuid;

pub(crate) use fairdeal_harness::with;

pub(crate) use fairdeal_harness::{Db, TestStore};

/// The three services, running.
pub(crate) struct TestApp {
    /// A client of the first tables replica.
    pub(crate) tables: TablesServiceClient<Channel>,
    /// A client of each tables replica started (the first is `tables`).
    pub(crate) replicas: Vec<TablesServiceClient<Channel>>,
    /// The replicas' ports, in `replicas` order.
    pub(crate) replica_ports: Vec<u16>,
    /// Where each replica tells the others it serves (its `advertise_url`), in `replicas`
    /// order.
    pub(crate) replica_urls: Vec<String>,
    /// The `advertise_url` of a replica serving at a port: by default its own address; a
    /// bench puts a delaying proxy there, so the calls between replicas cross a latency.
    pub(crate) advertise: fn(u16) -> String,
    /// Each replica's routes, as its keeper last read them (`replicas` order; `None` on
    /// SQLite, where one replica serves every table).
    replica_routes: Vec<Option<tokio::sync::watch::Receiver<fairdeal_platform::ownership::Routes>>>,
    /// The clock of every tables replica: tests advance it, nobody sleeps.
    pub(crate) clock: Arc<ManualClock>,
    signing: SigningKey,
    /// Shutdown handle and server task of each tables replica, by replica.
    replica_servers: Vec<(fairdeal_kit::Shutdown, JoinHandle<()>)>,
    /// The other services' shutdown handles.
    shutdowns: Vec<fairdeal_kit::Shutdown>,
    database: Option<fairdeal_testkit::TestDatabase>,
    prefix: Option<String>,
    storages: Vec<Storage>,
    dealing_common: CommonConfig,
    tables_common: CommonConfig,
    commitment_port: u16,
    /// The tables replicas' way to the commitment service (the dealing service's is direct).
    commitment_link: Link,
    dealing_port: u16,
    _dir: tempfile::TempDir,
}

/// A TCP forwarder a test can cut: while cut, it closes every connection through it, open or
/// new, as a peer gone away would (its port refuses nothing: the caller sees its calls fail).
#[derive(Debug, Clone)]
pub(crate) struct Link {
    port: u16,
    cut: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Link {
    /// A link to `upstream` on 127.0.0.1.
    async fn to(upstream: u16) -> Link {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(tokio::sync::watch::Sender::new(false));
        let state = cut.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut cut = state.subscribe();
                if *cut.borrow() {
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(mut outbound) =
                        tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                    else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        Link { port, cut }
    }

    /// Cuts the link (`true`) or restores it.
    pub(crate) fn cut(&self, cut: bool) {
        self.cut.send_replace(cut);
    }
}

impl TestApp {
    /// Starts commitment, dealing and tables on `db`.
    pub(crate) async fn spawn(db: Db) -> TestApp {
        Self::spawn_with(db, 1, true).await
    }

    /// Starts commitment, dealing and `replicas` tables services sharing one database
    /// (more than one needs PostgreSQL).
    pub(crate) async fn spawn_replicas(db: Db, replicas: usize) -> TestApp {
        Self::spawn_replicas_writing(db, replicas, None).await
    }

    /// Starts commitment, `replicas` tables services and, if `dealing`, the dealing service
    /// (else its address is reserved and it is started by [`TestApp::start_dealing`]).
    /// With no replica, the tables service is left to the test (e.g. as a child process,
    /// [`TestApp::tables_args`]).
    pub(crate) async fn spawn_with(db: Db, replicas: usize, dealing: bool) -> TestApp {
        assert!(replicas <= 1 || db == Db::Postgres);
        let dir = tempfile::tempdir().unwrap();
        let store = TestStore::new(db, dir.path(), "tables").await;
        let urls = ["commitment.db", "dealing.db", "tables.db"].map(|file| store.url(file));
        let TestStore {
            database, prefix, ..
        } = store;
        let signing = SigningKey::generate().unwrap();

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
                authn: authenticator(KeySet::new([signing.public_key()])),
                drand: None,
            },
        )
        .await
        .unwrap();
        let commitment_port = commitment.port();
        let shutdowns = vec![commitment.shutdown()];
        tokio::spawn(commitment.run_until_stopped());
        serving(commitment_port).await;

        // The dealing service's address is fixed now, so the tables services can be given it
        // before it runs.
        let dealing_port = free_port();
        let mut dealing_common = common("dealing", &urls[1], prefix.as_deref());
        dealing_common.listen_addr = format!("127.0.0.1:{dealing_port}").parse().unwrap();
        let commitment_link = Link::to(commitment_port).await;
        let mut app = TestApp {
            tables: TablesServiceClient::new(lazy(0)),
            replicas: Vec::new(),
            replica_ports: Vec::new(),
            replica_urls: Vec::new(),
            advertise: |port| format!("http://127.0.0.1:{port}"),
            replica_routes: Vec::new(),
            clock: Arc::new(ManualClock::new(fairdeal_testkit::now() * 1000)),
            signing,
            replica_servers: Vec::new(),
            shutdowns,
            database,
            tables_common: common("tables", &urls[2], prefix.as_deref()),
            prefix,
            storages: vec![commitment_storage],
            dealing_common,
            commitment_port,
            commitment_link,
            dealing_port,
            _dir: dir,
        };
        if dealing {
            app.start_dealing().await;
        }
        app.start_replicas(replicas).await;
        app
    }

    /// [`TestApp::spawn_replicas`], the replicas run with `--db-writers` `writers` (`None`:
    /// the service's own number).
    pub(crate) async fn spawn_replicas_writing(
        db: Db,
        replicas: usize,
        writers: Option<u32>,
    ) -> TestApp {
        Self::spawn_replicas_advertising(db, replicas, writers, |port| {
            format!("http://127.0.0.1:{port}")
        })
        .await
    }

    /// [`TestApp::spawn_replicas_writing`], each replica serving at a port announcing
    /// `advertise(port)` to the others as its address ([`TestApp::advertise`]).
    pub(crate) async fn spawn_replicas_advertising(
        db: Db,
        replicas: usize,
        writers: Option<u32>,
        advertise: fn(u16) -> String,
    ) -> TestApp {
        let mut app = Self::spawn_with(db, 0, true).await;
        app.tables_common.db_writers = writers;
        app.advertise = advertise;
        app.start_replicas(replicas).await;
        app
    }

    /// Starts `replicas` tables replicas; the first is [`TestApp::tables`]. Several are
    /// given back once they share the partitions: each newcomer's first round announces it,
    /// and the others drain to it at once, so a table created meanwhile could be fenced
    /// out of a partition just given up (UNAVAILABLE, nothing written, "retry").
    async fn start_replicas(&mut self, replicas: usize) {
        for _ in 0..replicas {
            self.start_replica().await;
        }
        if let Some(first) = self.replicas.first() {
            self.tables = first.clone();
        }
        if replicas > 1 {
            self.partitions_settled().await;
        }
    }

    /// How the `fairdeal-tables` binary is configured to serve at `port` over this app's
    /// backend and services: environment variables and flags (the token key is public, the
    /// service token is the test's own).
    pub(crate) fn tables_args(&self, port: u16) -> (Vec<(String, String)>, Vec<String>) {
        let key = self.signing.public_key();
        let mut env = vec![
            (
                "FAIRDEAL_DATABASE_URL".to_owned(),
                self.tables_common.database_url.expose_secret().to_owned(),
            ),
            (
                "FAIRDEAL_AUTH_PUBLIC_KEYS".to_owned(),
                format!("{}:{}", key.kid().as_str(), hex::encode(key.to_bytes())),
            ),
        ];
        if let Some(prefix) = &self.prefix {
            env.push(("FAIRDEAL_NATS_URL".into(), fairdeal_testkit::nats_url()));
            env.push(("FAIRDEAL_SUBJECT_PREFIX".into(), prefix.clone()));
        }
        let flags = [
            "--listen-addr",
            &format!("127.0.0.1:{port}"),
            "--commitment-url",
            &format!("http://127.0.0.1:{}", self.commitment_port),
            "--dealing-url",
            &format!("http://127.0.0.1:{}", self.dealing_port),
            "--service-token",
            self.service_token("tables").as_str(),
        ]
        .map(str::to_owned)
        .to_vec();
        (env, flags)
    }

    /// A player acting through `client`.
    pub(crate) fn player_on(&self, client: &TablesServiceClient<Channel>) -> Player {
        self.player().on(client)
    }

    fn keys(&self) -> KeySet {
        KeySet::new([self.signing.public_key()])
    }

    fn service_tokens(&self, name: &str) -> Arc<StaticToken> {
        Arc::new(StaticToken::new(self.service_token(name)))
    }

    /// Starts the dealing service at its reserved address.
    pub(crate) async fn start_dealing(&mut self) {
        let storage = Storage::open(&self.dealing_common, fairdeal_dealing::startup::SCHEMA, &[])
            .await
            .unwrap();
        let dealing = fairdeal_dealing::Application::assemble(
            &self.dealing_common,
            fairdeal_dealing::startup::Parts {
                storage: storage.clone(),
                commitment: lazy(self.commitment_port),
                tokens: self.service_tokens("dealing"),
                authn: authenticator(self.keys()),
            },
        )
        .await
        .unwrap();
        self.storages.push(storage);
        self.shutdowns.push(dealing.shutdown());
        tokio::spawn(dealing.run_until_stopped());
        serving(self.dealing_port).await;
    }

    /// Starts one more tables replica over the shared database (opened on its own, as a
    /// separate process would); returns its client.
    pub(crate) async fn start_replica(&mut self) -> TablesServiceClient<Channel> {
        // Its address is fixed before it starts, so it can announce it to the others.
        let port = free_port();
        let mut common = self.tables_common.clone();
        common.listen_addr = format!("127.0.0.1:{port}").parse().unwrap();
        let storage = self.open_tables_storage().await;
        let advertise_url = (self.advertise)(port);
        let tables = fairdeal_tables::Application::assemble(
            &common,
            fairdeal_tables::startup::Parts {
                storage,
                commitment: lazy(self.commitment_link.port),
                dealing: lazy(self.dealing_port),
                tokens: self.service_tokens("tables"),
                authn: authenticator(self.keys()),
                clock: self.clock.clone(),
                advertise_url: advertise_url.clone(),
            },
        )
        .await
        .unwrap();
        assert_eq!(tables.port(), port);
        self.replica_routes.push(tables.handles().routes.clone());
        let shutdown = tables.shutdown();
        let server = tokio::spawn(async move {
            tables.run_until_stopped().await.unwrap();
        });
        serving(port).await;
        self.replica_servers.push((shutdown, server));
        let client = TablesServiceClient::new(lazy(port));
        self.replicas.push(client.clone());
        self.replica_ports.push(port);
        self.replica_urls.push(advertise_url);
        client
    }

    /// A client of the commitment service, as the tables service calls it.
    pub(crate) fn commitment(&self) -> CommitmentServiceClient<Channel> {
        CommitmentServiceClient::new(lazy(self.commitment_port))
    }

    /// The tables replicas' link to the commitment service, to cut and restore.
    pub(crate) fn commitment_link(&self) -> &Link {
        &self.commitment_link
    }

    /// Stops tables replica `index` and waits until it has drained and stopped.
    pub(crate) async fn stop_replica(&mut self, index: usize) {
        let (shutdown, server) = &mut self.replica_servers[index];
        shutdown.trigger();
        server.await.unwrap();
    }

    /// Waits (30 s at most) until the replicas share the tables' partitions, none above its
    /// fair share, as their keepers settle a second or two after they start (PostgreSQL).
    pub(crate) async fn partitions_settled(&self) {
        let fairdeal_db::Db::Postgres { pool, schema } = self.tables_storage().db() else {
            return;
        };
        let partitions = u64::from(fairdeal_tables::startup::PARTITIONS);
        let replicas = self.replicas.len().max(1) as u64;
        let sql = format!(
            "SELECT count(*) FROM {}.partition_leases WHERE expires_at > now() GROUP BY owner",
            schema.quoted()
        );
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let held: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
                .fetch_all(pool)
                .await
                .unwrap();
            let held: Vec<u64> = held.into_iter().map(|n| n as u64).collect();
            let share = partitions.div_ceil(replicas);
            if held.len() as u64 == replicas
                && held.iter().sum::<u64>() == partitions
                && held.iter().all(|n| *n <= share)
            {
                return;
            }
            assert!(std::time::Instant::now() < until, "partitions: {held:?}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Waits, `within` at most, until replica `index`'s keeper has read that `table_id` is
    /// served at `address` (its route, which the replica forwards by).
    pub(crate) async fn routed(
        &self,
        index: usize,
        table_id: &str,
        address: &str,
        within: std::time::Duration,
    ) {
        let id: Uuid = table_id.parse().unwrap();
        let partition =
            fairdeal_platform::ownership::partition_of(&id, fairdeal_tables::startup::PARTITIONS);
        let mut routes = self.replica_routes[index]
            .clone()
            .expect("routes are kept over PostgreSQL");
        let read = routes.wait_for(|routes| {
            routes
                .get(&partition)
                .is_some_and(|route| route.address == address)
        });
        tokio::time::timeout(within, read)
            .await
            .unwrap_or_else(|_| panic!("replica {index} never routed {table_id} to {address}"))
            .unwrap();
    }

    /// The tables' storage, opened here (for replicas run as processes); closed at the end.
    pub(crate) async fn open_tables_storage(&mut self) -> Storage {
        let storage = Storage::open(
            // As the service opens its own (its number of writers).
            &fairdeal_kit::host::storage_settings::<fairdeal_tables::TablesService>(
                &self.tables_common,
            ),
            fairdeal_tables::startup::SCHEMA,
            <fairdeal_tables::TablesService as fairdeal_kit::Service>::MIGRATIONS,
        )
        .await
        .unwrap();
        self.storages.push(storage.clone());
        storage
    }

    /// The storage of the last tables replica started (its event store).
    pub(crate) fn tables_storage(&self) -> &Storage {
        self.storages.last().unwrap()
    }

    /// A player's token.
    pub(crate) fn player_token(&self, user: Uuid) -> AccessToken {
        fairdeal_harness::player_token(&self.signing, user)
    }

    /// A service's token.
    pub(crate) fn service_token(&self, name: &str) -> AccessToken {
        fairdeal_harness::service_token(&self.signing, name)
    }

    /// A player on a connection of its own to the first replica, as a player's device has
    /// (the load bench's `LOAD_CONNECTIONS=player`).
    #[allow(dead_code)]
    pub(crate) fn player_with_own_connection(&self) -> Player {
        let port = self.replica_ports.first().copied().unwrap_or_default();
        self.player().on(&TablesServiceClient::new(lazy(port)))
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
        for s in self
            .shutdowns
            .iter()
            .chain(self.replica_servers.iter().map(|(s, _)| s))
        {
            s.trigger();
        }
        if let Some(prefix) = &self.prefix {
            fairdeal_harness::delete_streams(prefix, ["commitment", "dealing", "tables"]).await;
        }
        if let Some(database) = &self.database {
            for s in &self.storages {
                s.db().close().await;
            }
            database.drop().await.unwrap();
        }
    }
}

/// A port free now on 127.0.0.1, for a server whose address must be known before it starts.
pub(crate) fn free_port() -> u16 {
    fairdeal_testkit::free_port().unwrap()
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

    /// Creates a table with the engine's bot at seats 1, 2 and 3 and `move_seconds` per move
    /// (0: the default); its id.
    pub(crate) async fn create_against_bots(&self, move_seconds: u32) -> String {
        self.create(pb::CreateTableRequest {
            bot_seats: vec![1, 2, 3],
            move_seconds,
            ..Default::default()
        })
        .await
        .table_id
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

    pub(crate) async fn spectate(&self, table_id: &str) -> Result<u64, Status> {
        self.client
            .clone()
            .spectate(with(
                &self.token,
                pb::SpectateRequest {
                    table_id: table_id.to_owned(),
                },
            ))
            .await
            .map(|r| r.into_inner().version)
    }

    pub(crate) async fn stop_spectating(&self, table_id: &str) -> Result<u64, Status> {
        self.client
            .clone()
            .stop_spectating(with(
                &self.token,
                pb::StopSpectatingRequest {
                    table_id: table_id.to_owned(),
                },
            ))
            .await
            .map(|r| r.into_inner().version)
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
        self.try_view(table_id).await.unwrap()
    }

    /// The table's owner as a `GetTable` answer names it (`fairdeal-table-owner`), and
    /// as a `Watch` answer's headers name it.
    pub(crate) async fn owner_named(&self, table_id: &str) -> (Option<String>, Option<String>) {
        let watched = self.watch_response(table_id, 0, false).await.unwrap();
        (self.owner_of(table_id).await, owner(watched.metadata()))
    }

    /// The table's owner as a `GetTable` answer names it (`fairdeal-table-owner`).
    pub(crate) async fn owner_of(&self, table_id: &str) -> Option<String> {
        owner(self.get_table(table_id).await.unwrap().metadata())
    }

    /// [`Player::view`], its failure returned.
    pub(crate) async fn try_view(&self, table_id: &str) -> Result<pb::TableView, Status> {
        Ok(self.get_table(table_id).await?.into_inner().table.unwrap())
    }

    /// `GetTable`'s answer, headers and all.
    async fn get_table(
        &self,
        table_id: &str,
    ) -> Result<tonic::Response<pb::GetTableResponse>, Status> {
        self.client
            .clone()
            .get_table(with(
                &self.token,
                pb::GetTableRequest {
                    table_id: table_id.to_owned(),
                },
            ))
            .await
    }

    pub(crate) async fn act(
        &self,
        table_id: &str,
        expected_version: u64,
        command_id: &str,
        action: pb::act_request::Action,
    ) -> Result<u64, Status> {
        // As clients do: UNAVAILABLE (the table changing replicas, over PostgreSQL a
        // restarted replica waiting for its predecessor's leases to expire) is sent again
        // with the same command id, for up to 15 s.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let answer = self
                .act_once(table_id, expected_version, command_id, action.clone())
                .await;
            match answer {
                Err(status)
                    if status.code() == tonic::Code::Unavailable
                        && std::time::Instant::now() < until =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                answer => return answer,
            }
        }
    }

    /// [`Player::act`] sent once, whatever the answer.
    pub(crate) async fn act_once(
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
        self.watch_with(table_id, after_version, false).await
    }

    /// [`Player::watch`] that also gets the player's view whenever its seat is to act.
    pub(crate) async fn watch_turns(
        &self,
        table_id: &str,
        after_version: u64,
    ) -> tonic::Streaming<pb::WatchResponse> {
        self.watch_with(table_id, after_version, true).await
    }

    async fn watch_with(
        &self,
        table_id: &str,
        after_version: u64,
        turn_views: bool,
    ) -> tonic::Streaming<pb::WatchResponse> {
        self.try_watch(table_id, after_version, turn_views)
            .await
            .unwrap()
    }

    /// [`Player::watch`], its failure returned.
    pub(crate) async fn try_watch(
        &self,
        table_id: &str,
        after_version: u64,
        turn_views: bool,
    ) -> Result<tonic::Streaming<pb::WatchResponse>, Status> {
        Ok(self
            .watch_response(table_id, after_version, turn_views)
            .await?
            .into_inner())
    }

    /// `Watch`'s answer, headers and all.
    async fn watch_response(
        &self,
        table_id: &str,
        after_version: u64,
        turn_views: bool,
    ) -> Result<tonic::Response<tonic::Streaming<pb::WatchResponse>>, Status> {
        self.client
            .clone()
            .watch(with(
                &self.token,
                pb::WatchRequest {
                    table_id: table_id.to_owned(),
                    after_version,
                    turn_views,
                },
            ))
            .await
    }
}

/// The `fairdeal-table-owner` header in `metadata`.
fn owner(metadata: &tonic::metadata::MetadataMap) -> Option<String> {
    metadata
        .get(fairdeal_tables::route::OWNER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The command a seat's move records, on the move's first event (Jeu du 10's or Tarot's).
pub(crate) fn command_of(event: &pb::table_event::Event) -> Option<&pb::CommandRef> {
    use pb::table_event::Event as E;
    match event {
        E::BidPlaced(pb::BidPlaced { command, .. })
        | E::PlayerPassed(pb::PlayerPassed { command, .. })
        | E::TrumpNamed(pb::TrumpNamed { command, .. })
        | E::CardPlayed(pb::CardPlayed { command, .. })
        | E::TarotBidPlaced(pb::TarotBidPlaced { command, .. })
        | E::TarotPlayerPassed(pb::TarotPlayerPassed { command, .. })
        | E::TarotKingCalled(pb::TarotKingCalled { command, .. })
        | E::TarotTrumpDiscarded(pb::TarotTrumpDiscarded { command, .. })
        | E::TarotCardDiscarded(pb::TarotCardDiscarded { command, .. })
        | E::TarotChelemDeclared(pb::TarotChelemDeclared { command, .. })
        | E::TarotPoigneeShown(pb::TarotPoigneeShown { command, .. })
        | E::TarotCardPlayed(pb::TarotCardPlayed { command, .. }) => command.as_ref(),
        _ => None,
    }
}

/// The turn clock (seat, deadline) `event` records: a `TurnClock` (after a deal) or the one
/// a seat's command leaves.
pub(crate) fn clock_of(event: &pb::table_event::Event) -> Option<(u32, i64)> {
    match event {
        pb::table_event::Event::TurnClock(c) => Some((c.seat, c.deadline_ms)),
        _ => command_of(event)?
            .next_turn
            .as_ref()
            .map(|t| (t.seat, t.deadline_ms)),
    }
}
