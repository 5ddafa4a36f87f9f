//! [`StartError`]: every way a service can fail to start, typed.

use fairdeal_platform::SetupError;

use crate::config::ConfigError;
use crate::server::ServeError;

/// Why a service did not start. Each variant names the dependency; none holds a secret
/// (URLs are redacted by the errors they wrap).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is invalid (names the field).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The storage or the bus could not be set up (names the dependency).
    #[error(transparent)]
    Setup(#[from] SetupError),
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

impl From<fairdeal_db::OpenError> for StartError {
    fn from(error: fairdeal_db::OpenError) -> Self {
        StartError::Setup(error.into())
    }
}
