//! The Merkle tree and its proofs against published RFC 6962 / RFC 9162 vectors (sources in
//! `tests/vectors/README.md`): generation must reproduce them, verification must accept the
//! good ones and refuse every corruption.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};

use common::{
    b64, b64_32, consistency_shape, corrupt, corruptions, flip, hex32, inclusion_shape, wrong_sizes,
};
use fairdeal_tlog::{
    Checkpoint, EMPTY_ROOT, Hash, ProofError, Tree, leaf_hash, root_from_leaf_hashes,
    verify_consistency, verify_inclusion,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn reference() -> Value {
    json(&vectors().join("rfc6962-reference.json"))
}

fn hashes(value: &Value) -> Vec<Hash> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|h| hex32(h.as_str().unwrap()))
        .collect()
}

/// The CT spec's 8-leaf tree.
fn reference_tree() -> (Vec<Vec<u8>>, Tree) {
    let leaves: Vec<Vec<u8>> = reference()["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| hex::decode(l.as_str().unwrap()).unwrap())
        .collect();
    let mut tree = Tree::new();
    for leaf in &leaves {
        tree.push_leaf(leaf);
    }
    (leaves, tree)
}

#[test]
fn reference_tree_hashes() {
    let reference = reference();
    let (leaves, tree) = reference_tree();
    let roots = hashes(&reference["roots"]);
    assert_eq!(roots[0], EMPTY_ROOT);
    for (size, root) in roots.iter().enumerate() {
        assert_eq!(tree.root_at(size as u64).unwrap(), *root, "root at {size}");
    }
    // Every perfect subtree: level l, index i covers leaves [i·2^l, (i+1)·2^l).
    let leaf_hashes: Vec<Hash> = leaves.iter().map(|l| leaf_hash(l)).collect();
    for (level, nodes) in reference["levels"].as_array().unwrap().iter().enumerate() {
        for (i, node) in hashes(nodes).into_iter().enumerate() {
            let width = 1 << level;
            assert_eq!(
                root_from_leaf_hashes(&leaf_hashes[i * width..(i + 1) * width]),
                node,
                "level {level} node {i}"
            );
        }
    }
}

#[test]
fn reference_tree_proofs_are_reproduced_and_verify() {
    let reference = reference();
    let (leaves, tree) = reference_tree();
    let roots = hashes(&reference["roots"]);
    for vector in reference["inclusion"].as_array().unwrap() {
        let index = vector["index"].as_u64().unwrap();
        let size = vector["size"].as_u64().unwrap();
        let want = hashes(&vector["proof"]);
        assert_eq!(tree.inclusion_proof(index, size).unwrap(), want, "{vector}");
        let leaf = leaf_hash(&leaves[index as usize]);
        verify_inclusion(&leaf, index, size, &want, &roots[size as usize]).unwrap();
    }
    for vector in reference["consistency"].as_array().unwrap() {
        let old = vector["old_size"].as_u64().unwrap();
        let new = vector["new_size"].as_u64().unwrap();
        let want = hashes(&vector["proof"]);
        assert_eq!(tree.consistency_proof(old, new).unwrap(), want, "{vector}");
        verify_consistency(old, new, &want, &roots[old as usize], &roots[new as usize]).unwrap();
    }
}

/// Every JSON probe under `dir`, recursively, with its path.
fn probes(dir: &Path) -> Vec<(PathBuf, Value)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let probe = json(&path);
                found.push((path, probe));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// A base64 field as a 32-byte hash. Probes also hold values that are not 32 bytes (null,
/// "WrongLeaf", an empty node), which this crate's types cannot express: they stand in as
/// a domain-separated SHA-256 of themselves, which keeps equal values equal and makes them
/// differ from every real hash, so every probe keeps its meaning (in transparency-dev's Go,
/// such a value is either refused for its length or hashed into a wrong root).
fn field32(value: &Value) -> Hash {
    let bytes = match value {
        Value::Null => Vec::new(),
        v => b64(v.as_str().unwrap()),
    };
    bytes.clone().try_into().unwrap_or_else(|_| {
        Sha256::digest([b"not a 32-byte value:".as_slice(), &bytes].concat()).into()
    })
}

fn proof32(value: &Value) -> Vec<Hash> {
    match value {
        Value::Null => Vec::new(),
        v => v.as_array().unwrap().iter().map(field32).collect(),
    }
}

/// Runs every probe of `testdata/<kind>`: `verify` gets the probe and whether it is a happy
/// path (a proof in the reference tree, which generation must reproduce), and returns the
/// verification's result, or `None` for a probe this crate's types cannot express. Each
/// result must be an error exactly when the probe says `wantErr`; an inexpressible probe
/// must be one of those. Returns how many were accepted and refused.
fn run_probes(
    kind: &str,
    mut verify: impl FnMut(&Value, bool) -> Option<Result<(), ProofError>>,
) -> (usize, usize) {
    let dir = vectors()
        .join("transparency-dev-merkle/testdata")
        .join(kind);
    let (mut accepted, mut refused, mut happy) = (0, 0, 0);
    for (path, probe) in probes(&dir) {
        let want_error = probe["wantErr"].as_bool().unwrap();
        let happy_path = path.ends_with("happy-path.json");
        happy += usize::from(happy_path);
        let result = verify(&probe, happy_path);
        let refused_here = result.is_none_or(|r| r.is_err());
        assert_eq!(refused_here, want_error, "{}: {result:?}", path.display());
        if refused_here {
            refused += 1;
        } else {
            accepted += 1;
        }
    }
    println!("{kind} probes: {accepted} accepted, {refused} refused, {happy} reproduced");
    assert_eq!(happy, 5);
    (accepted, refused)
}

#[test]
fn transparency_dev_inclusion_probes() {
    let (leaves, tree) = reference_tree();
    let (accepted, refused) = run_probes("inclusion", |probe, happy_path| {
        let index = probe["leafIdx"].as_u64().unwrap();
        let size = probe["treeSize"].as_u64().unwrap();
        // Go refuses a leaf hash that is not hash-sized before anything else; here the type
        // cannot hold one.
        let leaf_bytes = match &probe["leafHash"] {
            Value::Null => Vec::new(),
            v => b64(v.as_str().unwrap()),
        };
        let leaf = Hash::try_from(leaf_bytes.as_slice()).ok()?;
        let root = field32(&probe["root"]);
        let proof = proof32(&probe["proof"]);
        if happy_path {
            assert_eq!(leaf, leaf_hash(&leaves[index as usize]));
            assert_eq!(tree.root_at(size).unwrap(), root);
            assert_eq!(tree.inclusion_proof(index, size).unwrap(), proof);
        }
        Some(verify_inclusion(&leaf, index, size, &proof, &root))
    });
    assert!(accepted >= 6 && refused >= 60);
}

#[test]
fn transparency_dev_consistency_probes() {
    let (_, tree) = reference_tree();
    let (accepted, refused) = run_probes("consistency", |probe, happy_path| {
        let old = probe["size1"].as_u64().unwrap();
        let new = probe["size2"].as_u64().unwrap();
        let old_root = field32(&probe["root1"]);
        let new_root = field32(&probe["root2"]);
        let proof = proof32(&probe["proof"]);
        if happy_path {
            assert_eq!(tree.root_at(old).unwrap(), old_root);
            assert_eq!(tree.root_at(new).unwrap(), new_root);
            assert_eq!(tree.consistency_proof(old, new).unwrap(), proof);
        }
        Some(verify_consistency(old, new, &proof, &old_root, &new_root))
    });
    assert!(accepted >= 6 && refused >= 80);
}

/// The accumulated vectors of draft-ietf-plants-merkle-tree-certs' "Subtree Test Vectors":
/// for leaves `[i]`, i < 130, every valid subtree `[start, end)` (start 0, empty, or start a
/// multiple of the next power of two of its width) hashed, and every leaf's inclusion proof
/// within it, folded into one SHA-256 each. A subtree proof is an RFC 9162 inclusion proof
/// in the tree of the subtree's own leaves, so this pins `Tree::root`, `Tree::root_at` and
/// `Tree::inclusion_proof` on 12,807 (index, size) pairs.
#[test]
fn merkle_tree_certs_subtree_vectors() {
    let reference = reference();
    let vectors = &reference["subtree_vectors"];
    let max = vectors["max"].as_u64().unwrap();
    let leaves: Vec<Hash> = (0..max).map(|i| leaf_hash(&[i as u8])).collect();
    let valid = |start: u64, end: u64| {
        start == 0 || start == end || start.is_multiple_of((end - start).next_power_of_two())
    };
    let whole: Tree = leaves.iter().copied().collect();
    let (mut hashes, mut proofs) = (Sha256::new(), Sha256::new());
    let mut proof_count = 0;
    for end in 0..=max {
        for start in 0..=end {
            if !valid(start, end) {
                continue;
            }
            let sub: Tree = leaves[start as usize..end as usize]
                .iter()
                .copied()
                .collect();
            let hash = sub.root();
            if start == 0 {
                assert_eq!(whole.root_at(end).unwrap(), hash);
            }
            hashes.update(format!("[{start}, {end}) {}\n", hex::encode(hash)));
            for index in start..end {
                let mut line = format!("{index} [{start}, {end})");
                let proof = sub.inclusion_proof(index - start, end - start).unwrap();
                for node in &proof {
                    line.push(' ');
                    line.push_str(&hex::encode(node));
                }
                line.push('\n');
                proofs.update(line);
                proof_count += 1;
            }
        }
    }
    assert_eq!(
        hex::encode(hashes.finalize()),
        vectors["subtree_hashes"].as_str().unwrap()
    );
    assert_eq!(
        hex::encode(proofs.finalize()),
        vectors["subtree_inclusion_proofs"].as_str().unwrap()
    );
    println!("{proof_count} subtree inclusion proofs reproduced");
}

/// Proofs from a real CT log (Argon 2020): a leaf at index 10,000 in a tree of 961,984,011
/// leaves, and a consistency proof from 3,654,490 leaves to that size.
struct Argon {
    size: u64,
    root: Hash,
    leaf: Hash,
    audit_path: Vec<Hash>,
    old_size: u64,
    old_root: Hash,
    consistency: Vec<Hash>,
}

fn argon() -> Argon {
    let dir = vectors().join("ct-argon2020");
    let sth = json(&dir.join("get-sth"));
    let entries = json(&dir.join("get-entries-start-10000-end-10000"));
    let proof = json(&dir.join(
        "get-proof-by-hash-tree-size-961984011-hash-nCs3mfIydh9x4CKyQ-2Bu2xtmpxmFggA5MLymHwNQSlLg-3D",
    ));
    let consistency = json(&dir.join("get-sth-consistency-first-3654490-second-961984011"));
    let list = |v: &Value| -> Vec<Hash> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| b64_32(h.as_str().unwrap()))
            .collect()
    };
    assert_eq!(proof["leaf_index"], 10000);
    Argon {
        size: sth["tree_size"].as_u64().unwrap(),
        root: b64_32(sth["sha256_root_hash"].as_str().unwrap()),
        leaf: leaf_hash(&b64(entries["entries"][0]["leaf_input"].as_str().unwrap())),
        audit_path: list(&proof["audit_path"]),
        old_size: 3_654_490,
        // From golang.org/x/mod/sumdb/tlog/ct_test.go.
        old_root: b64_32("AuIZ5V6sDUj1vn3Y1K85oOaQ7y+FJJKtyRTl1edIKBQ="),
        consistency: list(&consistency["consistency"]),
    }
}

#[test]
fn real_ct_log_proofs_verify() {
    let a = argon();
    assert_eq!(a.size, 961_984_011);
    verify_inclusion(&a.leaf, 10_000, a.size, &a.audit_path, &a.root).unwrap();
    verify_consistency(a.old_size, a.size, &a.consistency, &a.old_root, &a.root).unwrap();
    // Through checkpoints, as an auditor would hold them.
    let new = Checkpoint::new("argon2020", a.size, a.root).unwrap();
    let old = Checkpoint::new("argon2020", a.old_size, a.old_root).unwrap();
    new.verify_inclusion(&a.leaf, 10_000, &a.audit_path)
        .unwrap();
    new.verify_extends(&old, &a.consistency).unwrap();
}

#[test]
fn real_ct_log_proofs_fail_when_broken() {
    let a = argon();
    // The proofs themselves.
    for c in corruptions(&a.audit_path) {
        let broken = corrupt(&a.audit_path, c);
        assert!(
            verify_inclusion(&a.leaf, 10_000, a.size, &broken, &a.root).is_err(),
            "{c:?}"
        );
    }
    for c in corruptions(&a.consistency) {
        let broken = corrupt(&a.consistency, c);
        assert!(
            verify_consistency(a.old_size, a.size, &broken, &a.old_root, &a.root).is_err(),
            "{c:?}"
        );
    }
    // The claims around them.
    for index in [9_999, 10_001, 10_000 ^ 2, 0, a.size - 1] {
        assert!(verify_inclusion(&a.leaf, index, a.size, &a.audit_path, &a.root).is_err());
    }
    // A root does not commit to its size: a size whose verification takes the same steps
    // accepts the same proof (the checkpoint's signature binds size and root). Every other
    // wrong size fails.
    let mut same_shape = 0;
    for size in wrong_sizes(a.size) {
        let result = verify_inclusion(&a.leaf, 10_000, size, &a.audit_path, &a.root);
        if inclusion_shape(10_000, size) == inclusion_shape(10_000, a.size) {
            assert_eq!(result, Ok(()));
            same_shape += 1;
        } else {
            assert!(result.is_err(), "size {size}");
        }
        let result = verify_consistency(a.old_size, size, &a.consistency, &a.old_root, &a.root);
        if consistency_shape(a.old_size, size) == consistency_shape(a.old_size, a.size) {
            assert_eq!(result, Ok(()));
            same_shape += 1;
        } else {
            assert!(result.is_err(), "size {size}");
        }
    }
    for old_size in wrong_sizes(a.old_size) {
        let result = verify_consistency(old_size, a.size, &a.consistency, &a.old_root, &a.root);
        assert!(result.is_err(), "old size {old_size}");
    }
    println!("{same_shape} size changes take the same verification steps");
    for bit in [0, 128, 255] {
        assert_eq!(
            verify_inclusion(&flip(&a.leaf, bit), 10_000, a.size, &a.audit_path, &a.root),
            Err(ProofError::RootMismatch)
        );
        assert_eq!(
            verify_inclusion(&a.leaf, 10_000, a.size, &a.audit_path, &flip(&a.root, bit)),
            Err(ProofError::RootMismatch)
        );
        assert_eq!(
            verify_consistency(
                a.old_size,
                a.size,
                &a.consistency,
                &flip(&a.old_root, bit),
                &a.root
            ),
            Err(ProofError::OldRootMismatch)
        );
        assert_eq!(
            verify_consistency(
                a.old_size,
                a.size,
                &a.consistency,
                &a.old_root,
                &flip(&a.root, bit)
            ),
            Err(ProofError::RootMismatch)
        );
    }
    // Swapped roots.
    assert!(verify_consistency(a.old_size, a.size, &a.consistency, &a.root, &a.old_root).is_err());
}

#[test]
fn typed_errors() {
    let (_, tree) = reference_tree();
    let root = tree.root();
    let proof = tree.inclusion_proof(2, 8).unwrap();
    let leaf = tree.leaf_hash_at(2).unwrap();
    assert_eq!(
        verify_inclusion(&leaf, 8, 8, &proof, &root),
        Err(ProofError::IndexOutOfRange { index: 8, size: 8 })
    );
    assert_eq!(
        verify_inclusion(&leaf, 2, 8, &proof[..2], &root),
        Err(ProofError::WrongLength {
            expected: 3,
            actual: 2
        })
    );
    assert_eq!(
        tree.inclusion_proof(0, 9),
        Err(ProofError::SizeBeyondTree {
            size: 9,
            tree_size: 8
        })
    );
    assert_eq!(
        tree.inclusion_proof(5, 5),
        Err(ProofError::IndexOutOfRange { index: 5, size: 5 })
    );
    assert_eq!(tree.consistency_proof(0, 8), Err(ProofError::EmptyOldTree));
    assert_eq!(
        tree.consistency_proof(5, 4),
        Err(ProofError::SizesOutOfOrder {
            old_size: 5,
            new_size: 4
        })
    );
    assert_eq!(tree.consistency_proof(8, 8), Ok(Vec::new()));
    let old = tree.root_at(3).unwrap();
    assert_eq!(
        verify_consistency(3, 8, &[], &old, &root),
        Err(ProofError::WrongLength {
            expected: 4,
            actual: 0
        })
    );
    assert_eq!(verify_consistency(8, 8, &[], &root, &root), Ok(()));
    assert_eq!(
        verify_consistency(8, 8, &[root], &root, &root),
        Err(ProofError::WrongLength {
            expected: 0,
            actual: 1
        })
    );
    assert_eq!(
        verify_consistency(8, 8, &[], &old, &root),
        Err(ProofError::RootMismatch)
    );
}
