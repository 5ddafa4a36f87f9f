//! `fairdeal outcome` and `fairdeal duplicate`, run as a user runs them: the real binary,
//! its stdout, stderr and exit status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use fairdeal_fairness::Generator;
use fairdeal_fairness::duplicate::select;
use fairdeal_fairness::outcome::{Game, Options, Round};

use common::{fails, fairdeal, json_line, words};

fn raw_hex(server: &str, client: &str, salt: &str, cursors: u64) -> String {
    let g = Generator::new(server, client, salt);
    let bytes: Vec<u8> = (0..cursors).flat_map(|c| g.block(c)).collect();
    hex::encode(bytes)
}

const SEEDS: [&str; 6] = [
    "--server-seed",
    "9f2c41d8",
    "--client-seed",
    "player-1",
    "--salt",
    "42",
];

/// The library's options for the CLI's parameter arguments (`--mines 5` and the like).
fn options(parameters: &[&str]) -> Options {
    let mut options = Options::default();
    for pair in parameters.chunks(2) {
        let value = Some(pair[1].parse().unwrap());
        match pair[0] {
            "--mines" => options.mines = value,
            "--tickets" => options.tickets = value,
            "--pins" => options.pins = value,
            "--spins" => options.spins = value,
            other => panic!("not a game parameter: {other}"),
        }
    }
    options
}

#[test]
fn every_game_prints_the_library_result_from_seeds_and_from_bytes() {
    let cases: [(&str, &[&str]); 10] = [
        ("dice", &[]),
        ("double", &[]),
        ("x50", &[]),
        ("jackpot", &["--tickets", "250"]),
        ("crash", &[]),
        ("overgo", &[]),
        ("mines", &["--mines", "5"]),
        ("tower", &[]),
        ("slot", &["--spins", "3"]),
        ("plinko", &["--pins", "14"]),
    ];
    for (game, extra) in cases {
        let options = options(extra);
        let round = Round::new(game.parse::<Game>().unwrap(), &options).unwrap();
        let expected =
            serde_json::to_value(round.from_seeds("9f2c41d8", "player-1", "42")).unwrap();

        let mut args = vec!["outcome", game];
        args.extend(SEEDS);
        args.extend(extra);
        assert_eq!(json_line(&args), expected, "{game} from seeds");

        let hex = raw_hex("9f2c41d8", "player-1", "42", round.cursors() as u64);
        let mut args = vec!["outcome", game, "--bytes", &hex];
        args.extend(extra);
        assert_eq!(json_line(&args), expected, "{game} from bytes");
    }
}

#[test]
fn dice_result_is_a_two_decimal_string() {
    // All-zero bytes roll 0.00; all-ones roll 100.00.
    let zeros = "00".repeat(64);
    let v = json_line(&["outcome", "dice", "--bytes", &zeros]);
    assert_eq!(v, serde_json::json!({"game": "dice", "result": "0.00"}));
    let ones = "ff".repeat(64);
    let v = json_line(&["outcome", "dice", "--bytes", &ones]);
    assert_eq!(v["result"], "100.00");
}

#[test]
fn explain_walks_through_every_number() {
    let mut args = vec!["outcome", "plinko", "--pins", "10", "--explain"];
    args.extend(SEEDS);
    let out = fairdeal(&args);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("key = SHA-256(server_seed \":\" salt) = "),
        "{text}"
    );
    assert!(text.contains("HMAC-SHA512(key, \"player-1:1\")"), "{text}");
    assert!(text.contains("pin 9: floor(U[9] * 2)"), "{text}");
    let drop = Round::new(Game::Plinko, &options(&["--pins", "10"]))
        .unwrap()
        .from_seeds("9f2c41d8", "player-1", "42");
    assert!(text.ends_with(&format!("result: {drop}\n")), "{text}");

    let hex = raw_hex("a", "b", "c", 1);
    let out = fairdeal(&["outcome", "crash", "--bytes", &hex, "--explain"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("cursor 0: bytes "), "{text}");
    assert!(text.contains("rounded half-up"), "{text}");
}

#[test]
fn errors_are_one_line_naming_the_problem() {
    let block = "00".repeat(64);
    // Each command line (BLOCK stands for one cursor block of bytes) and what its error
    // names.
    let cases = [
        (
            "outcome roulette --bytes BLOCK",
            "unknown game \"roulette\"",
        ),
        ("outcome dice --bytes 0g", "--bytes: not hex"),
        ("outcome dice --bytes abc", "--bytes: not hex"),
        (
            "outcome dice --bytes 0000",
            "whole 64-byte cursor blocks, got 2 bytes",
        ),
        (
            "outcome mines --mines 3 --bytes BLOCK",
            "--bytes: mines needs 192 bytes of generator output, got 64",
        ),
        (
            "outcome mines --mines 25 --bytes BLOCK",
            "--mines: 25 is out of range",
        ),
        (
            "outcome mines --mines 0 --bytes BLOCK",
            "--mines: 0 is out of range",
        ),
        (
            "outcome mines --mines -2 --bytes BLOCK",
            "--mines: \"-2\" is not",
        ),
        ("outcome mines --bytes BLOCK", "--mines: required by mines"),
        (
            "outcome jackpot --tickets 0 --bytes BLOCK",
            "--tickets: 0 is out of range",
        ),
        (
            "outcome plinko --pins 7 --bytes BLOCK",
            "--pins: 7 is out of range",
        ),
        (
            "outcome plinko --pins 17 --bytes BLOCK",
            "--pins: 17 is out of range",
        ),
        (
            "outcome slot --spins 0 --bytes BLOCK",
            "--spins: 0 is out of range",
        ),
        (
            "outcome slot --spins 1001 --bytes BLOCK",
            "--spins: 1001 is out of range",
        ),
        (
            "outcome dice --pins 8 --bytes BLOCK",
            "--pins: not a parameter of dice",
        ),
        ("outcome dice", "give the seeds"),
        (
            "outcome dice --server-seed s --salt 1",
            "--client-seed: required",
        ),
        (
            "outcome dice --salt 1 --bytes BLOCK",
            "--bytes: give either --bytes or the seeds",
        ),
        (
            "duplicate --server-seed s --client-seed c --sequence x",
            "--sequence: \"x\" is not a non-negative integer",
        ),
    ];
    for (command, expected) in cases {
        let command = command.replace("BLOCK", &block);
        fails(&words(&command), &[expected]);
    }
}

#[test]
fn duplicate_prints_the_accepted_deal_and_every_rejection() {
    // Find a sequence with at least one rejection so both parts are exercised.
    let sequence = (0..50u64)
        .find(|&q| {
            !select("table-secret", "players", q)
                .unwrap()
                .rejected
                .is_empty()
        })
        .unwrap();
    let selection = select("table-secret", "players", sequence).unwrap();
    let command =
        format!("duplicate --server-seed table-secret --client-seed players --sequence {sequence}");
    let v = json_line(&words(&command));
    let accepted = &selection.accepted;
    assert_eq!(v["sequence"], sequence);
    assert_eq!(v["candidate"], accepted.index);
    assert_eq!(v["salt"], format!("{sequence}:dup:{}", accepted.index));
    assert!(v.get("reason").is_none());
    assert_eq!(
        v["distribution_number"],
        accepted.deal.distribution_number().to_string()
    );
    let hands: Vec<Vec<String>> = serde_json::from_value(v["hands"].clone()).unwrap();
    assert_eq!(hands.len(), 4);
    for (seat, hand) in hands.iter().enumerate() {
        assert_eq!(hand, &accepted.deal.codes(&accepted.deal.hands[seat]));
    }
    assert_eq!(v["chien"].as_array().unwrap().len(), 6);
    let taker = accepted.judgement.examination.as_ref().unwrap();
    assert_eq!(v["taker"], taker.taker);
    assert_eq!(v["bid"], taker.bid.name());

    let rejected = v["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), selection.rejected.len());
    for (r, c) in rejected.iter().zip(&selection.rejected) {
        assert_eq!(r["salt"], c.salt);
        assert_eq!(r["candidate"], c.index);
        let reason = serde_json::to_value(c.judgement.rejection.unwrap()).unwrap();
        assert_eq!(r["reason"], reason);
        assert!(r["reason"]["reason"].is_string());
    }

    let out = fairdeal(&words(&format!("{command} --explain")));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("candidate 0 (salt {sequence}:dup:0)")),
        "{text}"
    );
    assert!(text.contains("rejected: "), "{text}");
    assert!(text.trim_end().ends_with("accepted"), "{text}");
}
