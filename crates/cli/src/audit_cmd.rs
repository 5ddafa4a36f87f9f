//! `fairdeal audit FILE --log-key KEY [--previous CHECKPOINT] [--drand-chain CHAIN_INFO]
//! [--timelock-round R --timelock-signature HEX [--timelock-randomness HEX]]`:
//! reads the files, runs [`fairdeal_cli::audit::audit_with_timelock`] (the checks are listed
//! there; a table's drand round is verified against quicknet, or the chain given, and a
//! timelocked seed opened with the round given) and prints one JSON line per
//! failed check (`{"failed", "line", "detail"}`) then a summary line; exit status 1 when
//! anything failed.

use std::io::Write;
use std::path::PathBuf;

use fairdeal_cli::audit::{Report, audit_with_timelock};
use fairdeal_drand::Beacon;
use fairdeal_tlog::NoteVerifier;
use serde::Serialize;

use crate::deal::write_json_line;
use crate::error::CliError;

/// Arguments of `fairdeal audit`.
#[derive(Debug, clap::Args)]
pub(crate) struct AuditArgs {
    /// The game export (NDJSON) the ledger's ExportGame wrote.
    file: PathBuf,
    /// The log's public key, `<name>+<key id hex>+<base64>` (the ledger publishes it).
    #[arg(long, value_name = "KEY")]
    log_key: String,
    /// A checkpoint (signed note) kept from before: the export's tree must extend it (export
    /// with its size in `previous_tree_sizes`).
    #[arg(long, value_name = "CHECKPOINT")]
    previous: Option<PathBuf>,
    /// The drand chain a table's drand round is verified against: its chain-info JSON, as
    /// drand serves it at `/{chain hash}/info` (a local test chain's, for instance). Without
    /// it, quicknet's, built in. Never taken from the export.
    #[arg(long, value_name = "CHAIN_INFO_JSON")]
    drand_chain: Option<PathBuf>,
    /// The round a timelocked seed is encrypted to (the commitment's `timelock_round`), once
    /// published: with `--timelock-signature`, the seed is decrypted and compared with the
    /// commitment and the revealed seed (`timelock_open`).
    #[arg(long, value_name = "ROUND", requires = "timelock_signature")]
    timelock_round: Option<u64>,
    /// That round's BLS signature, 96 hex digits (drand's `signature`), verified against the
    /// drand chain.
    #[arg(long, value_name = "HEX", requires = "timelock_round")]
    timelock_signature: Option<String>,
    /// That round's randomness (drand's `randomness`, 64 hex digits): checked to be SHA-256
    /// of the signature when given.
    #[arg(long, value_name = "HEX", requires = "timelock_round")]
    timelock_randomness: Option<String>,
}

/// The timelock round's flags as a beacon (none without them); the error names the flag.
fn timelock_beacon(args: &AuditArgs) -> Result<Vec<Beacon>, CliError> {
    let (Some(round), Some(signature)) = (args.timelock_round, &args.timelock_signature) else {
        return Ok(Vec::new());
    };
    let randomness = args.timelock_randomness.as_deref();
    let beacon = crate::drand::beacon_of_flags("timelock-", round, signature, randomness)?;
    Ok(vec![beacon])
}

/// The summary line.
#[derive(Debug, Serialize)]
struct Summary<'a> {
    file: String,
    ok: bool,
    failed: usize,
    #[serde(flatten)]
    report: &'a Report,
}

/// The failure line.
#[derive(Debug, Serialize)]
struct FailureLine<'a> {
    failed: &'a str,
    line: usize,
    detail: &'a str,
}

pub(crate) fn run(args: AuditArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let verifier: NoteVerifier = args
        .log_key
        .parse()
        .map_err(|e| CliError::arg("--log-key", e))?;
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| CliError::arg("FILE", format!("{}: {e}", args.file.display())))?;
    let previous = match &args.previous {
        None => None,
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| CliError::arg("--previous", format!("{}: {e}", path.display())))?,
        ),
    };
    let chain = crate::drand::chain_of(args.drand_chain.as_deref())?;
    let beacons = timelock_beacon(&args)?;
    let report = audit_with_timelock(&text, &verifier, previous.as_deref(), &chain, &beacons);
    for f in &report.failures {
        write_json_line(
            out,
            &FailureLine {
                failed: f.check,
                line: f.line,
                detail: &f.detail,
            },
        )?;
    }
    write_json_line(
        out,
        &Summary {
            file: args.file.display().to_string(),
            ok: report.failures.is_empty(),
            failed: report.failures.len(),
            report: &report,
        },
    )?;
    if report.failures.is_empty() {
        Ok(())
    } else {
        Err(CliError::AuditFailed(report.failures.len()))
    }
}
