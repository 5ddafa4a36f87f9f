//! # fairdeal-ledger: one verifiable log of every event
//!
//! Durable consumers of every service's events append each event's envelope bytes as the
//! next leaf of an append-only archive (leaf `i` = the `i`-th event ingested), after checking
//! its stream's hash chain; a Merkle tree over the leaves (RFC 9162, `fairdeal-tlog`) is
//! rebuilt from the archive at start and followed as leaves commit; checkpoints are signed
//! C2SP notes (Ed25519, from configuration) every few seconds or N leaves. The RPCs serve the
//! latest checkpoint, inclusion and consistency proofs, and the export of a finished game
//! that `fairdeal audit` checks offline.
//!
//! Layout:
//! - [`ingest`]: the consumers' handler (chain check, dense leaf numbering, refusals).
//! - [`log`]: the in-memory tree, its follower and the checkpoints.
//! - [`service`]: the use cases (proofs, status, the game export) and their errors.
//! - [`grpc`]: the tonic adapter.
//! - [`startup`]: settings, [`Parts`], [`Application`].
#![forbid(unsafe_code)]

pub mod grpc;
pub mod ingest;
pub mod log;
pub mod service;
pub mod startup;

pub use startup::{Application, LedgerSettings, MIGRATIONS, Parts, SCHEMA, SERVICE, SOURCES};
