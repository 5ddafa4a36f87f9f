//! [`StartError`]: every way a service can fail to start, typed.

use fairdeal_bus::BusError;
use fairdeal_db::OpenError;
use fairdeal_eventstore::StoreError;
use fairdeal_kit::{ConfigError, ServeError};

/// Why a service did not start. Each variant names the dependency; none holds a secret
/// (URLs are redacted by the errors they wrap).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is invalid (names the field).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database could not be opened.
    #[error(transparent)]
    Database(#[from] OpenError),
    /// A component's migrations failed.
    #[error("migrating {component}: {source}")]
    Migrate {
        /// The component (`fairdeal_eventstore`, `fairdeal_bus`, the service).
        component: &'static str,
        /// What failed.
        source: sqlx::migrate::MigrateError,
    },
    /// The event store refused to open.
    #[error("event store: {0}")]
    Store(#[from] StoreError),
    /// NATS could not be reached.
    #[error("NATS at {url}: {reason}")]
    Nats {
        /// The server, credentials redacted.
        url: String,
        /// The client's error.
        reason: String,
    },
    /// The bus (streams, relay, consumers) could not be set up.
    #[error("bus: {0}")]
    Bus(#[from] BusError),
    /// A consumer of another service's events needs NATS on PostgreSQL: each service's
    /// events live in its own schema, so only JetStream carries them across.
    #[error(
        "consumer {consumer} reads {source_service}'s events: on PostgreSQL that needs nats_url (each service's log is in its own schema)"
    )]
    NeedsNats {
        /// The consumer's durable name.
        consumer: String,
        /// The service whose events it consumes.
        source_service: String,
    },
    /// A dependency the service checks at start is unusable (names it and why).
    #[error("{what}: {reason}")]
    Dependency {
        /// The dependency or setting (`seed_keys`, `auth_url`, ...).
        what: &'static str,
        /// Why it is unusable.
        reason: String,
    },
    /// The gRPC server could not bind.
    #[error(transparent)]
    Serve(#[from] ServeError),
}
