//! [`GameStack`]: the services a game needs (commitment, dealing, tables) running in this
//! process on port 0 over either backend, for end-to-end tests of the services that consume
//! games (rating, chat, the ledger) and of deployments' smoke tests.
//!
//! - [`Backend::Embedded`]: one temporary SQLite database and ONE [`Storage`] shared by every
//!   service, as `fairdeal-server up` runs them: one log, one append signal, in-process
//!   consumers of any service's events. A service added by a test takes
//!   [`GameStack::storage`], which migrates its tables into the same database.
//! - [`Backend::PostgresNats`]: a unique PostgreSQL database (one schema per service) and a
//!   unique NATS subject prefix; events cross services through JetStream.
//!
//! Callers' tokens are signed by a test key ([`GameStack::player`], [`GameStack::token`]);
//! the tables' turn clock is a manual clock tests advance ([`GameStack::clock`]).
//! [`GameStack::play_bot_table`] plays a whole table through gRPC with
//! [`fairdeal_client`], four players whose moves the engine's bot chooses from their own
//! views.

use std::sync::Arc;

use anyhow::Context as _;
use fairdeal_authn::{AccessToken, Authenticator, Claims, KeySet, SigningKey, StaticToken};
use fairdeal_client::Player;
use fairdeal_db::{Db, Migrations};
use fairdeal_kit::{CommonConfig, Shutdown};
use fairdeal_platform::Storage;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_tables::clock::ManualClock;
use sqlx::Connection as _;
use tonic::transport::Channel;
use uuid::Uuid;

/// How long [`GameStack::stop`] waits for each service's background tasks to end.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Where the services keep their events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// One shared temporary SQLite database, in-process bus (the embedded default).
    Embedded,
    /// A unique PostgreSQL database (a schema per service) and NATS JetStream.
    PostgresNats,
}

/// Commitment, dealing and tables, running (see the module docs).
#[allow(missing_debug_implementations)] // holds services and keys; nothing useful to print
pub struct GameStack {
    backend: Backend,
    signing: SigningKey,
    clock: Arc<ManualClock>,
    /// The shared storage (embedded only).
    shared: Option<Storage>,
    /// Every storage opened, closed at the end (PostgreSQL).
    storages: Vec<Storage>,
    shutdowns: Vec<Shutdown>,
    /// Services whose JetStream streams are deleted at the end.
    services: Vec<String>,
    database: Option<fairdeal_testkit::TestDatabase>,
    database_url: String,
    /// Each service's `db_max_connections` (PostgreSQL), if not the default.
    budget: Option<u32>,
    prefix: Option<String>,
    commitment_port: u16,
    dealing_port: u16,
    tables_port: u16,
    /// The commitment service's drand (none: drand off, the default).
    drand: Option<fairdeal_commitment::drand::Drand>,
    _dir: tempfile::TempDir,
}

/// A lazy channel to `127.0.0.1:port`.
pub fn channel(port: u16) -> anyhow::Result<Channel> {
    Ok(fairdeal_kit::client::channel(
        "url",
        &fairdeal_harness::url(port),
    )?)
}

/// Waits until the server on 127.0.0.1 `port` serves.
pub(crate) async fn serving(port: u16) -> anyhow::Result<()> {
    fairdeal_testkit::wait_until_serving(&fairdeal_harness::url(port), "").await?;
    Ok(())
}

impl GameStack {
    /// Starts commitment, dealing and tables on a fresh `backend`.
    pub async fn start(backend: Backend) -> anyhow::Result<GameStack> {
        let mut stack = Self::prepare(backend).await?;
        stack.start_services().await?;
        Ok(stack)
    }

    /// Starts commitment, dealing and tables on a fresh `backend`, the commitment service
    /// with drand on: every table created without a delayed source of its own gets a round
    /// of `drand`'s chain, fetched from its relays (a local test beacon in tests).
    pub async fn start_with_drand(
        backend: Backend,
        drand: fairdeal_commitment::drand::Drand,
    ) -> anyhow::Result<GameStack> {
        let mut stack = Self::prepare(backend).await?;
        stack.drand = Some(drand);
        stack.start_services().await?;
        Ok(stack)
    }

    /// Starts commitment, dealing and tables on a fresh PostgreSQL database and NATS, each
    /// with a budget of `budget` connections (`--db-max-connections`), as a role that the
    /// server refuses more than the three budgets' sum (`CONNECTION LIMIT`): a service
    /// that outgrew its budget would see its sessions refused. Returns the stack and the
    /// role's name.
    pub async fn start_capped(budget: u32) -> anyhow::Result<(GameStack, String)> {
        let mut stack = Self::prepare(Backend::PostgresNats).await?;
        let database = stack.database.as_ref().context("a PostgreSQL stack")?;
        let role = format!("capped_{}", Uuid::now_v7().simple());
        let mut admin = sqlx::PgConnection::connect(database.url()).await?;
        for statement in [
            format!("CREATE ROLE {role} LOGIN CONNECTION LIMIT {}", 3 * budget),
            format!("GRANT ALL ON DATABASE {} TO {role}", database.name()),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                .execute(&mut admin)
                .await?;
        }
        admin.close().await?;
        let mut url = url::Url::parse(database.url())?;
        url.set_username(&role)
            .map_err(|()| anyhow::anyhow!("no user in the database URL"))?;
        url.set_password(None)
            .map_err(|()| anyhow::anyhow!("no password in the database URL"))?;
        stack.database_url = url.to_string();
        stack.budget = Some(budget);
        stack.start_services().await?;
        Ok((stack, role))
    }

    /// The stack, its services not started yet.
    async fn prepare(backend: Backend) -> anyhow::Result<GameStack> {
        crate::test_logs();
        let dir = tempfile::tempdir()?;
        let (database, database_url, prefix) = match backend {
            Backend::PostgresNats => {
                let database = fairdeal_testkit::TestDatabase::create().await?;
                let url = database.url().to_owned();
                (
                    Some(database),
                    url,
                    Some(fairdeal_testkit::subject_prefix("stack")),
                )
            }
            Backend::Embedded => (
                None,
                format!("sqlite://{}", dir.path().join("platform.db").display()),
                None,
            ),
        };
        Ok(GameStack {
            backend,
            signing: SigningKey::generate()?,
            clock: Arc::new(ManualClock::new(fairdeal_testkit::now() * 1000)),
            shared: None,
            storages: Vec::new(),
            shutdowns: Vec::new(),
            services: Vec::new(),
            database,
            database_url,
            budget: None,
            prefix,
            commitment_port: 0,
            dealing_port: 0,
            tables_port: 0,
            drand: None,
            _dir: dir,
        })
    }

    /// Opens the shared storage (embedded) and starts the three services.
    async fn start_services(&mut self) -> anyhow::Result<()> {
        let stack = self;
        if stack.backend == Backend::Embedded {
            let common = stack.common("platform")?;
            let db = Db::open(&common.database()?, &fairdeal_db::Schema::new("platform")?).await?;
            let storage = Storage::over(db, &[]).await?;
            stack.storages.push(storage.clone());
            stack.shared = Some(storage);
        }
        stack.start_commitment().await?;
        stack.start_dealing().await?;
        stack.start_tables().await?;
        Ok(())
    }

    /// The PostgreSQL database's URL (as the server's superuser), on PostgreSQL.
    pub fn postgres_url(&self) -> Option<&str> {
        self.database
            .as_ref()
            .map(fairdeal_testkit::TestDatabase::url)
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The configuration service `name` runs with on this stack: port 0, the stack's
    /// database and, on PostgreSQL, NATS with the stack's subject prefix.
    pub fn common(&self, name: &str) -> anyhow::Result<CommonConfig> {
        let mut c = fairdeal_harness::common(name, &self.database_url, self.prefix.as_deref());
        if let Some(budget) = self.budget {
            c.db_max_connections = budget;
        }
        Ok(c)
    }

    /// Storage for a service with PostgreSQL schema `schema` and its `migrations`: the
    /// shared storage (its tables migrated into it) on the embedded default, its own schema
    /// on PostgreSQL. Also registers `schema` as a service whose streams are deleted by
    /// [`GameStack::stop`].
    pub async fn storage(
        &mut self,
        schema: &str,
        migrations: &[&Migrations],
    ) -> anyhow::Result<Storage> {
        if !self.services.iter().any(|s| s == schema) {
            self.services.push(schema.to_owned());
        }
        let storage = match &self.shared {
            Some(shared) => {
                shared.migrate(migrations).await?;
                shared.clone()
            }
            None => Storage::open(&self.common(schema)?, schema, migrations).await?,
        };
        self.storages.push(storage.clone());
        Ok(storage)
    }

    /// Stops `shutdown` (a service a test started on this stack) with the others.
    pub fn on_stop(&mut self, shutdown: Shutdown) {
        self.shutdowns.push(shutdown);
    }

    /// Verifies the tokens the stack signs.
    pub fn authenticator(&self) -> Authenticator {
        fairdeal_harness::authenticator(KeySet::new([self.signing.public_key()]))
    }

    /// Signs `claims` (e.g. a player with another role) with the stack's key.
    pub fn token(&self, claims: &Claims) -> anyhow::Result<AccessToken> {
        Ok(self.signing.sign(claims)?)
    }

    /// An hour-long token of player `user`.
    pub fn player_token(&self, user: Uuid) -> anyhow::Result<AccessToken> {
        self.token(&Claims::player(user, fairdeal_testkit::now(), 3600))
    }

    /// An hour-long token of service `name`.
    pub fn service_token(&self, name: &str) -> anyhow::Result<AccessToken> {
        self.token(&Claims::service(name, fairdeal_testkit::now(), 3600))
    }

    /// The tables' turn clock (Unix milliseconds).
    pub fn clock(&self) -> &Arc<ManualClock> {
        &self.clock
    }

    /// The port of the commitment, dealing and tables services.
    pub fn ports(&self) -> (u16, u16, u16) {
        (self.commitment_port, self.dealing_port, self.tables_port)
    }

    /// A lazy channel to the tables service.
    pub fn tables_channel(&self) -> anyhow::Result<Channel> {
        channel(self.tables_port)
    }

    /// A new player (a fresh user id and its token) calling the tables service.
    pub fn player(&self) -> anyhow::Result<Player> {
        let id = Uuid::now_v7();
        Ok(Player::new(
            id,
            self.player_token(id)?,
            self.tables_channel()?,
        ))
    }

    /// Plays a whole table through gRPC: `players[0]` creates it with `options`, all four
    /// sit at seats 0..3 and contribute, and each move is chosen by the engine's bot from
    /// the mover's own view, until the game is finished and the seed revealed.
    pub async fn play_table(
        &self,
        players: &[Player],
        options: Option<pb::TableOptions>,
    ) -> anyhow::Result<pb::TableView> {
        let first = players.first().context("a table needs players")?;
        let created = first
            .create_table(pb::CreateTableRequest {
                options,
                bot_seats: vec![],
                move_seconds: 0,
                timelock_seconds: 0,
            })
            .await?;
        fairdeal_client::seat_players(&created.table_id, players, "seed of seat").await?;
        Ok(fairdeal_client::play_to_the_end(&created.table_id, players, 0x5eed, |_, _| {}).await?)
    }

    /// Four new players play a table of the plain game to its end (see
    /// [`GameStack::play_table`]); returns them and the final view.
    pub async fn play_bot_table(&self) -> anyhow::Result<(Vec<Player>, pb::TableView)> {
        let players = (0..4)
            .map(|_| self.player())
            .collect::<anyhow::Result<Vec<_>>>()?;
        let view = self.play_table(&players, None).await?;
        Ok((players, view))
    }

    fn authn_and_tokens(&self, name: &str) -> anyhow::Result<(Authenticator, Arc<StaticToken>)> {
        Ok((
            self.authenticator(),
            Arc::new(StaticToken::new(self.service_token(name)?)),
        ))
    }

    async fn start_commitment(&mut self) -> anyhow::Result<()> {
        let common = self.common("commitment")?;
        let storage = self
            .storage(
                fairdeal_commitment::startup::SCHEMA,
                &[&fairdeal_commitment::seeds::MIGRATIONS],
            )
            .await?;
        let app = fairdeal_commitment::Application::assemble(
            &common,
            fairdeal_commitment::startup::Parts {
                storage,
                keys: fairdeal_commitment::vault::KeyRing::generate("test")?,
                authn: self.authenticator(),
                drand: self.drand.clone(),
            },
        )
        .await?;
        self.commitment_port = app.port();
        self.shutdowns.push(app.shutdown());
        tokio::spawn(app.run_until_stopped());
        serving(self.commitment_port).await
    }

    async fn start_dealing(&mut self) -> anyhow::Result<()> {
        let common = self.common("dealing")?;
        let storage = self.storage(fairdeal_dealing::startup::SCHEMA, &[]).await?;
        let (authn, tokens) = self.authn_and_tokens("dealing")?;
        let app = fairdeal_dealing::Application::assemble(
            &common,
            fairdeal_dealing::startup::Parts {
                storage,
                commitment: channel(self.commitment_port)?,
                tokens,
                authn,
            },
        )
        .await?;
        self.dealing_port = app.port();
        self.shutdowns.push(app.shutdown());
        tokio::spawn(app.run_until_stopped());
        serving(self.dealing_port).await
    }

    async fn start_tables(&mut self) -> anyhow::Result<()> {
        let (port, _) = self.tables_on_its_port().await?;
        self.tables_port = port;
        Ok(())
    }

    /// Another tables replica over the same database and NATS (PostgreSQL only), as a
    /// Deployment's second pod: the replicas share the tables' partitions, and a call
    /// reaching one that does not own its table is forwarded to the owner. Returns its port
    /// and its shutdown: triggering it drains the replica (its partitions handed over), as a
    /// scale-down does.
    pub async fn start_tables_replica(&mut self) -> anyhow::Result<(u16, Shutdown)> {
        anyhow::ensure!(
            self.backend == Backend::PostgresNats,
            "tables replicas share their tables over PostgreSQL"
        );
        self.tables_on_its_port().await
    }

    /// A tables service on a port of its own, announced to the other replicas.
    async fn tables_on_its_port(&mut self) -> anyhow::Result<(u16, Shutdown)> {
        let mut common = self.common("tables")?;
        let port = fairdeal_testkit::free_port()?;
        common.listen_addr = ([127, 0, 0, 1], port).into();
        let storage = self
            .storage(
                fairdeal_tables::startup::SCHEMA,
                <fairdeal_tables::TablesService as fairdeal_kit::Service>::MIGRATIONS,
            )
            .await?;
        let (authn, tokens) = self.authn_and_tokens("tables")?;
        let app = fairdeal_tables::Application::assemble(
            &common,
            fairdeal_tables::startup::Parts {
                storage,
                commitment: channel(self.commitment_port)?,
                dealing: channel(self.dealing_port)?,
                tokens,
                authn,
                clock: self.clock.clone(),
                advertise_url: fairdeal_harness::url(port),
            },
        )
        .await?;
        let port = app.port();
        let shutdown = app.shutdown();
        self.shutdowns.push(shutdown.clone());
        tokio::spawn(app.run_until_stopped());
        serving(port).await?;
        Ok((port, shutdown))
    }

    /// Stops every service, deletes the stack's JetStream streams and drops its database.
    pub async fn stop(self) -> anyhow::Result<()> {
        for shutdown in &self.shutdowns {
            shutdown.trigger();
        }
        // Every service's background tasks (relays, consumers, keepers) end before the
        // streams go and the pools close, so none fails on them as it stops. Bounded: a task
        // that ignored its token would not keep the test from ending.
        for shutdown in &self.shutdowns {
            let stopped = tokio::time::timeout(STOP_WAIT, shutdown.wait_for_tasks()).await;
            if stopped.is_err() {
                tracing::warn!(
                    running = shutdown.running_tasks(),
                    "a service's background tasks did not stop in time"
                );
            }
        }
        if let Some(prefix) = &self.prefix {
            fairdeal_harness::delete_streams(prefix, &self.services).await;
        }
        for storage in &self.storages {
            storage.db().close().await;
        }
        if let Some(database) = &self.database {
            database.drop().await?;
        }
        Ok(())
    }
}
