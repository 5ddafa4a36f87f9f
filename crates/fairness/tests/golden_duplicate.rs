//! Golden vectors for Tarot duplicate selection, produced by the independent Python
//! implementation in `tests/golden/generate_duplicate.py` (standard library only): every
//! candidate's salt, dealt order, points, bids, taker, trump count, draws and verdict.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use fairdeal_fairness::duplicate::{Selection, select};
use serde_json::{Value, json};

const VECTORS: &str = include_str!("golden/duplicate.jsonl");

/// The Rust selection in the shape of the Python vectors.
fn as_python(selection: &Selection) -> Vec<Value> {
    selection
        .candidates()
        .map(|c| {
            let j = &c.judgement;
            let x = j.examination.as_ref();
            let reason = j
                .rejection
                .map(|r| serde_json::to_value(r).unwrap()["reason"].clone())
                .unwrap_or(Value::Null);
            let draws: Vec<Value> = x
                .map(|x| {
                    x.draws
                        .iter()
                        .map(|d| {
                            json!({
                                "index": d.number_index,
                                "number": format!("{:016x}", d.number),
                                "percent": d.percent,
                                "rejected": d.rejected,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "salt": c.salt,
                "order": c.deal.codes(&c.deal.order),
                "points": j.points,
                "bids": j.bids,
                "taker": x.map(|x| x.taker),
                "trumps": x.map(|x| x.trumps),
                "draws": draws,
                "reason": reason,
            })
        })
        .collect()
}

#[test]
fn every_golden_selection_matches() {
    let mut reasons = std::collections::BTreeSet::new();
    for (line_no, line) in VECTORS.lines().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let server = v["server_seed"].as_str().unwrap();
        let client = v["client_seed"].as_str().unwrap();
        let sequence = v["sequence"].as_u64().unwrap();
        let selection = select(server, client, sequence).unwrap();
        let got = as_python(&selection);
        let expected = v["candidates"].as_array().unwrap();
        assert_eq!(got.len(), expected.len(), "line {}", line_no + 1);
        for (g, e) in got.iter().zip(expected) {
            assert_eq!(g, e, "line {}", line_no + 1);
            reasons.insert(e["reason"].to_string());
        }
    }
    // Every rejection reason the vectors can reach by dealing is exercised.
    for reason in [
        "null",
        "\"all_passed\"",
        "\"too_few_trumps\"",
        "\"too_many_trumps\"",
        "\"top_trumps\"",
        "\"many_trumps\"",
        "\"long_suit\"",
    ] {
        assert!(reasons.contains(reason), "{reason} not covered");
    }
}

#[test]
fn golden_file_matches_its_generator() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
    let output = match std::process::Command::new("python3")
        .arg(format!("{dir}/generate_duplicate.py"))
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Only the drift check needs Python; the vectors themselves are checked above.
            eprintln!("python3 not found: skipping the drift check of duplicate.jsonl");
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
        "tests/golden/duplicate.jsonl drifted from generate_duplicate.py: regenerate it"
    );
}
