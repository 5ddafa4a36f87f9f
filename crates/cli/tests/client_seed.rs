//! `fairdeal client-seed`, run as a user runs it: the documented example, the same seed as
//! the commitment service's table state machine fixes at the first deal, and its errors
//! (exit 2, one line on stderr naming the flag and the value).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{fails, json_lines};
use fairdeal_commitment::domain::client_seed::{Contribution, DelayedSource, DelayedValue};
use fairdeal_commitment::domain::table::{TableCommitment, TableEvent};
use fairdeal_fairness::commitment::ServerSeed;
use serde_json::json;
use uuid::Uuid;

/// SHA-256 of `0:5:alpha\n2:2:zz\n`, the example of docs/commitment-and-dealing.md.
const EXAMPLE_HASH: &str = "5d38c1fa699894ff7bf6b31bccf4d5d6ddb2154e73287c87db3167354e5a0cd0";

/// Contributions as `(seat, text)` pairs, in command-line order.
type Contributions<'a> = [(u32, &'a str)];

/// The arguments that pass `contributions` and `delayed` to `fairdeal client-seed`.
fn args(contributions: &Contributions, delayed: Option<&str>) -> Vec<String> {
    let mut args = vec!["client-seed".to_owned()];
    for (seat, text) in contributions {
        args.push("--contribution".into());
        args.push(format!("{seat}={text}"));
    }
    if let Some(value) = delayed {
        args.extend(["--delayed-value".into(), value.to_owned()]);
    }
    args
}

/// The one JSON line `fairdeal client-seed` prints for these inputs.
fn cli_line(contributions: &Contributions, delayed: Option<&str>) -> serde_json::Value {
    let args = args(contributions, delayed);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let lines = json_lines(&args);
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

/// `(client_seed, contributions_hash)` as the commitment service fixes them: a table
/// published (naming a delayed-value source when there is a value), one player per
/// contributing seat, the value bound, then the first deal.
fn fixed_by_the_service(contributions: &Contributions, delayed: Option<&str>) -> (String, String) {
    let state = |events: &[TableEvent]| TableCommitment::replay(events).unwrap().unwrap();
    let seed = ServerSeed::new("a".repeat(64));
    let source = delayed.map(|_| DelayedSource::parse("drand quicknet round 1").unwrap());
    let mut events = vec![TableCommitment::publish(
        Uuid::from_u128(1),
        Uuid::from_u128(2),
        &seed,
        source,
        None,
    )];
    for (seat, text) in contributions {
        let player = Uuid::from_u128(100 + u128::from(*seat));
        let contribution = Contribution::parse(text).unwrap();
        let event = state(&events).contribute(*seat, player, contribution);
        events.push(event.unwrap());
    }
    if let Some(value) = delayed {
        let value = DelayedValue::parse(value).unwrap();
        events.push(state(&events).bind_delayed_value(value).unwrap());
    }
    match state(&events).client_seed_for_deal().unwrap() {
        (
            _,
            Some(TableEvent::ClientSeedFixed {
                client_seed,
                contributions_hash,
            }),
        ) => (client_seed, contributions_hash),
        other => panic!("the first deal must fix the client seed, got {other:?}"),
    }
}

#[test]
fn the_documented_example() {
    assert_eq!(
        cli_line(&[(2, "zz"), (0, "alpha")], None),
        json!({"contributions_hash": EXAMPLE_HASH, "client_seed": EXAMPLE_HASH})
    );
    assert_eq!(
        cli_line(&[(0, "alpha"), (2, "zz")], Some("07 12 23 34 45")),
        json!({
            "contributions_hash": EXAMPLE_HASH,
            "client_seed": format!("{EXAMPLE_HASH}:07 12 23 34 45"),
        })
    );
}

#[test]
fn the_verifier_gives_the_seed_the_commitment_service_fixes() {
    let longest = "\u{1F0A1}".repeat(128);
    let cases: [(&Contributions, Option<&str>); 6] = [
        (&[], None),
        (&[], Some("beacon round 7")),
        (&[(0, "alpha"), (2, "zz")], None),
        // Any order on the command line; texts with '=', ':' and non-ASCII characters.
        (
            &[(15, "x=y"), (3, "1:ab"), (1, "clé ♠")],
            Some("07 12 23 34 45"),
        ),
        (&[(0, "-5"), (1, "0=")], Some("-1")),
        // The longest contribution the service accepts: 128 characters, here 512 bytes.
        (&[(4, &longest)], None),
    ];
    for (contributions, delayed) in cases {
        let (client_seed, contributions_hash) = fixed_by_the_service(contributions, delayed);
        assert_eq!(
            cli_line(contributions, delayed),
            json!({"contributions_hash": contributions_hash, "client_seed": client_seed}),
            "{contributions:?} {delayed:?}"
        );
    }
}

#[test]
fn malformed_contributions_name_the_flag_and_the_value() {
    let cs = "client-seed";
    let c = "--contribution";
    fails(&[cs, c, "alpha"], &[c, "\"alpha\"", "SEAT=TEXT"]);
    fails(&[cs, c, "one=x"], &[c, "\"one=x\"", "number"]);
    fails(&[cs, c, "=x"], &[c, "\"=x\"", "number"]);
    fails(&[cs, c, "-1=x"], &[c, "\"-1=x\"", "number"]);
    fails(&[cs, c, "99999999999=x"], &[c, "too large"]);
    fails(&[cs, c, "3="], &[c, "\"3=\"", "empty"]);
    fails(
        &[cs, c, "1=a", c, "0=b", c, "1=c"],
        &[c, "\"1=c\"", "seat 1 is given twice"],
    );
    fails(&[cs, c], &[c]);
    fails(&[cs, "--delayed-value", ""], &["--delayed-value", "empty"]);
    fails(&[cs, "--seat", "1"], &["--seat"]);
}

#[test]
fn a_long_malformed_value_is_cut_short() {
    let long = format!("{}:{}", "y".repeat(40), "z".repeat(460));
    let line = fails(
        &["client-seed", "--contribution", &long],
        &[
            "--contribution",
            &"y".repeat(40),
            "(501 bytes)",
            "SEAT=TEXT",
        ],
    );
    assert!(!line.contains('z'), "{line}");
    assert!(line.len() < 200, "{line}");
}

/// Quicknet round 1000 (its sources: crates/drand/tests/vectors.rs).
const SIG_1000: &str = "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39";
const RANDOMNESS_1000: &str = "fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd";
/// Quicknet round 123's signature: a valid point, not round 1000's signature.
const SIG_123: &str = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92";

#[test]
fn a_verified_drand_round_is_the_delayed_value() {
    let mut with_round = args(&[(0, "alpha"), (2, "zz")], None);
    with_round.extend(["--drand-round", "1000", "--drand-signature", SIG_1000].map(str::to_owned));
    let refs: Vec<&str> = with_round.iter().map(String::as_str).collect();
    let line = json_lines(&refs).remove(0);
    // The same client seed as the round's published randomness given by hand.
    let by_hand = cli_line(&[(0, "alpha"), (2, "zz")], Some(RANDOMNESS_1000));
    assert_eq!(line["client_seed"], by_hand["client_seed"]);
    assert_eq!(
        line["client_seed"],
        json!(format!("{EXAMPLE_HASH}:{RANDOMNESS_1000}"))
    );
    assert_eq!(line["delayed_value"], json!(RANDOMNESS_1000));
    // With its randomness given too.
    let mut checked = with_round.clone();
    checked.extend(["--drand-randomness".to_owned(), RANDOMNESS_1000.to_owned()]);
    let refs: Vec<&str> = checked.iter().map(String::as_str).collect();
    assert_eq!(json_lines(&refs).remove(0), line);
}

#[test]
fn a_drand_round_that_does_not_verify_is_refused_naming_the_flag() {
    let base = ["client-seed", "--contribution", "0=alpha"];
    let run = |extra: &[&str], needles: &[&str]| {
        let mut all = base.to_vec();
        all.extend_from_slice(extra);
        fails(&all, needles);
    };
    // Another round's signature, and the right one under another round.
    run(
        &["--drand-round", "1000", "--drand-signature", SIG_123],
        &[
            "--drand-signature",
            "not the signature of round 1000",
            "quicknet",
        ],
    );
    run(
        &["--drand-round", "1001", "--drand-signature", SIG_1000],
        &["--drand-signature", "round 1001"],
    );
    run(
        &[
            "--drand-round",
            "1000",
            "--drand-signature",
            SIG_1000,
            "--drand-randomness",
            &"00".repeat(32),
        ],
        &["--drand-randomness", "is not SHA-256 of the signature"],
    );
    run(
        &["--drand-round", "1000", "--drand-signature", "zz"],
        &["--drand-signature", "not hexadecimal"],
    );
    run(
        &["--drand-round", "0", "--drand-signature", SIG_1000],
        &["--drand-round", "round 0"],
    );
    run(
        &[
            "--drand-round",
            "1000",
            "--drand-signature",
            SIG_1000,
            "--drand-chain",
            "/nonexistent/chain.json",
        ],
        &["--drand-chain", "/nonexistent/chain.json"],
    );
    // A round and a value by hand at once; a round without its signature.
    run(
        &[
            "--drand-round",
            "1000",
            "--drand-signature",
            SIG_1000,
            "--delayed-value",
            "x",
        ],
        &["--delayed-value"],
    );
    run(&["--drand-round", "1000"], &["--drand-signature"]);
}
