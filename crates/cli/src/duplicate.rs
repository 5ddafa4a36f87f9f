//! `fairdeal duplicate`: Tarot duplicate selection (SPEC section 4) for one hand.
//!
//! Prints one JSON line: the accepted candidate (its index, salt, distribution number as a
//! decimal string, hands in the order their cards were received, chien, every seat's points and bid, the taker's examination) and
//! every rejected candidate before it with its salt, bids and typed reason, so a verifier
//! can replay each rejection. With `--explain`, a walk-through instead.

use std::io::Write;

use fairdeal_fairness::duplicate::{Candidate, select};
use serde_json::{Value, json};

use crate::error::CliError;

/// Arguments of `fairdeal duplicate`.
#[derive(Debug, clap::Args)]
pub(crate) struct DuplicateArgs {
    /// The revealed server seed.
    #[arg(long)]
    server_seed: String,
    /// The client seed.
    #[arg(long)]
    client_seed: String,
    /// The hand's sequence number; candidate j uses salt "<sequence>:dup:<j>".
    #[arg(long, allow_hyphen_values = true)]
    sequence: String,
    /// Print a walk-through of every candidate instead of the JSON line.
    #[arg(long)]
    explain: bool,
}

pub(crate) fn run(args: DuplicateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let sequence: u64 = args.sequence.trim().parse().map_err(|_| {
        CliError::arg(
            "--sequence",
            format!("{:?} is not a non-negative integer", args.sequence),
        )
    })?;
    let selection = select(&args.server_seed, &args.client_seed, sequence)
        .map_err(|e| CliError::Invalid(e.to_string()))?;
    if args.explain {
        let explanation = selection.explain(&args.server_seed, &args.client_seed);
        out.write_all(explanation.finish().as_bytes())?;
        return Ok(());
    }
    let accepted = &selection.accepted;
    let mut line = candidate_json(accepted);
    if let Value::Object(map) = &mut line {
        map.insert("sequence".into(), json!(sequence));
        // A decimal string: 78! has 116 digits, far beyond what JSON numbers carry.
        map.insert(
            "distribution_number".into(),
            json!(accepted.deal.distribution_number().to_string()),
        );
        map.insert(
            "hands".into(),
            json!(
                accepted
                    .deal
                    .hands
                    .iter()
                    .map(|h| accepted.deal.codes(h))
                    .collect::<Vec<_>>()
            ),
        );
        map.insert(
            "chien".into(),
            json!(accepted.deal.codes(&accepted.deal.chien)),
        );
        map.insert(
            "rejected".into(),
            Value::Array(selection.rejected.iter().map(candidate_json).collect()),
        );
    }
    serde_json::to_writer(&mut *out, &line)?;
    writeln!(out)?;
    Ok(())
}

/// The fields every candidate shows: index, salt, points, bids, taker, bid, examination
/// and (for a rejected one) the reason.
fn candidate_json(c: &Candidate) -> Value {
    let j = &c.judgement;
    let x = j.examination.as_ref();
    let mut v = json!({
        "candidate": c.index,
        "salt": c.salt,
        "points": j.points,
        "bids": j.bids,
        "taker": x.map(|x| x.taker),
        "bid": x.map(|x| x.bid),
        "examination": x,
    });
    if let (Value::Object(map), Some(reason)) = (&mut v, &j.rejection) {
        map.insert("reason".into(), json!(reason));
    }
    v
}
