//! `fairdeal squaredeal`: the organiser's and the auditor's procedure end to end, run as the
//! real binary in a temporary directory, and the official WBG 2024 files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fairdeal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairdeal"))
        .arg("squaredeal")
        .args(args)
        .output()
        .expect("runs the binary")
}

/// Runs a command that must succeed; returns its stdout.
fn ok(args: &[&str]) -> String {
    let output = fairdeal(args);
    assert!(
        output.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs a command that must fail with status 2; returns its stderr.
fn fails(args: &[&str]) -> String {
    let output = fairdeal(args);
    assert_eq!(output.status.code(), Some(2), "{args:?} should fail");
    assert!(output.stdout.is_empty());
    String::from_utf8(output.stderr).unwrap()
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line.trim()).unwrap()
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fairness/tests/golden/wbg2024")
        .join(name)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn organiser_to_auditor_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let sqd = dir.path().join("club26.sqd");
    let sqk = dir.path().join("club26.sqk");

    // Organiser: describe, add phases, publish.
    ok(&[
        "new",
        "--sqd",
        s(&sqd),
        "--name",
        "Club Teams 2026",
        "--delayed-info",
        "DJIA close of 2 March 2026",
    ]);
    let phase = json(&ok(&[
        "add-phase",
        "--sqd",
        s(&sqd),
        "--sessions",
        "4",
        "--boards",
        "2x8",
        "--prefix",
        "rr",
        "--description",
        "Round robin",
    ]));
    assert_eq!(phase["boards"], "1-8,9-16");
    assert_eq!(phase["prefix"], "rr#");
    assert_eq!(phase["description"], "Round robin #/4");
    ok(&[
        "add-phase",
        "--sqd",
        s(&sqd),
        "--sessions",
        "1",
        "--boards",
        "24",
        "--prefix",
        "final",
        "--description",
        "Final",
    ]);
    let published = json(&ok(&["publish", "--sqd", s(&sqd)]));
    assert_eq!(published["sessions"], 5);
    let key_file = std::fs::read(&sqk).unwrap();
    assert_eq!(key_file.iter().filter(|&&b| b == b'\n').count(), 5);
    assert_eq!(key_file.windows(2).filter(|w| w == b"\r\n").count(), 5);
    let description = std::fs::read_to_string(&sqd).unwrap();
    assert!(description.contains(&format!("KH {}", published["key_hash"].as_str().unwrap())));

    // No boards before the delayed value is known; phases are frozen after publication.
    let early = fails(&["make", "--sqd", s(&sqd), "--phase", "1", "--session", "1"]);
    assert!(early.contains("no DV line"), "{early}");
    let frozen = fails(&[
        "add-phase",
        "--sqd",
        s(&sqd),
        "--sessions",
        "1",
        "--boards",
        "8",
        "--prefix",
        "x",
        "--description",
        "x",
    ]);
    assert!(frozen.contains("already published"), "{frozen}");
    assert!(fails(&["publish", "--sqd", s(&sqd)]).contains("already published"));

    ok(&["set-dv", "--sqd", s(&sqd), "--value", " 43912.07 "]);
    let changed = fails(&["set-dv", "--sqd", s(&sqd), "--value", "44000"]);
    assert!(
        changed.contains("already recorded as \"43912.07\""),
        "{changed}"
    );

    // Auditor: verify, make, and check the organiser's PBN against a regeneration.
    let verified = json(&ok(&["verify", "--sqd", s(&sqd), "--sqk", s(&sqk)]));
    assert_eq!(verified["verified"], true);
    assert_eq!(verified["delayed_value"], "43912.07");
    assert_eq!(verified["warnings"].as_array().unwrap().len(), 0);

    let pbn = ok(&["make", "--sqd", s(&sqd), "--phase", "1", "--session", "2"]);
    assert!(pbn.starts_with("% PBN 2.1\n% EXPORT\n%\n[Generator \"fairdeal "));
    assert_eq!(pbn.matches("[Deal \"N:").count(), 8);
    assert!(pbn.contains("[Event \"Club Teams 2026: Round robin 2/4\"]"));
    assert!(pbn.contains("[Board \"9\"]\n") && pbn.contains("[Board \"16\"]\n"));
    let official = dir.path().join("rr2.pbn");
    std::fs::write(&official, &pbn).unwrap();
    let checked = json(&ok(&[
        "check",
        "--sqd",
        s(&sqd),
        "--phase",
        "1",
        "--session",
        "2",
        "--pbn",
        s(&official),
    ]));
    assert_eq!(checked["boards"], 8);
    // The same file is not session 1's, nor the reserve set's.
    assert!(
        fails(&[
            "check",
            "--sqd",
            s(&sqd),
            "--phase",
            "1",
            "--session",
            "1",
            "--pbn",
            s(&official)
        ])
        .contains("rr2.pbn: deal 1 (board 9)")
    );
    let reserve_check = fails(&[
        "check",
        "--sqd",
        s(&sqd),
        "--phase",
        "1",
        "--session",
        "2",
        "--reserve",
        "--pbn",
        s(&official),
    ]);
    assert!(
        reserve_check.contains("but the regenerated board 9 is"),
        "{reserve_check}"
    );

    // JSON boards: every session of the phase, numbered by the cycled ranges.
    let lines = ok(&[
        "make",
        "--sqd",
        s(&sqd),
        "--phase",
        "1",
        "--session",
        "all",
        "--format",
        "json",
    ]);
    let boards: Vec<serde_json::Value> = lines.lines().map(json).collect();
    assert_eq!(boards.len(), 32);
    let numbers: Vec<u64> = boards
        .iter()
        .map(|b| b["board"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers[..8], [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(numbers[8], 9);
    assert_eq!(numbers[16], 1);
    assert_eq!(boards[0]["dealer"], "N");
    assert_eq!(boards[8]["file_prefix"], "rr2");

    // Reserve sets are different boards with the same numbers.
    let reserve = ok(&[
        "make",
        "--sqd",
        s(&sqd),
        "--phase",
        "2",
        "--session",
        "1",
        "--reserve",
        "--format",
        "json",
    ]);
    let original = ok(&[
        "make",
        "--sqd",
        s(&sqd),
        "--phase",
        "2",
        "--session",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(reserve.lines().count(), 24);
    assert_ne!(reserve, original);
    assert!(
        reserve.contains("\"set\":\"reserve\"")
            && reserve.contains("\"file_prefix\":\"finalreserve\"")
    );
}

#[test]
fn a_changed_key_file_is_a_key_hash_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let sqd = dir.path().join("t.sqd");
    std::fs::copy(golden("WBG2024.sqd"), &sqd).unwrap();
    let mut keys = std::fs::read(golden("WBG2024.sqk")).unwrap();
    keys[10] = if keys[10] == b'x' { b'y' } else { b'x' };
    let sqk = dir.path().join("t.sqk");
    std::fs::write(&sqk, keys).unwrap();
    let error = fails(&["verify", "--sqd", s(&sqd)]);
    assert!(error.contains("t.sqk: does not belong to"), "{error}");
    assert!(
        error.contains("key hash mismatch: the description's KH is bd4a46be"),
        "{error}"
    );
    // make refuses too: no boards from keys that were not committed to.
    let refused = fails(&["make", "--sqd", s(&sqd), "--phase", "1", "--session", "1"]);
    assert!(refused.contains("key hash mismatch"), "{refused}");
}

#[test]
fn malformed_files_are_named_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let sqd = dir.path().join("bad.sqd");
    std::fs::write(&sqd, "# comment\nTN T\nDI D\nSN 4:1-16,20-18:rr#:RR\n").unwrap();
    let error = fails(&["verify", "--sqd", s(&sqd)]);
    assert!(
        error.contains("bad.sqd: line 4: SN: boards: \"20-18\" is a decreasing range"),
        "{error}"
    );

    std::fs::copy(golden("WBG2024.sqd"), &sqd).unwrap();
    let sqk = dir.path().join("bad.sqk");
    std::fs::write(&sqk, "1,1:abc\r\nnot a key line\r\n").unwrap();
    let error = fails(&["verify", "--sqd", s(&sqd)]);
    assert!(
        error.contains("bad.sqk: line 2: expected phase,session:key"),
        "{error}"
    );

    let missing = fails(&["verify", "--sqd", s(&dir.path().join("none.sqd"))]);
    assert!(missing.contains("none.sqd: cannot read"), "{missing}");

    let new_twice = fails(&[
        "new",
        "--sqd",
        s(&sqd),
        "--name",
        "x",
        "--delayed-info",
        "y",
    ]);
    assert!(new_twice.contains("bad.sqd: already exists"), "{new_twice}");
}

#[test]
fn the_official_wbg_2024_set_checks_out() {
    let verified = json(&ok(&["verify", "--sqd", s(&golden("WBG2024.sqd"))]));
    assert_eq!(verified["tournament"], "World Bridge Games 2024");
    assert_eq!(verified["sessions"], 90);
    let checked = json(&ok(&[
        "check",
        "--sqd",
        s(&golden("WBG2024.sqd")),
        "--phase",
        "1",
        "--session",
        "1",
        "--pbn",
        s(&golden("OPRR01.pbn")),
    ]));
    assert_eq!(checked["matches"], true);
    assert_eq!(checked["boards"], 16);
    let lin = ok(&[
        "make",
        "--sqd",
        s(&golden("WBG2024.sqd")),
        "--phase",
        "1",
        "--session",
        "1",
        "--format",
        "lin",
    ]);
    assert_eq!(lin.lines().count(), 16);
    assert!(lin.starts_with("qx|o1|md|3"));
}

/// Quicknet round 1000 (its sources: crates/drand/tests/vectors.rs).
const SIG_1000: &str = "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39";
const RANDOMNESS_1000: &str = "fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd";
/// Quicknet round 123's signature: a valid point, not round 1000's signature.
const SIG_123: &str = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92";

/// A drand round as the delayed information: `set-dv` records its verified randomness as DV;
/// `verify`, `make` and `check` verify the round and use its randomness as DV (the same boards
/// as with DV recorded), refuse a DV that is not it, and warn when DI does not name it; a
/// signature that does not verify is an error naming the flag.
#[test]
fn a_drand_round_is_the_delayed_value() {
    let dir = tempfile::tempdir().unwrap();
    let sqd = dir.path().join("drand.sqd");
    let sqk = dir.path().join("drand.sqk");
    ok(&[
        "new",
        "--sqd",
        s(&sqd),
        "--name",
        "Drand Pairs",
        "--delayed-info",
        "drand quicknet round 1000",
    ]);
    ok(&[
        "add-phase",
        "--sqd",
        s(&sqd),
        "--sessions",
        "2",
        "--boards",
        "8",
        "--prefix",
        "p",
        "--description",
        "Pairs",
    ]);
    ok(&["publish", "--sqd", s(&sqd)]);
    let round = ["--drand-round", "1000", "--drand-signature", SIG_1000];
    let sqd_arg = s(&sqd);
    let make = ["make", "--sqd", sqd_arg, "--phase", "1", "--session", "all"];
    let verify = ["verify", "--sqd", sqd_arg];
    let set_dv = ["set-dv", "--sqd", sqd_arg];

    // Before DV is recorded: the auditor's commands take the round's randomness as DV.
    let verified = json(&ok(&[&verify[..], &round].concat()));
    assert_eq!(verified["delayed_value"], RANDOMNESS_1000);
    assert_eq!(verified["drand_round"], 1000);
    assert_eq!(verified["warnings"].as_array().unwrap().len(), 0);
    let by_round = ok(&[&make[..], &round].concat());
    assert_eq!(by_round.matches("[Deal \"N:").count(), 16);

    // A signature of another round, or a randomness not of this signature, is refused
    // naming the flag.
    let wrong = fails(
        &[
            &set_dv[..],
            &["--drand-round", "1000", "--drand-signature", SIG_123],
        ]
        .concat(),
    );
    assert!(
        wrong.contains("--drand-signature") && wrong.contains("not the signature of round 1000"),
        "{wrong}"
    );
    let zeros = "00".repeat(32);
    let mismatch = fails(&[&set_dv[..], &round, &["--drand-randomness", &zeros]].concat());
    assert!(mismatch.contains("--drand-randomness"), "{mismatch}");
    // One delayed value: a round or a value, not both, not neither.
    let both = fails(&[&set_dv[..], &["--value", "1"], &round].concat());
    assert!(
        both.contains("--value") && both.contains("--drand-round"),
        "{both}"
    );
    let neither = fails(&set_dv);
    assert!(neither.contains("--value"), "{neither}");
    let text = std::fs::read_to_string(&sqd).unwrap();
    assert!(!text.contains("\nDV "), "nothing recorded: {text}");

    // The organiser records it; the same boards follow from DV alone.
    let set = json(&ok(&[&set_dv[..], &round].concat()));
    assert_eq!(set["delayed_value"], RANDOMNESS_1000);
    assert_eq!(set["drand_round"], 1000);
    assert!(
        std::fs::read_to_string(&sqd)
            .unwrap()
            .contains(&format!("DV {RANDOMNESS_1000}"))
    );
    assert_eq!(ok(&make), by_round);
    assert_eq!(ok(&[&make[..], &round].concat()), by_round);
    let official = dir.path().join("p1.pbn");
    let session_1 = ["make", "--sqd", sqd_arg, "--phase", "1", "--session", "1"];
    std::fs::write(&official, ok(&session_1)).unwrap();
    let check = [
        "check",
        "--sqd",
        sqd_arg,
        "--sqk",
        s(&sqk),
        "--phase",
        "1",
        "--session",
        "1",
        "--pbn",
        s(&official),
    ];
    let checked = json(&ok(&[&check[..], &round].concat()));
    assert_eq!(checked["boards"], 8);

    // Another round is not the recorded DV: refused, naming the description and the flag.
    let other = fails(
        &[
            &verify[..],
            &["--drand-round", "123", "--drand-signature", SIG_123],
        ]
        .concat(),
    );
    assert!(
        other.contains("drand.sqd") && other.contains("--drand-round") && other.contains("DV"),
        "{other}"
    );

    // A DI that names another round is warned about.
    let text = std::fs::read_to_string(&sqd).unwrap();
    std::fs::write(
        &sqd,
        text.replace(
            "DI drand quicknet round 1000",
            "DI drand quicknet round 10001",
        ),
    )
    .unwrap();
    let warned = json(&ok(&[&verify[..], &round].concat()));
    let warnings = warned["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].as_str().unwrap().contains("drand round 1000"),
        "{warnings:?}"
    );
}
