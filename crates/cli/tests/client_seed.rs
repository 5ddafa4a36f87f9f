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
