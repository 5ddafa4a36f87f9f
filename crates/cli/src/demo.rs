//! `fairdeal demo` (being written).

use std::io::Write;

use crate::error::CliError;

pub(crate) fn run(_out: &mut dyn Write) -> Result<(), CliError> {
    Err(CliError::Invalid("not written yet".into()))
}
