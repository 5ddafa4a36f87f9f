//! fairdeal-server: one binary for the whole platform.
//!
//! - `fairdeal-server up`: every service in one process on the embedded default
//!   ([`platform`]), one port, and unless `--no-demo` a table of four bot clients played
//!   through the public gRPC API while it serves ([`demo`]);
//! - `fairdeal-server serve --target <service>`: one service with exactly the configuration
//!   its own binary `fairdeal-<service>` takes ([`serve`]), so one artifact serves
//!   docker-compose, Kubernetes and `up`.
//!
//! Layout: [`platform`] (the services, the shared storage, the one server), [`secrets`]
//! (keys generated into the data directory), [`examples`] (the grpcurl lines `up` prints),
//! [`demo`] (the demo's steps), [`serve`] (the per-service targets).
#![forbid(unsafe_code)]

pub mod demo;
pub mod examples;
pub mod platform;
pub mod secrets;
pub mod serve;

pub use platform::{Platform, SERVICES, UpOptions};
