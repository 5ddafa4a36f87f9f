//! [`SetupError`]: every way the platform's part of a start fails (storage, migrations, the
//! bus), typed. The kit's `StartError` wraps it beside configuration and serving errors.

use fairdeal_bus::BusError;
use fairdeal_db::OpenError;
use fairdeal_eventstore::StoreError;

/// Why a service's storage or bus could not be set up. Each variant names the dependency;
/// none holds a secret (URLs are redacted by the errors they wrap).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A setting the platform reads is invalid (names the field).
    #[error("invalid `{field}`: {reason}")]
    Invalid {
        /// The setting (`database_url`, `schema`, `db_max_connections`, ...).
        field: &'static str,
        /// Why it is invalid (never its value when secret).
        reason: String,
    },
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
}
