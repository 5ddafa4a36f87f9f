//! Golden vectors from the independent Python implementation in
//! `tests/golden/generate.py` (standard library only), which follows the evaluation order
//! of the crate docs: every expectation, new rating and weight must be the same bits, and
//! every refusal the same. A second test regenerates the file and fails if it drifted
//! from its script.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use fairdeal_rating::{
    Exactness, KFactor, Opponents, Rating, RatingError, RecordedChange, Score, change,
};
use serde_json::Value;

const VECTORS: &str = include_str!("golden/changes.jsonl");

/// A double written as its shortest decimal string (read by Rust's correctly rounding
/// parser, never by a JSON number reader).
fn double(v: &Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

fn doubles(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(double).collect()
}

#[test]
fn every_golden_vector_matches_to_the_bit() {
    let (mut rated, mut refused) = (0, 0);
    for (index, line) in VECTORS.lines().enumerate() {
        let at = format!("line {}: {line}", index + 1);
        let v: Value = serde_json::from_str(line).unwrap();
        let player = Rating::new(double(&v["player"])).unwrap();
        let opponents = Opponents::new(
            doubles(&v["opponents"])
                .into_iter()
                .map(|m| Rating::new(m).unwrap())
                .collect(),
        )
        .unwrap();
        let score = Score::try_from(double(&v["score"])).unwrap();
        let k = KFactor::new(double(&v["k"])).unwrap();
        let result = change(player, opponents, score, k);
        if v.get("refused").is_some() {
            refused += 1;
            assert!(
                matches!(result, Err(RatingError::GapTooLarge { .. })),
                "{at}: {result:?}"
            );
            continue;
        }
        rated += 1;
        let c = result.unwrap();
        let bits = |x: f64| x.to_bits();
        assert_eq!(
            bits(c.expectation()),
            bits(double(&v["expectation"])),
            "{at}"
        );
        assert_eq!(bits(c.after().value()), bits(double(&v["after"])), "{at}");
        let weights: Vec<u64> = c.weights().into_iter().map(bits).collect();
        let expected: Vec<u64> = doubles(&v["weights"]).into_iter().map(bits).collect();
        assert_eq!(weights, expected, "{at}");
        // The Python record passes the auditor's strictest check.
        let record = RecordedChange {
            expectation: double(&v["expectation"]),
            after: double(&v["after"]),
            ..RecordedChange::from(&c)
        };
        record.verify(Exactness::Bits).unwrap();
    }
    assert!(
        rated >= 350 && refused >= 30,
        "{rated} rated, {refused} refused"
    );
}

#[test]
fn golden_file_matches_its_generator() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/generate.py");
    let output = match std::process::Command::new("python3").arg(script).output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Only the drift check needs Python; the vectors themselves are checked above.
            eprintln!("python3 not found: skipping the drift check of changes.jsonl");
            return;
        }
        Err(e) => panic!("running python3: {e}"),
    };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.stdout == VECTORS.as_bytes(),
        "tests/golden/changes.jsonl drifted from generate.py: regenerate it"
    );
}
