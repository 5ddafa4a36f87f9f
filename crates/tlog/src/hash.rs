//! RFC 9162 (RFC 6962) hashing: leaves, interior nodes and the Merkle Tree Hash.
//!
//! Domain separation is what makes the tree sound: a leaf is hashed as
//! `SHA-256(0x00 || bytes)` and an interior node as `SHA-256(0x01 || left || right)`, so no
//! leaf can ever be passed off as a node (or the reverse) to forge a proof. The hash of an
//! empty tree is `SHA-256()` of nothing (RFC 9162 section 2.1.1).

use sha2::{Digest, Sha256};

/// A SHA-256 digest: a leaf hash, a node hash or a root hash.
pub type Hash = [u8; 32];

/// The Merkle Tree Hash of the empty tree: SHA-256 of the empty string
/// (`e3b0c442...b855`).
pub const EMPTY_ROOT: Hash = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

/// The prefix of a leaf hash's input.
const LEAF_PREFIX: u8 = 0x00;
/// The prefix of an interior node hash's input.
const NODE_PREFIX: u8 = 0x01;

/// The leaf hash of `bytes`: `SHA-256(0x00 || bytes)`.
///
/// For the ledger, `bytes` is an event's envelope exactly as archived.
pub fn leaf_hash(bytes: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([LEAF_PREFIX]);
    hasher.update(bytes);
    hasher.finalize().into()
}

/// The hash of an interior node: `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    // The 65-byte input always fills exactly two blocks, so they are laid out here with
    // SHA-256's padding (0x80, zeros, the bit length 520) and compressed directly: the
    // buffering of the streaming API costs about a third of a node hash. The unit tests
    // pin this against `Sha256::digest`.
    let mut blocks = [[0u8; 64]; 2];
    blocks[0][0] = NODE_PREFIX;
    blocks[0][1..33].copy_from_slice(left);
    blocks[0][33..].copy_from_slice(&right[..31]);
    blocks[1][0] = right[31];
    blocks[1][1] = 0x80;
    blocks[1][56..].copy_from_slice(&(65u64 * 8).to_be_bytes());
    let mut state = SHA256_IV;
    sha2::block_api::compress256(&mut state, &blocks);
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
const SHA256_IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// The Merkle Tree Hash (MTH) of a list of leaf hashes, computed straight from the
/// definition of RFC 9162 section 2.1.1: `MTH({}) = SHA-256()`, `MTH({d}) = leaf hash`,
/// and `MTH(D[n]) = node_hash(MTH(D[0:k]), MTH(D[k:n]))` with `k` the largest power of two
/// smaller than `n`.
///
/// O(n) hashing; for a log that grows, [`crate::Tree`] gives any root in O(log n).
pub fn root_from_leaf_hashes(leaf_hashes: &[Hash]) -> Hash {
    match leaf_hashes {
        [] => EMPTY_ROOT,
        [only] => *only,
        _ => {
            let (left, right) =
                leaf_hashes.split_at(split_point(leaf_hashes.len() as u64) as usize);
            node_hash(&root_from_leaf_hashes(left), &root_from_leaf_hashes(right))
        }
    }
}

/// The largest power of two strictly smaller than `n` (RFC 9162's `k`), for `n >= 2`.
///
/// Returns 1 for `n < 2`, which callers never ask for.
pub(crate) fn split_point(n: u64) -> u64 {
    if n < 2 {
        1
    } else {
        1 << (u64::BITS - 1 - (n - 1).leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_root_is_sha256_of_nothing() {
        assert_eq!(EMPTY_ROOT, <[u8; 32]>::from(Sha256::digest([])));
        assert_eq!(root_from_leaf_hashes(&[]), EMPTY_ROOT);
    }

    #[test]
    fn split_point_is_the_largest_power_of_two_below() {
        for (n, k) in [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 4),
            (8, 4),
            (9, 8),
            (1 << 40, 1 << 39),
        ] {
            assert_eq!(split_point(n), k, "n = {n}");
        }
        assert_eq!(split_point(u64::MAX), 1 << 63);
    }

    #[test]
    fn node_hash_matches_the_definition() {
        let mut l = [0u8; 32];
        let mut r = [0xffu8; 32];
        for round in 0..200u8 {
            let mut hasher = Sha256::new();
            hasher.update([1u8]);
            hasher.update(l);
            hasher.update(r);
            assert_eq!(node_hash(&l, &r), <[u8; 32]>::from(hasher.finalize()));
            l = node_hash(&l, &[round; 32]);
            r = node_hash(&r, &l);
        }
    }
}
