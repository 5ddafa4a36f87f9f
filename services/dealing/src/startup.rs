//! Settings and wiring of the dealing service on the platform kit.

use std::sync::Arc;

use fairdeal_authn::{
    AccessToken, AuthLayer, Authenticator, GrpcTokenIssuer, ServiceTokens, StaticToken,
    TokenProvider,
};
use fairdeal_commitment::startup::{
    Backend, StartError, configured_authenticator, open_store, spawn_key_refresh, start_relay,
    validate_auth,
};
use fairdeal_kit::client::Target;
use fairdeal_kit::config::{Config, ConfigError, Secret, Section};
use fairdeal_kit::{CommonConfig, ServeError};
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_server::DealingServiceServer;
use serde::Serialize;
use tonic::transport::Channel;

use crate::grpc::{DealingApi, PUBLIC_METHODS};
use crate::service::Dealer;

/// PostgreSQL schema of this service's event log.
pub const SCHEMA: &str = "dealing";

/// The dealing service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Dealing settings")]
pub struct DealingSettings {
    /// The commitment service's gRPC address: `http://host:port`, or `dns:///host:port` to
    /// balance calls over every address of the name (a headless Service's pods).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50052")]
    pub commitment_url: String,
    /// The auth service's gRPC address (`http://host:port` or `dns:///host:port`; one
    /// channel serves both uses): this service obtains its
    /// access token there with `service_secret` (renewed before it expires), and verifies
    /// callers' tokens with the public keys published there.
    #[arg(long, value_name = "URL")]
    pub auth_url: Option<String>,
    /// This service's secret at the auth service (whose `service_credentials` hold its
    /// SHA-256). Requires `auth_url`.
    #[arg(long, value_name = "SECRET")]
    pub service_secret: Option<Secret>,
    /// A fixed access token instead of `service_secret` (it is never renewed: the service
    /// stops dealing when it expires; for tests and short manual runs).
    #[arg(long, value_name = "TOKEN")]
    pub service_token: Option<Secret>,
    /// Fixed public keys of the auth service that sign access tokens: `kid:64hex[,...]`
    /// (instead of `auth_url`).
    #[arg(long, value_name = "KEYS", default_value = "")]
    pub auth_public_keys: String,
}

impl Section for DealingSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        match (&self.service_secret, &self.service_token) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    "service_secret",
                    "set either service_secret or service_token, not both",
                ));
            }
            (None, None) => {
                return Err(ConfigError::invalid(
                    "service_secret",
                    "is required (or a fixed service_token)",
                ));
            }
            (Some(secret), None) => {
                if self.auth_url.is_none() {
                    return Err(ConfigError::invalid(
                        "auth_url",
                        "is required with service_secret",
                    ));
                }
                let len = secret.expose_secret().len();
                if len == 0 || len > 1024 {
                    return Err(ConfigError::invalid(
                        "service_secret",
                        "must be 1 to 1024 bytes",
                    ));
                }
            }
            (None, Some(_)) => {}
        }
        Target::parse("commitment_url", &self.commitment_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        // Fixed public keys and an auth address together are ambiguous: refused.
        validate_auth(&self.auth_public_keys, self.auth_url.as_deref())
    }
}

impl DealingSettings {
    /// Where this service's own access token comes from; `service_name` (the kit's setting,
    /// `dealing` by default) is its subject, and the commitment service lets only `dealing`
    /// read seeds.
    ///
    /// `auth` is the channel to `auth_url` (built once by the caller, shared with the key
    /// source).
    pub fn token_provider(
        &self,
        service_name: &str,
        auth: Option<&Channel>,
    ) -> Result<Arc<dyn TokenProvider>, StartError> {
        match (&self.service_secret, &self.service_token, auth) {
            (Some(secret), None, Some(channel)) => {
                let issuer = GrpcTokenIssuer::new(
                    channel.clone(),
                    service_name,
                    secret.expose_secret().as_bytes(),
                );
                Ok(Arc::new(ServiceTokens::new(Arc::new(issuer))))
            }
            (None, Some(token), _) => Ok(Arc::new(StaticToken::new(AccessToken::new(
                token.expose_secret().to_owned(),
            )))),
            _ => Err(StartError::Config(
                "service_secret with auth_url, or service_token, is required".into(),
            )),
        }
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
        // One channel to the auth service, for this service's token and for the keys.
        let auth = settings
            .auth_url
            .as_deref()
            .map(|url| fairdeal_kit::client::channel("auth_url", url))
            .transpose()
            .map_err(|e| StartError::Config(e.to_string()))?;
        let tokens = settings.token_provider(&common.service_name, auth.as_ref())?;
        let authn = configured_authenticator(
            &settings.auth_public_keys,
            settings.auth_url.as_deref(),
            auth,
        )
        .map_err(|e| StartError::Config(e.to_string()))?;
        let backend = open_store(common.database_url.expose_secret(), SCHEMA).await?;
        Self::build_with(&common, backend, &settings.commitment_url, tokens, authn).await
    }

    /// Wires an already opened backend.
    pub async fn build_with(
        common: &CommonConfig,
        backend: Backend,
        commitment_url: &str,
        tokens: Arc<dyn TokenProvider>,
        authn: Authenticator,
    ) -> Result<Self, StartError> {
        // Lazy: the commitment service may start after this one; calls fail UNAVAILABLE
        // until it is up.
        let channel = fairdeal_kit::client::channel("commitment_url", commitment_url)
            .map_err(|e| StartError::Config(e.to_string()))?;
        let dealer = Dealer::new(backend.store.clone(), channel, tokens);
        let shutdown = fairdeal_kit::Shutdown::new();
        spawn_key_refresh(&authn, &shutdown);
        let mut layer = AuthLayer::new(authn);
        for path in PUBLIC_METHODS {
            layer = layer.allow_anonymous(path);
        }
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
