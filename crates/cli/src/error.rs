//! The CLI's one error type: every failure becomes one line on stderr and exit status 2.

use fairdeal_fairness::deck::UnknownDeck;

/// Why a command failed. The message names the offending argument or file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// An argument was well-formed for clap but invalid for the command.
    #[error("{0}")]
    Invalid(String),
    /// The game name is not a known deck.
    #[error("--game: {0}")]
    UnknownDeck(#[from] UnknownDeck),
    /// Writing output (or reading a file) failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Serialising a JSON line failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

impl CliError {
    /// An invalid-argument error naming the argument: `--salt: not an integer`.
    pub(crate) fn arg(name: &str, problem: impl std::fmt::Display) -> Self {
        CliError::Invalid(format!("{name}: {problem}"))
    }
}
