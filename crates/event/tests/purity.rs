//! The event crate is what auditors link to check a log: it must stay pure. This test asks
//! cargo for the crate's normal (non-dev, non-build) dependency tree and fails when a
//! transport or IO runtime shows up in it, e.g. because `fairdeal-proto` was given its
//! `client` or `server` feature here, or because someone added an IO dependency.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// Crates that mean gRPC, HTTP, async IO or a database: none may be linked by the envelope.
const FORBIDDEN: [&str; 8] = [
    "tonic",
    "tonic-prost",
    "hyper",
    "h2",
    "tokio",
    "tower",
    "sqlx",
    "async-nats",
];

#[test]
fn the_envelope_links_no_transport() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let output = Command::new(cargo)
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .args(["-p", env!("CARGO_PKG_NAME"), "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo tree failed: {stderr}");
    let tree = String::from_utf8(output.stdout).unwrap();
    // Each line is `<name> v<version> ...`.
    let linked: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(linked.contains(&"fairdeal-proto"), "{tree}");
    for name in FORBIDDEN {
        assert!(
            !linked.contains(&name),
            "fairdeal-event links {name}:\n{tree}"
        );
    }
}
