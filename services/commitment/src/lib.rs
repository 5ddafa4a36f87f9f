//! # fairdeal seed-commitment service
//!
//! Commit-reveal for every fairdeal game (SPEC section 4): a table's server seed committed
//! before anyone sits, players' contributions and a delayed public value fixing the client
//! seed at the first deal, reveal at game end; single-player seed pairs with a bet counter
//! and rotation; tournament sets committed long in advance.
//!
//! Layout:
//! - [`domain`]: the pure state machines (commands -> events, events -> state).
//! - [`drand`]: a table's or tournament's drand round fixed at commit, fetched, verified and
//!   bound.
//! - [`vault`]: server seeds sealed at rest (XChaCha20-Poly1305, key id kept for rotation).
//! - [`seeds`]: the `sealed_seeds` table beside the event store (PostgreSQL or SQLite).
//! - [`pending`]: the commitments whose drand round may still have to be bound, whose
//!   binders a starting service restarts.
//! - [`events`]: domain events <-> stored protobuf events (`fairdeal.commitment.v1`).
//! - [`service`]: the use cases (load, decide, append with optimistic concurrency).
//! - [`grpc`]: the tonic adapter with authorization.
//! - [`startup`]: settings, backends and the [`Application`] on the platform kit.
#![forbid(unsafe_code)]

pub mod domain;
pub mod drand;
pub mod events;
pub mod grpc;
pub mod pending;
pub mod seeds;
pub mod service;
pub mod startup;
pub mod vault;

pub use startup::{Application, CommitmentService, CommitmentSettings};
