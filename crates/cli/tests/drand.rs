//! `fairdeal drand verify` and `fairdeal drand decrypt`, run as a user runs them, on real
//! quicknet rounds (their sources are listed in crates/drand/tests/vectors.rs): the
//! randomness printed, and errors (exit 2, one line naming the flag) for everything else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{fails, json_line};
use serde_json::json;

/// Quicknet round 123: signature (noislabs/drand-verify's tests) and randomness.
const SIG_123: &str = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92";
const RANDOMNESS_123: &str = "fb8f7bc29bf24db51871ec8c79f3a1e4bd0557bc0dfcee9ed1d924e69d1c60dc";

/// Quicknet round 12040883 (drand/tlock's tests) and `hello world` timelocked to it.
const SIG_12040883: &str = "929906c959032ab363c9f26570d215d66f5c06cb0c44fe508c12bb5839f04ec895bb6868e5b9ff13ab289bdb5266b394";
const HELLO_WORLD: &str = "-----BEGIN AGE ENCRYPTED FILE-----
YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IHRsb2NrIDEyMDQwODgzIDUyZGI5YmE3
MGUwY2MwZjZlYWY3ODAzZGQwNzQ0N2ExZjU0Nzc3MzVmZDNmNjYxNzkyYmE5NDYw
MGM4NGU5NzEKa1JjK01NSEUwS005b1V0SmNLTWZGb1JFVzBXN1JQbTNtdzZpVUJ1
cGNXVkZkZDJQb1h6U0JrK25TM01BNnBKNwpHZDl3REhmVU5hTldXTWw2cGVia2Jh
OUVNZGJDWnBuQVNtOWFIb3hqUitwaGFVT2xoS1ppZGl5ZHBLSStPS2N0CmxvT2ZP
SW9KaGtndTVTRnJUOGVVQTJUOGk3aTBwQlBzTDlTWUJUZEJQb28KLS0tIEl6Q1Js
WSt1RXp0d21CbEg0cTFVZGNJaW9pS2l0M0c0bHVxNlNjT2w3UUUKDI4cDlPHPgjy
UnBmtsw6U2LlKh8iDf0E1PfwDenmKFfQaAGm0WLxdlzP8Q==
-----END AGE ENCRYPTED FILE-----
";

const QUICKNET_HASH: &str = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971";

fn verify(round: &str, signature: &str, randomness: Option<&str>) -> Vec<String> {
    let mut args = [
        "drand",
        "verify",
        "--round",
        round,
        "--signature",
        signature,
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(r) = randomness {
        args.extend(["--randomness".to_owned(), r.to_owned()]);
    }
    args
}

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn a_real_round_verifies_and_prints_its_randomness() {
    let expected = json!({
        "chain_hash": QUICKNET_HASH,
        "round": 123,
        "round_time": 1_692_803_367 + 122 * 3,
        "randomness": RANDOMNESS_123,
    });
    assert_eq!(json_line(&refs(&verify("123", SIG_123, None))), expected);
    assert_eq!(
        json_line(&refs(&verify("123", SIG_123, Some(RANDOMNESS_123)))),
        expected
    );
    // Upper-case hex is the same value.
    let upper = SIG_123.to_uppercase();
    assert_eq!(json_line(&refs(&verify("123", &upper, None))), expected);
}

#[test]
fn a_wrong_round_or_signature_is_an_error_naming_the_flag() {
    fails(
        &refs(&verify("124", SIG_123, None)),
        &["--signature", "not quicknet's signature of round 124"],
    );
    fails(
        &refs(&verify("0", SIG_123, None)),
        &["--round", "round 0 is never published"],
    );
    fails(&refs(&verify("abc", SIG_123, None)), &["--round", "abc"]);
    fails(&refs(&verify("-1", SIG_123, None)), &["--round"]);
    fails(
        &refs(&verify("123", &SIG_123[..94], None)),
        &["--signature", "47 bytes, expected 48 (96 hex digits)"],
    );
    fails(
        &refs(&verify("123", "not hex", None)),
        &["--signature", "\"not hex\"", "not hexadecimal"],
    );
    let mut flipped = SIG_123.to_owned();
    flipped.replace_range(95..96, "3");
    fails(
        &refs(&verify("123", &flipped, None)),
        &["--signature", "not a compressed point"],
    );
    // The sign bit of y flipped: a valid point, the wrong signature.
    let negated = format!("9{}", &SIG_123[1..]);
    fails(
        &refs(&verify("123", &negated, None)),
        &["--signature", "not quicknet's signature of round 123"],
    );
    fails(&refs(&verify("123", "", None)), &["--signature"]);
    fails(&["drand", "verify", "--round", "123"], &["--signature"]);
}

#[test]
fn a_wrong_randomness_is_an_error_naming_the_flag() {
    let wrong = format!("00{}", &RANDOMNESS_123[2..]);
    fails(
        &refs(&verify("123", SIG_123, Some(&wrong))),
        &[
            "--randomness",
            &wrong,
            RANDOMNESS_123,
            "is not SHA-256 of the signature",
        ],
    );
    fails(
        &refs(&verify("123", SIG_123, Some("abcd"))),
        &["--randomness", "2 bytes, expected 32"],
    );
}

fn decrypt(round: &str, signature: &str, ciphertext: &str) -> Vec<String> {
    [
        "drand",
        "decrypt",
        "--round",
        round,
        "--signature",
        signature,
        "--ciphertext",
        ciphertext,
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn drand_tlock_ciphertext_opens_from_a_string_and_from_a_file() {
    use sha2::{Digest, Sha256};
    let randomness = hex::encode(Sha256::digest(hex::decode(SIG_12040883).unwrap()));
    let from_string = json_line(&refs(&decrypt("12040883", SIG_12040883, HELLO_WORLD)));
    assert_eq!(
        from_string,
        json!({
            "round": 12_040_883,
            "randomness": randomness,
            "plaintext": "hello world",
            "plaintext_hex": hex::encode("hello world"),
        })
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hello.age");
    std::fs::write(&path, HELLO_WORLD).unwrap();
    let from_file = json_line(&refs(&decrypt(
        "12040883",
        SIG_12040883,
        path.to_str().unwrap(),
    )));
    assert_eq!(from_file, from_string);
}

#[test]
fn decryption_errors_name_the_flag() {
    // Round 123's real signature, for the wrong round: refused before decrypting.
    fails(
        &refs(&decrypt("12040883", SIG_123, HELLO_WORLD)),
        &["--signature", "not quicknet's signature of round 12040883"],
    );
    // A real round, but not the ciphertext's.
    fails(
        &refs(&decrypt("123", SIG_123, HELLO_WORLD)),
        &[
            "--ciphertext",
            "encrypted to round 12040883, not to round 123",
        ],
    );
    fails(
        &refs(&decrypt("12040883", SIG_12040883, "/nonexistent/hello.age")),
        &["--ciphertext", "/nonexistent/hello.age", "cannot read"],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-age.txt");
    std::fs::write(&path, "hello\nworld\n").unwrap();
    fails(
        &refs(&decrypt("12040883", SIG_12040883, path.to_str().unwrap())),
        &["--ciphertext", "not a tlock ciphertext"],
    );
    let tampered = HELLO_WORLD.replace("UnBmtsw6U2LlKh8i", "UnBmtsw6U2LlKh8j");
    fails(
        &refs(&decrypt("12040883", SIG_12040883, &tampered)),
        &["--ciphertext", "decryption failed"],
    );
}

/// `fairdeal audit --drand-chain FILE`: a chain info that is unreadable or wrong is an error
/// naming the flag, the file and the field (exit 2), before anything is audited.
#[test]
fn audit_names_a_bad_drand_chain_file() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("game.ndjson");
    std::fs::write(&export, "").unwrap();
    let key = fairdeal_tlog::NoteSigner::from_seed("ledger.example", &[1; 32])
        .unwrap()
        .verifier()
        .to_string();
    let info = dir.path().join("info.json");
    std::fs::write(
        &info,
        json!({"schemeID": "bls-unchained-g1-rfc9380", "public_key": "00"}).to_string(),
    )
    .unwrap();
    let export = export.to_str().unwrap();
    let info = info.to_str().unwrap();
    fails(
        &["audit", export, "--log-key", &key, "--drand-chain", info],
        &[
            "--drand-chain",
            "info.json",
            "public_key: 1 bytes, expected 96",
        ],
    );
    fails(
        &[
            "audit",
            export,
            "--log-key",
            &key,
            "--drand-chain",
            "/nonexistent/info.json",
        ],
        &["--drand-chain", "/nonexistent/info.json"],
    );
}

/// `fairdeal audit --timelock-round R --timelock-signature S [--timelock-randomness X]`: a
/// malformed signature or randomness, round 0, or one flag without the other is an error
/// naming the flag (exit 2), before anything is audited.
#[test]
fn audit_names_a_bad_timelock_beacon() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("game.ndjson");
    std::fs::write(&export, "").unwrap();
    let key = fairdeal_tlog::NoteSigner::from_seed("ledger.example", &[1; 32])
        .unwrap()
        .verifier()
        .to_string();
    let export = export.to_str().unwrap();
    let audit = |extra: &[&str]| {
        let mut args = vec!["audit", export, "--log-key", &key];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |extra: &[&str], expected: &[&str]| {
        let args = audit(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&args, expected);
    };
    run(
        &["--timelock-round", "123", "--timelock-signature", "zz"],
        &["--timelock-signature", "zz"],
    );
    run(
        &["--timelock-round", "0", "--timelock-signature", SIG_123],
        &["--timelock-round", "0"],
    );
    run(
        &[
            "--timelock-round",
            "123",
            "--timelock-signature",
            SIG_123,
            "--timelock-randomness",
            "abc",
        ],
        &["--timelock-randomness", "abc"],
    );
    run(&["--timelock-round", "123"], &["--timelock-signature"]);
    run(&["--timelock-signature", SIG_123], &["--timelock-round"]);
}

/// `--drand-chain FILE` on `drand verify` and `drand decrypt`: a round of another chain (a
/// local test chain, not drand) verifies and opens a ciphertext timelocked to it against that
/// chain's info JSON; without the flag, quicknet refuses its signature.
#[test]
fn another_chains_round_verifies_and_opens_with_drand_chain() {
    use fairdeal_drand::{Schedule, TestChain, timelock};
    let test = TestChain::from_seed(&[9; 32], Schedule::new(1_700_000_000, 1).unwrap()).unwrap();
    let info = test.info();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("info.json");
    let json_info = json!({
        "public_key": hex::encode(info.public_key),
        "period": 1,
        "genesis_time": 1_700_000_000,
        "hash": hex::encode(info.chain_hash()),
        "groupHash": hex::encode(info.genesis_seed),
        "schemeID": info.scheme.id(),
        "metadata": {"beaconID": info.beacon_id}
    });
    std::fs::write(&path, json_info.to_string()).unwrap();
    let chain_flag = [
        "--drand-chain".to_owned(),
        path.to_str().unwrap().to_owned(),
    ];

    let ciphertext = timelock::encrypt(&test.chain().unwrap(), 7, b"the server seed").unwrap();
    let signature = test.sign(7).unwrap().signature().to_hex();
    let mut args = decrypt("7", &signature, &ciphertext);
    args.extend(chain_flag.clone());
    let opened = json_line(&refs(&args));
    assert_eq!(opened["plaintext"], json!("the server seed"));
    assert_eq!(opened["round"], json!(7));

    let mut args = verify("7", &signature, None);
    args.extend(chain_flag);
    let verified = json_line(&refs(&args));
    assert_eq!(
        verified["chain_hash"],
        json!(hex::encode(info.chain_hash()))
    );
    assert_eq!(verified["round_time"], json!(1_700_000_006));

    fails(
        &refs(&decrypt("7", &signature, &ciphertext)),
        &["--signature", "not quicknet's signature of round 7"],
    );
    let mut args = verify("7", &signature, None);
    args.extend([
        "--drand-chain".to_owned(),
        "/nonexistent/info.json".to_owned(),
    ]);
    fails(&refs(&args), &["--drand-chain", "/nonexistent/info.json"]);
}
