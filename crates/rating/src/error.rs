//! Why a rating input or a rating change was refused.
//!
//! One enum for the whole crate: a caller (the rating service, the auditor, the CLI) maps
//! every refusal the same way, and each message names the quantity and the value at fault
//! (text that is not a number is echoed only as a short prefix, so a pasted megabyte does
//! not end up in a log line).

/// The most characters of unparsable text an error keeps.
pub(crate) const ECHOED_CHARS: usize = 24;

/// Why a rating input or change was refused. Doubles in messages are written as Rust's
/// `{:?}` writes them (`1500.0`, `1.7e308`), so a huge value stays short.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RatingError {
    /// Text that does not read as a decimal number.
    #[error("{text:?} is not a number")]
    NotANumber {
        /// The first 24 characters of the text, with `...` if it was longer.
        text: String,
    },
    /// A rating that is infinite or NaN.
    #[error("a rating is a finite number, got {0:?}")]
    RatingNotFinite(f64),
    /// A K factor that is not a finite number above 0.
    #[error("K is a finite number above 0, got {0:?}")]
    KNotPositive(f64),
    /// A score other than 1, 0 or 0.5.
    #[error("a score is 1 (win), 0 (loss) or 0.5 (draw), got {0:?}")]
    NotAScore(f64),
    /// A recorded score that is not a mean of results against that many opponents
    /// ([`crate::Score::recorded`]).
    #[error(
        "a score against {opponents} opponents is 1, 0, 0.5 or a whole number of half points out of {out_of}, got {value:?}",
        out_of = 2 * *opponents as u128
    )]
    NotAMeanScore {
        /// The recorded score.
        value: f64,
        /// The number of opponents.
        opponents: usize,
    },
    /// A player without opponents (or a team game with an empty team).
    #[error("a player needs at least one opponent")]
    NoOpponents,
    /// An opponent more than [`crate::MAX_GAP`] points away from the player.
    #[error(
        "opponent rating {opponent:?} is {gap:?} points from the player's {player:?}, more than {max:?} (SPEC 6's weight 1 - e/1000 would make the expectation meaningless)",
        gap = (player - opponent).abs(),
        max = crate::MAX_GAP
    )]
    GapTooLarge {
        /// The player's rating.
        player: f64,
        /// The opponent's rating.
        opponent: f64,
    },
    /// The new rating is beyond the range of a double (only with an absurdly large K).
    #[error("the new rating of a player rated {before:?} with K = {k:?} is not a finite number")]
    Overflow {
        /// The rating before the game.
        before: f64,
        /// The K factor.
        k: f64,
    },
}

impl RatingError {
    /// A [`RatingError::NotANumber`] keeping at most [`ECHOED_CHARS`] characters of `text`.
    pub(crate) fn not_a_number(text: &str) -> Self {
        let mut shown: String = text.chars().take(ECHOED_CHARS).collect();
        if text.chars().nth(ECHOED_CHARS).is_some() {
            shown.push_str("...");
        }
        RatingError::NotANumber { text: shown }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_echoed_as_a_short_prefix() {
        let long = "7".repeat(10_000);
        let message = RatingError::not_a_number(&long).to_string();
        assert!(message.len() < 50, "{message}");
        assert!(message.starts_with(&format!("\"{}...\"", "7".repeat(ECHOED_CHARS))));
        let short = RatingError::not_a_number("abc").to_string();
        assert_eq!(short, "\"abc\" is not a number");
    }

    #[test]
    fn the_gap_message_names_both_ratings_and_the_limit() {
        let message = RatingError::GapTooLarge {
            player: 2600.0,
            opponent: 1500.5,
        }
        .to_string();
        assert!(
            message.starts_with(
                "opponent rating 1500.5 is 1099.5 points from the player's 2600.0, more than 999.0"
            ),
            "{message}"
        );
    }
}
