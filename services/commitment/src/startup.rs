//! The seed-commitment service on the platform: its settings, its [`Parts`] and [`CommitmentService`], the [`Service`] the
//! kit's host runs (`main.rs`, `fairdeal-server serve` and `up`); tests build [`Parts`] of
//! their own and call [`Application::assemble`] on port 0.

use fairdeal_authn::{AuthLayer, Authenticator, CallerAuthSettings, spawn_key_refresh};
use fairdeal_kit::config::{Config, ConfigError, Secret, Section};
use fairdeal_kit::{CommonConfig, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_server::CommitmentServiceServer;
use serde::Serialize;

use crate::grpc::{CommitmentApi, PUBLIC_METHODS};
use crate::seeds::{MIGRATIONS, SeedStore, seed_store};
use crate::service::Commitments;
use crate::vault::{KeyRing, MissingSeedKeys};

/// PostgreSQL schema of this service's tables and event log (the host's default: its name).
pub const SCHEMA: &str = CommitmentService::NAME;

/// The seed-commitment service on a server of its own.
pub type Application = fairdeal_kit::host::Application<CommitmentService>;

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

/// The seed-commitment service, as the kit's host runs it.
#[derive(Debug)]
pub struct CommitmentService;

impl Service for CommitmentService {
    const NAME: &'static str = "commitment";
    const MIGRATIONS: &'static [&'static fairdeal_db::Migrations] = &[&MIGRATIONS];
    type Settings = CommitmentSettings;
    type Parts = Parts;
    type Handles = ();

    async fn parts(
        config: &Config<CommitmentSettings>,
        storage: Storage,
    ) -> Result<Parts, StartError> {
        Parts::over(config, storage)
    }

    /// Checks the stored seeds' keys, starts the service's background tasks on `shutdown` (key
    /// refresh, the relay) and returns its gRPC routes, to serve alone
    /// ([`Application::assemble`]) or beside other services on one server (the all-in-one
    /// process).
    async fn mount(
        common: &CommonConfig,
        parts: Parts,
        shutdown: &Shutdown,
    ) -> Result<(Mount, ()), StartError> {
        let seeds = seed_store(parts.storage.db());
        check_seed_keys(&seeds, &parts.keys).await?;
        spawn_key_refresh(&parts.authn, shutdown);
        Bus::start(common, &parts.storage, Self::NAME, shutdown).await?;
        let service = Commitments::new(parts.storage.events(), seeds, parts.keys);
        let mut layer = AuthLayer::new(parts.authn);
        for path in PUBLIC_METHODS {
            layer = layer.allow_anonymous(path);
        }
        let routes = Mount::new()
            .add_service(layer.wrap(CommitmentServiceServer::new(CommitmentApi::new(service))))
            .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET);
        Ok((routes, ()))
    }

    /// In one process: the seed keys the host generated, the auth service at its address.
    fn embed(settings: &mut CommitmentSettings, host: &Embedded) -> Result<(), StartError> {
        settings.seed_keys = Some(host.secret(Embedded::SEED_KEYS)?);
        settings.auth.auth_url = Some(host.url.clone());
        Ok(())
    }
}
