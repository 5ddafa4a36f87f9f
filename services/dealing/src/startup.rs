//! The dealing service on the platform: its settings, its [`Parts`] and [`Dealing`], the
//! [`Service`] the kit's host runs (`main.rs`, `fairdeal-server serve` and `up`); tests build
//! [`Parts`] of their own and call [`Application::assemble`] on port 0.

use std::sync::Arc;

use fairdeal_authn::{
    AuthLayer, Authenticator, CallerAuthSettings, ServiceIdentitySettings, TokenProvider,
    spawn_key_refresh,
};
use fairdeal_kit::client::{self, Target};
use fairdeal_kit::config::{Config, ConfigError, Section};
use fairdeal_kit::deployment::Deployment;
use fairdeal_kit::host::Migrations;
use fairdeal_kit::{CommonConfig, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_server::DealingServiceServer;
use serde::Serialize;
use tonic::transport::Channel;

use crate::grpc::{DealingApi, PUBLIC_METHODS};
use crate::service::Dealer;

/// PostgreSQL schema of this service's event log (the host's default: its name).
pub const SCHEMA: &str = DealingService::NAME;

/// The dealing service on a server of its own.
pub type Application = fairdeal_kit::host::Application<DealingService>;

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

/// The dealing service, as the kit's host runs it.
#[derive(Debug)]
pub struct DealingService;

impl Service for DealingService {
    const NAME: &'static str = "dealing";
    const MIGRATIONS: &'static [&'static Migrations] = &[];
    const DEPLOYMENT: Deployment = Deployment {
        about: "deals, duplicate deals, single-player outcomes, public verification",
        calls: &["commitment", "auth"],
        signs_in: true,
        ..Deployment::PLAIN
    };
    type Settings = DealingSettings;
    type Parts = Parts;
    type Handles = ();

    async fn parts(
        config: &Config<DealingSettings>,
        storage: Storage,
    ) -> Result<Parts, StartError> {
        Parts::over(config, storage)
    }

    /// Starts the key refresh and the relay on `shutdown` and returns the gRPC routes.
    async fn mount(
        common: &CommonConfig,
        parts: Parts,
        shutdown: &Shutdown,
    ) -> Result<(Mount, ()), StartError> {
        spawn_key_refresh(&parts.authn, shutdown);
        Bus::start(common, &parts.storage, Self::NAME, shutdown).await?;
        let dealer = Dealer::new(parts.storage.events(), parts.commitment, parts.tokens);
        let mut layer = AuthLayer::new(parts.authn);
        for path in PUBLIC_METHODS {
            layer = layer.allow_anonymous(path);
        }
        let routes = Mount::new()
            .add_service(layer.wrap(DealingServiceServer::new(DealingApi::new(dealer))))
            .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET);
        Ok((routes, ()))
    }

    /// In one process: the commitment and auth services at the host's address, and the
    /// service secret the host generated.
    fn embed(settings: &mut DealingSettings, host: &Embedded) -> Result<(), StartError> {
        settings.commitment_url = host.url.clone();
        settings.auth.auth_url = Some(host.url.clone());
        settings.identity.service_secret = Some(host.service_secret(Self::NAME)?);
        Ok(())
    }
}
