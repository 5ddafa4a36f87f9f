//! # fairdeal verifiable log primitives
//!
//! What the ledger and the offline auditor must agree on bit for bit, and nothing else: the
//! ledger appends one leaf per event (leaf `i` = the `i`-th event it ingested: a format 2
//! [`entry`], salted commitments that disclose nothing, or in logs begun earlier the format
//! 1 leaf, the envelope bytes themselves), publishes signed checkpoints of the tree, and
//! serves inclusion and consistency proofs with whatever content its visibility rule
//! discloses; `fairdeal audit` checks them with no network. Both link this crate, so the two
//! sides cannot drift. Pure: no IO, no async, no clock, no randomness (key seeds come from
//! the caller), and no panics on input.
//!
//! The formats are public standards so that auditors need not trust our code either: an
//! RFC 9162 (RFC 6962) Merkle tree over SHA-256, and C2SP tlog-checkpoint / signed-note
//! checkpoints with Ed25519 keys, which the Go sumdb, Sigstore and Trillian tooling read.
//!
//! Layout:
//! - [`hash`]: leaf and node hashing, [`EMPTY_ROOT`], the Merkle Tree Hash of a list.
//! - [`proof`]: [`verify_inclusion`] and [`verify_consistency`] as RFC 9162 2.1.3.2 and
//!   2.1.4.2 write them, and the proof generation [`Tree`] uses (2.1.3.1, 2.1.4.1).
//! - [`tree`]: [`Tree`], the append-only tree the ledger keeps in memory: roots and proofs
//!   at every past size in O(log n), 64 bytes per leaf.
//! - [`note`]: C2SP signed notes: [`NoteSigner`], [`NoteVerifier`], [`Note`].
//! - [`checkpoint`]: [`Checkpoint`], a tree head as a signed note.
//! - [`entry`]: leaf format 2, salted commitments to an event's body and chain link.
//! - [`export`]: the NDJSON game export the ledger writes and `fairdeal audit` reads
//!   (format 2: leaves with their disclosed content; format 1, as written before, still read).
//!
//! Both sides in a few lines:
//!
//! ```
//! use fairdeal_tlog::{Checkpoint, NoteSigner, NoteVerifier, Tree, leaf_hash};
//!
//! // The ledger: append envelopes, sign a checkpoint, serve a proof.
//! let signer = NoteSigner::from_seed("ledger.fairdeal.example", &[7; 32])?;
//! let mut tree = Tree::new();
//! for envelope in [b"event 0".as_slice(), b"event 1", b"event 2"] {
//!     tree.push_leaf(envelope);
//! }
//! let signed = Checkpoint::new(signer.name(), tree.size(), tree.root())?.sign(&signer);
//! let proof = tree.inclusion_proof(1, tree.size())?;
//! let log_key = signer.verifier().to_string(); // published: "ledger.fairdeal.example+<id>+<key>"
//!
//! // The auditor, offline, trusting only the log's verifier key.
//! let verifier: NoteVerifier = log_key.parse()?;
//! let checkpoint = Checkpoint::open(signed.as_bytes(), "ledger.fairdeal.example", &[verifier])?;
//! checkpoint.verify_inclusion(&leaf_hash(b"event 1"), 1, &proof)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Why not the crates that exist (see `docs/decisions.md`, "Ledger primitives"): ct-merkle
//! proves only at the current size and stores the leaves themselves; signed_note and
//! tlog_tiles on crates.io pull sha2 0.10, base64 0.21 and thiserror 1 next to the
//! workspace's versions, and tlog_checkpoint is not published. The tests check this crate
//! against the published vectors of transparency-dev/merkle, a real Certificate Transparency
//! log, Go's note package, C2SP and sum.golang.org, and against ct-merkle.
#![forbid(unsafe_code)]

pub mod checkpoint;
pub mod entry;
pub mod export;
pub mod hash;
pub mod note;
pub mod proof;
pub mod tree;

pub use checkpoint::{Checkpoint, CheckpointError};
pub use entry::{Entry, EntryError};
pub use hash::{EMPTY_ROOT, Hash, leaf_hash, node_hash, root_from_leaf_hashes};
pub use note::{KeyError, Note, NoteError, NoteSignature, NoteSigner, NoteVerifier, key_id};
pub use proof::{ProofError, root_from_inclusion_proof, verify_consistency, verify_inclusion};
pub use tree::Tree;
