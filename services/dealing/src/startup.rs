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
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_server::DealingServiceServer;
use serde::Serialize;
use tonic::transport::Channel;

use crate::grpc::{DealingApi, PUBLIC_METHODS};
use crate::service::Dealer;

/// PostgreSQL schema of this service's event log.
pub const SCHEMA: &str = "dealing";

/// This service's name on the bus (its events go to `<prefix>.dealing`).
pub const SERVICE: &str = "dealing";

/// The dealing service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Dealing settings")]
pub struct DealingSettings {
    /// The commitment service's gRPC address: `http://host:port`, or `dns:///host:port` to
    /// balance calls over every address of the name (a headless Service's pods).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50052")]
    pub commitment_url: String,
    /// Where callers' tokens are verified from (and, with `auth_url`, where this service
    /// gets its own token).
    #[command(flatten)]
    #[serde(flatten)]
    pub auth: CallerAuthSettings,
    /// This service's own identity for its calls to the commitment service.
    #[command(flatten)]
    #[serde(flatten)]
    pub identity: ServiceIdentitySettings,
}

impl Section for DealingSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        self.identity.validate(self.auth.auth_url.as_deref())?;
        Target::parse("commitment_url", &self.commitment_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        // Fixed public keys and an auth address together are ambiguous: refused.
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
    /// This service's access token for the commitment service (role service, `dealing`).
    pub tokens: Arc<dyn TokenProvider>,
    /// Verifies callers' tokens.
    pub authn: Authenticator,
}

impl Parts {
    /// The parts `config` names: the database is opened and migrated (see [`Parts::over`]).
    pub async fn from_config(config: &Config<DealingSettings>) -> Result<Self, StartError> {
        let storage = Storage::open(&config.common, SCHEMA, &[]).await?;
        Self::over(config, storage)
    }

    /// The parts `config` names over an opened `storage` (the all-in-one process shares one
    /// between services). One channel to the auth service serves both this service's token
    /// and the public keys.
    pub fn over(config: &Config<DealingSettings>, storage: Storage) -> Result<Self, StartError> {
        let settings = &config.service;
        let auth = settings.auth.auth_channel()?;
        let tokens = settings
            .identity
            .token_provider(&config.common.service_name, auth.as_ref())?;
        let authn = settings.auth.authenticator(auth)?;
        // Lazy: the commitment service may start after this one; calls fail UNAVAILABLE
        // until it is up.
        let commitment = client::channel("commitment_url", &settings.commitment_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        Ok(Self {
            storage,
            commitment,
            tokens,
            authn,
        })
    }
}

/// Starts the service's background tasks on `shutdown` (key refresh, the relay) and returns
/// its gRPC routes, to serve alone ([`Application::assemble`]) or beside other services on
/// one server (the all-in-one process).
pub async fn mount(
    common: &CommonConfig,
    parts: Parts,
    shutdown: &Shutdown,
) -> Result<Mount, StartError> {
    spawn_key_refresh(&parts.authn, shutdown);
    Bus::start(common, &parts.storage, SERVICE, shutdown).await?;
    let dealer = Dealer::new(parts.storage.events(), parts.commitment, parts.tokens);
    let mut layer = AuthLayer::new(parts.authn);
    for path in PUBLIC_METHODS {
        layer = layer.allow_anonymous(path);
    }
    Ok(Mount::new()
        .add_service(layer.wrap(DealingServiceServer::new(DealingApi::new(dealer))))
        .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET))
}

/// The running dealing service.
#[derive(Debug)]
pub struct Application {
    /// The kit's server.
    app: fairdeal_kit::Application,
}

impl Application {
    /// Opens the storage `config` names and binds the listener.
    pub async fn build(config: Config<DealingSettings>) -> Result<Self, StartError> {
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
