//! `fairdeal duplicate` (being written).

use std::io::Write;

use crate::error::CliError;

/// Arguments of `fairdeal duplicate`.
#[derive(Debug, clap::Args)]
pub(crate) struct DuplicateArgs {}

pub(crate) fn run(_args: DuplicateArgs, _out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}
