//! The CLI's one error type: every failure becomes one line on stderr and exit status 2
//! (a failed audit: status 1).

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
    /// `fairdeal audit` found failures (printed on stdout); exit status 1.
    #[error("audit failed: {0} check(s) failed")]
    AuditFailed(usize),
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

/// Longest prefix of a value, in characters, that an error message repeats.
const QUOTED_CHARS: usize = 40;

/// A value as an error message shows it: quoted with escapes (so the message stays one
/// line), and cut after its first 40 characters when longer, with its length in bytes.
pub(crate) fn quoted(value: &str) -> String {
    match value.char_indices().nth(QUOTED_CHARS) {
        None => format!("{value:?}"),
        Some((end, _)) => format!("{:?}... ({} bytes)", &value[..end], value.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_are_one_short_line() {
        assert_eq!(quoted("1=alpha"), "\"1=alpha\"");
        assert_eq!(quoted("a\nb"), "\"a\\nb\"");
        let long = "é".repeat(300);
        assert_eq!(
            quoted(&long),
            format!("\"{}\"... (600 bytes)", "é".repeat(QUOTED_CHARS))
        );
        assert_eq!(quoted(&"x".repeat(40)), format!("\"{}\"", "x".repeat(40)));
    }
}
