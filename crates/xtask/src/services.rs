//! Generated from `fairdeal_server::SERVICES` by `cargo run -p fairdeal-server -- deployment`;
//! edit the services' `DEPLOYMENT`, not this file.

use crate::deploy::Secret;

/// Every service of the compose stack and what its secrets file `<name>.toml` holds
/// besides the database URL.
pub(crate) const SERVICES: &[(&str, &[Secret])] = &[
    ("auth", &[Secret::Credentials]),
    ("commitment", &[Secret::SeedKeys]),
    ("dealing", &[Secret::SignIn]),
    ("tables", &[Secret::SignIn]),
    ("chat", &[]),
    ("rating", &[]),
    ("ledger", &[Secret::SigningKey]),
];

/// The compose stack's further replicas of a service (`<service>-<n>`), each on a port of its
/// own.
pub(crate) const REPLICAS: &[&str] = &["tables-2"];
