//! Properties of the tree and its proofs on random trees of up to 300 leaves: every proof at
//! every size verifies and equals the RFC's own recursive definition, every corruption of a
//! proof or of the claims around it fails, proofs of another tree fail, and an independent
//! implementation (ct-merkle) produces the same roots and proofs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use common::{
    consistency_shape, corrupt, corruptions, flip, inclusion_shape, leaves, mth, path, proof,
    wrong_sizes,
};
use fairdeal_tlog::{Hash, ProofError, Tree, verify_consistency, verify_inclusion};
use proptest::prelude::*;

/// Checks every inclusion proof at every size of a tree of `n` leaves, against the
/// reference definitions for every pair when `exhaustive`, and only the crate's own
/// verification otherwise (the reference is O(n) per node).
fn check_all_inclusions(all: &[Hash], tree: &Tree, exhaustive: bool) {
    for size in 1..=all.len() as u64 {
        let root = tree.root_at(size).unwrap();
        assert_eq!(root, mth(&all[..size as usize]), "root at {size}");
        for index in 0..size {
            let p = tree.inclusion_proof(index, size).unwrap();
            verify_inclusion(&all[index as usize], index, size, &p, &root).unwrap();
            if exhaustive {
                assert_eq!(p, path(index as usize, &all[..size as usize]));
            }
        }
    }
}

fn check_consistency(all: &[Hash], tree: &Tree, old: u64, new: u64, reference: bool) {
    let (old_root, new_root) = (tree.root_at(old).unwrap(), tree.root_at(new).unwrap());
    let p = tree.consistency_proof(old, new).unwrap();
    verify_consistency(old, new, &p, &old_root, &new_root).unwrap();
    if reference {
        assert_eq!(
            p,
            proof(old as usize, &all[..new as usize]),
            "{old} -> {new}"
        );
    }
}

#[test]
fn every_proof_of_every_size_up_to_64_is_the_rfcs() {
    let all = leaves(1, 64);
    let tree: Tree = all.iter().copied().collect();
    check_all_inclusions(&all, &tree, true);
    for new in 1..=64 {
        for old in 1..=new {
            check_consistency(&all, &tree, old, new, true);
        }
    }
}

/// ct-merkle (an independent RFC 6962 implementation) proves only at its current size, so
/// it grows leaf by leaf and both trees are compared at every size.
#[test]
fn ct_merkle_agrees() {
    use ct_merkle::mem_backed_tree::MemoryBackedTree;
    let mut theirs = MemoryBackedTree::<sha2::Sha256, Vec<u8>>::new();
    let mut ours = Tree::new();
    for i in 0..130u32 {
        let leaf = format!("leaf {i}").into_bytes();
        ours.push_leaf(&leaf);
        theirs.push(leaf);
        let size = ours.size();
        assert_eq!(theirs.root().as_bytes().as_slice(), ours.root().as_slice());
        for index in 0..size {
            let flat: Vec<u8> = ours.inclusion_proof(index, size).unwrap().concat();
            assert_eq!(
                theirs.prove_inclusion(index as usize).as_bytes(),
                flat.as_slice()
            );
        }
        for old in 1..size {
            let flat: Vec<u8> = ours.consistency_proof(old, size).unwrap().concat();
            let additions = (size - old) as usize;
            assert_eq!(
                theirs.prove_consistency(additions).as_bytes(),
                flat.as_slice()
            );
        }
    }
}

/// Every listed corruption of every proof of a 21-leaf tree fails, and so do a wrong index,
/// a wrong leaf, a wrong root, swapped roots and every wrong size whose verification does
/// not take the very same steps (a root does not commit to its size; see `common`).
#[test]
fn broken_proofs_fail() {
    let all = leaves(2, 21);
    let tree: Tree = all.iter().copied().collect();
    let (mut checked, mut same_shape) = (0, 0);
    for size in 1..=21u64 {
        let root = tree.root_at(size).unwrap();
        for index in 0..size {
            let p = tree.inclusion_proof(index, size).unwrap();
            let leaf = all[index as usize];
            for c in corruptions(&p) {
                let broken = corrupt(&p, c);
                assert!(verify_inclusion(&leaf, index, size, &broken, &root).is_err());
                checked += 1;
            }
            for other in 0..size.max(index + 2) {
                if other != index {
                    assert!(verify_inclusion(&leaf, other, size, &p, &root).is_err());
                }
            }
            for bit in [0, 255] {
                assert!(verify_inclusion(&flip(&leaf, bit), index, size, &p, &root).is_err());
                assert!(verify_inclusion(&leaf, index, size, &p, &flip(&root, bit)).is_err());
            }
            for wrong in wrong_sizes(size) {
                let result = verify_inclusion(&leaf, index, wrong, &p, &root);
                if inclusion_shape(index, wrong) == inclusion_shape(index, size) {
                    same_shape += 1;
                } else {
                    assert!(result.is_err(), "index {index} size {size} as {wrong}");
                }
            }
        }
        for old in 1..size {
            let old_root = tree.root_at(old).unwrap();
            let p = tree.consistency_proof(old, size).unwrap();
            for c in corruptions(&p) {
                let broken = corrupt(&p, c);
                assert!(verify_consistency(old, size, &broken, &old_root, &root).is_err());
                checked += 1;
            }
            assert!(verify_consistency(old, size, &p, &root, &old_root).is_err());
            // With a power-of-two old size the old root seeds both paths, so a wrong one
            // surfaces as a new-root mismatch.
            assert!(verify_consistency(old, size, &p, &flip(&old_root, 3), &root).is_err());
            assert_eq!(
                verify_consistency(old, size, &p, &old_root, &flip(&root, 3)),
                Err(ProofError::RootMismatch)
            );
            let wrong_new = wrong_sizes(size).into_iter().map(|wrong| (old, wrong));
            let wrong_old = wrong_sizes(old).into_iter().map(|wrong| (wrong, size));
            for (claimed_old, claimed_new) in wrong_new.chain(wrong_old) {
                let result = verify_consistency(claimed_old, claimed_new, &p, &old_root, &root);
                if consistency_shape(claimed_old, claimed_new) == consistency_shape(old, size) {
                    same_shape += 1;
                } else {
                    assert!(
                        result.is_err(),
                        "{old} -> {size} as {claimed_old} -> {claimed_new}"
                    );
                }
            }
        }
    }
    println!("{checked} corrupted proofs refused; {same_shape} size changes with the same steps");
}

/// Sizes, a tree of that many leaves, and a seed for its leaves.
fn tree_size() -> impl Strategy<Value = (usize, u64)> {
    (1usize..=300, any::<u64>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Every inclusion proof at every size verifies, and a sample matches the RFC's
    /// definition.
    #[test]
    fn inclusion_proofs_at_every_size_verify((n, seed) in tree_size(), picks in proptest::collection::vec((any::<u64>(), any::<u64>()), 16)) {
        let all = leaves(seed, n);
        let tree: Tree = all.iter().copied().collect();
        check_all_inclusions(&all, &tree, false);
        for (a, b) in picks {
            let size = 1 + a % n as u64;
            let index = b % size;
            prop_assert_eq!(
                tree.inclusion_proof(index, size).unwrap(),
                path(index as usize, &all[..size as usize])
            );
        }
    }

    /// Every consistency proof between sizes m <= n verifies: all pairs up to 120 leaves,
    /// 3,000 random pairs above; a sample matches the RFC's definition.
    #[test]
    fn consistency_proofs_verify((n, seed) in tree_size(), picks in proptest::collection::vec((any::<u64>(), any::<u64>()), 3000)) {
        let all = leaves(seed, n);
        let tree: Tree = all.iter().copied().collect();
        if n <= 120 {
            for new in 1..=n as u64 {
                for old in 1..=new {
                    check_consistency(&all, &tree, old, new, false);
                }
            }
        } else {
            for &(a, b) in &picks {
                let new = 1 + a % n as u64;
                let old = 1 + b % new;
                check_consistency(&all, &tree, old, new, false);
            }
        }
        for &(a, b) in picks.iter().take(16) {
            let new = 1 + a % n as u64;
            let old = 1 + b % new;
            check_consistency(&all, &tree, old, new, true);
        }
    }

    /// Proofs from another tree do not verify against this one: a tree of other leaves, and
    /// the same tree with one leaf changed. (A proof that does not involve the changed leaf
    /// is the very same proof in both trees, and valid in both: only different ones must
    /// fail.)
    #[test]
    fn proofs_of_another_tree_fail((n, seed) in tree_size(), changed in any::<u64>(), picks in proptest::collection::vec((any::<u64>(), any::<u64>()), 64)) {
        let ours = leaves(seed, n);
        let tree: Tree = ours.iter().copied().collect();
        let stranger: Tree = leaves(seed.wrapping_add(1), n).into_iter().collect();
        let mut one_changed = ours.clone();
        let j = (changed % n as u64) as usize;
        one_changed[j] = flip(&one_changed[j], 0);
        let sibling: Tree = one_changed.iter().copied().collect();
        for (a, b) in picks {
            let size = 1 + a % n as u64;
            let index = b % size;
            let root = tree.root_at(size).unwrap();
            let p = stranger.inclusion_proof(index, size).unwrap();
            let their_leaf = stranger.leaf_hash_at(index).unwrap();
            prop_assert!(verify_inclusion(&their_leaf, index, size, &p, &root).is_err());
            if size > j as u64 {
                let p = sibling.inclusion_proof(index, size).unwrap();
                let leaf = one_changed[index as usize];
                prop_assert!(verify_inclusion(&leaf, index, size, &p, &root).is_err());
            }
            let old = 1 + b % size;
            if old < size {
                let (old_root, new_root) = (tree.root_at(old).unwrap(), root);
                let p = stranger.consistency_proof(old, size).unwrap();
                prop_assert!(verify_consistency(old, size, &p, &old_root, &new_root).is_err());
                let p = sibling.consistency_proof(old, size).unwrap();
                let same = p == tree.consistency_proof(old, size).unwrap();
                let verified = verify_consistency(old, size, &p, &old_root, &new_root).is_ok();
                prop_assert_eq!(verified, same);
            }
        }
    }

    /// Appending never changes an earlier root or proof: a tree grown further answers for
    /// the old size exactly as it did then.
    #[test]
    fn growth_keeps_the_past((n, seed) in tree_size(), extra in 1usize..300) {
        let all = leaves(seed, n + extra);
        let small: Tree = all[..n].iter().copied().collect();
        let big: Tree = all.iter().copied().collect();
        let size = n as u64;
        prop_assert_eq!(small.root(), big.root_at(size).unwrap());
        for index in [0, size / 2, size - 1] {
            prop_assert_eq!(
                small.inclusion_proof(index, size).unwrap(),
                big.inclusion_proof(index, size).unwrap()
            );
        }
        let old = 1 + seed % size;
        prop_assert_eq!(
            small.consistency_proof(old, size).unwrap(),
            big.consistency_proof(old, size).unwrap()
        );
    }
}
