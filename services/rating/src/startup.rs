//! The rating service on the platform: its settings, its [`Parts`] and [`RatingService`], the [`Service`] the
//! kit's host runs (`main.rs`, `fairdeal-server serve` and `up`); tests build [`Parts`] of
//! their own and call [`Application::assemble`] on port 0.

use std::sync::Arc;

use fairdeal_authn::{AuthLayer, Authenticator, CallerAuthSettings, spawn_key_refresh};
use fairdeal_kit::config::{Config, ConfigError, Section};
use fairdeal_kit::deployment::Deployment;
use fairdeal_kit::{CommonConfig, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::rating::v1::rating_service_server::RatingServiceServer;
use fairdeal_rating::KFactor;
use serde::Serialize;

use crate::grpc::RatingApi;
use crate::projection::{CONSUMER, MIGRATIONS, Ratings};
use crate::service::reads;

/// PostgreSQL schema of this service's tables and event log (the host's default: its name).
pub const SCHEMA: &str = RatingService::NAME;

/// The rating service on a server of its own.
pub type Application = fairdeal_kit::host::Application<RatingService>;

/// The service whose `GameFinished` events are rated.
pub const SOURCE: &str = "tables";

/// The rating service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Rating settings")]
pub struct RatingSettings {
    /// K of every rating change (SPEC 6: 32).
    #[arg(long, value_name = "K", default_value_t = 32.0)]
    pub k_factor: f64,
    /// Where callers' tokens are verified from.
    #[command(flatten)]
    #[serde(flatten)]
    pub auth: CallerAuthSettings,
}

impl Section for RatingSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        KFactor::new(self.k_factor).map_err(|e| ConfigError::invalid("k_factor", e.to_string()))?;
        self.auth.validate()
    }
}

/// What the service is assembled from (tests supply their own).
#[derive(Debug)]
pub struct Parts {
    /// The database, event store and append signal (in the embedded default, shared with
    /// the tables service: see docs/decisions.md).
    pub storage: Storage,
    /// Verifies callers' tokens.
    pub authn: Authenticator,
    /// K of every change.
    pub k: KFactor,
}

impl Parts {
    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services).
    pub fn over(config: &Config<RatingSettings>, storage: Storage) -> Result<Self, StartError> {
        let settings = &config.service;
        let k = KFactor::new(settings.k_factor)
            .map_err(|e| ConfigError::invalid("k_factor", e.to_string()))?;
        Ok(Self {
            authn: settings.auth.authenticator(settings.auth.auth_channel()?)?,
            storage,
            k,
        })
    }
}

/// The rating service, as the kit's host runs it.
#[derive(Debug)]
pub struct RatingService;

impl Service for RatingService {
    const NAME: &'static str = "rating";
    const MIGRATIONS: &'static [&'static fairdeal_db::Migrations] = &[&MIGRATIONS];
    const DEPLOYMENT: Deployment = Deployment {
        about: "ratings from the tables' GameFinished (a durable NATS consumer, exactly once \
                in the database transaction, so replicas share it), history and leaderboards",
        calls: &["auth"],
        reads: &["tables"],
        ..Deployment::PLAIN
    };
    type Settings = RatingSettings;
    type Parts = Parts;
    type Handles = ();

    async fn parts(config: &Config<RatingSettings>, storage: Storage) -> Result<Parts, StartError> {
        Parts::over(config, storage)
    }

    /// Starts the service's background tasks on `shutdown` (key refresh, the relay of the
    /// rating events, the consumer of the tables' events) and returns its gRPC routes, to serve
    /// alone ([`Application::assemble`]) or beside other services on one server (the
    /// all-in-one process).
    async fn mount(
        common: &CommonConfig,
        parts: Parts,
        shutdown: &Shutdown,
    ) -> Result<(Mount, ()), StartError> {
        spawn_key_refresh(&parts.authn, shutdown);
        let bus = Bus::start(common, &parts.storage, Self::NAME, shutdown).await?;
        let ratings = Ratings::new(&parts.storage, parts.k);
        bus.spawn_consumer(SOURCE, CONSUMER, Arc::new(ratings), shutdown)
            .await?;
        let api = RatingApi::new(reads(parts.storage.db()));
        let routes = Mount::new()
            .add_service(AuthLayer::new(parts.authn).wrap(RatingServiceServer::new(api)))
            .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET);
        Ok((routes, ()))
    }

    /// In one process: the auth service at the host's address; its consumer of the tables'
    /// `GameFinished` tails the shared log.
    fn embed(settings: &mut RatingSettings, host: &Embedded) -> Result<(), StartError> {
        settings.auth.auth_url = Some(host.url.clone());
        Ok(())
    }
}
