//! # fairdeal-ledger: one verifiable log of every event
//!
//! Durable consumers of every service's events append each event as the next leaf of an
//! append-only archive (leaf `i` = the `i`-th event ingested), a batch at a time, after
//! checking its stream's hash chain. A leaf (format 2) is 65 bytes of salted commitments that
//! disclose nothing; the event's content is kept beside it and disclosed only as the
//! visibility rule says (a game's private events once it finished, personal events never),
//! and erased for good when a chat line is removed or an account deleted; a Merkle tree over the leaves (RFC 9162, `fairdeal-tlog`) is
//! rebuilt from the archive at start and followed as leaves commit; checkpoints are signed
//! C2SP notes (Ed25519, from configuration) every few seconds or N leaves. The RPCs serve the
//! latest checkpoint, inclusion and consistency proofs, and the export of a finished game
//! that `fairdeal audit` checks offline.
//!
//! Layout:
//! - [`visibility`]: the one rule of who may read what, and when; the events that change it.
//! - [`ingest`]: the consumers' handler (batched: chain checks, dense leaf numbering,
//!   refusals, commitments, erasures); [`archive`] holds its per-backend statements.
//! - [`log`]: the in-memory tree, its follower and the checkpoints.
//! - [`service`]: the use cases (proofs, status, the game export) and their errors.
//! - [`grpc`]: the tonic adapter.
//! - [`startup`]: settings, [`Parts`], [`Application`].
#![forbid(unsafe_code)]

pub mod archive;
pub mod grpc;
pub mod ingest;
pub mod log;
pub mod service;
mod sources;
pub mod startup;
pub mod visibility;

pub use startup::{Application, LedgerService, LedgerSettings, MIGRATIONS, Parts, SCHEMA, SOURCES};
