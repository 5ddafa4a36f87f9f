//! `fairdeal deal` (being written).

use std::io::Write;

use crate::error::CliError;

/// Arguments of `fairdeal deal`.
#[derive(Debug, clap::Args)]
pub(crate) struct DealArgs {}

pub(crate) fn run(_args: DealArgs, _out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}
