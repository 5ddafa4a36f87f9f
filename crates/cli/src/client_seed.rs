//! `fairdeal client-seed`: a table's client seed from its players' seed contributions and
//! the optional public delayed value (SPEC section 4; the exact bytes are documented in
//! `fairdeal_fairness::client_seed`).
//!
//! Prints one JSON line `{"contributions_hash": .., "client_seed": ..}`: the two values the
//! commitment service records when the table's first deal fixes its client seed. The
//! contributions are taken exactly as given, in any order; each seat may appear once.
//!
//! The delayed value is given as it is (`--delayed-value`) or as the drand round bound to
//! the table (`--drand-round R --drand-signature S [--drand-randomness X]`): the round's
//! signature is verified against the chain (quicknet, built in, or `--drand-chain`) before
//! its randomness, SHA-256 of the signature, is used; the line then also shows that
//! `delayed_value`. A round that does not verify is an error naming the flag.

use std::collections::BTreeMap;
use std::io::Write;

use fairdeal_fairness::client_seed::{contributions_hash, table_client_seed};
use serde::Serialize;

use crate::deal::write_json_line;
use crate::drand::DrandRoundArgs;
use crate::error::{CliError, quoted};

/// Arguments of `fairdeal client-seed`.
#[derive(Debug, clap::Args)]
pub(crate) struct ClientSeedArgs {
    /// A seated player's contribution: the seat number, `=`, then the text exactly as
    /// recorded (it may itself contain `=`). Repeat for every seat that contributed; none
    /// at all is valid (the hash of nothing).
    #[arg(
        long = "contribution",
        value_name = "SEAT=TEXT",
        allow_hyphen_values = true
    )]
    contributions: Vec<String>,
    /// The public delayed value bound to the table, when its commitment named a source.
    #[arg(
        long,
        value_name = "VALUE",
        allow_hyphen_values = true,
        conflicts_with = "drand_round"
    )]
    delayed_value: Option<String>,
    /// Or the drand round bound as the delayed value.
    #[command(flatten)]
    drand: DrandRoundArgs,
}

/// `{"contributions_hash": .., "client_seed": ..}`, with the delayed value when it is a
/// drand round's randomness.
#[derive(Debug, Serialize)]
struct ClientSeedLine {
    contributions_hash: String,
    client_seed: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    delayed_value: Option<String>,
}

pub(crate) fn run(args: ClientSeedArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let contributions = by_seat(&args.contributions)?;
    let drand_value = args.drand.verified()?.map(|verified| verified.randomness);
    let delayed_value = drand_value.as_deref().or(args.delayed_value.as_deref());
    if delayed_value == Some("") {
        return Err(CliError::arg("--delayed-value", "must not be empty"));
    }
    write_json_line(
        out,
        &ClientSeedLine {
            contributions_hash: contributions_hash(&contributions),
            client_seed: table_client_seed(&contributions, delayed_value),
            delayed_value: drand_value.clone(),
        },
    )
}

/// Parses the `--contribution SEAT=TEXT` values into the contributions keyed by seat.
fn by_seat(values: &[String]) -> Result<BTreeMap<u32, &str>, CliError> {
    let mut contributions = BTreeMap::new();
    for value in values {
        let (seat, text) = parse_contribution(value).map_err(|problem| {
            CliError::arg("--contribution", format!("{}: {problem}", quoted(value)))
        })?;
        if contributions.insert(seat, text).is_some() {
            return Err(CliError::arg(
                "--contribution",
                format!("{}: seat {seat} is given twice", quoted(value)),
            ));
        }
    }
    Ok(contributions)
}

/// Splits one `SEAT=TEXT` value at its first `=`; the error says what is wrong with it.
fn parse_contribution(value: &str) -> Result<(u32, &str), &'static str> {
    let (seat, text) = value
        .split_once('=')
        .ok_or("not SEAT=TEXT (a seat number, '=', the contribution)")?;
    if seat.is_empty() || !seat.bytes().all(|b| b.is_ascii_digit()) {
        return Err("the seat before '=' must be a number (0, 1, 2, ..)");
    }
    let seat = seat.parse().map_err(|_| "the seat number is too large")?;
    if text.is_empty() {
        return Err("the contribution after '=' is empty");
    }
    Ok((seat, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contributions_split_at_the_first_equals_sign() {
        assert_eq!(parse_contribution("0=alpha"), Ok((0, "alpha")));
        assert_eq!(parse_contribution("12=a=b c"), Ok((12, "a=b c")));
        assert_eq!(parse_contribution("007=x"), Ok((7, "x")));
        for bad in ["alpha", "=x", "-1=x", "+1=x", " 1=x", "1=", "99999999999=x"] {
            assert!(parse_contribution(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_seat_may_contribute_once() {
        let values = ["1=a".to_owned(), "0=b".to_owned(), "1=c".to_owned()];
        let err = by_seat(&values).unwrap_err().to_string();
        assert_eq!(err, "--contribution: \"1=c\": seat 1 is given twice");
        let ok = by_seat(&values[..2]).unwrap();
        assert_eq!(ok, BTreeMap::from([(0, "b"), (1, "a")]));
    }
}
