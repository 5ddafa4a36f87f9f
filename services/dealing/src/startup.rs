//! Settings and wiring of the dealing service on the platform kit.

use fairdeal_authn::{AccessToken, AuthLayer, Authenticator};
use fairdeal_commitment::startup::{
    Backend, StartError, authenticator, open_store, parse_public_keys, start_relay,
};
use fairdeal_kit::config::{Config, ConfigError, Secret, Section};
use fairdeal_kit::{CommonConfig, ServeError};
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_server::DealingServiceServer;
use serde::Serialize;
use tonic::transport::Endpoint;

use crate::grpc::{DealingApi, PUBLIC_METHODS};
use crate::service::Dealer;

/// PostgreSQL schema of this service's event log.
pub const SCHEMA: &str = "dealing";

/// The dealing service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Dealing settings")]
pub struct DealingSettings {
    /// The commitment service's gRPC address (`http://host:port`).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50052")]
    pub commitment_url: String,
    /// This service's access token (role service, subject `dealing`), issued by the auth
    /// service; sent to the commitment service's internal methods.
    #[arg(long, value_name = "TOKEN")]
    pub service_token: Option<Secret>,
    /// Public keys of the auth service that sign access tokens: `kid:64hex[,...]`.
    #[arg(long, value_name = "KEYS", default_value = "")]
    pub auth_public_keys: String,
}

impl Section for DealingSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.service_token.is_none() {
            return Err(ConfigError::invalid("service_token", "is required"));
        }
        Endpoint::from_shared(self.commitment_url.clone())
            .map_err(|e| ConfigError::invalid("commitment_url", e.to_string()))?;
        parse_public_keys(&self.auth_public_keys)
            .map_err(|e| ConfigError::invalid("auth_public_keys", e))?;
        Ok(())
    }
}

/// The running dealing service.
#[derive(Debug)]
pub struct Application {
    /// The kit's server.
    app: fairdeal_kit::Application,
}

impl Application {
    /// Opens the event store and binds the listener.
    pub async fn build(config: Config<DealingSettings>) -> Result<Self, StartError> {
        let common = config.common;
        let settings = config.service;
        let token = settings
            .service_token
            .as_ref()
            .map(|t| AccessToken::new(t.expose_secret().to_owned()))
            .ok_or_else(|| StartError::Config("service_token is required".into()))?;
        let keys = parse_public_keys(&settings.auth_public_keys).map_err(StartError::Config)?;
        let backend = open_store(common.database_url.expose_secret(), SCHEMA).await?;
        Self::build_with(
            &common,
            backend,
            &settings.commitment_url,
            token,
            authenticator(keys),
        )
        .await
    }

    /// Wires an already opened backend.
    pub async fn build_with(
        common: &CommonConfig,
        backend: Backend,
        commitment_url: &str,
        token: AccessToken,
        authn: Authenticator,
    ) -> Result<Self, StartError> {
        // Lazy: the commitment service may start after this one; calls fail UNAVAILABLE
        // until it is up.
        let channel = Endpoint::from_shared(commitment_url.to_owned())
            .map_err(|e| StartError::Config(format!("commitment_url: {e}")))?
            .connect_lazy();
        let dealer = Dealer::new(backend.store.clone(), channel, token);
        let mut layer = AuthLayer::new(authn);
        for path in PUBLIC_METHODS {
            layer = layer.allow_anonymous(path);
        }
        let shutdown = fairdeal_kit::Shutdown::new();
        start_relay(common, &backend, "dealing", &shutdown).await?;
        let app = fairdeal_kit::Application::builder(common)
            .with_shutdown(shutdown)
            .add_service(layer.wrap(DealingServiceServer::new(DealingApi::new(dealer))))
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

    /// Serves until stopped, then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.app.run_until_stopped().await
    }
}
