//! Settings and wiring on the platform: `main.rs` calls [`Application::build`] and
//! [`Application::run_until_stopped`]; tests build [`Parts`] of their own and call
//! [`Application::assemble`] on port 0.

use fairdeal_authn::{AuthLayer, Authenticator, CallerAuthSettings, spawn_key_refresh};
use fairdeal_kit::config::{Config, ConfigError, Secret, Section};
use fairdeal_kit::{CommonConfig, Mount, ServeError, Shutdown};
use fairdeal_platform::{Bus, StartError, Storage};
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_server::CommitmentServiceServer;
use serde::Serialize;

use crate::grpc::{CommitmentApi, PUBLIC_METHODS};
use crate::seeds::{MIGRATIONS, SeedStore, seed_store};
use crate::service::Commitments;
use crate::vault::{KeyRing, MissingSeedKeys};

/// PostgreSQL schema of this service's tables.
pub const SCHEMA: &str = "commitment";

/// This service's name on the bus (its events go to `<prefix>.commitment`).
pub const SERVICE: &str = "commitment";

/// The commitment service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Commitment settings")]
pub struct CommitmentSettings {
    /// Keys sealing server seeds at rest: `kid:64hex[,kid:64hex...]`, the first one active
    /// (rotate by putting a new key first and keeping the old ones).
    #[arg(long, value_name = "KEYS")]
    pub seed_keys: Option<Secret>,
    /// Where callers' tokens are verified from.
    #[command(flatten)]
    #[serde(flatten)]
    pub auth: CallerAuthSettings,
}

impl CommitmentSettings {
    /// The seed key ring of `seed_keys`.
    pub fn key_ring(&self) -> Result<KeyRing, ConfigError> {
        let keys = self
            .seed_keys
            .as_ref()
            .ok_or_else(|| ConfigError::invalid("seed_keys", "is required"))?;
        KeyRing::parse(keys.expose_secret())
            .map_err(|e| ConfigError::invalid("seed_keys", e.to_string()))
    }
}

impl Section for CommitmentSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        self.key_ring()?;
        self.auth.validate()
    }
}

/// What the service is assembled from (tests supply their own).
#[derive(Debug)]
pub struct Parts {
    /// The database, event store and append signal.
    pub storage: Storage,
    /// Keys sealing the seeds.
    pub keys: KeyRing,
    /// Verifies callers' tokens.
    pub authn: Authenticator,
}

impl Parts {
    /// The parts `config` names: opens and migrates the database.
    pub async fn from_config(config: &Config<CommitmentSettings>) -> Result<Self, StartError> {
        let storage = Storage::open(&config.common, SCHEMA, &[&MIGRATIONS]).await?;
        Self::over(config, storage)
    }

    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services).
    pub fn over(config: &Config<CommitmentSettings>, storage: Storage) -> Result<Self, StartError> {
        let keys = config.service.key_ring()?;
        let authn = config.service.auth.authenticator(None)?;
        Ok(Self {
            storage,
            keys,
            authn,
        })
    }
}

/// Refuses to start when a stored seed is sealed under a key id the ring lacks: such a seed
/// could never be dealt, revealed or rotated. The error names the missing key ids (never key
/// material): [`StartError::Dependency`] on `seed_keys`, whose reason is [`MissingSeedKeys`].
pub async fn check_seed_keys(seeds: &SeedStore, keys: &KeyRing) -> Result<(), StartError> {
    let in_use = seeds.key_ids().await.map_err(|e| StartError::Dependency {
        what: "sealed_seeds",
        reason: format!("reading the key ids of stored seeds: {e}"),
    })?;
    keys.check_in_use(&in_use)
        .map_err(|missing: MissingSeedKeys| StartError::Dependency {
            what: "seed_keys",
            reason: missing.to_string(),
        })
}

/// Checks the stored seeds' keys, starts the service's background tasks on `shutdown` (key
/// refresh, the relay) and returns its gRPC routes, to serve alone
/// ([`Application::assemble`]) or beside other services on one server (the all-in-one
/// process).
pub async fn mount(
    common: &CommonConfig,
    parts: Parts,
    shutdown: &Shutdown,
) -> Result<Mount, StartError> {
    let seeds = seed_store(parts.storage.db());
    check_seed_keys(&seeds, &parts.keys).await?;
    spawn_key_refresh(&parts.authn, shutdown);
    Bus::start(common, &parts.storage, SERVICE, shutdown).await?;
    let service = Commitments::new(parts.storage.events(), seeds, parts.keys);
    let mut layer = AuthLayer::new(parts.authn);
    for path in PUBLIC_METHODS {
        layer = layer.allow_anonymous(path);
    }
    Ok(Mount::new()
        .add_service(layer.wrap(CommitmentServiceServer::new(CommitmentApi::new(service))))
        .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET))
}

/// The running commitment service.
#[derive(Debug)]
pub struct Application {
    /// The kit's server.
    app: fairdeal_kit::Application,
}

impl Application {
    /// Opens the storage `config` names and binds the listener.
    pub async fn build(config: Config<CommitmentSettings>) -> Result<Self, StartError> {
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

    /// Serves until stopped (signal or shutdown handle), then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.app.run_until_stopped().await
    }
}
