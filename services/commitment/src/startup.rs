//! Configuration and wiring: settings, backends (PostgreSQL or the embedded SQLite) and the
//! gRPC application on the platform kit. `main.rs` only calls [`Application::build`] and
//! [`Application::run_until_stopped`]; tests do the same on port 0.

use std::sync::Arc;

use std::time::Duration;

use fairdeal_authn::{
    AuthLayer, Authenticator, AuthenticatorOptions, KeySet, KeysFrom, StaticKeySource,
};
use fairdeal_bus::{BusDb, JetStreamConfig, Relay, RelayConfig, ensure_streams};
use fairdeal_eventstore::{EventStore, PgEventStore, SqliteEventStore};
use fairdeal_kit::config::{Config, ConfigError, Secret, Section};
use fairdeal_kit::{CommonConfig, ServeError};
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_server::CommitmentServiceServer;
use serde::Serialize;
use tonic::transport::Channel;

use crate::grpc::{CommitmentApi, PUBLIC_METHODS};
use crate::seeds::SeedStore;
use crate::service::Commitments;
use crate::vault::KeyRing;

/// PostgreSQL schema of this service's tables.
pub const SCHEMA: &str = "commitment";

/// The commitment service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Commitment settings")]
pub struct CommitmentSettings {
    /// Keys sealing server seeds at rest: `kid:64hex[,kid:64hex...]`, the first one active
    /// (rotate by putting a new key first and keeping the old ones).
    #[arg(long, value_name = "KEYS")]
    pub seed_keys: Option<Secret>,
    /// Fixed public keys of the auth service that sign access tokens: `kid:64hex[,...]`
    /// (instead of `auth_url`; they are never refreshed).
    #[arg(long, value_name = "KEYS", default_value = "")]
    pub auth_public_keys: String,
    /// The auth service's gRPC address (`http://host:port`, or `dns:///host:port` to balance
    /// over every address of the name): its published public keys are fetched and kept
    /// fresh (instead of `auth_public_keys`).
    #[arg(long, value_name = "URL")]
    pub auth_url: Option<String>,
}

impl Section for CommitmentSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        let keys = self
            .seed_keys
            .as_ref()
            .ok_or_else(|| ConfigError::invalid("seed_keys", "is required"))?;
        KeyRing::parse(keys.expose_secret())
            .map_err(|e| ConfigError::invalid("seed_keys", e.to_string()))?;
        validate_auth(&self.auth_public_keys, self.auth_url.as_deref())
    }
}

/// Checks the settings naming where access tokens are verified: fixed keys or the auth
/// service's address, not both (and each well formed).
pub fn validate_auth(auth_public_keys: &str, auth_url: Option<&str>) -> Result<(), ConfigError> {
    KeysFrom::parse(auth_public_keys, auth_url)
        .map(drop)
        .map_err(|e| ConfigError::invalid(e.field, e.reason))
}

/// Startup failures.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// The database could not be opened or migrated.
    #[error("database: {0}")]
    Database(String),
    /// The server could not bind.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

/// How often a service refetches the auth service's public keys even when no token names an
/// unknown key, so a withdrawn key stops being trusted.
pub const KEY_REFRESH_PERIOD: Duration = Duration::from_secs(300);

/// An authenticator trusting `keys` (tests, fixed configuration).
pub fn authenticator(keys: KeySet) -> Authenticator {
    Authenticator::new(
        Arc::new(StaticKeySource::new(keys)),
        AuthenticatorOptions::default(),
    )
}

/// The authenticator the settings name: fixed public keys (`auth_public_keys`) or the keys
/// the auth service at `auth_url` publishes (fetched on first use, when a token names an
/// unknown key, and every [`KEY_REFRESH_PERIOD`]). `shared_auth` is a channel to `auth_url`
/// the service already holds for other calls to auth (`None`: the keys get their own).
pub fn configured_authenticator(
    auth_public_keys: &str,
    auth_url: Option<&str>,
    shared_auth: Option<Channel>,
) -> Result<Authenticator, ConfigError> {
    let source = KeysFrom::parse(auth_public_keys, auth_url)
        .and_then(|keys| keys.into_source(shared_auth))
        .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
    Ok(Authenticator::new(source, AuthenticatorOptions::default()))
}

/// Keeps `authn`'s keys fresh until `shutdown` stops the background tasks.
pub fn spawn_key_refresh(authn: &Authenticator, shutdown: &fairdeal_kit::Shutdown) {
    let stop = shutdown.token();
    let refresh = authn.clone().refresh_every(KEY_REFRESH_PERIOD);
    shutdown.spawn("public-key-refresh", async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = refresh => {}
        }
    });
}

/// The event store named by `database_url` (`postgres://` in `schema`, or `sqlite://path`),
/// migrated.
pub async fn open_store(database_url: &str, schema: &str) -> Result<Backend, StartError> {
    let db = |e: fairdeal_eventstore::StoreError| StartError::Database(e.to_string());
    if database_url.starts_with("postgres://") || database_url.starts_with("postgresql://") {
        let store = PgEventStore::connect(database_url, schema)
            .await
            .map_err(db)?;
        let pool = store.pool().clone();
        Ok(Backend {
            store: Arc::new(store),
            postgres: Some(pool),
            sqlite: None,
            schema: schema.to_owned(),
        })
    } else if let Some(rest) = database_url.strip_prefix("sqlite://") {
        // `sqlite://path?mode=rwc`: the store creates the file; options are its own.
        let path = rest.split('?').next().unwrap_or(rest);
        let store = SqliteEventStore::open(path).await.map_err(db)?;
        let pool = store.pool().clone();
        Ok(Backend {
            store: Arc::new(store),
            postgres: None,
            sqlite: Some(pool),
            schema: schema.to_owned(),
        })
    } else {
        Err(StartError::Config(
            "database_url must start with postgres:// or sqlite://".into(),
        ))
    }
}

/// An opened event store with the pool of its backend (for the service's own tables).
#[derive(Debug, Clone)]
pub struct Backend {
    /// The event store.
    pub store: Arc<dyn EventStore>,
    /// The PostgreSQL pool, when on PostgreSQL.
    pub postgres: Option<sqlx::PgPool>,
    /// The SQLite pool, when embedded.
    pub sqlite: Option<sqlx::SqlitePool>,
    /// The PostgreSQL schema.
    pub schema: String,
}

/// Starts the relay publishing this service's committed events to NATS JetStream (stream
/// prefix `<subject_prefix>.<service>`), when `nats_url` is set; with no NATS the events
/// stay in the store, where the embedded in-process bus of any consumer tails them. The
/// relay runs on `shutdown` and stops with it.
pub async fn start_relay(
    common: &CommonConfig,
    backend: &Backend,
    service: &str,
    shutdown: &fairdeal_kit::Shutdown,
) -> Result<(), StartError> {
    let Some(url) = &common.nats_url else {
        return Ok(());
    };
    let bus = |e: fairdeal_bus::BusError| StartError::Database(format!("bus: {e}"));
    let client = async_nats::connect(url.expose_secret())
        .await
        .map_err(|e| StartError::Database(format!("NATS: {e}")))?;
    let js = async_nats::jetstream::new(client);
    let streams = JetStreamConfig::new(format!("{}.{service}", common.subject_prefix))
        .and_then(|c| c.with_replicas(usize::from(common.jetstream_replicas)))
        .map_err(bus)?;
    ensure_streams(&js, &streams).await.map_err(bus)?;
    let config = RelayConfig::new(service);
    let token = shutdown.token();
    match (&backend.postgres, &backend.sqlite) {
        (Some(pool), _) => {
            let db = BusDb::postgres(pool.clone(), &backend.schema).map_err(bus)?;
            db.migrate().await.map_err(bus)?;
            let relay = Relay::new(backend.store.clone(), db, js, streams, config).map_err(bus)?;
            shutdown.spawn("relay", relay.run(token));
        }
        (None, Some(pool)) => {
            let db = BusDb::sqlite(pool.clone());
            db.migrate().await.map_err(bus)?;
            let relay = Relay::new(backend.store.clone(), db, js, streams, config).map_err(bus)?;
            shutdown.spawn("relay", relay.run(token));
        }
        (None, None) => return Err(StartError::Config("no database pool".into())),
    }
    Ok(())
}

/// The running commitment service.
#[derive(Debug)]
pub struct Application {
    /// The kit's server.
    app: fairdeal_kit::Application,
}

impl Application {
    /// Opens the backend, runs migrations and binds the listener.
    pub async fn build(config: Config<CommitmentSettings>) -> Result<Self, StartError> {
        let common = config.common;
        let settings = config.service;
        let keys = settings
            .seed_keys
            .as_ref()
            .ok_or_else(|| StartError::Config("seed_keys is required".into()))?;
        let ring =
            KeyRing::parse(keys.expose_secret()).map_err(|e| StartError::Config(e.to_string()))?;
        let authn = configured_authenticator(
            &settings.auth_public_keys,
            settings.auth_url.as_deref(),
            None,
        )
        .map_err(|e| StartError::Config(e.to_string()))?;
        let backend = open_store(common.database_url.expose_secret(), SCHEMA).await?;
        Self::build_with(&common, backend, ring, authn).await
    }

    /// Wires an already opened backend (tests share one with their assertions).
    pub async fn build_with(
        common: &CommonConfig,
        backend: Backend,
        ring: KeyRing,
        authn: Authenticator,
    ) -> Result<Self, StartError> {
        let seeds = match (&backend.postgres, &backend.sqlite) {
            (Some(pool), _) => SeedStore::Postgres {
                pool: pool.clone(),
                schema: backend.schema.clone(),
            },
            (None, Some(pool)) => SeedStore::Sqlite { pool: pool.clone() },
            (None, None) => return Err(StartError::Config("no database pool".into())),
        };
        seeds
            .migrate()
            .await
            .map_err(|e| StartError::Database(e.to_string()))?;
        let service = Commitments::new(backend.store.clone(), seeds, ring);
        let shutdown = fairdeal_kit::Shutdown::new();
        spawn_key_refresh(&authn, &shutdown);
        let mut layer = AuthLayer::new(authn);
        for path in PUBLIC_METHODS {
            layer = layer.allow_anonymous(path);
        }
        start_relay(common, &backend, "commitment", &shutdown).await?;
        let app = fairdeal_kit::Application::builder(common)
            .with_shutdown(shutdown)
            .add_service(layer.wrap(CommitmentServiceServer::new(CommitmentApi::new(service))))
            .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET)
            .build()
            .await?;
        Ok(Application { app })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.app.port()
    }

    /// The shutdown handle.
    pub fn shutdown(&self) -> fairdeal_kit::Shutdown {
        self.app.shutdown()
    }

    /// Serves until stopped (signal or shutdown handle), then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.app.run_until_stopped().await
    }
}
