//! The built `fairdeal` binary against the library: `deal`, `number`, `commit`, `seed`,
//! `demo`, and its errors (exit 2, one line on stderr naming the problem, never a panic).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::{fails, fairdeal, json_lines, words};
use fairdeal_fairness::Deck;
use fairdeal_fairness::commitment::Commitment;
use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::number;
use serde_json::{Value, json};

/// The JSON line the library says a deal has.
fn expected(deal: &Deal, seeded: Option<(&str, &str)>) -> Value {
    let codes = |cards: &[u8]| deal.codes(cards);
    let mut line = json!({
        "game": deal.deck.name(),
        "distribution_number": deal.distribution_number().to_string(),
        "deck": codes(&deal.order),
        "hands": deal.hands.iter().map(|h| codes(h)).collect::<Vec<_>>(),
    });
    if let Some((salt, server_seed)) = seeded {
        line["salt"] = json!(salt);
        line["commitment"] = json!(Commitment::of(server_seed).to_hex());
    }
    if deal.deck.is_tarot() {
        line["chien"] = json!(codes(&deal.chien));
    }
    line
}

#[test]
fn seeded_deals_match_the_library() {
    for deck in Deck::ALL {
        let (server, client, salt) = ("clé du serveur", "joueurs ♠", "7");
        let lines = json_lines(&[
            "deal",
            "--game",
            deck.name(),
            "--server-seed",
            server,
            "--client-seed",
            client,
            "--salt",
            salt,
        ]);
        let deal = Deal::from_seeds(deck, server, client, salt);
        assert_eq!(lines, [expected(&deal, Some((salt, server)))], "{deck}");
        assert_eq!(lines[0].get("chien").is_some(), deck.is_tarot());
    }
}

#[test]
fn counted_deals_use_successive_salts() {
    let lines = json_lines(&words(
        "deal --game tarot4 --server-seed s --client-seed c --salt 9 --count 3",
    ));
    let salts: Vec<&str> = lines.iter().map(|l| l["salt"].as_str().unwrap()).collect();
    assert_eq!(salts, ["9", "10", "11"]);
    for line in &lines {
        let salt = line["salt"].as_str().unwrap();
        let deal = Deal::from_seeds(Deck::Tarot4, "s", "c", salt);
        assert_eq!(line, &expected(&deal, Some((salt, "s"))));
    }
    // Up to the last sequence number is fine.
    let max = u64::MAX.to_string();
    let lines = json_lines(&words(&format!(
        "deal --game dix --server-seed s --client-seed c --salt {max} --count 1"
    )));
    assert_eq!(lines[0]["salt"], json!(max));
}

#[test]
fn numbered_deals_and_their_reverse() {
    for deck in Deck::ALL {
        let deal = Deal::from_seeds(deck, "a", "b", "0");
        let n = deal.distribution_number().to_string();
        let lines = json_lines(&["deal", "--game", deck.name(), "--number", &n]);
        assert_eq!(lines, [expected(&deal, None)], "{deck}");

        // `number` writes the same line, from codes separated by commas or spaces.
        let codes = deal.codes(&deal.order);
        let comma = codes.join(",");
        assert_eq!(
            json_lines(&["number", "--game", deck.name(), "--deck", &comma]),
            lines
        );
        let mut args = vec!["number", "--game", deck.name(), "--deck"];
        args.extend(&codes);
        assert_eq!(json_lines(&args), lines);
        let spaced = codes.join(" ");
        assert_eq!(
            json_lines(&["number", "--game", deck.name(), "--deck", &spaced]),
            lines
        );
    }
    // The edges of 78!.
    let last = (number::factorial(78) - 1u8).to_string();
    let lines = json_lines(&["deal", "--game", "tarot3", "--number", &last]);
    assert_eq!(lines[0]["deck"][0], json!("KC"));
    assert_eq!(lines[0]["distribution_number"], json!(last));
    let lines = json_lines(&["deal", "--game", "tarot3", "--number", "0"]);
    assert_eq!(lines[0]["deck"][0], json!("T1"));
}

#[test]
fn commit_and_seed() {
    let lines = json_lines(&["commit", "--server-seed", "abc"]);
    assert_eq!(
        lines,
        [json!({
            "commitment": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "short_code": "ba781",
        })]
    );
    let a = json_lines(&["seed"]);
    let b = json_lines(&["seed"]);
    let seed = a[0]["server_seed"].as_str().unwrap();
    assert_eq!(seed.len(), 64);
    assert!(seed.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
    assert_eq!(a[0]["commitment"], json!(Commitment::of(seed).to_hex()));
    assert_eq!(
        a[0]["short_code"],
        json!(&Commitment::of(seed).to_hex()[..5])
    );
    assert_ne!(a[0]["server_seed"], b[0]["server_seed"]);
}

#[test]
fn explain_walks_every_step() {
    let out = fairdeal(&words(
        "deal --game bridge --server-seed s --client-seed c --salt 3 --explain",
    ));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let deal = Deal::from_seeds(Deck::Bridge, "s", "c", "3");
    let generator = fairdeal_fairness::Generator::new("s", "c", "3");
    assert!(text.contains(&hex(generator.key())), "key");
    for cursor in 0..7 {
        let line = format!(
            "cursor {cursor}: HMAC-SHA512(key, \"c:{cursor}\") = {}",
            hex(&generator.block(cursor))
        );
        assert!(text.contains(&line), "{line}");
    }
    assert_eq!(text.lines().filter(|l| l.starts_with("step ")).count(), 52);
    assert!(text.contains(&format!(
        "hand 0 (N): {}",
        deal.codes(&deal.hands[0]).join(" ")
    )));
    assert!(text.contains(&format!("N = {}", deal.distribution_number())));

    let out = fairdeal(&["deal", "--game", "ruff", "--number", "123", "--explain"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("step ")).count(), 36);
    assert!(text.contains("N = 123"));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn demo_verifies_itself() {
    let out = fairdeal(&["demo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("short code"));
    assert!(text.contains("distribution number"));
    assert_eq!(text.matches("[ok]").count(), 8, "{text}");
    assert!(!text.contains("FAILED"));
    assert!(text.trim_end().ends_with("all checks passed"));
}

#[test]
fn errors_are_one_line_naming_the_problem() {
    fails(&words("deal --game poker --number 1"), &["--game", "poker"]);
    fails(
        &words("number --game chess --deck AS"),
        &["--game", "chess"],
    );

    // Distribution numbers.
    let limit = number::factorial(40);
    fails(
        &words(&format!("deal --game dix --number {limit}")),
        &["--number", "too large", "40!"],
    );
    fails(
        &words("deal --game dix --number -5"),
        &["--number", "negative"],
    );
    fails(
        &words("deal --game dix --number 12x4"),
        &["--number", "not a decimal", "'x'"],
    );
    fails(
        &["deal", "--game", "dix", "--number", ""],
        &["--number", "empty"],
    );
    fails(
        &words("deal --game dix --number 1e5"),
        &["--number", "not a decimal"],
    );

    // Source arguments.
    fails(
        &words("deal --game dix --number 1 --server-seed s"),
        &["--number", "--server-seed"],
    );
    fails(&words("deal --game dix"), &["--server-seed", "--number"]);
    fails(
        &words("deal --game dix --server-seed s --salt 1"),
        &["--client-seed"],
    );

    // --count.
    let counted = |salt_and_count: &str| {
        format!("deal --game dix --server-seed s --client-seed c {salt_and_count}")
    };
    fails(
        &words(&counted("--salt abc --count 2")),
        &["--salt", "abc", "sequence number"],
    );
    fails(
        &words(&counted("--salt 01 --count 2")),
        &["--salt", "leading zeros"],
    );
    fails(
        &words(&counted("--salt 18446744073709551615 --count 2")),
        &["--count", "overflow"],
    );
    fails(&words(&counted("--salt 1 --count 0")), &["--count"]);
    fails(&words(&counted("--salt 1 --count -1")), &["--count"]);
    fails(&words(&counted("--salt 1 --count x")), &["--count", "'x'"]);

    // Dealt orders.
    let dix = Deck::Dix.codes();
    let mut unknown = dix.to_vec();
    unknown[3] = "6X";
    fails(
        &["number", "--game", "dix", "--deck", &unknown.join(",")],
        &["--deck", "unknown card", "6X"],
    );
    let mut repeated = dix.to_vec();
    repeated[3] = "AS";
    fails(
        &["number", "--game", "dix", "--deck", &repeated.join(" ")],
        &["--deck", "AS", "more than once"],
    );
    fails(
        &["number", "--game", "dix", "--deck", &dix[1..].join(",")],
        &["--deck", "missing card", "AS"],
    );
    fails(&words("number --game ruff --deck 6S"), &["--deck", "6S"]);
    fails(&words("number --game dix --deck ,"), &["--deck", "no card"]);
    fails(&words("number --game dix"), &["--deck"]);

    fails(&words("deal --game"), &["--game"]);
    fails(&words("nonsense"), &["nonsense"]);
}

#[test]
fn closed_stdout_is_not_an_error() {
    use std::io::Read;
    use std::process::Stdio;
    // Read one line of a long run, then close the pipe: the binary must stop quietly.
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairdeal"))
        .args(words(
            "deal --game dix --server-seed s --client-seed c --salt 0 --count 1000000",
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{status:?} {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}
