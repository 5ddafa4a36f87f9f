//! `fairdeal outcome GAME`: the result of a single-round game (SPEC section 3).
//!
//! The numbers come either from the seeds (`--server-seed --client-seed --salt`) or from the
//! generator's raw output (`--bytes`: cursor blocks of 64 bytes, concatenated, in hex), so a
//! verifier can check the game's arithmetic separately from the hashing. Prints one JSON
//! line `{"game": .., "result": ..}` (see `fairdeal_fairness::outcome` for each game's
//! result), or with `--explain` a walk-through of every number used.
//!
//! Numeric options are taken as text and parsed here, so that every mistake (a negative
//! count, a game that does not take the option) is reported as one line naming the option.

use std::io::Write;

use fairdeal_fairness::outcome::{Game, Options, Round};

use crate::error::CliError;

/// Arguments of `fairdeal outcome`.
#[derive(Debug, clap::Args)]
pub(crate) struct OutcomeArgs {
    /// The game: dice, double, x50, jackpot, crash, overgo, mines, tower, slot or plinko.
    game: String,
    /// The revealed server seed.
    #[arg(long)]
    server_seed: Option<String>,
    /// The client seed.
    #[arg(long)]
    client_seed: Option<String>,
    /// The salt (the bet counter for single-player games).
    #[arg(long)]
    salt: Option<String>,
    /// Raw generator output instead of seeds: 64-byte cursor blocks (cursor 0 first), hex.
    #[arg(long)]
    bytes: Option<String>,
    /// Number of mines (mines: 1..=24).
    #[arg(long, allow_hyphen_values = true)]
    mines: Option<String>,
    /// Number of tickets (jackpot: at least 1).
    #[arg(long, allow_hyphen_values = true)]
    tickets: Option<String>,
    /// Number of pins (plinko: 8..=16).
    #[arg(long, allow_hyphen_values = true)]
    pins: Option<String>,
    /// Number of spins (slot: 1..=1000, default 1); spin k uses cursor k.
    #[arg(long, allow_hyphen_values = true)]
    spins: Option<String>,
    /// Print a walk-through of every number used instead of the JSON line.
    #[arg(long)]
    explain: bool,
}

/// Where the numbers come from.
enum Source {
    Seeds {
        server_seed: String,
        client_seed: String,
        salt: String,
    },
    Bytes(Vec<u8>),
}

pub(crate) fn run(args: OutcomeArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let game: Game = args.game.parse().map_err(|e| CliError::arg("GAME", e))?;
    let options = Options {
        mines: count("--mines", args.mines.as_deref())?,
        tickets: count("--tickets", args.tickets.as_deref())?,
        pins: count("--pins", args.pins.as_deref())?,
        spins: count("--spins", args.spins.as_deref())?,
    };
    // The option's name leads the message: "mines: 25 is out of range (1..=24)".
    let round = Round::new(game, &options).map_err(|e| CliError::Invalid(format!("--{e}")))?;
    let source = source(args.server_seed, args.client_seed, args.salt, args.bytes)?;
    let raw_error = |e| CliError::arg("--bytes", e);
    if args.explain {
        let explanation = match &source {
            Source::Seeds {
                server_seed,
                client_seed,
                salt,
            } => round.explain_seeds(server_seed, client_seed, salt).1,
            Source::Bytes(bytes) => round.explain_bytes(bytes).map_err(raw_error)?.1,
        };
        out.write_all(explanation.finish().as_bytes())?;
        return Ok(());
    }
    let outcome = match &source {
        Source::Seeds {
            server_seed,
            client_seed,
            salt,
        } => round.from_seeds(server_seed, client_seed, salt),
        Source::Bytes(bytes) => round.from_bytes(bytes).map_err(raw_error)?,
    };
    serde_json::to_writer(&mut *out, &outcome)?;
    writeln!(out)?;
    Ok(())
}

/// Parses an optional non-negative count.
fn count(name: &str, value: Option<&str>) -> Result<Option<u64>, CliError> {
    value
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| CliError::arg(name, format!("{v:?} is not a non-negative integer")))
        })
        .transpose()
}

/// Either all three seeds, or `--bytes`, never both.
fn source(
    server_seed: Option<String>,
    client_seed: Option<String>,
    salt: Option<String>,
    bytes: Option<String>,
) -> Result<Source, CliError> {
    match (server_seed, client_seed, salt, bytes) {
        (None, None, None, Some(hex)) => Ok(Source::Bytes(decode_hex(&hex)?)),
        (Some(server_seed), Some(client_seed), Some(salt), None) => Ok(Source::Seeds {
            server_seed,
            client_seed,
            salt,
        }),
        (s, c, t, Some(_)) if s.is_some() || c.is_some() || t.is_some() => Err(CliError::arg(
            "--bytes",
            "give either --bytes or the seeds (--server-seed, --client-seed, --salt), not both",
        )),
        (None, None, None, None) => Err(CliError::Invalid(
            "give the seeds (--server-seed, --client-seed, --salt) or the generator's --bytes"
                .into(),
        )),
        (s, c, _, _) => {
            let missing = if s.is_none() {
                "--server-seed"
            } else if c.is_none() {
                "--client-seed"
            } else {
                "--salt"
            };
            Err(CliError::arg(
                missing,
                "required with the other seeds (--server-seed, --client-seed, --salt)",
            ))
        }
    }
}

/// Decodes `--bytes`: hex digits in either case, with any whitespace (pasted blocks are
/// often wrapped) and an optional `0x` prefix ignored.
fn decode_hex(text: &str) -> Result<Vec<u8>, CliError> {
    let digits: String = text.split_whitespace().collect();
    let digits = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
        .unwrap_or(&digits);
    hex::decode(digits).map_err(|e| CliError::arg("--bytes", format!("not hex: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_decoded_leniently_but_strictly_hex() {
        assert_eq!(decode_hex("0x0aFF").unwrap(), vec![0x0a, 0xff]);
        assert_eq!(decode_hex(" 0a ff\n00 ").unwrap(), vec![0x0a, 0xff, 0x00]);
        assert!(decode_hex("0g").is_err());
        assert!(decode_hex("abc").is_err());
    }

    #[test]
    fn counts_name_their_option() {
        assert_eq!(count("--pins", Some("12")).unwrap(), Some(12));
        assert_eq!(count("--pins", None).unwrap(), None);
        let e = count("--pins", Some("-1")).unwrap_err().to_string();
        assert!(e.starts_with("--pins: "), "{e}");
    }
}
