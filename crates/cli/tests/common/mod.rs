//! Running the built `fairdeal` binary as a user does, shared by the test files that check
//! its JSON lines and its one-line errors.

use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary with `args` and collects its exit status, stdout and stderr.
pub(crate) fn fairdeal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairdeal"))
        .args(args)
        .output()
        .expect("the fairdeal binary runs")
}

/// Runs a command that must succeed and returns its JSON lines.
pub(crate) fn json_lines(args: &[&str]) -> Vec<Value> {
    let out = fairdeal(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty(), "{args:?} wrote to stderr");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs a command that must fail: exit 2, nothing on stdout, one line on stderr that
/// contains every `needles`. Returns the line.
pub(crate) fn fails(args: &[&str], needles: &[&str]) -> String {
    let out = fairdeal(args);
    assert_eq!(out.status.code(), Some(2), "{args:?} should exit 2");
    assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr.lines().count(),
        1,
        "{args:?}: not one line: {stderr:?}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: {stderr:?} lacks {needle:?}"
        );
    }
    stderr
}
