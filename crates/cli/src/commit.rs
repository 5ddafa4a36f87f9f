//! `fairdeal commit` and `fairdeal seed`: commitments to server seeds, and fresh seeds.

use std::io::Write;

use fairdeal_fairness::commitment::{Commitment, ServerSeed};
use serde::Serialize;

use crate::deal::write_json_line;
use crate::error::CliError;

/// Arguments of `fairdeal commit`.
#[derive(Debug, clap::Args)]
pub(crate) struct CommitArgs {
    /// The server seed to commit to (its UTF-8 bytes are hashed).
    #[arg(long, allow_hyphen_values = true)]
    server_seed: String,
}

/// `{"commitment": .., "short_code": ..}`.
#[derive(Debug, Serialize)]
struct CommitLine {
    commitment: String,
    short_code: String,
}

/// `{"server_seed": .., "commitment": .., "short_code": ..}`.
#[derive(Debug, Serialize)]
struct SeedLine<'a> {
    server_seed: &'a str,
    commitment: String,
    short_code: String,
}

pub(crate) fn run_commit(args: CommitArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let commitment = Commitment::of(&args.server_seed);
    write_json_line(
        out,
        &CommitLine {
            commitment: commitment.to_hex(),
            short_code: commitment.short_code(),
        },
    )
}

pub(crate) fn run_seed(out: &mut dyn Write) -> Result<(), CliError> {
    let seed = ServerSeed::generate().map_err(|e| CliError::Invalid(e.to_string()))?;
    let commitment = seed.commitment();
    write_json_line(
        out,
        &SeedLine {
            // Printing the seed is this command's purpose: the operator stores it secretly
            // and publishes only the commitment.
            server_seed: seed.expose_secret(),
            commitment: commitment.to_hex(),
            short_code: commitment.short_code(),
        },
    )
}
