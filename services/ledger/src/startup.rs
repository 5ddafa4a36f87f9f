//! The ledger on the platform: its settings, its [`Parts`] and [`LedgerService`], the
//! [`Service`] the kit's host runs (`main.rs`, `fairdeal-server serve` and `up`); tests build
//! [`Parts`] of their own and call [`Application::assemble`] on port 0.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_db::Db;
use fairdeal_kit::config::{Config, ConfigError, Secret, Section};
use fairdeal_kit::deployment::{Deployment, Made, Replicas, SecretSetting};
use fairdeal_kit::{CommonConfig, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::{Bus, SetupError, Storage};
use fairdeal_proto::fairdeal::ledger::v1::ledger_service_server::LedgerServiceServer;
use fairdeal_tlog::NoteSigner;
use serde::Serialize;
use tokio::sync::Notify;

use crate::grpc::LedgerApi;
use crate::ingest::{CONSUMER, Ingest, IngestCounters};
use crate::log::{CheckpointPolicy, Log, follow};
use crate::service::Ledger;

/// PostgreSQL schema of this service (its archive and the consumers' bookkeeping).
pub const SCHEMA: &str = LedgerService::NAME;

/// The ledger on a server of its own.
pub type Application = fairdeal_kit::host::Application<LedgerService>;

/// The services whose events the ledger consumes by default (on NATS, one durable consumer
/// each, `ledger-<service>`): every other service, generated from the platform's list.
pub use crate::sources::SOURCES;

/// The archive's migrations, both backends.
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "fairdeal_ledger",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// The ledger's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Ledger settings")]
pub struct LedgerSettings {
    /// The checkpoint signing key, in Go's note format
    /// `PRIVATE+KEY+<name>+<key id>+<base64>` (Ed25519); its name is the log's origin.
    /// Required. `fairdeal-ledger --generate-key NAME` prints a new one.
    #[arg(long, value_name = "KEY")]
    pub signing_key: Option<Secret>,
    /// Sign a checkpoint at most this many milliseconds after new leaves arrive.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    pub checkpoint_interval_ms: u64,
    /// Or as soon as this many leaves arrived since the last checkpoint.
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    pub checkpoint_leaves: u64,
    /// The services whose events are ingested (on NATS: one durable consumer each).
    #[arg(long, value_name = "NAMES", value_delimiter = ',', default_values_t = SOURCES.map(String::from))]
    pub sources: Vec<String>,
}

impl LedgerSettings {
    /// The signer the key setting names.
    pub fn signer(&self) -> Result<NoteSigner, ConfigError> {
        let key = self
            .signing_key
            .as_ref()
            .ok_or_else(|| ConfigError::invalid("signing_key", "required"))?;
        // The error names what is wrong, never the key.
        NoteSigner::parse(key.expose_secret())
            .map_err(|e| ConfigError::invalid("signing_key", e.to_string()))
    }

    /// When checkpoints are signed.
    pub fn policy(&self) -> CheckpointPolicy {
        CheckpointPolicy {
            interval: Duration::from_millis(self.checkpoint_interval_ms),
            leaves: self.checkpoint_leaves,
        }
    }
}

impl Section for LedgerSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        self.signer()?;
        if !(100..=3_600_000).contains(&self.checkpoint_interval_ms) {
            return Err(ConfigError::invalid(
                "checkpoint_interval_ms",
                "must be 100 to 3600000",
            ));
        }
        if !(1..=1_000_000).contains(&self.checkpoint_leaves) {
            return Err(ConfigError::invalid(
                "checkpoint_leaves",
                "must be 1 to 1000000",
            ));
        }
        if self.sources.is_empty() || self.sources.iter().any(|s| s.is_empty() || s.len() > 64) {
            return Err(ConfigError::invalid(
                "sources",
                "one to 64 characters each, at least one",
            ));
        }
        Ok(())
    }
}

/// What the service is assembled from (tests supply their own).
#[derive(Debug)]
pub struct Parts {
    /// The database (the archive, the consumers' bookkeeping) and, embedded, the shared log.
    pub storage: Storage,
    /// Signs checkpoints.
    pub signer: NoteSigner,
    /// When checkpoints are signed.
    pub policy: CheckpointPolicy,
    /// The services consumed on NATS.
    pub sources: Vec<String>,
}

impl Parts {
    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services, and the ledger tails all of it).
    pub fn over(config: &Config<LedgerSettings>, storage: Storage) -> Result<Self, StartError> {
        let settings = &config.service;
        Ok(Self {
            signer: settings.signer()?,
            policy: settings.policy(),
            sources: settings.sources.clone(),
            storage,
        })
    }
}

/// The ledger, as the kit's host runs it. Its handles are its use cases (tests and benches
/// read the log directly).
#[derive(Debug)]
pub struct LedgerService;

impl Service for LedgerService {
    const NAME: &'static str = "ledger";
    const MIGRATIONS: &'static [&'static fairdeal_db::Migrations] = &[&MIGRATIONS];
    const DEPLOYMENT: Deployment = Deployment {
        about: "every service's events in one append-only Merkle log with signed checkpoints, \
                proofs and game exports; its reads need no token",
        reads_every_other: true,
        secrets: &[SecretSetting {
            setting: "signing_key",
            key: "signing-key",
            note: "The checkpoint signing key (`fairdeal-ledger --generate-key NAME`, first line)",
            optional: false,
            compose: None,
            made: Made::SigningKey,
        }],
        replicas: Replicas::One(
            "at start a ledger rebuilds its tree from the archive and refuses to start unless \
             the latest stored checkpoint is that tree's root at its size; a second live \
             replica signing checkpoints meanwhile can make that check fail. Its downtime \
             loses nothing: the NATS durable consumers (`ledger-<service>`) keep the events \
             until it is back.",
        ),
        ..Deployment::PLAIN
    };
    type Settings = LedgerSettings;
    type Parts = Parts;
    type Handles = Ledger;

    async fn parts(config: &Config<LedgerSettings>, storage: Storage) -> Result<Parts, StartError> {
        Parts::over(config, storage)
    }

    /// Rebuilds the tree from the archive and starts the consumers and the follower on
    /// `shutdown`; returns the gRPC routes.
    async fn mount(
        common: &CommonConfig,
        parts: Parts,
        shutdown: &Shutdown,
    ) -> Result<(Mount, Ledger), StartError> {
        mount(common, parts, shutdown).await
    }

    /// In one process: the signing key the host generated; one consumer tails the shared log
    /// (every service's events).
    fn embed(settings: &mut LedgerSettings, host: &Embedded) -> Result<(), StartError> {
        settings.signing_key = Some(host.secret(Embedded::LEDGER_SIGNING_KEY)?);
        Ok(())
    }
}

/// [`LedgerService::mount`].
async fn mount(
    common: &CommonConfig,
    parts: Parts,
    shutdown: &Shutdown,
) -> Result<(Mount, Ledger), StartError> {
    let log = Log::open(parts.storage.db().clone(), parts.signer)
        .await
        .map_err(|e| StartError::Dependency {
            what: "ledger archive",
            reason: e.to_string(),
        })?;
    let bus = Bus::start(common, &parts.storage, LedgerService::NAME, shutdown).await?;
    let appended = Arc::new(Notify::new());
    let handler = Arc::new(Ingest::new(
        appended.clone(),
        Arc::new(IngestCounters::default()),
    ));
    let scrub = handler.scrub_flag();
    if bus.uses_jetstream() {
        for source in &parts.sources {
            let name = format!("{CONSUMER}-{source}");
            bus.spawn_consumer(source, &name, handler.clone(), shutdown)
                .await?;
        }
    } else if matches!(parts.storage.db(), Db::Postgres { .. }) {
        // Each service's log is its own schema: only NATS carries them here.
        return Err(SetupError::NeedsNats {
            consumer: CONSUMER.into(),
            source_service: parts.sources.join(","),
        }
        .into());
    } else {
        // Embedded: every service shares this SQLite log; one consumer tails it all.
        bus.spawn_consumer(LedgerService::NAME, CONSUMER, handler, shutdown)
            .await?;
    }
    shutdown.spawn(
        "ledger-follower",
        follow(log.clone(), appended, scrub, parts.policy, shutdown.token()),
    );
    let ledger = Ledger::new(log);
    let routes = Mount::new()
        .add_service(LedgerServiceServer::new(LedgerApi::new(ledger.clone())))
        .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET);
    Ok((routes, ledger))
}
