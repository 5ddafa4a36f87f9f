//! Settings and wiring on the platform: `main.rs` calls [`Application::build`] and
//! [`Application::run_until_stopped`]; tests build [`Parts`] of their own and call
//! [`Application::assemble`] on port 0.

use std::sync::Arc;

use fairdeal_authn::{
    AuthLayer, Authenticator, CallerAuthSettings, ServiceIdentitySettings, TokenProvider,
    spawn_key_refresh,
};
use fairdeal_kit::client::{self, Target};
use fairdeal_kit::config::{Config, ConfigError, Section};
use fairdeal_kit::{CommonConfig, Mount, ServeError, Shutdown};
use fairdeal_platform::{Bus, StartError, Storage};
use fairdeal_proto::fairdeal::tables::v1::tables_service_server::TablesServiceServer;
use serde::Serialize;
use tonic::transport::Channel;

use crate::clock::{SystemClock, TableClock};
use crate::grpc::TablesApi;
use crate::lobby::{CONSUMER, LobbyProjection, MIGRATIONS};
use crate::service::Tables;

/// PostgreSQL schema of this service (event log, bus tables, lobby).
pub const SCHEMA: &str = "tables";

/// This service's name on the bus (its events go to `<prefix>.tables`).
pub const SERVICE: &str = "tables";

/// The tables service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Tables settings")]
pub struct TablesSettings {
    /// The commitment service's gRPC address (`http://host:port` or `dns:///host:port`).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50052")]
    pub commitment_url: String,
    /// The dealing service's gRPC address (`http://host:port` or `dns:///host:port`).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50053")]
    pub dealing_url: String,
    /// Where callers' tokens are verified from (and, with `auth_url`, where this service
    /// gets its own token).
    #[command(flatten)]
    #[serde(flatten)]
    pub auth: CallerAuthSettings,
    /// This service's own identity for its calls to the commitment and dealing services.
    #[command(flatten)]
    #[serde(flatten)]
    pub identity: ServiceIdentitySettings,
}

impl Section for TablesSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        self.identity.validate(self.auth.auth_url.as_deref())?;
        Target::parse("commitment_url", &self.commitment_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        Target::parse("dealing_url", &self.dealing_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        self.auth.validate()
    }
}

/// What the service is assembled from (tests supply their own).
#[derive(Debug)]
pub struct Parts {
    /// The database, event store and append signal.
    pub storage: Storage,
    /// A (lazy) channel to the commitment service.
    pub commitment: Channel,
    /// A (lazy) channel to the dealing service.
    pub dealing: Channel,
    /// This service's access token (role service, `tables`).
    pub tokens: Arc<dyn TokenProvider>,
    /// Verifies callers' tokens.
    pub authn: Authenticator,
    /// The time of turn deadlines.
    pub clock: Arc<dyn TableClock>,
}

impl Parts {
    /// The parts `config` names; the database is opened and migrated.
    pub async fn from_config(config: &Config<TablesSettings>) -> Result<Self, StartError> {
        let storage = Storage::open(&config.common, SCHEMA, &[&MIGRATIONS]).await?;
        Self::over(config, storage)
    }

    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services).
    pub fn over(config: &Config<TablesSettings>, storage: Storage) -> Result<Self, StartError> {
        let settings = &config.service;
        let auth = settings.auth.auth_channel()?;
        let tokens = settings
            .identity
            .token_provider(&config.common.service_name, auth.as_ref())?;
        let authn = settings.auth.authenticator(auth)?;
        // Lazy: the other services may start after this one; calls fail UNAVAILABLE until
        // they are up.
        let commitment = client::channel("commitment_url", &settings.commitment_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        let dealing = client::channel("dealing_url", &settings.dealing_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        Ok(Self {
            storage,
            commitment,
            dealing,
            tokens,
            authn,
            clock: Arc::new(SystemClock),
        })
    }
}

/// Starts the service's background tasks on `shutdown` (key refresh, the relay, the lobby
/// consumer, the turn clocks) and returns its gRPC routes, to serve alone
/// ([`Application::assemble`]) or beside other services on one server (the all-in-one
/// process).
pub async fn mount(
    common: &CommonConfig,
    parts: Parts,
    shutdown: &Shutdown,
) -> Result<Mount, StartError> {
    spawn_key_refresh(&parts.authn, shutdown);
    let bus = Bus::start(common, &parts.storage, SERVICE, shutdown).await?;
    let tables = Tables::new(
        &parts.storage,
        parts.commitment,
        parts.dealing,
        parts.tokens,
        parts.clock,
        shutdown.clone(),
    );
    let projection = LobbyProjection::waking(tables.owed_steps());
    bus.spawn_consumer(SERVICE, CONSUMER, Arc::new(projection), shutdown)
        .await?;
    shutdown.spawn("turn-clocks", tables.clone().run_timers(shutdown.token()));
    Ok(Mount::new()
        .add_service(
            AuthLayer::new(parts.authn).wrap(TablesServiceServer::new(TablesApi::new(tables))),
        )
        .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET))
}

/// The running tables service.
#[derive(Debug)]
pub struct Application {
    /// The kit's server.
    app: fairdeal_kit::Application,
}

impl Application {
    /// Opens the storage `config` names and binds the listener.
    pub async fn build(config: Config<TablesSettings>) -> Result<Self, StartError> {
        let parts = Parts::from_config(&config).await?;
        Self::assemble(&config.common, parts).await
    }

    /// Wires `parts` into a bound server of its own: [`mount`], then bind.
    pub async fn assemble(common: &CommonConfig, parts: Parts) -> Result<Self, StartError> {
        let shutdown = Shutdown::new();
        let routes = mount(common, parts, &shutdown).await?;
        let app = fairdeal_kit::Application::builder(common)
            .with_shutdown(shutdown)
            .mount(routes)
            .build()
            .await?;
        Ok(Application { app })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.app.port()
    }

    /// The shutdown handle.
    pub fn shutdown(&self) -> Shutdown {
        self.app.shutdown()
    }

    /// Serves until stopped, then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.app.run_until_stopped().await
    }
}
