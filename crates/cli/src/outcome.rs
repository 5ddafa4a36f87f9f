//! `fairdeal outcome` (being written).

use std::io::Write;

use crate::error::CliError;

/// Arguments of `fairdeal outcome`.
#[derive(Debug, clap::Args)]
pub(crate) struct OutcomeArgs {}

pub(crate) fn run(_args: OutcomeArgs, _out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}
