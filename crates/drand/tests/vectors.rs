//! Real quicknet rounds, as drand published them, against the built-in chain: each verifies,
//! and nothing near it does (another round, a flipped byte, a wrong randomness, another key).
//! Then drand/tlock's own quicknet ciphertext, opened with its round's signature.
//!
//! Where each value comes from (none is computed here):
//! - round 123: signature from noislabs/drand-verify's tests (`verify_works_for_g1g2_swapped_rfc`,
//!   fetched from `api3.drand.sh/52db9ba7…/public/123`); randomness from the tests of
//!   CosmWasm's drand-oracle example contract, which stores the same round;
//! - round 1000: signature from thibmeu/tlock-rs's `tlock` crate tests (`test_pk_g2_sig_g1`,
//!   from `drand.cloudflare.com/52db9ba7…/public/1000`); randomness from a published copy of
//!   that round's JSON (`"randomness": "fe290bec…"`) in a third-party verifier's tests;
//! - round 657413: signature and randomness from python-drand-verify's README
//!   (`drv.verify_quicknet(657413, "b713718a…")` returns `'fc1873a1…'`);
//! - round 12040883: signature from drand/tlock's `tlock_test.go` (`TestDecryptText`), which
//!   also gives the ciphertext encrypted to it and its plaintext, `hello world`; drand
//!   publishes no randomness alongside, so that round is checked without one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_drand::timelock::{self, TimelockError};
use fairdeal_drand::{
    Beacon, BeaconField, Chain, FieldProblem, QUICKNET, Randomness, Schedule, Signature, TestChain,
    VerifyError,
};

/// A published quicknet round.
struct Round {
    round: u64,
    signature: &'static str,
    randomness: Option<&'static str>,
}

const ROUNDS: [Round; 4] = [
    Round {
        round: 123,
        signature: "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92",
        randomness: Some("fb8f7bc29bf24db51871ec8c79f3a1e4bd0557bc0dfcee9ed1d924e69d1c60dc"),
    },
    Round {
        round: 1000,
        signature: "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39",
        randomness: Some("fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd"),
    },
    Round {
        round: 657_413,
        signature: "b713718a38ae728dfd477991af2822e08d2f305e47718cef9f7848ce4050e7be41076862b98fad56e91a6b85b89cd97b",
        randomness: Some("fc1873a13f3545aeade8401532ef5519920652eee6b0d2b19ca12643b87b3587"),
    },
    Round {
        round: 12_040_883,
        signature: "929906c959032ab363c9f26570d215d66f5c06cb0c44fe508c12bb5839f04ec895bb6868e5b9ff13ab289bdb5266b394",
        randomness: None,
    },
];

/// drand/tlock's `TestDecryptText` ciphertext: `hello world` encrypted to quicknet round
/// 12040883 (ROUNDS[3]) by drand's Go implementation.
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

fn quicknet() -> Chain {
    Chain::quicknet().expect("quicknet's key is a point")
}

fn beacon(r: &Round) -> Beacon {
    Beacon::from_hex(r.round, r.signature, r.randomness).unwrap()
}

fn test_chain(seed: u8) -> TestChain {
    TestChain::from_seed(&[seed; 32], Schedule::new(1_700_000_000, 3).unwrap()).unwrap()
}

#[test]
fn real_quicknet_rounds_verify_and_give_their_published_randomness() {
    let chain = quicknet();
    for r in &ROUNDS {
        let randomness = chain.verify(&beacon(r)).unwrap();
        let signature = Signature::from_hex(r.signature).unwrap();
        assert_eq!(randomness, signature.randomness(), "round {}", r.round);
        if let Some(published) = r.randomness {
            assert_eq!(randomness.to_hex(), published, "round {}", r.round);
        }
        // Without the randomness, the same result.
        let bare = Beacon::from_hex(r.round, r.signature, None).unwrap();
        assert_eq!(chain.verify(&bare), Ok(randomness));
    }
}

#[test]
fn a_signature_does_not_verify_under_another_round() {
    let chain = quicknet();
    for r in &ROUNDS {
        let signature = Signature::from_hex(r.signature).unwrap();
        let others = [r.round - 1, r.round + 1, r.round * 2, u64::MAX, 0];
        for other in others.into_iter().chain(ROUNDS.iter().map(|o| o.round)) {
            if other == r.round {
                continue;
            }
            assert_eq!(
                chain.verify_signature(other, &signature),
                Err(VerifyError::InvalidSignature { round: other }),
                "round {}'s signature under round {other}",
                r.round
            );
        }
    }
}

#[test]
fn a_flipped_bit_never_verifies() {
    let chain = quicknet();
    let (mut not_points, mut wrong) = (0, 0);
    for r in &ROUNDS {
        let original: [u8; 48] = hex::decode(r.signature).unwrap().try_into().unwrap();
        for byte in 0..48 {
            // Bit 5 of byte 0 is the sign of y: flipping it gives -signature, a valid point
            // of the subgroup (the wrong one); other flips leave the curve or the subgroup.
            for bit in [0, 3, 5, 7] {
                let mut flipped = original;
                flipped[byte] ^= 1 << bit;
                match Signature::from_bytes(flipped) {
                    Err(FieldProblem::NotAPoint | FieldProblem::Identity) => not_points += 1,
                    Err(other) => panic!("unexpected {other:?}"),
                    Ok(signature) => {
                        assert_eq!(
                            chain.verify_signature(r.round, &signature),
                            Err(VerifyError::InvalidSignature { round: r.round })
                        );
                        wrong += 1;
                    }
                }
            }
        }
    }
    // Both paths were exercised: one flip per round is a valid point, the wrong one.
    assert_eq!((not_points, wrong), (4 * 48 * 4 - 4, 4));
}

#[test]
fn a_wrong_randomness_is_refused() {
    let chain = quicknet();
    for r in ROUNDS.iter().filter(|r| r.randomness.is_some()) {
        let mut bytes = *Randomness::from_hex(r.randomness.unwrap())
            .unwrap()
            .as_bytes();
        bytes[31] ^= 1;
        let claimed = Randomness::from_bytes(bytes);
        let beacon = Beacon::new(
            r.round,
            Signature::from_hex(r.signature).unwrap(),
            Some(claimed),
        )
        .unwrap();
        match chain.verify(&beacon) {
            Err(VerifyError::RandomnessMismatch {
                round,
                claimed: c,
                derived,
            }) => {
                assert_eq!((round, c), (r.round, claimed));
                assert_eq!(derived.to_hex(), r.randomness.unwrap());
            }
            other => panic!("round {}: {other:?}", r.round),
        }
    }
}

#[test]
fn quicknet_rounds_do_not_verify_under_another_key() {
    let other = test_chain(1).chain().unwrap();
    for r in &ROUNDS {
        assert_eq!(
            other.verify(&beacon(r)),
            Err(VerifyError::InvalidSignature { round: r.round })
        );
    }
}

#[test]
fn parse_errors_name_the_field() {
    let e = Beacon::from_hex(5, &ROUNDS[0].signature[2..], None).unwrap_err();
    assert_eq!(e.field, BeaconField::Signature);
    let e = Beacon::from_hex(5, ROUNDS[0].signature, Some("not hex")).unwrap_err();
    assert_eq!(e.field, BeaconField::Randomness);
    let e = Beacon::from_hex(0, ROUNDS[0].signature, None).unwrap_err();
    assert_eq!(e.field, BeaconField::Round);
}

#[test]
fn drand_tlock_ciphertext_opens_with_its_round() {
    let chain = quicknet();
    let header = timelock::header(HELLO_WORLD.as_bytes()).unwrap();
    assert_eq!(header.round, 12_040_883);
    assert_eq!(header.chain_hash, chain.chain_hash());
    let plaintext = timelock::decrypt(&chain, &beacon(&ROUNDS[3]), HELLO_WORLD.as_bytes()).unwrap();
    assert_eq!(plaintext.as_slice(), b"hello world");
}

#[test]
fn a_ciphertext_does_not_open_with_another_round_or_a_bad_signature() {
    let chain = quicknet();
    assert_eq!(
        timelock::decrypt(&chain, &beacon(&ROUNDS[1]), HELLO_WORLD.as_bytes()),
        Err(TimelockError::OtherRound {
            ciphertext_round: 12_040_883,
            beacon_round: 1000
        })
    );
    // Round 1000's signature presented as round 12040883's: refused before decrypting.
    let forged = Beacon::from_hex(12_040_883, ROUNDS[1].signature, None).unwrap();
    assert_eq!(
        timelock::decrypt(&chain, &forged, HELLO_WORLD.as_bytes()),
        Err(TimelockError::Verify(VerifyError::InvalidSignature {
            round: 12_040_883
        }))
    );
}

#[test]
fn damaged_ciphertexts_are_refused() {
    let chain = quicknet();
    let b = beacon(&ROUNDS[3]);
    for garbage in ["", "hello", "-----BEGIN AGE ENCRYPTED FILE-----\n"] {
        assert!(
            matches!(
                timelock::decrypt(&chain, &b, garbage.as_bytes()),
                Err(TimelockError::NotTimelock(_))
            ),
            "{garbage:?}"
        );
    }
    // The last line of the body, changed: the header still matches, the payload does not.
    let tampered = HELLO_WORLD.replace("UnBmtsw6U2LlKh8i", "UnBmtsw6U2LlKh8j");
    assert_ne!(tampered, HELLO_WORLD);
    assert!(matches!(
        timelock::decrypt(&chain, &b, tampered.as_bytes()),
        Err(TimelockError::Decrypt(_))
    ));
}

#[test]
fn encrypting_to_a_real_round_opens_with_its_real_signature() {
    let chain = quicknet();
    let seed = b"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let ciphertext = timelock::encrypt(&chain, 1000, seed).unwrap();
    assert!(ciphertext.starts_with("-----BEGIN AGE ENCRYPTED FILE-----\n"));
    assert_eq!(timelock::header(ciphertext.as_bytes()).unwrap().round, 1000);
    let plaintext = timelock::decrypt(&chain, &beacon(&ROUNDS[1]), ciphertext.as_bytes()).unwrap();
    assert_eq!(plaintext.as_slice(), seed);
    // Encryption is randomised: the same seed twice gives two ciphertexts.
    assert_ne!(timelock::encrypt(&chain, 1000, seed).unwrap(), ciphertext);
}

#[test]
fn a_test_chain_signs_verifiable_rounds_that_open_its_ciphertexts() {
    let tc = test_chain(7);
    let chain = tc.chain().unwrap();
    assert_ne!(chain.chain_hash(), QUICKNET.chain_hash());
    assert_eq!(tc.info().beacon_id, "fairdeal-test-chain-not-drand");
    let ciphertext = timelock::encrypt(&chain, 42, b"seed for round 42").unwrap();
    let b42 = tc.sign(42).unwrap();
    assert_eq!(chain.verify(&b42), Ok(b42.signature().randomness()));
    assert_eq!(b42.randomness(), Some(&b42.signature().randomness()));
    let plaintext = timelock::decrypt(&chain, &b42, ciphertext.as_bytes()).unwrap();
    assert_eq!(plaintext.as_slice(), b"seed for round 42");
    // Another round's signature does not open it; the same round's of another key is refused.
    let b43 = tc.sign(43).unwrap();
    assert_eq!(
        chain.verify_signature(42, b43.signature()),
        Err(VerifyError::InvalidSignature { round: 42 })
    );
    assert!(matches!(
        timelock::decrypt(&chain, &b43, ciphertext.as_bytes()),
        Err(TimelockError::OtherRound { .. })
    ));
    let stranger = test_chain(8).sign(42).unwrap();
    assert_eq!(
        chain.verify(&stranger),
        Err(VerifyError::InvalidSignature { round: 42 })
    );
    // Quicknet refuses test-chain rounds and test-chain ciphertexts, and the other way round.
    let quicknet = quicknet();
    assert_eq!(
        quicknet.verify(&b42),
        Err(VerifyError::InvalidSignature { round: 42 })
    );
    let to_test_round_1000 = timelock::encrypt(&chain, 1000, b"x").unwrap();
    assert_eq!(
        timelock::decrypt(
            &quicknet,
            &beacon(&ROUNDS[1]),
            to_test_round_1000.as_bytes()
        ),
        Err(TimelockError::OtherChain {
            ciphertext_chain: hex::encode(chain.chain_hash()),
            chain: hex::encode(quicknet.chain_hash()),
        })
    );
    assert!(matches!(
        timelock::decrypt(&chain, &beacon(&ROUNDS[3]), HELLO_WORLD.as_bytes()),
        Err(TimelockError::Verify(_))
    ));
}

#[test]
fn a_test_chain_is_a_function_of_its_seed() {
    assert_eq!(test_chain(3).info(), test_chain(3).info());
    assert_ne!(
        test_chain(3).info().public_key,
        test_chain(4).info().public_key
    );
    assert_eq!(
        test_chain(3).sign(9).unwrap(),
        test_chain(3).sign(9).unwrap()
    );
    assert!(test_chain(3).sign(0).is_err());
    // The secret never shows in debug output.
    let debug = format!("{:?}", test_chain(3));
    assert!(
        debug.contains("public_key") && !debug.contains("secret"),
        "{debug}"
    );
}

#[test]
fn plaintext_and_round_bounds() {
    let chain = quicknet();
    assert_eq!(
        timelock::encrypt(&chain, 0, b"x"),
        Err(TimelockError::RoundZero)
    );
    let long = vec![b'x'; timelock::MAX_PLAINTEXT_BYTES + 1];
    assert_eq!(
        timelock::encrypt(&chain, 5, &long),
        Err(TimelockError::TooLong)
    );
    // The longest plaintext goes through, with a test chain's round.
    let tc = test_chain(5);
    let test = tc.chain().unwrap();
    let longest = vec![b'y'; timelock::MAX_PLAINTEXT_BYTES];
    let ciphertext = timelock::encrypt(&test, 5, &longest).unwrap();
    let plaintext = timelock::decrypt(&test, &tc.sign(5).unwrap(), ciphertext.as_bytes()).unwrap();
    assert_eq!(plaintext.len(), longest.len());
    // One byte more, encrypted by tlock_age directly: decryption stops at the bound.
    let mut too_long = Vec::new();
    tlock_age::encrypt(
        &mut too_long,
        &long[..],
        &test.chain_hash(),
        &tc.info().public_key,
        5,
    )
    .unwrap();
    assert_eq!(
        timelock::decrypt(&test, &tc.sign(5).unwrap(), &too_long),
        Err(TimelockError::TooLong)
    );
}
