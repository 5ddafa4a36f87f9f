//! `fairdeal drand verify` and `fairdeal drand decrypt`: a drand quicknet round checked
//! offline against the chain's public key (built into `fairdeal_drand`), and a ciphertext
//! timelocked to a round opened with that round's signature.
//!
//! The round's values are drand's JSON fields (`round`, `signature`, optionally
//! `randomness`), copied from any relay: nothing is fetched, and a relay cannot lie, since a
//! signature that verifies is the network's. `verify` prints
//! `{"chain_hash", "round", "round_time", "randomness"}`; `decrypt` prints
//! `{"round", "randomness", "plaintext", "plaintext_hex"}` (`plaintext` is null when the bytes
//! are not UTF-8). Every error names the flag it is about.

use std::io::Write;
use std::path::Path;

use fairdeal_cli::drand_chain::{self, MAX_CHAIN_INFO_BYTES};
use fairdeal_drand::timelock::{self, TimelockError};
use fairdeal_drand::{Beacon, BeaconError, BeaconField, Chain, VerifyError};
use serde::Serialize;

use crate::deal::write_json_line;
use crate::error::{CliError, quoted};

/// The `drand` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum DrandCommand {
    /// Check a quicknet round's signature (or another chain's, `--drand-chain`); print the
    /// round's randomness.
    Verify(RoundArgs),
    /// Open a ciphertext timelocked to a quicknet round (or another chain's,
    /// `--drand-chain`; drand/tlock's age format, as `tle` writes it), with the round's
    /// signature.
    Decrypt(DecryptArgs),
}

/// A quicknet round as drand publishes it.
#[derive(Debug, clap::Args)]
pub(crate) struct RoundArgs {
    /// The round number (1, 2, ..).
    #[arg(long, allow_hyphen_values = true)]
    round: u64,
    /// The round's BLS signature: 96 hex digits (drand's `signature`).
    #[arg(long, allow_hyphen_values = true)]
    signature: String,
    /// The round's randomness (drand's `randomness`, 64 hex digits): checked to be SHA-256 of
    /// the signature when given.
    #[arg(long, allow_hyphen_values = true)]
    randomness: Option<String>,
    /// Another chain than quicknet: its chain-info JSON file (what drand serves at
    /// `/{chain hash}/info`), e.g. a test chain's.
    #[arg(long, value_name = "FILE")]
    drand_chain: Option<std::path::PathBuf>,
}

/// Arguments of `fairdeal drand decrypt`.
#[derive(Debug, clap::Args)]
pub(crate) struct DecryptArgs {
    #[command(flatten)]
    round: RoundArgs,
    /// The ciphertext: an ASCII-armored age file as a string (it starts with
    /// `-----BEGIN AGE ENCRYPTED FILE-----`), or the path of a file (armored or binary).
    #[arg(long, value_name = "FILE_OR_STRING", allow_hyphen_values = true)]
    ciphertext: String,
}

/// `--drand-chain FILE`: the chain a round is verified against, from its chain-info JSON
/// (what drand serves at `/{chain hash}/info`); quicknet, built in, without the flag. Errors
/// name the flag, the file and the field.
pub(crate) fn chain_of(path: Option<&Path>) -> Result<Chain, CliError> {
    let Some(path) = path else {
        return Chain::quicknet().map_err(|e| CliError::Invalid(format!("quicknet: {e}")));
    };
    let shown = quoted(&path.display().to_string());
    let cannot_read =
        |e: &dyn std::fmt::Display| CliError::arg("--drand-chain", format!("{shown}: {e}"));
    let size = std::fs::metadata(path).map_err(|e| cannot_read(&e))?.len();
    if size > MAX_CHAIN_INFO_BYTES {
        return Err(cannot_read(&format!(
            "{size} bytes, more than the {MAX_CHAIN_INFO_BYTES} a chain info can have"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| cannot_read(&e))?;
    drand_chain::parse(&text).map_err(|e| cannot_read(&e))
}

/// The beginning of an armored age file: a `--ciphertext` value that is one, not a path.
const ARMOR_BEGIN: &str = "-----BEGIN AGE ENCRYPTED FILE-----";

/// The largest ciphertext file read: the plaintext is at most 64 KiB, armoring adds a third.
const MAX_CIPHERTEXT_BYTES: u64 = 1 << 20;

/// `{"chain_hash": .., "round": .., "round_time": .., "randomness": ..}`.
#[derive(Debug, Serialize)]
struct VerifiedLine {
    chain_hash: String,
    round: u64,
    /// Unix time at which the round was published.
    round_time: u64,
    randomness: String,
}

/// `{"round": .., "randomness": .., "plaintext": .., "plaintext_hex": ..}`.
#[derive(Debug, Serialize)]
struct DecryptedLine<'a> {
    round: u64,
    randomness: String,
    plaintext: Option<&'a str>,
    plaintext_hex: String,
}

pub(crate) fn run(command: DrandCommand, out: &mut dyn Write) -> Result<(), CliError> {
    let round = match &command {
        DrandCommand::Verify(args) => args,
        DrandCommand::Decrypt(args) => &args.round,
    };
    let chain = chain_of(round.drand_chain.as_deref())?;
    match command {
        DrandCommand::Verify(args) => run_verify(&chain, &args, out),
        DrandCommand::Decrypt(args) => run_decrypt(&chain, &args, out),
    }
}

fn run_verify(chain: &Chain, args: &RoundArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let beacon = parse_beacon(args)?;
    let randomness = chain.verify(&beacon).map_err(verify_error)?;
    let round_time = chain
        .schedule()
        .round_time(beacon.round())
        .map_err(|e| CliError::arg("--round", e))?;
    write_json_line(
        out,
        &VerifiedLine {
            chain_hash: hex::encode(chain.chain_hash()),
            round: beacon.round(),
            round_time,
            randomness: randomness.to_hex(),
        },
    )
}

fn run_decrypt(chain: &Chain, args: &DecryptArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let beacon = parse_beacon(&args.round)?;
    let randomness = chain.verify(&beacon).map_err(verify_error)?;
    let ciphertext = read_ciphertext(&args.ciphertext)?;
    let plaintext = timelock::decrypt(chain, &beacon, &ciphertext).map_err(timelock_error)?;
    write_json_line(
        out,
        &DecryptedLine {
            round: beacon.round(),
            randomness: randomness.to_hex(),
            plaintext: std::str::from_utf8(&plaintext).ok(),
            plaintext_hex: hex::encode(plaintext.as_slice()),
        },
    )
}

/// A drand round given as a delayed value, `--drand-round R --drand-signature S
/// [--drand-randomness X] [--drand-chain FILE]` (`client-seed`, `squaredeal`): its signature
/// is verified against the chain before its randomness, SHA-256 of the signature, is used.
#[derive(Debug, clap::Args)]
pub(crate) struct DrandRoundArgs {
    /// A drand round as the delayed value (`DelayedValueBound.drand_round`): its randomness,
    /// once its signature is verified, is the delayed value. Needs --drand-signature.
    #[arg(long, value_name = "ROUND", requires = "drand_signature")]
    drand_round: Option<u64>,
    /// The round's BLS signature, 96 hex digits (`DelayedValueBound.drand_signature`).
    #[arg(
        long,
        value_name = "HEX",
        requires = "drand_round",
        allow_hyphen_values = true
    )]
    drand_signature: Option<String>,
    /// The round's randomness, 64 hex digits: checked to be SHA-256 of the signature.
    #[arg(
        long,
        value_name = "HEX",
        requires = "drand_round",
        allow_hyphen_values = true
    )]
    drand_randomness: Option<String>,
    /// The chain the round is verified against: its chain-info JSON (drand's
    /// `/{chain hash}/info`). Without it, quicknet's, built in.
    #[arg(long, value_name = "CHAIN_INFO_JSON", requires = "drand_round")]
    drand_chain: Option<std::path::PathBuf>,
}

/// A round whose signature verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VerifiedRound {
    /// The round.
    pub(crate) round: u64,
    /// Its randomness, lowercase hex.
    pub(crate) randomness: String,
}

impl DrandRoundArgs {
    /// The round, verified (none without `--drand-round`); every error names its flag.
    pub(crate) fn verified(&self) -> Result<Option<VerifiedRound>, CliError> {
        let (Some(round), Some(signature)) = (self.drand_round, self.drand_signature.as_deref())
        else {
            // clap requires both together.
            return Ok(None);
        };
        let beacon = beacon_of_flags("drand-", round, signature, self.drand_randomness.as_deref())?;
        let chain = chain_of(self.drand_chain.as_deref())?;
        match chain.verify(&beacon) {
            Ok(randomness) => Ok(Some(VerifiedRound {
                round,
                randomness: randomness.to_hex(),
            })),
            Err(VerifyError::InvalidSignature { round }) => Err(CliError::arg(
                "--drand-signature",
                format!(
                    "not the signature of round {round} of chain {} ({})",
                    hex::encode(chain.chain_hash()),
                    chain.info().beacon_id
                ),
            )),
            Err(VerifyError::RandomnessMismatch {
                claimed, derived, ..
            }) => Err(CliError::arg(
                "--drand-randomness",
                format!("{claimed} is not SHA-256 of the signature ({derived})"),
            )),
        }
    }
}

/// The round's flags as a beacon; the error names the flag.
fn parse_beacon(args: &RoundArgs) -> Result<Beacon, CliError> {
    beacon_of_flags("", args.round, &args.signature, args.randomness.as_deref())
}

/// A round given by the flags `--<prefix>round`, `--<prefix>signature` and
/// `--<prefix>randomness` (`drand verify`'s own, `client-seed`'s `drand-`, the audit's
/// `timelock-`) as a beacon; a malformed value is an error naming its flag.
pub(crate) fn beacon_of_flags(
    prefix: &str,
    round: u64,
    signature: &str,
    randomness: Option<&str>,
) -> Result<Beacon, CliError> {
    Beacon::from_hex(round, signature, randomness).map_err(|BeaconError { field, problem }| {
        let (name, value) = match field {
            BeaconField::Round => ("round", round.to_string()),
            BeaconField::Signature => ("signature", quoted(signature)),
            BeaconField::Randomness => ("randomness", quoted(randomness.unwrap_or_default())),
        };
        CliError::arg(&format!("--{prefix}{name}"), format!("{value}: {problem}"))
    })
}

fn verify_error(e: VerifyError) -> CliError {
    match e {
        VerifyError::InvalidSignature { round } => CliError::arg(
            "--signature",
            format!("not quicknet's signature of round {round}"),
        ),
        VerifyError::RandomnessMismatch {
            claimed, derived, ..
        } => CliError::arg(
            "--randomness",
            format!("{claimed} is not SHA-256 of the signature ({derived})"),
        ),
    }
}

fn timelock_error(e: TimelockError) -> CliError {
    match e {
        TimelockError::Verify(e) => verify_error(e),
        TimelockError::OtherRound {
            ciphertext_round,
            beacon_round,
        } => CliError::arg(
            "--ciphertext",
            format!("encrypted to round {ciphertext_round}, not to round {beacon_round} (--round)"),
        ),
        TimelockError::OtherChain {
            ciphertext_chain, ..
        } => CliError::arg(
            "--ciphertext",
            format!("encrypted to chain {ciphertext_chain}, not to quicknet"),
        ),
        other => CliError::arg("--ciphertext", one_line(&other.to_string())),
    }
}

/// The ciphertext itself when the value is an armored age file, else the file it names.
fn read_ciphertext(value: &str) -> Result<Vec<u8>, CliError> {
    if value.trim_start().starts_with(ARMOR_BEGIN) {
        return Ok(value.as_bytes().to_vec());
    }
    let path = Path::new(value);
    let cannot_read = |e: &dyn std::fmt::Display| {
        CliError::arg(
            "--ciphertext",
            format!("{}: cannot read: {e}", quoted(value)),
        )
    };
    let size = std::fs::metadata(path).map_err(|e| cannot_read(&e))?.len();
    if size > MAX_CIPHERTEXT_BYTES {
        return Err(cannot_read(&format!(
            "{size} bytes, more than the {MAX_CIPHERTEXT_BYTES} a seed's ciphertext can have"
        )));
    }
    std::fs::read(path).map_err(|e| cannot_read(&e))
}

/// Error texts of the age crate may hold line breaks (and Unicode isolation marks around
/// their arguments): one line, without the marks.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .replace(['\u{2068}', '\u{2069}'], "")
}

#[cfg(test)]
mod tests {
    use fairdeal_drand::Randomness;

    use super::*;

    #[test]
    fn a_chain_file_is_read_or_named_in_the_error() {
        assert_eq!(
            chain_of(None).unwrap().chain_hash(),
            fairdeal_drand::QUICKNET_CHAIN_HASH
        );
        let err = chain_of(Some(Path::new("/nonexistent/info.json")))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--drand-chain: \"/nonexistent/info.json\": "),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("info.json");
        std::fs::write(&file, r#"{"schemeID": "bls-unchained-g1-rfc9380"}"#).unwrap();
        let err = chain_of(Some(&file)).unwrap_err().to_string();
        assert!(err.ends_with("info.json\": public_key: missing"), "{err}");
    }

    #[test]
    fn error_texts_become_one_line() {
        assert_eq!(one_line("a\n\n  b\r\nc"), "a b c");
        assert_eq!(one_line("round \u{2068}5\u{2069}"), "round 5");
    }

    #[test]
    fn an_armored_value_is_the_ciphertext_itself() {
        let armored = format!("{ARMOR_BEGIN}\nabc\n");
        assert_eq!(read_ciphertext(&armored).unwrap(), armored.as_bytes());
        let err = read_ciphertext("/nonexistent/ct.age")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--ciphertext: \"/nonexistent/ct.age\": cannot read"),
            "{err}"
        );
    }

    #[test]
    fn a_randomness_mismatch_names_the_flag() {
        let claimed = Randomness::from_bytes([1; 32]);
        let derived = Randomness::from_bytes([2; 32]);
        let e = verify_error(VerifyError::RandomnessMismatch {
            round: 1,
            claimed,
            derived,
        });
        assert!(e.to_string().starts_with("--randomness: 0101"), "{e}");
    }
}
