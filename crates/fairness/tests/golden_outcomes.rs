//! Golden vectors for the single-round games, produced by the independent Python
//! implementation in `tests/golden/generate_outcomes.py` (standard library only).
//!
//! Every vector is checked through the seeded path or the raw-bytes path it names, and the
//! seeded ones through the raw-bytes path as well, so both agree with the Python reading
//! of the SPEC. A second test regenerates the file and fails if it drifted from its script.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use fairdeal_fairness::Generator;
use fairdeal_fairness::outcome::{Game, Options, Outcome, Round};
use serde_json::Value;

const VECTORS: &str = include_str!("golden/outcomes.jsonl");

fn option(v: &Value, name: &str) -> Option<u64> {
    v.get("options")
        .and_then(|o| o.get(name))
        .map(|x| x.as_u64().unwrap())
}

#[test]
fn every_golden_vector_matches() {
    let mut seeded = 0;
    let mut raw = 0;
    for (line_no, line) in VECTORS.lines().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let game: Game = v["game"].as_str().unwrap().parse().unwrap();
        let options = Options {
            mines: option(&v, "mines"),
            tickets: option(&v, "tickets"),
            pins: option(&v, "pins"),
            spins: option(&v, "spins"),
        };
        let round = Round::new(game, &options).unwrap();
        let expected: Outcome = serde_json::from_value(v["expected"].clone()).unwrap();
        let got = if let Some(hex) = v.get("bytes") {
            raw += 1;
            let bytes = hex::decode(hex.as_str().unwrap()).unwrap();
            round.from_bytes(&bytes).unwrap()
        } else {
            seeded += 1;
            let (s, c, t) = (
                v["server_seed"].as_str().unwrap(),
                v["client_seed"].as_str().unwrap(),
                v["salt"].as_str().unwrap(),
            );
            let g = Generator::new(s, c, t);
            let bytes: Vec<u8> = (0..round.cursors() as u64)
                .flat_map(|k| g.block(k))
                .collect();
            assert_eq!(
                round.from_bytes(&bytes).unwrap(),
                expected,
                "line {}",
                line_no + 1
            );
            round.from_seeds(s, c, t)
        };
        assert_eq!(got, expected, "line {}: {line}", line_no + 1);
        // The JSON form is exactly the Python one.
        assert_eq!(
            serde_json::to_value(&got).unwrap(),
            v["expected"],
            "line {}",
            line_no + 1
        );
    }
    assert!(
        seeded >= 500 && raw >= 50,
        "{seeded} seeded, {raw} raw vectors"
    );
    // Every game is covered.
    for game in Game::ALL {
        assert!(VECTORS.contains(&format!("\"game\":\"{game}\"")), "{game}");
    }
}

#[test]
fn golden_file_matches_its_generator() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
    let output = match std::process::Command::new("python3")
        .arg(format!("{dir}/generate_outcomes.py"))
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Only the drift check needs Python; the vectors themselves are checked above.
            eprintln!("python3 not found: skipping the drift check of outcomes.jsonl");
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
        "tests/golden/outcomes.jsonl drifted from generate_outcomes.py: regenerate it"
    );
}
