//! Helpers the CLI test binaries share: run the built `fairdeal` as a user does, and hold
//! it to the CLI's conventions (one JSON object per line on stdout; failures exit 2 with
//! one `error: ` line on stderr).

// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use std::process::{Command, Output};

use serde_json::Value;

/// Runs the built binary with `args`.
pub(crate) fn fairdeal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairdeal"))
        .args(args)
        .output()
        .expect("the fairdeal binary runs")
}

/// The arguments of `command_line`, split at white space (for commands none of whose
/// arguments holds a space).
pub(crate) fn words(command_line: &str) -> Vec<&str> {
    command_line.split_whitespace().collect()
}

/// Runs a command that must succeed with nothing on stderr; returns its JSON lines.
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

/// Runs a command that must succeed with exactly one JSON line and nothing on stderr.
pub(crate) fn json_line(args: &[&str]) -> Value {
    let mut lines = json_lines(args);
    assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
    lines.remove(0)
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
