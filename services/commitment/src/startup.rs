//! The seed-commitment service on the platform: its settings, its [`Parts`] and [`CommitmentService`], the [`Service`] the
//! kit's host runs (`main.rs`, `fairdeal-server serve` and `up`); tests build [`Parts`] of
//! their own and call [`Application::assemble`] on port 0.

use fairdeal_authn::{AuthLayer, Authenticator, CallerAuthSettings, spawn_key_refresh};
use fairdeal_drand::Chain;
use fairdeal_drand_client::{BeaconClient, FetchPolicy, Relay};
use fairdeal_kit::config::{Config, ConfigError, Secret, Section};
use fairdeal_kit::deployment::{Deployment, Made, SecretSetting};
use fairdeal_kit::{CommonConfig, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_server::CommitmentServiceServer;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

use crate::drand::Drand;
use crate::grpc::{CommitmentApi, PUBLIC_METHODS};
use crate::pending::pending_store;
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
    /// drand rounds as tables' and tournaments' delayed values.
    #[command(flatten)]
    #[serde(flatten)]
    pub drand: DrandSettings,
}

/// drand settings: with relays, every table and tournament committed without a delayed source
/// of its own gets a drand round fixed at commit and bound by the service (see
/// docs/commitment-and-dealing.md, "drand round"); at start, the binders of rounds not bound
/// yet are restarted. Without relays (the default) drand is off.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "drand settings")]
pub struct DrandSettings {
    /// drand HTTP relays asked in turn, comma-separated (e.g.
    /// `https://api.drand.sh,https://drand.cloudflare.com`); empty: drand off, delayed values
    /// are bound by hand.
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    pub drand_relays: Vec<String>,
    /// The chain: `quicknet` (League of Entropy, built in; the only one).
    #[arg(long, value_name = "CHAIN", default_value = "quicknet")]
    pub drand_chain: String,
    /// Rounds added to the first round at or after the commit (3 s each on quicknet): covers
    /// this clock being behind drand's and the commitment's publication.
    #[arg(long, value_name = "ROUNDS", default_value_t = 10)]
    pub drand_margin_rounds: u64,
    /// The fallback round is the round plus this many (bound only if the round stalls).
    #[arg(long, value_name = "ROUNDS", default_value_t = 100)]
    pub drand_fallback_rounds: u64,
    /// Seconds after its time a round that no relay gives is declared stalled.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub drand_stall_seconds: u64,
    /// Longest wait of one request to a relay, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    pub drand_request_timeout_ms: u64,
    /// Passes over the relays per fetch (the pause between passes doubles from 1 s).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub drand_passes: u32,
    /// Longest wait of the first deal for a round not published yet, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 45)]
    pub drand_deal_wait_seconds: u64,
}

impl DrandSettings {
    /// The relays, parsed (empty: drand off).
    pub fn relays(&self) -> Result<Vec<Relay>, ConfigError> {
        self.drand_relays
            .iter()
            .filter(|r| !r.trim().is_empty())
            .map(|r| {
                Relay::parse(r).map_err(|e| ConfigError::invalid("drand_relays", e.to_string()))
            })
            .collect()
    }

    /// The chain named by `drand_chain`.
    pub fn chain(&self) -> Result<Chain, ConfigError> {
        match self.drand_chain.as_str() {
            "quicknet" => {
                Chain::quicknet().map_err(|e| ConfigError::invalid("drand_chain", e.to_string()))
            }
            other => Err(ConfigError::invalid(
                "drand_chain",
                format!("{other:?} is not a known chain (only `quicknet`)"),
            )),
        }
    }

    /// How one fetch tries.
    pub fn policy(&self) -> FetchPolicy {
        FetchPolicy {
            request_timeout: Duration::from_millis(self.drand_request_timeout_ms),
            passes: self.drand_passes,
            ..FetchPolicy::default()
        }
    }

    /// The service's drand over `chain` (none without relays).
    pub fn drand_over(&self, chain: Chain) -> Result<Option<Drand>, ConfigError> {
        let relays = self.relays()?;
        if relays.is_empty() {
            return Ok(None);
        }
        let client = BeaconClient::new(Arc::new(chain), relays, self.policy())
            .map_err(|e| ConfigError::invalid("drand_relays", e.to_string()))?;
        Ok(Some(Drand {
            client,
            margin_rounds: self.drand_margin_rounds,
            fallback_rounds: self.drand_fallback_rounds,
            stall_after: Duration::from_secs(self.drand_stall_seconds),
            deal_wait: Duration::from_secs(self.drand_deal_wait_seconds),
        }))
    }

    /// The service's drand (none without relays).
    pub fn drand(&self) -> Result<Option<Drand>, ConfigError> {
        self.drand_over(self.chain()?)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.relays()?;
        self.chain()?;
        if self.drand_fallback_rounds == 0 {
            return Err(ConfigError::invalid(
                "drand_fallback_rounds",
                "must be at least 1",
            ));
        }
        if self.drand_passes == 0 {
            return Err(ConfigError::invalid("drand_passes", "must be at least 1"));
        }
        if self.drand_request_timeout_ms == 0 {
            return Err(ConfigError::invalid(
                "drand_request_timeout_ms",
                "must be at least 1",
            ));
        }
        Ok(())
    }
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
        self.drand.validate()?;
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
    /// drand rounds as tables' and tournaments' delayed values (none: off).
    pub drand: Option<Drand>,
}

impl Parts {
    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services).
    pub fn over(config: &Config<CommitmentSettings>, storage: Storage) -> Result<Self, StartError> {
        let keys = config.service.key_ring()?;
        let authn = config.service.auth.authenticator(None)?;
        let drand = config.service.drand.drand()?;
        Ok(Self {
            storage,
            keys,
            authn,
            drand,
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
    const DEPLOYMENT: Deployment = Deployment {
        about: "server seeds sealed at rest, commitments and reveals",
        calls: &["auth"],
        secrets: &[SecretSetting {
            setting: "seed_keys",
            key: "seed-keys",
            note: "Sealing keys `kid:64hex[,kid:64hex...]`, the first one active",
            optional: false,
            compose: None,
            made: Made::SeedKeys,
        }],
        ..Deployment::PLAIN
    };
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
    /// refresh, the relay, with drand the binders of rounds not bound yet) and returns its gRPC
    /// routes, to serve alone
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
        let mut service = Commitments::new(parts.storage.events(), seeds, parts.keys);
        if let Some(drand) = parts.drand {
            tracing::info!(chain = drand.beacon_id(), relays = ?drand.client.relays(), "drand rounds as tables' and tournaments' delayed values");
            let pending = pending_store(parts.storage.db());
            service = service.with_drand(drand, pending, shutdown.clone());
            // Commitments whose round was not bound when the last process stopped.
            service.restart_drand_binders();
        }
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
