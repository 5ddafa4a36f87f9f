//! fairdeal-server: one binary for the whole platform.
//!
//! - `fairdeal-server up`: every service in one process on the embedded default
//!   ([`platform`]), one port, and unless `--no-demo` a table of four bot clients played
//!   through the public gRPC API while it serves (the `fairdeal-demo` crate);
//! - `fairdeal-server serve --target <service>`: one service with exactly the configuration
//!   its own binary `fairdeal-<service>` takes ([`serve`]), so one artifact serves
//!   docker-compose, Kubernetes and `up`.
//!
//! Layout: [`platform`] (the services, the shared storage, the one server), [`secrets`]
//! (keys generated into the data directory), [`examples`] (the grpcurl lines `up` prints),
//! [`serve`] (the per-service targets).
#![forbid(unsafe_code)]

pub mod deployment;
pub mod examples;
pub mod platform;
pub mod secrets;
pub mod serve;

pub use platform::{Platform, UpOptions};

use fairdeal_kit::Hosted;

/// Every service of the platform, in start order: the one list `up` runs, `serve --target`
/// takes, the data directory's secrets are generated for, and the deployment files (the
/// Dockerfile, docker-compose.yml, the Kubernetes base, xtask) are checked against
/// (`tests/services_list.rs`). A new service is one line here (docs/services.md).
pub const SERVICES: &[Hosted] = &[
    Hosted::of::<fairdeal_auth::AuthService>(),
    Hosted::of::<fairdeal_commitment::CommitmentService>(),
    Hosted::of::<fairdeal_dealing::DealingService>(),
    Hosted::of::<fairdeal_tables::TablesService>(),
    Hosted::of::<fairdeal_chat::ChatService>(),
    Hosted::of::<fairdeal_rating_service::RatingService>(),
    Hosted::of::<fairdeal_ledger::LedgerService>(),
];
