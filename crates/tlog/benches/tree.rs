//! Rebuilding the ledger's tree at start, against SHA-256 over the same bytes, measured in the
//! same run; then roots and proofs on the rebuilt tree.
//!
//! After a restart the ledger re-appends every archived envelope as a leaf. The work that
//! cannot be avoided is hashing each envelope once, so the baseline is plain SHA-256 over
//! exactly the same bytes. On top of it a leaf costs its 0x00 prefix byte (usually free: it
//! shares the last block) and, on average, one interior node hash (`SHA-256(0x01 || l || r)`,
//! 65 bytes, two compressions). The run prints leaves/s for:
//! - `sha256`: plain SHA-256 of each envelope (the baseline);
//! - `leaf hash`: `leaf_hash` of each envelope;
//! - `rebuild`: `Tree::with_capacity` + `push_leaf` of each envelope (what the ledger does);
//! - `rebuild, growing`: the same from `Tree::new()` (Vec doubling, its copies and slack);
//! - `nodes only`: `push_leaf_hash` of precomputed leaf hashes (the tree's own work);
//!
//! and the ratios rebuild/sha256 and rebuild/bound, where the bound is
//! `1 / (t_sha256 + t_nodes_only)` per leaf: hashing each envelope once plus the interior
//! nodes, nothing else. Rounds alternate the measurements and medians are reported, so
//! machine noise hits both sides of each ratio alike.
//!
//! Envelopes are synthetic: 1,000,000 pseudo-random byte strings of 200 to 400 bytes (300 on
//! average, the size MEASUREMENTS.md uses for events), held in one buffer as an archive read
//! into memory would be. `cargo bench -p fairdeal-tlog --bench tree` runs it; under
//! `cargo test` (no `--bench` argument) it runs once on 20,000 leaves as a smoke test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use fairdeal_tlog::{Hash, Tree, leaf_hash, verify_consistency, verify_inclusion};
use sha2::{Digest, Sha256};

/// The envelopes, back to back, and where each ends.
struct Archive {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Archive {
    fn synthetic(leaves: usize) -> Self {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut bytes = Vec::with_capacity(leaves * 300);
        let mut ends = Vec::with_capacity(leaves);
        for _ in 0..leaves {
            let len = 200 + (rng.next() % 201) as usize;
            for _ in 0..len.div_ceil(8) {
                bytes.extend_from_slice(&rng.next().to_le_bytes());
            }
            bytes.truncate(ends.last().copied().unwrap_or(0) + len);
            ends.push(bytes.len());
        }
        Self { bytes, ends }
    }

    fn leaves(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(start, end)| &self.bytes[start..end])
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn timed(work: impl FnOnce()) -> Duration {
    let start = Instant::now();
    work();
    start.elapsed()
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn per_second(count: usize, time: Duration) -> f64 {
    count as f64 / time.as_secs_f64()
}

fn main() {
    let benchmarking = std::env::args().any(|a| a == "--bench");
    let (leaves, rounds) = if benchmarking {
        (1_000_000, 7)
    } else {
        (20_000, 1)
    };
    let archive = Archive::synthetic(leaves);
    let leaf_hashes: Vec<Hash> = archive.leaves().map(leaf_hash).collect();
    let n = archive.len();

    let mut sha = Vec::new();
    let mut leaf = Vec::new();
    let mut rebuild = Vec::new();
    let mut growing = Vec::new();
    let mut nodes = Vec::new();
    let mut root = [0u8; 32];
    for _ in 0..rounds {
        sha.push(timed(|| {
            for bytes in archive.leaves() {
                black_box(<[u8; 32]>::from(Sha256::digest(black_box(bytes))));
            }
        }));
        leaf.push(timed(|| {
            for bytes in archive.leaves() {
                black_box(leaf_hash(black_box(bytes)));
            }
        }));
        rebuild.push(timed(|| {
            let mut tree = Tree::with_capacity(n);
            for bytes in archive.leaves() {
                tree.push_leaf(bytes);
            }
            root = black_box(tree.root());
        }));
        growing.push(timed(|| {
            let mut tree = Tree::new();
            for bytes in archive.leaves() {
                tree.push_leaf(bytes);
            }
            black_box(tree.root());
        }));
        nodes.push(timed(|| {
            let mut tree = Tree::with_capacity(n);
            for hash in &leaf_hashes {
                tree.push_leaf_hash(*hash);
            }
            black_box(tree.root());
        }));
    }
    let [sha, leaf, rebuild, growing, nodes] =
        [&mut sha, &mut leaf, &mut rebuild, &mut growing, &mut nodes].map(|s| median(s));
    let bound = sha + nodes;
    let mb = archive.bytes.len() as f64 / 1e6;

    println!(
        "tree rebuild, {n} leaves ({mb:.0} MB of envelopes, {:.0} B average), median of {rounds} rounds:",
        archive.bytes.len() as f64 / n as f64
    );
    for (name, time) in [
        ("sha256 (baseline)", sha),
        ("leaf hash", leaf),
        ("rebuild", rebuild),
        ("rebuild, growing", growing),
        ("nodes only", nodes),
    ] {
        println!(
            "  {name:<18} {:>12.0} leaves/s  {:>8.1} ms",
            per_second(n, time),
            time.as_secs_f64() * 1e3
        );
    }
    println!(
        "  rebuild / sha256 = {:.2}   rebuild / bound (sha256 + nodes) = {:.2}   leaf hash / sha256 = {:.2}",
        sha.as_secs_f64() / rebuild.as_secs_f64(),
        bound.as_secs_f64() / rebuild.as_secs_f64(),
        sha.as_secs_f64() / leaf.as_secs_f64(),
    );

    let tree: Tree = leaf_hashes.iter().copied().collect();
    assert_eq!(tree.root(), root);
    let exact = Tree::with_capacity(n);
    let mut exact = exact;
    exact.extend(leaf_hashes.iter().copied());
    println!(
        "  memory: {:.1} B/leaf built with capacity, {:.1} B/leaf grown from empty",
        exact.heap_size() as f64 / n as f64,
        tree.heap_size() as f64 / n as f64
    );

    // Roots and proofs at random earlier sizes of the rebuilt tree.
    let queries = if benchmarking { 200_000 } else { 2_000 };
    let mut rng = XorShift(42);
    let picks: Vec<(u64, u64)> = (0..queries)
        .map(|_| {
            let size = 1 + rng.next() % n as u64;
            (rng.next() % size, size)
        })
        .collect();
    let time = timed(|| {
        for &(_, size) in &picks {
            black_box(tree.root_at(size).unwrap());
        }
    });
    println!(
        "  root_at             {:>12.0} /s",
        per_second(queries, time)
    );
    let proofs: Vec<Vec<Hash>> = picks
        .iter()
        .map(|&(index, size)| tree.inclusion_proof(index, size).unwrap())
        .collect();
    let time = timed(|| {
        for &(index, size) in &picks {
            black_box(tree.inclusion_proof(index, size).unwrap());
        }
    });
    println!(
        "  inclusion_proof     {:>12.0} /s",
        per_second(queries, time)
    );
    let roots: Vec<Hash> = picks
        .iter()
        .map(|&(_, s)| tree.root_at(s).unwrap())
        .collect();
    let time = timed(|| {
        for ((&(index, size), proof), root) in picks.iter().zip(&proofs).zip(&roots) {
            verify_inclusion(&leaf_hashes[index as usize], index, size, proof, root).unwrap();
        }
    });
    println!(
        "  verify_inclusion    {:>12.0} /s",
        per_second(queries, time)
    );
    // Consistency from `index + 1` (a random earlier size) to `size`.
    let time = timed(|| {
        for &(index, size) in &picks {
            black_box(tree.consistency_proof(index + 1, size).unwrap());
        }
    });
    println!(
        "  consistency_proof   {:>12.0} /s",
        per_second(queries, time)
    );
    let proofs: Vec<Vec<Hash>> = picks
        .iter()
        .map(|&(index, size)| tree.consistency_proof(index + 1, size).unwrap())
        .collect();
    let old_roots: Vec<Hash> = picks
        .iter()
        .map(|&(index, _)| tree.root_at(index + 1).unwrap())
        .collect();
    let time = timed(|| {
        for (((&(index, size), proof), old), new) in
            picks.iter().zip(&proofs).zip(&old_roots).zip(&roots)
        {
            verify_consistency(index + 1, size, proof, old, new).unwrap();
        }
    });
    println!(
        "  verify_consistency  {:>12.0} /s",
        per_second(queries, time)
    );
}
