//! `fairdeal number` (being written).

use std::io::Write;

use crate::error::CliError;

/// Arguments of `fairdeal number`.
#[derive(Debug, clap::Args)]
pub(crate) struct NumberArgs {}

pub(crate) fn run(_args: NumberArgs, _out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}
