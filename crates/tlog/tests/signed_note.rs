//! Signed notes and checkpoints against Go's `golang.org/x/mod/sumdb/note` vectors, the C2SP
//! examples and real sum.golang.org checkpoints (sources in `tests/vectors/README.md`),
//! plus round trips and tamper tests: one flipped bit anywhere must fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::b64_32;
use fairdeal_tlog::{
    Checkpoint, CheckpointError, KeyError, Note, NoteError, NoteSigner, NoteVerifier, Tree, key_id,
    leaf_hash,
};
use proptest::prelude::*;
use serde_json::Value;

fn vectors() -> Value {
    serde_json::from_str(include_str!("vectors/signed-note.json")).unwrap()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap()
}

#[test]
fn go_keys_parse_and_print_back() {
    let v = vectors();
    let go = &v["go_note"];
    let peter = NoteSigner::parse(s(go, "peter_skey")).unwrap();
    assert_eq!(peter.name(), "PeterNeumann");
    assert_eq!(peter.key_id(), 0xc74f_20a3);
    assert_eq!(peter.to_key_string().as_str(), s(go, "peter_skey"));
    assert_eq!(peter.verifier().to_string(), s(go, "peter_vkey"));
    let verifier: NoteVerifier = s(go, "peter_vkey").parse().unwrap();
    assert_eq!(verifier, peter.verifier());
    assert_eq!(key_id("PeterNeumann", verifier.public_key()), 0xc74f_20a3);

    // Go's example generates EnochRoot's key from a reader of zeros: seed = 32 zero bytes.
    let seed: [u8; 32] = hex::decode(s(go, "enoch_seed_hex"))
        .unwrap()
        .try_into()
        .unwrap();
    let enoch = NoteSigner::from_seed("EnochRoot", &seed).unwrap();
    assert_eq!(enoch.verifier().to_string(), s(go, "enoch_vkey"));
    assert_eq!(enoch.key_id(), 0xaf0c_fe78);
}

#[test]
fn go_signatures_are_reproduced() {
    let v = vectors();
    let go = &v["go_note"];
    let text = s(go, "text");
    let peter = NoteSigner::parse(s(go, "peter_skey")).unwrap();
    let mut note = Note::new(text).unwrap();
    note.sign(&peter);
    assert_eq!(note.to_string(), format!("{text}\n{}", s(go, "peter_sig")));
    // Re-signing replaces the key's own line; a second key adds its line (Go's
    // ExampleSign_add_signatures).
    note.sign(&peter);
    let enoch = NoteSigner::from_seed("EnochRoot", &[0; 32]).unwrap();
    note.sign(&enoch);
    assert_eq!(
        note.to_string(),
        format!("{text}\n{}{}", s(go, "peter_sig"), s(go, "enoch_sig"))
    );
}

#[test]
fn go_open_cases() {
    let v = vectors();
    let go = &v["go_note"];
    let (text, peter_sig, enoch_sig) = (s(go, "text"), s(go, "peter_sig"), s(go, "enoch_sig"));
    let peter = NoteVerifier::parse(s(go, "peter_vkey")).unwrap();
    let enoch = NoteVerifier::parse(s(go, "enoch_vkey")).unwrap();
    let both = format!("{text}\n{peter_sig}{enoch_sig}");
    let note = Note::parse(both.as_bytes()).unwrap();
    assert_eq!(note.text(), text);
    assert_eq!(note.signatures().len(), 2);
    assert_eq!(note.to_string(), both);

    // One known key: its signature verifies, the other is ignored.
    let verified = note.verify(std::slice::from_ref(&peter)).unwrap();
    assert_eq!(verified.len(), 1);
    assert_eq!(
        (verified[0].name(), verified[0].key_id()),
        ("PeterNeumann", 0xc74f_20a3)
    );
    // Both known.
    assert_eq!(
        note.verify(&[peter.clone(), enoch.clone()]).unwrap().len(),
        2
    );
    // None known.
    assert_eq!(
        note.verify(&[]),
        Err(NoteError::UnknownKey {
            signers: vec!["PeterNeumann+c74f20a3".into(), "EnochRoot+af0cfe78".into()]
        })
    );
    // A duplicated verifier (same key twice) is harmless.
    assert!(
        note.verify(&[enoch.clone(), peter.clone(), enoch.clone()])
            .is_ok()
    );

    // Too many signatures.
    let many = format!("{text}\n{}", peter_sig.repeat(101));
    assert_eq!(
        Note::parse(many.as_bytes()),
        Err(NoteError::Malformed("more than 100 signatures"))
    );
    assert!(Note::parse(format!("{text}\n{}", peter_sig.repeat(100)).as_bytes()).is_ok());

    // Invalid signature (Go's test inserts "ABCD" into the base64).
    let forged = format!("{text}\n{}ABCD{}", &peter_sig[..60], &peter_sig[60..]);
    assert_eq!(
        Note::parse(forged.as_bytes())
            .unwrap()
            .verify(std::slice::from_ref(&peter)),
        Err(NoteError::BadSignature {
            name: "PeterNeumann".into(),
            key_id: 0xc74f_20a3
        })
    );

    // Go's malformed messages.
    let bad = [
        text.to_owned(),
        format!("{text}\n"),
        format!("{text}\n{}", &peter_sig[..peter_sig.len() - 1]),
        format!("\x01{text}\n{peter_sig}"),
        format!(
            "{text}\n\u{2014} Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
        ),
        format!("{text}\n{peter_sig}Unexpected line.\n"),
    ];
    for msg in &bad {
        assert!(
            matches!(Note::parse(msg.as_bytes()), Err(NoteError::Malformed(_))),
            "{msg:?}"
        );
    }
    let mut invalid_utf8 = vec![0xff];
    invalid_utf8.extend_from_slice(format!("{text}\n{peter_sig}").as_bytes());
    assert!(matches!(
        Note::parse(&invalid_utf8),
        Err(NoteError::Malformed(_))
    ));
}

/// Two keys with the same name and key id (a 32-bit collision, found by searching seeds
/// `1, 2, 3, ...` as 32-byte big-endian numbers): the note is refused as ambiguous rather
/// than verified against whichever comes first.
#[test]
fn colliding_key_ids_are_ambiguous() {
    let seed = |n: u32| {
        let mut seed = [0u8; 32];
        seed[28..].copy_from_slice(&n.to_be_bytes());
        seed
    };
    let a = NoteSigner::from_seed("collide.example", &seed(69_106)).unwrap();
    let b = NoteSigner::from_seed("collide.example", &seed(91_005)).unwrap();
    assert_eq!(a.key_id(), 0xc74a_9c71);
    assert_eq!(a.key_id(), b.key_id());
    assert_ne!(a.verifier(), b.verifier());
    let mut note = Note::new("hello\n").unwrap();
    note.sign(&a);
    assert_eq!(
        note.verify(&[a.verifier(), b.verifier()]),
        Err(NoteError::AmbiguousKey {
            name: "collide.example".into(),
            key_id: 0xc74a_9c71
        })
    );
    assert!(note.verify(&[a.verifier()]).is_ok());
    assert!(matches!(
        note.verify(&[b.verifier()]),
        Err(NoteError::BadSignature { .. })
    ));
}

#[test]
fn go_key_manglings_are_refused() {
    let v = vectors();
    let go = &v["go_note"];
    let vkey = s(go, "peter_vkey");
    let skey = s(go, "peter_skey");
    // Every proper substring and every byte incremented, as Go's TestNewVerifier and
    // TestNewSigner do.
    for key in [vkey, skey] {
        let bytes = key.as_bytes();
        let parses = |candidate: &[u8]| {
            let Ok(candidate) = std::str::from_utf8(candidate) else {
                return false;
            };
            if key == skey {
                NoteSigner::parse(candidate).is_ok()
            } else {
                NoteVerifier::parse(candidate).is_ok()
            }
        };
        for i in 0..=bytes.len() {
            for j in i + 1..=bytes.len() {
                if (i, j) != (0, bytes.len()) {
                    assert!(!parses(&bytes[i..j]), "{:?}", &key[i..j]);
                }
            }
        }
        for i in 0..bytes.len() {
            let mut mangled = bytes.to_vec();
            mangled[i] = mangled[i].wrapping_add(1);
            assert!(!parses(&mangled), "byte {i} of {key}");
        }
    }
    let bad = go["bad_keys"].as_array().unwrap();
    // A wrong-length key (with its key id adjusted), an unknown algorithm (likewise).
    assert!(matches!(
        NoteVerifier::parse(bad[0].as_str().unwrap()),
        Err(KeyError::Malformed(_))
    ));
    assert_eq!(
        NoteVerifier::parse(bad[1].as_str().unwrap()),
        Err(KeyError::UnsupportedAlgorithm(0x65))
    );
    assert_eq!(
        NoteVerifier::parse(&vkey.replace("c74f20a3", "c74f20a4")),
        Err(KeyError::KeyIdMismatch {
            stated: 0xc74f_20a4,
            computed: 0xc74f_20a3
        })
    );
    assert!(matches!(
        NoteVerifier::parse(&vkey.replace("PeterNeumann", "Peter Neumann")),
        Err(KeyError::InvalidName(_))
    ));
    // Go writes key ids in lowercase and also reads uppercase.
    assert!(NoteVerifier::parse(&vkey.replace("c74f20a3", "C74F20A3")).is_ok());
}

#[test]
fn c2sp_examples() {
    let v = vectors();
    let example = &v["c2sp_signed_note"];
    let verifier = NoteVerifier::parse(s(example, "vkey")).unwrap();
    let note = Note::parse(s(example, "note").as_bytes()).unwrap();
    assert_eq!(note.text(), "This is an example message.\n");
    assert_eq!(note.verify(&[verifier]).unwrap().len(), 1);

    let example = &v["c2sp_checkpoint"];
    let note = Note::parse(s(example, "note").as_bytes()).unwrap();
    let checkpoint = Checkpoint::parse_body(note.text()).unwrap();
    assert_eq!(checkpoint.origin(), s(example, "origin"));
    assert_eq!(checkpoint.size(), example["size"].as_u64().unwrap());
    assert_eq!(*checkpoint.root_hash(), b64_32(s(example, "root_base64")));
    assert_eq!(checkpoint.body(), note.text());
    // Its key is not published: with any other key it is unverifiable.
    let other = NoteSigner::from_seed("example.com/behind-the-sofa", &[1; 32]).unwrap();
    assert!(matches!(
        Checkpoint::open(
            s(example, "note").as_bytes(),
            "example.com/behind-the-sofa",
            &[other.verifier()]
        ),
        Err(CheckpointError::Note(NoteError::UnknownKey { .. }))
    ));
}

fn sum_golang_org() -> (NoteVerifier, String, Vec<String>) {
    let v = vectors();
    let sumdb = &v["sum_golang_org"];
    let checkpoints = sumdb["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    (
        NoteVerifier::parse(s(sumdb, "vkey")).unwrap(),
        s(sumdb, "origin").to_owned(),
        checkpoints,
    )
}

#[test]
fn real_sum_golang_org_checkpoints_open() {
    let (verifier, origin, checkpoints) = sum_golang_org();
    assert_eq!(verifier.key_id(), 0x033d_e0ae);
    let verifiers = [verifier];
    for signed in &checkpoints {
        let checkpoint = Checkpoint::open(signed.as_bytes(), &origin, &verifiers).unwrap();
        assert!(checkpoint.size() > 400_000);
        assert!(checkpoint.extensions().is_empty());
        assert!(signed.starts_with(&checkpoint.body()));
        assert_eq!(
            Checkpoint::open(signed.as_bytes(), "another.log", &verifiers),
            Err(CheckpointError::OriginMismatch {
                expected: "another.log".into(),
                found: origin.clone()
            })
        );
    }
}

/// Every single-bit flip of every byte of every real checkpoint is refused.
#[test]
fn real_checkpoints_refuse_every_flipped_bit() {
    let (verifier, origin, checkpoints) = sum_golang_org();
    let verifiers = [verifier];
    let mut refused = 0;
    for signed in &checkpoints {
        let bytes = signed.as_bytes();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.to_vec();
                flipped[i] ^= 1 << bit;
                assert!(
                    Checkpoint::open(&flipped, &origin, &verifiers).is_err(),
                    "byte {i} bit {bit} of {signed:?}"
                );
                refused += 1;
            }
        }
    }
    println!("{refused} flipped checkpoints refused");
}

#[test]
fn checkpoint_errors_are_typed() {
    let signer = NoteSigner::from_seed("fairdeal.example/ledger", &[3; 32]).unwrap();
    let verifiers = [signer.verifier()];
    let origin = "fairdeal.example/ledger";
    let open_text = |text: &str| {
        let mut note = Note::new(text).unwrap();
        note.sign(&signer);
        Checkpoint::open(note.to_string().as_bytes(), origin, &verifiers)
    };
    let root = STANDARD.encode([9u8; 32]);
    assert!(open_text(&format!("{origin}\n5\n{root}\n")).is_ok());
    assert_eq!(
        open_text(&format!("{origin}\n05\n{root}\n")),
        Err(CheckpointError::InvalidSize("05".into()))
    );
    assert_eq!(
        open_text(&format!("{origin}\n-5\n{root}\n")),
        Err(CheckpointError::InvalidSize("-5".into()))
    );
    assert_eq!(
        open_text(&format!("{origin}\n5\nAAAA\n")),
        Err(CheckpointError::InvalidRootHash("AAAA".into()))
    );
    assert!(matches!(
        open_text(&format!("{origin}\n5\n")),
        Err(CheckpointError::Malformed(_))
    ));
    // A blank line inside the text is fine for a note, not for a checkpoint.
    assert!(matches!(
        open_text(&format!("{origin}\n5\n{root}\n\nextension\n")),
        Err(CheckpointError::Malformed(_))
    ));
    assert_eq!(
        open_text(&format!("\n5\n{root}\n")),
        Err(CheckpointError::Malformed("the origin line is empty"))
    );
    assert_eq!(
        Checkpoint::parse_body(&format!("\n5\n{root}\n")),
        Err(CheckpointError::Malformed("the origin line is empty"))
    );
    assert!(matches!(
        Checkpoint::parse_body(&format!("{origin}\n5\n{root}\n\nx\n")),
        Err(CheckpointError::Malformed(_))
    ));
    let with_extension = open_text(&format!("{origin}\n5\n{root}\nrekor: 1\n")).unwrap();
    assert_eq!(with_extension.extensions(), ["rekor: 1"]);

    let stranger = NoteSigner::from_seed(origin, &[4; 32]).unwrap();
    let signed = Checkpoint::new(origin, 1, [0; 32]).unwrap().sign(&stranger);
    assert!(matches!(
        Checkpoint::open(signed.as_bytes(), origin, &verifiers),
        Err(CheckpointError::Note(NoteError::UnknownKey { .. }))
    ));
    assert!(matches!(
        Checkpoint::new("two\nlines", 1, [0; 32]),
        Err(CheckpointError::InvalidLine {
            field: "origin",
            ..
        })
    ));
    assert!(matches!(
        Checkpoint::new(origin, 1, [0; 32])
            .unwrap()
            .with_extension(""),
        Err(CheckpointError::InvalidLine {
            field: "extension",
            ..
        })
    ));
}

/// Cosigning: a witness adds its signature; either key alone opens the checkpoint.
#[test]
fn cosigned_checkpoints() {
    let log = NoteSigner::from_seed("fairdeal.example/ledger", &[5; 32]).unwrap();
    let witness = NoteSigner::from_seed("witness.example", &[6; 32]).unwrap();
    let mut tree = Tree::new();
    tree.push_leaf(b"event");
    let checkpoint = Checkpoint::new(log.name(), tree.size(), tree.root()).unwrap();
    let mut note = checkpoint.to_note();
    note.sign(&log);
    note.sign(&witness);
    let signed = note.to_string();
    for verifiers in [vec![log.verifier()], vec![witness.verifier()]] {
        assert_eq!(
            Checkpoint::open(signed.as_bytes(), log.name(), &verifiers).unwrap(),
            checkpoint
        );
    }
    checkpoint
        .verify_inclusion(&leaf_hash(b"event"), 0, &[])
        .unwrap();
}

fn line() -> impl Strategy<Value = String> {
    // Any characters but control characters, including spaces, '+' and non-ASCII.
    "[^\\p{Cc}]{1,40}"
}

fn key_name() -> impl Strategy<Value = String> {
    "[a-z0-9./\u{e9}\u{4e16}-]{1,30}"
}

proptest! {
    /// Any checkpoint signs and opens back to itself; the key string round-trips; one
    /// flipped bit anywhere in the signed note is refused.
    #[test]
    fn checkpoints_round_trip_and_refuse_tampering(
        origin in line(),
        name in key_name(),
        seed in any::<[u8; 32]>(),
        size in any::<u64>(),
        root in any::<[u8; 32]>(),
        extensions in proptest::collection::vec(line(), 0..3),
        flip_at in any::<proptest::sample::Index>(),
        bit in 0..8u8,
    ) {
        let signer = NoteSigner::from_seed(&name, &seed).unwrap();
        let again = NoteSigner::parse(&signer.to_key_string()).unwrap();
        prop_assert_eq!(again.verifier(), signer.verifier());
        let verifier = NoteVerifier::parse(&signer.verifier().to_string()).unwrap();
        let mut checkpoint = Checkpoint::new(&origin, size, root).unwrap();
        for line in &extensions {
            checkpoint = checkpoint.with_extension(line).unwrap();
        }
        let signed = checkpoint.sign(&signer);
        let verifiers = [verifier];
        prop_assert_eq!(&Checkpoint::open(signed.as_bytes(), &origin, &verifiers).unwrap(), &checkpoint);
        let mut tampered = signed.into_bytes();
        let i = flip_at.index(tampered.len());
        tampered[i] ^= 1 << bit;
        prop_assert!(Checkpoint::open(&tampered, &origin, &verifiers).is_err());
    }
}
