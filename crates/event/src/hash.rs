//! The hash rule: canonical bytes of an envelope and its SHA-256 hash.
//!
//! `hash = SHA-256(prev_hash || canonical_bytes)`, where `canonical_bytes` is the protobuf
//! encoding of the [`Envelope`] with `hash` empty: fields in field-number order, proto3
//! defaults omitted, `occurred_at` always present, `trace_context` entries sorted by key with
//! both key and value written, no unknown fields. The normative, byte-level description for
//! auditors is the comment on `Envelope` in `proto/fairdeal/event/v1/envelope.proto`; the
//! tests of [`crate::chain`] pin prost's output to an independent encoder written from that
//! description.
//!
//! The first event of a stream has `prev_hash` = [`GENESIS_PREV_HASH`] (32 zero bytes).
//!
//! This module needs nothing but the envelope, so both the event types
//! ([`crate::event`]) and the chain that links them ([`crate::chain`]) build on it.

use fairdeal_proto::fairdeal::event::v1::Envelope;
use prost::Message;
use sha2::{Digest, Sha256};

/// A SHA-256 digest.
pub type Hash = [u8; 32];

/// The `prev_hash` of every stream's first event: 32 zero bytes.
pub const GENESIS_PREV_HASH: Hash = [0; 32];

/// The canonical bytes of `envelope`: its protobuf encoding with `hash` empty.
pub fn canonical_bytes(envelope: &Envelope) -> Vec<u8> {
    if envelope.hash.is_empty() {
        envelope.encode_to_vec()
    } else {
        let unhashed = Envelope {
            hash: Vec::new(),
            ..envelope.clone()
        };
        unhashed.encode_to_vec()
    }
}

/// The body of `envelope`: its canonical bytes with `prev_hash` and `hash` both empty, i.e.
/// everything the event says except its link in the stream's chain. The ledger's format 2
/// leaves commit to it apart from the link (`fairdeal_tlog::entry`).
pub fn body_bytes(envelope: &Envelope) -> Vec<u8> {
    if envelope.hash.is_empty() && envelope.prev_hash.is_empty() {
        envelope.encode_to_vec()
    } else {
        let body = Envelope {
            hash: Vec::new(),
            prev_hash: Vec::new(),
            ..envelope.clone()
        };
        body.encode_to_vec()
    }
}

/// `SHA-256(envelope.prev_hash || canonical_bytes(envelope))`.
pub fn compute_hash(envelope: &Envelope) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(&envelope.prev_hash);
    hasher.update(canonical_bytes(envelope));
    hasher.finalize().into()
}
