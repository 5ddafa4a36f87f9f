//! Inclusion and consistency proofs: generation and verification, as RFC 9162 section 2.1.3
//! and 2.1.4 define them.
//!
//! Verification follows the RFC's algorithms step by step (2.1.3.2 and 2.1.4.2) so that an
//! auditor can hold this code next to the RFC text. Before running them it checks the proof's
//! length against the length the RFC's own loop would consume (a dry run of the same loop), so
//! a truncated or padded proof gets [`ProofError::WrongLength`] rather than a root mismatch; the
//! set of accepted proofs is exactly the RFC's.
//!
//! Generation follows the recursive definitions `PATH(m, D[n])` and `PROOF(m, D[n])` /
//! `SUBPROOF` (2.1.3.1 and 2.1.4.1), walked top-down without recursion. It asks a
//! `SubtreeHashes` source for the hash of each range `D[lo:hi]` the definitions name; every
//! such range is either a perfect, aligned subtree or a suffix `D[lo:size]` of the tree, which
//! [`crate::Tree`] answers in O(1) after an O(log n) set-up.
//!
//! Two edge cases the RFC leaves open are settled as the transparency-dev/merkle reference
//! (and its test vectors) settles them: a consistency proof between equal sizes is empty and
//! holds iff the roots are equal; there is no consistency proof from the empty tree
//! ([`ProofError::EmptyOldTree`]), since every tree trivially extends it.
//!
//! A root hash does not commit to its tree size: the verification of leaf 0 takes the same
//! steps at sizes 3 and 4, so one proof and root pass at both (the tests list such cases).
//! What binds a size to a root is the signed checkpoint that carries both; verify proofs
//! against a checkpoint's own size ([`crate::Checkpoint::verify_inclusion`]).

use crate::hash::{Hash, node_hash, split_point};

/// Why a proof could not be made or does not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The leaf index is not below the tree size.
    #[error("leaf index {index} is not in a tree of size {size}")]
    IndexOutOfRange {
        /// The leaf index asked for.
        index: u64,
        /// The tree size it was asked at.
        size: u64,
    },
    /// A proof or root was asked at a size the tree has not reached.
    #[error("tree size {size} is beyond the tree's {tree_size} leaves")]
    SizeBeyondTree {
        /// The size asked for.
        size: u64,
        /// The number of leaves the tree holds.
        tree_size: u64,
    },
    /// A consistency proof from a larger tree to a smaller one.
    #[error("old tree size {old_size} is larger than new tree size {new_size}")]
    SizesOutOfOrder {
        /// The size of the older tree.
        old_size: u64,
        /// The size of the newer tree.
        new_size: u64,
    },
    /// A consistency proof from the empty tree: meaningless, as every tree extends it.
    #[error("there is no consistency proof from the empty tree")]
    EmptyOldTree,
    /// The proof does not have the number of hashes its index and sizes require.
    #[error("proof has {actual} hashes where {expected} are required")]
    WrongLength {
        /// The number of hashes the RFC algorithm consumes for these parameters.
        expected: usize,
        /// The number of hashes given.
        actual: usize,
    },
    /// A consistency proof does not rebuild the old tree's root hash.
    #[error("proof does not lead to the old root hash")]
    OldRootMismatch,
    /// The proof does not rebuild the (new) tree's root hash.
    #[error("proof does not lead to the root hash")]
    RootMismatch,
}

/// Verifies that the leaf with hash `leaf_hash` is leaf `index` of the tree of size `size`
/// whose root is `root`, given its inclusion proof (audit path) `proof`.
///
/// RFC 9162 section 2.1.3.2.
pub fn verify_inclusion(
    leaf_hash: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if root_from_inclusion_proof(leaf_hash, index, size, proof)? == *root {
        Ok(())
    } else {
        Err(ProofError::RootMismatch)
    }
}

/// The root hash an inclusion proof leads to: the first part of
/// [`verify_inclusion`], for callers that compare roots themselves.
pub fn root_from_inclusion_proof(
    leaf_hash: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
) -> Result<Hash, ProofError> {
    // Step 1.
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    check_length(inclusion_proof_len(index, size), proof)?;
    // Steps 2 and 3.
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf_hash;
    // Step 4.
    for p in proof {
        if sn == 0 {
            // Unreachable after check_length; kept so the loop is the RFC's on its own.
            return Err(length_error(inclusion_proof_len(index, size), proof));
        }
        if step(&mut fn_, &mut sn) {
            r = node_hash(p, &r);
        } else {
            r = node_hash(&r, p);
        }
    }
    // Step 5 (the comparison with the root is the caller's).
    if sn != 0 {
        return Err(length_error(inclusion_proof_len(index, size), proof));
    }
    Ok(r)
}

/// Verifies that the tree of size `old_size` with root `old_root` is a prefix of the tree of
/// size `new_size` with root `new_root`, given the consistency proof `proof`.
///
/// RFC 9162 section 2.1.4.2; equal sizes need an empty proof and equal roots, and an empty
/// old tree is refused (see the module docs).
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    proof: &[Hash],
    old_root: &Hash,
    new_root: &Hash,
) -> Result<(), ProofError> {
    check_consistency_sizes(old_size, new_size)?;
    if old_size == new_size {
        check_length(0, proof)?;
        return if old_root == new_root {
            Ok(())
        } else {
            Err(ProofError::RootMismatch)
        };
    }
    // Step 1 (an empty proof) is one case of the length check.
    check_length(consistency_proof_len(old_size, new_size), proof)?;
    // Step 2: with a power-of-two old size, the old root itself starts the path.
    let (seed, rest) = if old_size.is_power_of_two() {
        (*old_root, proof)
    } else {
        match proof.split_first() {
            Some((first, rest)) => (*first, rest),
            None => return Err(length_error(1, proof)),
        }
    };
    // Steps 3 and 4.
    let (mut fn_, mut sn) = consistency_start(old_size, new_size);
    // Step 5.
    let (mut fr, mut sr) = (seed, seed);
    // Step 6.
    for c in rest {
        if sn == 0 {
            // Unreachable after check_length; kept so the loop is the RFC's on its own.
            return Err(length_error(
                consistency_proof_len(old_size, new_size),
                proof,
            ));
        }
        if step(&mut fn_, &mut sn) {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
        } else {
            sr = node_hash(&sr, c);
        }
    }
    // Step 7.
    if sn != 0 {
        return Err(length_error(
            consistency_proof_len(old_size, new_size),
            proof,
        ));
    }
    if fr != *old_root {
        return Err(ProofError::OldRootMismatch);
    }
    if sr != *new_root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// One iteration of the loop both verifications share (RFC 9162 2.1.3.2 step 4 and 2.1.4.2
/// step 6 are the same walk): says whether this step's proof hash is the left child
/// (`LSB(fn)` set or `fn == sn`), then moves `fn` and `sn` up as the RFC does, including
/// the extra shifts past a right border. The caller hashes; the decision does not depend on
/// the shifts, which the RFC performs after hashing.
fn step(fn_: &mut u64, sn: &mut u64) -> bool {
    let left = *fn_ & 1 == 1 || *fn_ == *sn;
    if left && *fn_ & 1 == 0 {
        while *fn_ & 1 == 0 && *fn_ != 0 {
            *fn_ >>= 1;
            *sn >>= 1;
        }
    }
    *fn_ >>= 1;
    *sn >>= 1;
    left
}

/// How many [`step`]s the walk from `(fn, sn)` takes until `sn` is 0: the number of proof
/// hashes the loop consumes.
fn steps(mut fn_: u64, mut sn: u64) -> usize {
    let mut count = 0;
    while sn != 0 {
        step(&mut fn_, &mut sn);
        count += 1;
    }
    count
}

/// The number of hashes in the inclusion proof of leaf `index` in a tree of size `size`
/// (`index < size`).
pub(crate) fn inclusion_proof_len(index: u64, size: u64) -> usize {
    steps(index, size.saturating_sub(1))
}

/// The number of hashes in the consistency proof from `old_size` to `new_size`
/// (`0 < old_size < new_size`): the loop's, plus the first hash unless step 2 supplies it.
pub(crate) fn consistency_proof_len(old_size: u64, new_size: u64) -> usize {
    let (fn_, sn) = consistency_start(old_size, new_size);
    usize::from(!old_size.is_power_of_two()) + steps(fn_, sn)
}

/// RFC 9162 2.1.4.2 steps 3 and 4: `fn = first - 1`, `sn = second - 1`, both shifted right
/// while `LSB(fn)` is set.
fn consistency_start(old_size: u64, new_size: u64) -> (u64, u64) {
    let (mut fn_, mut sn) = (old_size.saturating_sub(1), new_size.saturating_sub(1));
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    (fn_, sn)
}

/// Refuses consistency proofs whose sizes make no sense (shared by generation and
/// verification).
pub(crate) fn check_consistency_sizes(old_size: u64, new_size: u64) -> Result<(), ProofError> {
    if old_size > new_size {
        return Err(ProofError::SizesOutOfOrder { old_size, new_size });
    }
    if old_size == 0 {
        return Err(ProofError::EmptyOldTree);
    }
    Ok(())
}

fn check_length(expected: usize, proof: &[Hash]) -> Result<(), ProofError> {
    if proof.len() == expected {
        Ok(())
    } else {
        Err(length_error(expected, proof))
    }
}

fn length_error(expected: usize, proof: &[Hash]) -> ProofError {
    ProofError::WrongLength {
        expected,
        actual: proof.len(),
    }
}

/// Where proof generation gets the Merkle Tree Hash of a range of leaves `D[lo:hi]`.
///
/// Generation only ever asks for ranges that are perfect aligned subtrees (a power-of-two
/// length starting at a multiple of it) or suffixes `D[lo:size]` of the tree the proof is for.
pub(crate) trait SubtreeHashes {
    /// `MTH(D[lo:hi])`, `lo < hi`.
    fn subtree_hash(&self, lo: u64, hi: u64) -> Hash;
}

/// The walk down the RFC's recursive definitions: the range `D[lo:hi]` in hand, the
/// position `m` within it (relative to `lo`), and the hashes of the halves left behind.
struct Descent {
    lo: u64,
    hi: u64,
    m: u64,
    /// Top-down; the definitions append each after the recursion's result, so a proof is
    /// this list reversed.
    siblings: Vec<Hash>,
}

impl Descent {
    fn new(size: u64, m: u64, proof_len: usize) -> Self {
        Self {
            lo: 0,
            hi: size,
            m,
            siblings: Vec::with_capacity(proof_len),
        }
    }

    fn width(&self) -> u64 {
        self.hi - self.lo
    }

    /// Splits `D[lo:hi]` at `k` and goes into the left half if `left`, else into the right
    /// one, recording the hash of the other.
    fn split(&mut self, source: &impl SubtreeHashes, k: u64, left: bool) {
        if left {
            self.siblings
                .push(source.subtree_hash(self.lo + k, self.hi));
            self.hi = self.lo + k;
        } else {
            self.siblings
                .push(source.subtree_hash(self.lo, self.lo + k));
            self.lo += k;
            self.m -= k;
        }
    }

    fn into_proof(mut self) -> Vec<Hash> {
        self.siblings.reverse();
        self.siblings
    }
}

/// `PATH(index, D[0:size])` (RFC 9162 2.1.3.1), for `index < size`: down the half holding
/// the leaf until a single leaf remains.
pub(crate) fn inclusion_path(source: &impl SubtreeHashes, index: u64, size: u64) -> Vec<Hash> {
    let mut descent = Descent::new(size, index, inclusion_proof_len(index, size));
    while descent.width() > 1 {
        let k = split_point(descent.width());
        let left = descent.m < k;
        descent.split(source, k, left);
    }
    descent.into_proof()
}

/// `PROOF(old_size, D[0:new_size])` = `SUBPROOF(old_size, D[0:new_size], true)`
/// (RFC 9162 2.1.4.1), for `0 < old_size < new_size`: down towards the old tree's right
/// edge until the range is exactly the part of the old tree in it, whose hash closes the
/// proof unless it is the whole old tree (SUBPROOF's flag `b`: the verifier has that root).
pub(crate) fn consistency_path(
    source: &impl SubtreeHashes,
    old_size: u64,
    new_size: u64,
) -> Vec<Hash> {
    let mut descent = Descent::new(
        new_size,
        old_size,
        consistency_proof_len(old_size, new_size),
    );
    let mut whole = true;
    while descent.m != descent.width() {
        let k = split_point(descent.width());
        let left = descent.m <= k;
        whole &= left;
        descent.split(source, k, left);
    }
    if !whole {
        let last = source.subtree_hash(descent.lo, descent.hi);
        descent.siblings.push(last);
    }
    descent.into_proof()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inclusion_length_matches_the_closed_form() {
        // transparency-dev/merkle's decomposition: inner = bits.Len64(index ^ (size-1)),
        // border = popcount(index >> inner).
        for size in 1..300u64 {
            for index in 0..size {
                let inner = u64::BITS - (index ^ (size - 1)).leading_zeros();
                let border = (index >> inner).count_ones();
                assert_eq!(
                    inclusion_proof_len(index, size),
                    (inner + border) as usize,
                    "index {index} size {size}"
                );
            }
        }
    }

    #[test]
    fn size_checks() {
        assert_eq!(
            check_consistency_sizes(3, 2),
            Err(ProofError::SizesOutOfOrder {
                old_size: 3,
                new_size: 2
            })
        );
        assert_eq!(check_consistency_sizes(0, 0), Err(ProofError::EmptyOldTree));
        assert_eq!(check_consistency_sizes(0, 5), Err(ProofError::EmptyOldTree));
        assert_eq!(check_consistency_sizes(5, 5), Ok(()));
    }

    #[test]
    fn verification_survives_extreme_parameters() {
        let h = [7u8; 32];
        assert!(verify_inclusion(&h, u64::MAX - 1, u64::MAX, &[h; 64], &h).is_err());
        assert!(verify_inclusion(&h, 0, u64::MAX, &[], &h).is_err());
        assert!(verify_consistency(u64::MAX - 1, u64::MAX, &[h; 3], &h, &h).is_err());
        assert!(verify_consistency(1, u64::MAX, &[], &h, &h).is_err());
        assert!(verify_consistency(u64::MAX, u64::MAX, &[], &h, &h).is_ok());
    }
}
