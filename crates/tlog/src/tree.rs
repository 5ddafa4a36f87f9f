//! [`Tree`]: an append-only Merkle tree that answers for every size it has had.
//!
//! The ledger appends one leaf hash per archived event, millions of them, and must serve
//! roots and proofs at any earlier size (an auditor's checkpoint is rarely the latest). The
//! tree therefore keeps the hash of every *perfect* subtree, level by level: level 0 holds
//! the leaf hashes, level 1 the hashes of leaf pairs `[2i, 2i+2)`, level `l` the hashes of
//! `[i·2^l, (i+1)·2^l)`. Each is written once, when its last leaf arrives, and never changes,
//! which is exactly what makes every past size answerable.
//!
//! Costs:
//! - Memory: fewer than `2n` hashes for `n` leaves, so 64 bytes per leaf (about 64 MB per
//!   million events), plus up to as much again of `Vec` growth slack unless the tree is made
//!   with [`Tree::with_capacity`].
//! - Appending: one node hash per leaf on average (O(log n) at worst, when a leaf completes a
//!   large subtree).
//! - Root at any size: the size's binary decomposition names at most 64 perfect subtrees,
//!   folded right to left: O(log n) hashes.
//! - Proofs at any size: O(log n) hashes. Every node a proof names is a perfect subtree
//!   (stored) or a suffix of the tree at that size, and those suffixes are exactly the
//!   intermediate values of the right-to-left fold that computes the root, so one O(log n)
//!   fold serves the whole proof.
//!
//! Rebuilding after a restart is re-appending every leaf of the archive in order
//! (`benches/tree.rs` measures it against plain SHA-256 over the same bytes).

use crate::hash::{EMPTY_ROOT, Hash, leaf_hash, node_hash};
use crate::proof::{self, ProofError, SubtreeHashes};

/// An append-only RFC 9162 Merkle tree over leaf hashes, with roots and proofs at every size
/// up to the current one.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// `levels[l][i]` = MTH of leaves `[i·2^l, (i+1)·2^l)`, present once all of them are in.
    /// `levels[0]` holds the leaf hashes; a level exists once its first node does.
    levels: Vec<Vec<Hash>>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("size", &self.size())
            .field("levels", &self.levels.len())
            .finish()
    }
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty tree with room for `leaves` leaves without reallocating (no growth slack):
    /// for rebuilding from an archive whose length is known. The room is a hint: if it
    /// cannot be reserved, the tree starts empty and grows as usual.
    pub fn with_capacity(leaves: usize) -> Self {
        let mut levels = Vec::new();
        let mut width = leaves;
        while width > 0 {
            let mut level = Vec::new();
            if level.try_reserve_exact(width).is_err() {
                return Self::new();
            }
            levels.push(level);
            width /= 2;
        }
        Self { levels }
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.levels.first().map_or(0, |leaves| leaves.len() as u64)
    }

    /// Appends a leaf given its bytes (hashed as [`leaf_hash`]); returns its index.
    pub fn push_leaf(&mut self, bytes: &[u8]) -> u64 {
        self.push_leaf_hash(leaf_hash(bytes))
    }

    /// Appends a leaf given its leaf hash; returns its index.
    pub fn push_leaf_hash(&mut self, leaf_hash: Hash) -> u64 {
        let index = self.size();
        let mut hash = leaf_hash;
        let mut level = 0;
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            let nodes = &mut self.levels[level];
            nodes.push(hash);
            let len = nodes.len();
            if len % 2 == 1 {
                return index;
            }
            // This node completed a pair: its parent is now a perfect subtree too.
            hash = node_hash(&nodes[len - 2], &nodes[len - 1]);
            level += 1;
        }
    }

    /// The bytes the tree holds on the heap, growth slack included: about 64 per leaf (see
    /// the module docs), for the ledger's memory gauge.
    pub fn heap_size(&self) -> usize {
        let hashes: usize = self.levels.iter().map(Vec::capacity).sum();
        hashes * size_of::<Hash>() + self.levels.capacity() * size_of::<Vec<Hash>>()
    }

    /// The hash of leaf `index`, if the tree has it.
    pub fn leaf_hash_at(&self, index: u64) -> Option<Hash> {
        let index = usize::try_from(index).ok()?;
        self.levels.first()?.get(index).copied()
    }

    /// The current root hash ([`EMPTY_ROOT`] for an empty tree).
    pub fn root(&self) -> Hash {
        self.view(self.size()).root()
    }

    /// The root hash the tree had when it held `size` leaves.
    pub fn root_at(&self, size: u64) -> Result<Hash, ProofError> {
        self.check_size(size)?;
        Ok(self.view(size).root())
    }

    /// The inclusion proof (audit path) of leaf `index` in the tree of size `size`, as
    /// RFC 9162 section 2.1.3.1 defines it: sibling hashes from the leaf upwards.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        self.check_size(size)?;
        if index >= size {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        Ok(proof::inclusion_path(&self.view(size), index, size))
    }

    /// The consistency proof from the tree of size `old_size` to the tree of size
    /// `new_size`, as RFC 9162 section 2.1.4.1 defines it (empty when the sizes are equal).
    pub fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<Vec<Hash>, ProofError> {
        proof::check_consistency_sizes(old_size, new_size)?;
        self.check_size(new_size)?;
        if old_size == new_size {
            return Ok(Vec::new());
        }
        Ok(proof::consistency_path(
            &self.view(new_size),
            old_size,
            new_size,
        ))
    }

    fn check_size(&self, size: u64) -> Result<(), ProofError> {
        let tree_size = self.size();
        if size > tree_size {
            return Err(ProofError::SizeBeyondTree { size, tree_size });
        }
        Ok(())
    }

    /// The perfect subtree at `level` covering `[start, start + 2^level)`.
    ///
    /// Callers only name subtrees inside a size already checked against the tree's, so the
    /// node exists.
    fn perfect(&self, level: u32, start: u64) -> Hash {
        self.levels[level as usize][(start >> level) as usize]
    }

    /// The tree as it was at `size` (`size <= self.size()`): its right edge folded once.
    fn view(&self, size: u64) -> SizedView<'_> {
        // The binary decomposition of `size`: perfect subtrees from the largest (leftmost)
        // to the smallest.
        let mut chunks = Vec::with_capacity(size.count_ones() as usize);
        let mut start = 0;
        for level in (0..u64::BITS).rev() {
            if size & (1 << level) != 0 {
                chunks.push((start, self.perfect(level, start)));
                start += 1 << level;
            }
        }
        // Fold from the right: suffixes[i] = MTH(D[chunk i start : size]).
        let mut suffixes = chunks;
        for i in (0..suffixes.len().saturating_sub(1)).rev() {
            suffixes[i].1 = node_hash(&suffixes[i].1, &suffixes[i + 1].1);
        }
        SizedView {
            tree: self,
            size,
            suffixes,
        }
    }
}

impl Extend<Hash> for Tree {
    /// Appends leaf hashes in order.
    fn extend<I: IntoIterator<Item = Hash>>(&mut self, leaf_hashes: I) {
        for leaf_hash in leaf_hashes {
            self.push_leaf_hash(leaf_hash);
        }
    }
}

impl FromIterator<Hash> for Tree {
    /// The tree of these leaf hashes, in order.
    fn from_iter<I: IntoIterator<Item = Hash>>(leaf_hashes: I) -> Self {
        let mut tree = Tree::new();
        tree.extend(leaf_hashes);
        tree
    }
}

/// The tree at one size, with the MTH of each suffix that starts at a boundary of the size's
/// binary decomposition: everything a root or a proof at that size needs beyond stored nodes.
struct SizedView<'a> {
    tree: &'a Tree,
    size: u64,
    /// `(start, MTH(D[start:size]))` for each decomposition boundary, ascending `start`.
    suffixes: Vec<(u64, Hash)>,
}

impl SizedView<'_> {
    fn root(&self) -> Hash {
        self.suffixes.first().map_or(EMPTY_ROOT, |&(_, hash)| hash)
    }
}

impl SubtreeHashes for SizedView<'_> {
    fn subtree_hash(&self, lo: u64, hi: u64) -> Hash {
        let width = hi - lo;
        if width.is_power_of_two() && lo.is_multiple_of(width) {
            return self.tree.perfect(width.trailing_zeros(), lo);
        }
        if hi == self.size
            && let Ok(i) = self.suffixes.binary_search_by_key(&lo, |&(start, _)| start)
        {
            return self.suffixes[i].1;
        }
        // Not reached by the RFC's recursions (see the module docs); still correct for any
        // range starting at a multiple of its width's next power of two: its greedy
        // decomposition into perfect subtrees, folded right to left.
        let mut parts = Vec::new();
        let mut start = lo;
        while start < hi {
            let mut level = start.trailing_zeros().min(u64::BITS - 1);
            while (1u64 << level) > hi - start {
                level -= 1;
            }
            parts.push(self.tree.perfect(level, start));
            start += 1 << level;
        }
        let mut parts = parts.into_iter().rev();
        let last = parts.next().unwrap_or(EMPTY_ROOT);
        parts.fold(last, |right, left| node_hash(&left, &right))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::root_from_leaf_hashes;

    fn leaves(n: u64) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect()
    }

    #[test]
    fn roots_at_every_size_match_the_definition() {
        let all = leaves(70);
        let tree: Tree = all.iter().copied().collect();
        for size in 0..=70 {
            assert_eq!(
                tree.root_at(size).unwrap(),
                root_from_leaf_hashes(&all[..size as usize]),
                "size {size}"
            );
        }
        assert_eq!(tree.root(), root_from_leaf_hashes(&all));
        assert_eq!(
            tree.root_at(71),
            Err(ProofError::SizeBeyondTree {
                size: 71,
                tree_size: 70
            })
        );
    }

    #[test]
    fn stores_fewer_than_two_hashes_per_leaf() {
        for n in [1u64, 2, 3, 7, 8, 1000, 1024, 4097] {
            let tree: Tree = leaves(n).into_iter().collect();
            let stored: usize = tree.levels.iter().map(Vec::len).sum();
            assert!(stored < 2 * n as usize, "n {n}: {stored} hashes");
            let reserved = Tree::with_capacity(n as usize);
            let capacity: usize = reserved.levels.iter().map(Vec::capacity).sum();
            assert!(capacity < 2 * n as usize, "n {n}: capacity {capacity}");
            assert!(reserved.heap_size() < 64 * n as usize + 24 * 64);
        }
    }

    #[test]
    fn with_capacity_builds_the_same_tree() {
        let mut reserved = Tree::with_capacity(100);
        let mut grown = Tree::new();
        for leaf in leaves(100) {
            assert_eq!(reserved.push_leaf_hash(leaf), grown.push_leaf_hash(leaf));
        }
        assert_eq!(reserved.root(), grown.root());
        assert_eq!(reserved.size(), 100);
    }

    #[test]
    fn fallback_range_hash_is_the_mth() {
        let all = leaves(37);
        let tree: Tree = all.iter().copied().collect();
        let view = tree.view(37);
        // Aligned ranges that are neither perfect nor suffixes of size 37.
        for (lo, hi) in [(0, 3), (0, 21), (16, 19), (8, 13), (32, 35)] {
            assert_eq!(
                view.subtree_hash(lo, hi),
                root_from_leaf_hashes(&all[lo as usize..hi as usize]),
                "[{lo}, {hi})"
            );
        }
    }

    #[test]
    fn an_impossible_capacity_is_only_a_hint() {
        let mut tree = Tree::with_capacity(usize::MAX);
        tree.push_leaf(b"a");
        assert_eq!(tree.size(), 1);
    }

    #[test]
    fn leaf_hashes_are_kept() {
        let mut tree = Tree::new();
        assert_eq!(tree.push_leaf(b"a"), 0);
        assert_eq!(tree.push_leaf(b"b"), 1);
        assert_eq!(tree.leaf_hash_at(1), Some(leaf_hash(b"b")));
        assert_eq!(tree.leaf_hash_at(2), None);
        assert_eq!(tree.leaf_hash_at(u64::MAX), None);
    }
}
