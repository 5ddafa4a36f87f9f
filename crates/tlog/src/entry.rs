//! Leaf format 2: a leaf that commits to an event without disclosing it.
//!
//! Format 1 leaves were the event's envelope bytes. A public tree over them lets anyone who
//! sees a leaf, or its hash as the sibling in someone else's inclusion proof, try every
//! candidate content against it: a seat's ten cards are one of 847,660,528 hands, a chat
//! line or a username is guessable, and the event's own chain hash (`hash`, and the next
//! event's `prev_hash`) is an unsalted digest of the same content. So a format 2 leaf holds
//! only salted commitments, and the content is kept beside the tree and served by the
//! ledger's visibility rule:
//!
//! ```text
//! entry            = 0x02 || body_commitment (32) || chain_commitment (32)        65 bytes
//! body_commitment  = SHA-256("fairdeal/ledger/v2/body\n"  || body_salt (32)  || body)
//! chain_commitment = SHA-256("fairdeal/ledger/v2/chain\n" || chain_salt (32) || prev_hash (32) || hash (32))
//! leaf hash        = SHA-256(0x00 || entry)                                      (RFC 9162)
//! ```
//!
//! - `body` is the canonical bytes of the event's `fairdeal.event.v1.Envelope` with both
//!   `prev_hash` and `hash` empty (the hash rule's canonical encoding, see
//!   `fairdeal_event::body_bytes`): everything the event says except its chain link.
//! - The chain link is committed apart because it depends on every earlier event of the
//!   stream: a public move's `prev_hash` is a digest of the private deal before it. Opening
//!   the body alone (its salt and bytes) shows a public event while its game is in play;
//!   opening both (the whole envelope and both salts) shows everything once it may be seen.
//! - Salts are 32 bytes from the OS random source, one pair per leaf, kept by the ledger
//!   only. Erasing content deletes its salts and bytes: the commitments can never be opened
//!   again, while the leaf, the tree, every checkpoint and every proof stay exactly as they
//!   were.
//!
//! Independent verifiers need only SHA-256 to check an opening; this module is what the
//! ledger and `fairdeal audit` both link.

use sha2::{Digest, Sha256};

use crate::hash::Hash;

/// The first byte of a format 2 entry.
pub const FORMAT_2: u8 = 0x02;
/// Bytes of a format 2 entry.
pub const ENTRY_LEN: usize = 65;
/// Bytes of a salt.
pub const SALT_LEN: usize = 32;

/// The domain tag of a body commitment.
const BODY_TAG: &[u8] = b"fairdeal/ledger/v2/body\n";
/// The domain tag of a chain commitment.
const CHAIN_TAG: &[u8] = b"fairdeal/ledger/v2/chain\n";

/// A salt.
pub type Salt = [u8; SALT_LEN];

/// `SHA-256("fairdeal/ledger/v2/body\n" || salt || body)`.
pub fn body_commitment(salt: &Salt, body: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(BODY_TAG);
    hasher.update(salt);
    hasher.update(body);
    hasher.finalize().into()
}

/// `SHA-256("fairdeal/ledger/v2/chain\n" || salt || prev_hash || hash)`.
pub fn chain_commitment(salt: &Salt, prev_hash: &Hash, hash: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(CHAIN_TAG);
    hasher.update(salt);
    hasher.update(prev_hash);
    hasher.update(hash);
    hasher.finalize().into()
}

/// A format 2 leaf: the two commitments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Commits to the event without its chain link.
    pub body: Hash,
    /// Commits to the chain link (`prev_hash`, `hash`).
    pub chain: Hash,
}

/// Why bytes are not a format 2 entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Not 65 bytes.
    #[error("a format 2 leaf is 65 bytes, not {0}")]
    Length(usize),
    /// The first byte is not 0x02.
    #[error("a format 2 leaf starts with 0x02, not {0:#04x}")]
    Format(u8),
}

impl Entry {
    /// The entry committing to `body` and the chain link under the two salts.
    pub fn commit(
        body_salt: &Salt,
        body: &[u8],
        chain_salt: &Salt,
        prev_hash: &Hash,
        hash: &Hash,
    ) -> Self {
        Self {
            body: body_commitment(body_salt, body),
            chain: chain_commitment(chain_salt, prev_hash, hash),
        }
    }

    /// The leaf bytes.
    pub fn to_bytes(&self) -> [u8; ENTRY_LEN] {
        let mut bytes = [0u8; ENTRY_LEN];
        bytes[0] = FORMAT_2;
        bytes[1..33].copy_from_slice(&self.body);
        bytes[33..].copy_from_slice(&self.chain);
        bytes
    }

    /// The entry in leaf bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, EntryError> {
        let array: &[u8; ENTRY_LEN] = bytes
            .try_into()
            .map_err(|_| EntryError::Length(bytes.len()))?;
        if array[0] != FORMAT_2 {
            return Err(EntryError::Format(array[0]));
        }
        let mut body = [0u8; 32];
        let mut chain = [0u8; 32];
        body.copy_from_slice(&array[1..33]);
        chain.copy_from_slice(&array[33..]);
        Ok(Self { body, chain })
    }

    /// Whether `body` under `salt` is what this entry's body commitment commits to.
    pub fn opens_body(&self, salt: &Salt, body: &[u8]) -> bool {
        body_commitment(salt, body) == self.body
    }

    /// Whether the chain link under `salt` is what this entry's chain commitment commits to.
    pub fn opens_chain(&self, salt: &Salt, prev_hash: &Hash, hash: &Hash) -> bool {
        chain_commitment(salt, prev_hash, hash) == self.chain
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_round_trip_and_open_only_with_their_salts() {
        let (bs, cs) = ([1u8; 32], [2u8; 32]);
        let entry = Entry::commit(&bs, b"body", &cs, &[3; 32], &[4; 32]);
        let bytes = entry.to_bytes();
        assert_eq!(bytes[0], 2);
        assert_eq!(Entry::parse(&bytes).unwrap(), entry);
        assert!(entry.opens_body(&bs, b"body"));
        assert!(!entry.opens_body(&cs, b"body"));
        assert!(!entry.opens_body(&bs, b"bodz"));
        assert!(entry.opens_chain(&cs, &[3; 32], &[4; 32]));
        assert!(!entry.opens_chain(&cs, &[4; 32], &[3; 32]));
        assert_eq!(
            Entry::parse(&bytes[..64]).unwrap_err(),
            EntryError::Length(64)
        );
        let mut other = bytes;
        other[0] = 1;
        assert_eq!(Entry::parse(&other).unwrap_err(), EntryError::Format(1));
    }

    #[test]
    fn commitments_are_the_documented_hashes() {
        // Pinned so an independent verifier can check its own implementation against these.
        let mut input = b"fairdeal/ledger/v2/body\n".to_vec();
        input.extend_from_slice(&[7; 32]);
        input.extend_from_slice(b"abc");
        let expected: Hash = Sha256::digest(&input).into();
        assert_eq!(body_commitment(&[7; 32], b"abc"), expected);
        let mut input = b"fairdeal/ledger/v2/chain\n".to_vec();
        input.extend_from_slice(&[7; 32]);
        input.extend_from_slice(&[8; 32]);
        input.extend_from_slice(&[9; 32]);
        let expected: Hash = Sha256::digest(&input).into();
        assert_eq!(chain_commitment(&[7; 32], &[8; 32], &[9; 32]), expected);
    }
}
