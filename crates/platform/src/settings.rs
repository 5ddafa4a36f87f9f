//! [`Deployment`]: what the platform needs to know of a process's settings, typed. The kit's
//! `CommonConfig` (flags, `FAIRDEAL_*` environment, a TOML file) implements it, so the
//! platform reads a deployment's settings without linking the kit that parses them.

use std::fmt;

use fairdeal_db::{ConnectionBudget, DatabaseUrl};
use secrecy::{ExposeSecret, SecretString};

use crate::error::SetupError;

/// Where a process's database is and how its events travel.
pub trait Deployment {
    /// The database (`--database-url`): PostgreSQL, or the embedded SQLite file.
    fn database_url(&self) -> Result<DatabaseUrl, SetupError>;
    /// How many database connections the process may hold (`--db-max-connections`).
    fn connection_budget(&self) -> Result<ConnectionBudget, SetupError>;
    /// Where events travel: NATS JetStream, or the in-process bus.
    fn bus(&self) -> BusSettings;
}

/// The bus of a deployment.
#[derive(Debug, Clone)]
pub struct BusSettings {
    /// The NATS server; `None`: events stay in the store (the in-process bus).
    pub nats: Option<NatsServer>,
    /// First token(s) of every subject and stream name.
    pub subject_prefix: String,
    /// Replicas of each JetStream stream.
    pub replicas: u8,
}

/// A NATS server's address, which may carry credentials: only its redacted form is shown.
#[derive(Clone)]
pub struct NatsServer {
    /// The full URL, credentials included.
    url: SecretString,
    /// The URL with credentials redacted, for logs and errors.
    shown: String,
}

impl NatsServer {
    /// The server at `url`, shown as `shown` (the caller redacts it).
    pub fn new(url: &str, shown: String) -> Self {
        Self {
            url: SecretString::from(url.to_owned()),
            shown,
        }
    }

    /// The URL to connect to.
    pub fn expose_secret(&self) -> &str {
        self.url.expose_secret()
    }

    /// The URL with credentials redacted.
    pub fn redacted(&self) -> &str {
        &self.shown
    }
}

impl fmt::Debug for NatsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NatsServer").field(&self.shown).finish()
    }
}
