//! Shared by the integration tests: decoding helpers, a reference implementation of the
//! RFC 9162 definitions written independently of the crate's (recursive, straight from the
//! RFC text, O(n) per node), proof corruptions, and the "shape" of a verification that tells
//! which size changes no verifier can notice.
// Test helpers outside #[test] functions may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code, unreachable_pub)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use fairdeal_tlog::{Hash, leaf_hash, node_hash};
use sha2::{Digest, Sha256};

pub fn hex32(s: &str) -> Hash {
    hex::decode(s).unwrap().try_into().unwrap()
}

pub fn b64(s: &str) -> Vec<u8> {
    STANDARD.decode(s).unwrap()
}

pub fn b64_32(s: &str) -> Hash {
    b64(s).try_into().unwrap()
}

/// MTH(D) from RFC 9162 2.1.1, recursively over the leaf hashes.
pub fn mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = largest_power_of_two_below(n);
            node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
        }
    }
}

fn largest_power_of_two_below(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// PATH(m, D[n]) from RFC 9162 2.1.3.1, literally.
pub fn path(m: usize, leaves: &[Hash]) -> Vec<Hash> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = largest_power_of_two_below(n);
    if m < k {
        let mut p = path(m, &leaves[..k]);
        p.push(mth(&leaves[k..]));
        p
    } else {
        let mut p = path(m - k, &leaves[k..]);
        p.push(mth(&leaves[..k]));
        p
    }
}

/// PROOF(m, D[n]) = SUBPROOF(m, D[n], true) from RFC 9162 2.1.4.1, literally.
pub fn proof(m: usize, leaves: &[Hash]) -> Vec<Hash> {
    subproof(m, leaves, true)
}

fn subproof(m: usize, leaves: &[Hash], b: bool) -> Vec<Hash> {
    let n = leaves.len();
    if m == n {
        return if b { Vec::new() } else { vec![mth(leaves)] };
    }
    let k = largest_power_of_two_below(n);
    if m <= k {
        let mut p = subproof(m, &leaves[..k], b);
        p.push(mth(&leaves[k..]));
        p
    } else {
        let mut p = subproof(m - k, &leaves[k..], false);
        p.push(mth(&leaves[..k]));
        p
    }
}

/// Distinct leaf hashes, different for each `seed`.
pub fn leaves(seed: u64, n: usize) -> Vec<Hash> {
    (0..n as u64)
        .map(|i| leaf_hash(&[seed.to_be_bytes(), i.to_be_bytes()].concat()))
        .collect()
}

/// One proof corruption: what the brief calls a broken proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    /// One bit of node `i` flipped.
    FlipBit { node: usize, bit: usize },
    /// Node `i` removed.
    Remove(usize),
    /// A node inserted at position `i` (a copy of a neighbour or a stranger).
    Insert(usize, bool),
    /// Nodes `i` and `i + 1` swapped.
    Swap(usize),
}

/// Every corruption of a proof of `len` nodes that changes it.
pub fn corruptions(proof: &[Hash]) -> Vec<Corruption> {
    let mut all = Vec::new();
    for node in 0..proof.len() {
        for bit in [0, 7, 100, 255] {
            all.push(Corruption::FlipBit { node, bit });
        }
        all.push(Corruption::Remove(node));
    }
    for at in 0..=proof.len() {
        all.push(Corruption::Insert(at, false));
        if !proof.is_empty() {
            all.push(Corruption::Insert(at, true));
        }
    }
    for i in 0..proof.len().saturating_sub(1) {
        if proof[i] != proof[i + 1] {
            all.push(Corruption::Swap(i));
        }
    }
    all
}

pub fn corrupt(proof: &[Hash], corruption: Corruption) -> Vec<Hash> {
    let mut p = proof.to_vec();
    match corruption {
        Corruption::FlipBit { node, bit } => p[node][bit / 8] ^= 1 << (bit % 8),
        Corruption::Remove(node) => {
            p.remove(node);
        }
        Corruption::Insert(at, copy) => {
            let extra = if copy {
                p[at.min(p.len() - 1)]
            } else {
                [0x5a; 32]
            };
            p.insert(at, extra);
        }
        Corruption::Swap(i) => p.swap(i, i + 1),
    }
    p
}

pub fn flip(hash: &Hash, bit: usize) -> Hash {
    let mut h = *hash;
    h[bit / 8] ^= 1 << (bit % 8);
    h
}

/// The decisions of the (fn, sn) walk RFC 9162 2.1.3.2 step 4 and 2.1.4.2 step 6 share:
/// per proof hash, whether it is the left child.
fn walk(mut fn_: u64, mut sn: u64) -> Vec<bool> {
    let mut shape = Vec::new();
    while sn != 0 {
        let left = fn_ & 1 == 1 || fn_ == sn;
        shape.push(left);
        if left && fn_ & 1 == 0 {
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    shape
}

/// The left/right decisions RFC 9162 2.1.3.2 takes for (index, size), with the proof
/// length: two parameter sets with the same shape accept exactly the same proofs and roots
/// (the root does not commit to the size; a checkpoint's signature does).
pub fn inclusion_shape(index: u64, size: u64) -> Option<Vec<bool>> {
    (index < size).then(|| walk(index, size - 1))
}

/// Like [`inclusion_shape`] for RFC 9162 2.1.4.2: whether the old root seeds the path, and
/// the walk's decisions.
pub fn consistency_shape(old: u64, new: u64) -> Option<(bool, Vec<bool>)> {
    if old == 0 || old >= new {
        return None;
    }
    let (mut fn_, mut sn) = (old - 1, new - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    Some((old.is_power_of_two(), walk(fn_, sn)))
}

/// Size changes an attacker could try on a proof for `size`.
pub fn wrong_sizes(size: u64) -> Vec<u64> {
    let mut sizes = vec![size + 1, size.saturating_mul(2), size / 2];
    if size > 0 {
        sizes.push(size - 1);
    }
    sizes.retain(|&s| s != size);
    sizes
}
