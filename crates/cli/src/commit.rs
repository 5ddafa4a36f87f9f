//! `fairdeal commit` and `fairdeal seed` (being written).

use std::io::Write;

use crate::error::CliError;

/// Arguments of `fairdeal commit`.
#[derive(Debug, clap::Args)]
pub(crate) struct CommitArgs {}

pub(crate) fn run_commit(_args: CommitArgs, _out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}

pub(crate) fn run_seed(_out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}
