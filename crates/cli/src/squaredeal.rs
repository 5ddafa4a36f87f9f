//! `fairdeal squaredeal ...` (being written).

use std::io::Write;

use crate::error::CliError;

/// The SquareDeal subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SquaredealCommand {
    /// Check a key file against the description's key hash.
    Verify,
}

pub(crate) fn run(_cmd: SquaredealCommand, _out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}
