//! Wiring: from a [`Config`] to a bound, ready-to-run server with its background tasks.
//!
//! [`Application::build`] binds the listener first (port 0 works in tests), runs migrations,
//! loads the key ring, and spawns the mail dispatcher, the key reloader and (with NATS) the
//! outbox relay on the kit's shutdown handle; [`Application::run_until_stopped`] serves until SIGTERM/SIGINT (or
//! [`fairdeal_kit::Shutdown::trigger`]) and drains.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use fairdeal_authn::{Authenticator, AuthenticatorOptions, Clock, SystemClock};
use fairdeal_bus::{BusDb, JetStreamConfig, Relay, RelayConfig, ensure_streams};
use fairdeal_eventstore::{PgEventStore, SqliteEventStore};
use fairdeal_kit::{Config, Shutdown};
use fairdeal_proto::fairdeal::auth::v1::auth_service_server::AuthServiceServer;
use sqlx::postgres::PgConnectOptions;

use crate::accounts::Accounts;
use crate::config::{AuthSettings, VERIFIER_LEEWAY};
use crate::domain::PasswordHasher;
use crate::grpc::GrpcAuth;
use crate::keyring::KeyRing;
use crate::limits::{AttemptLimiter, MemoryLimiter, RedisLimiter};
use crate::mail::{Composer, Dispatcher, MailTransport, MailboxDir, SmtpTransport};
use crate::store::{AuthStore, PgAuthStore, SqliteAuthStore};

/// What tests (and the all-in-one binary) may replace.
#[derive(Debug, Clone)]
pub struct Overrides {
    /// The clock every expiry and lockout reads.
    pub clock: Arc<dyn Clock>,
    /// Whether SIGTERM/SIGINT stop the server (off when many servers share a test process).
    pub handle_signals: bool,
}

impl Default for Overrides {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            handle_signals: true,
        }
    }
}

/// The built service.
#[derive(Debug)]
pub struct Application {
    /// The bound gRPC server.
    server: fairdeal_kit::Application,
    /// The use cases (tests drive the mail dispatcher and read state through them).
    accounts: Arc<Accounts>,
    /// The mail dispatcher (tests call `send_due` to deliver without waiting).
    dispatcher: Dispatcher,
}

/// The file path of a `sqlite:` URL (`sqlite://path?opts`, `sqlite:path`).
fn sqlite_path(url: &str) -> anyhow::Result<String> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .context("database_url: not a sqlite URL")?;
    let path = rest.split('?').next().unwrap_or_default();
    anyhow::ensure!(
        !path.is_empty() && path != ":memory:",
        "database_url: give the SQLite database a file path"
    );
    Ok(path.to_owned())
}

/// The event store behind the auth store, kept for the outbox relay.
enum EventBackend {
    /// PostgreSQL: the store, its pool and the schema.
    Postgres(PgEventStore, sqlx::PgPool, String),
    /// SQLite.
    Sqlite(SqliteEventStore),
}

async fn open_store(
    config: &Config<AuthSettings>,
) -> anyhow::Result<(Arc<dyn AuthStore>, EventBackend)> {
    let url = config.common.database_url.expose_secret();
    if url.starts_with("postgres") {
        let schema = &config.service.db_schema;
        let options: PgConnectOptions = url.parse().context("database_url")?;
        // Unqualified names (our tables, our migrations table) resolve to the service schema,
        // where the event store keeps its log.
        let options = options.options([("search_path", schema.as_str())]);
        let pool = PgEventStore::pool_options()
            .connect_with(options)
            .await
            .context("connecting to PostgreSQL")?;
        let events = PgEventStore::new(pool.clone(), schema).context("event store")?;
        events.migrate().await.context("event store migrations")?;
        let store = PgAuthStore::new(pool.clone(), events.clone())
            .await
            .context("auth migrations")?;
        Ok((
            Arc::new(store),
            EventBackend::Postgres(events, pool, schema.clone()),
        ))
    } else {
        let path = sqlite_path(url)?;
        let events = SqliteEventStore::open(&path)
            .await
            .context("opening the SQLite database")?;
        let store = SqliteAuthStore::new(events.clone())
            .await
            .context("auth migrations")?;
        Ok((Arc::new(store), EventBackend::Sqlite(events)))
    }
}

/// With NATS configured, the relay publishing this service's events to JetStream
/// (`<subject_prefix>.auth.events.user`), started on `shutdown`. Without NATS the events stay
/// in the log, where the embedded bus of an all-in-one process tails them.
async fn start_relay(
    config: &Config<AuthSettings>,
    backend: EventBackend,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let Some(url) = &config.common.nats_url else {
        return Ok(());
    };
    let client = async_nats::connect(url.expose_secret())
        .await
        .context("connecting to NATS")?;
    let js = async_nats::jetstream::new(client);
    let streams = JetStreamConfig::new(format!("{}.auth", config.common.subject_prefix))?
        .with_replicas(usize::from(config.common.jetstream_replicas))?;
    ensure_streams(&js, &streams)
        .await
        .context("JetStream streams")?;
    let relay_config = RelayConfig::new("auth");
    let stop = shutdown.token();
    match backend {
        EventBackend::Postgres(events, pool, schema) => {
            let db = BusDb::postgres(pool, &schema)?;
            db.migrate().await.context("bus migrations")?;
            let relay = Relay::new(Arc::new(events), db, js, streams, relay_config)?;
            shutdown.spawn("relay", async move {
                if let Err(e) = relay.run(stop).await {
                    tracing::error!(error = %e, "event relay stopped");
                }
            });
        }
        EventBackend::Sqlite(events) => {
            let db = BusDb::sqlite(events.pool().clone());
            db.migrate().await.context("bus migrations")?;
            let relay = Relay::new(Arc::new(events), db, js, streams, relay_config)?;
            shutdown.spawn("relay", async move {
                if let Err(e) = relay.run(stop).await {
                    tracing::error!(error = %e, "event relay stopped");
                }
            });
        }
    }
    Ok(())
}

impl Application {
    /// Builds the service with the system clock.
    pub async fn build(config: Config<AuthSettings>) -> anyhow::Result<Self> {
        Self::build_with(config, Overrides::default()).await
    }

    /// Builds the service with `overrides`.
    pub async fn build_with(
        config: Config<AuthSettings>,
        overrides: Overrides,
    ) -> anyhow::Result<Self> {
        let settings = &config.service;
        let clock = overrides.clock;
        let (store, backend) = open_store(&config).await?;

        let limiter: Arc<dyn AttemptLimiter> = match &config.common.redis_url {
            Some(url) => {
                let namespace = format!("{}:auth", config.common.subject_prefix);
                Arc::new(
                    RedisLimiter::connect(url.expose_secret(), &namespace, settings.policies())
                        .await
                        .context("connecting to Redis")?,
                )
            }
            None => Arc::new(MemoryLimiter::new(settings.policies())),
        };

        let params = settings.hash_params();
        let hasher = tokio::task::spawn_blocking(move || PasswordHasher::new(params))
            .await?
            .context("argon2 parameters")?;

        let keys = Arc::new(
            KeyRing::open(store.clone(), clock.clone(), settings.key_policy())
                .await
                .context("signing keys")?,
        );

        let transport: Arc<dyn MailTransport> = match &settings.smtp_url {
            Some(url) => {
                Arc::new(SmtpTransport::from_url(url.expose_secret()).context("smtp_url")?)
            }
            None => Arc::new(MailboxDir::new(settings.mailbox_dir.clone())),
        };
        let from = settings.mail_from.parse().context("mail_from")?;
        let dispatcher = Dispatcher::new(store.clone(), transport, from, clock.clone());

        let accounts = Arc::new(Accounts {
            store,
            hasher: Arc::new(hasher),
            limiter,
            keys: keys.clone(),
            clock: clock.clone(),
            lifetimes: settings.lifetimes(),
            composer: Composer {
                public_url: settings.public_url.clone(),
            },
            mail_wake: dispatcher.waker(),
            services: Arc::new(settings.service_credentials()?),
        });
        let authn = Authenticator::new(
            keys.clone(),
            AuthenticatorOptions {
                clock: clock.clone(),
                leeway: VERIFIER_LEEWAY,
                ..AuthenticatorOptions::default()
            },
        );
        let grpc = AuthServiceServer::new(GrpcAuth::new(accounts.clone(), authn));

        let server = fairdeal_kit::Application::builder(&config.common)
            .handle_signals(overrides.handle_signals)
            .add_service(grpc)
            .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET)
            .build()
            .await?;

        let shutdown = server.shutdown();
        start_relay(&config, backend, &shutdown).await?;
        shutdown.spawn("mail-dispatcher", dispatcher.clone().run(shutdown.token()));
        let reload_every = settings.key_reload_interval;
        let stop = shutdown.token();
        shutdown.spawn("key-reloader", async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(reload_every) => {}
                }
                if let Err(e) = keys.reload().await {
                    tracing::warn!(error = %e, "signing keys not reloaded");
                }
            }
        });
        Ok(Self {
            server,
            accounts,
            dispatcher,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The shutdown handle.
    pub fn shutdown(&self) -> Shutdown {
        self.server.shutdown()
    }

    /// The use cases.
    pub fn accounts(&self) -> Arc<Accounts> {
        self.accounts.clone()
    }

    /// The mail dispatcher.
    pub fn dispatcher(&self) -> Dispatcher {
        self.dispatcher.clone()
    }

    /// Serves until stopped, then drains.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.server.run_until_stopped().await?;
        Ok(())
    }
}
