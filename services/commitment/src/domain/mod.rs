//! The commit-reveal procedures as pure state machines (SPEC section 4).
//!
//! Each aggregate is rebuilt by folding its events ([`table::TableCommitment::replay`],
//! ...), and each command is a method that checks the state and returns the events to
//! append, or a typed [`DomainError`]; nothing changes on error because nothing is appended.
//! No IO here: seeds come in already generated (or decrypted), and the service stores the
//! returned events.
//!
//! - [`client_seed`]: contributions and delayed values, validated; the table client seed they
//!   make is `fairdeal_fairness::client_seed`'s formula.
//! - [`drand`]: a table's or tournament's drand round (fixed at commit), the verified beacon
//!   bound, and the rules of binding it ([`drand::DrandSubject`]).
//! - [`table`]: a table's commitment: created, contributions, delayed value, client seed
//!   fixed at the first deal, revealed at the end.
//! - [`pair`]: a player's single-player seed pairs: active commitment, changeable client
//!   seed, bet counter, rotation.
//! - [`tournament`]: tournament sets: committed secret, named delayed value, bound value,
//!   generated boards, reveal.

pub mod client_seed;
pub mod drand;
pub mod pair;
pub mod table;
pub mod tournament;

/// How a domain error maps to the wire (the service turns this into a gRPC code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request itself is malformed.
    InvalidArgument,
    /// The aggregate does not exist.
    NotFound,
    /// The aggregate exists already.
    AlreadyExists,
    /// The state does not allow the command.
    FailedPrecondition,
    /// The stored state is inconsistent (a bug or tampering), never the caller's fault.
    Internal,
}

/// Every way a command can be refused. Messages name the field or the state, never a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// A text field is empty, too long or contains control characters.
    #[error("{field} {reason}")]
    InvalidText {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A numeric field is out of range.
    #[error("{field} {reason}")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The allowed range.
        reason: String,
    },
    /// The aggregate was never created.
    #[error("{0} does not exist")]
    NotFound(&'static str),
    /// The aggregate exists already.
    #[error("{0} exists already")]
    AlreadyExists(&'static str),
    /// A contribution or delayed value after the client seed was fixed.
    #[error("the client seed is already fixed (first deal done): {0} is no longer accepted")]
    ClientSeedFixed(&'static str),
    /// A second contribution for a seat.
    #[error("seat {0} has already contributed its seed")]
    SeatAlreadyContributed(u32),
    /// A second contribution by the same player (from another seat).
    #[error("player has already contributed a seed at seat {0}")]
    PlayerAlreadyContributed(u32),
    /// A delayed value for a commitment that named no source.
    #[error("no delayed value source was named when the commitment was made")]
    NoDelayedSource,
    /// A second delayed value.
    #[error("the delayed value is already bound")]
    DelayedValueBound,
    /// A delayed value by hand for a table or tournament whose delayed value is a drand round.
    #[error(
        "delayed_value: this {subject}'s delayed value is drand round {round} (or its fallback), fetched, verified and bound by the service; a value given by hand is refused"
    )]
    DrandBindsItself {
        /// `table` or `tournament`.
        subject: &'static str,
        /// The round fixed at commit.
        round: u64,
    },
    /// A drand round other than the one the table or tournament expects now.
    #[error("drand round {got} is not the {subject}'s round to bind now ({expected})")]
    DrandWrongRound {
        /// `table` or `tournament`.
        subject: &'static str,
        /// The round expected (the round, or its fallback once stalled).
        expected: u64,
        /// The round given.
        got: u64,
    },
    /// A stall declared twice, or for a commitment without a drand round.
    #[error("the {subject}'s drand round cannot be declared stalled: {reason}")]
    DrandStall {
        /// `table` or `tournament`.
        subject: &'static str,
        /// Why not.
        reason: &'static str,
    },
    /// The client seed (or a set) needs the delayed value, still unknown.
    #[error("the delayed value of {0:?} is not bound yet")]
    DelayedValueMissing(String),
    /// A timelocked seed the service cannot give, or a deal after the table's latest end.
    #[error("timelock_seconds: {0}")]
    Timelock(String),
    /// Reveal for a game end before any deal.
    #[error(
        "the game has not started (no deal yet): reveal at game end is not possible; use an audited operator reveal"
    )]
    GameNotStarted,
    /// The seed has been revealed: no more deals, contributions or reveals.
    #[error("the server seed is already revealed")]
    AlreadyRevealed,
    /// An operator reveal without a name or reason.
    #[error("an operator reveal needs {0}")]
    OperatorReveal(&'static str),
    /// The bet counter of the pair cannot advance.
    #[error("the bet counter of this seed pair is exhausted; rotate the seed pair")]
    NonceExhausted,
    /// A bet id already used by another bet (its description is given).
    #[error("bet_id is already used by another bet ({0:?})")]
    BetIdReused(String),
    /// A retried bet whose seed pair was rotated since it was reserved.
    #[error("bet_id names a bet of seed pair {0}, which has been rotated since")]
    BetPairRotated(u64),
    /// The stored sealed seed does not hash to the published commitment.
    #[error("the stored seed does not match the published commitment")]
    SeedMismatch,
    /// A stream whose events do not follow the state machine.
    #[error("corrupt event stream: {0}")]
    Corrupt(&'static str),
}

impl DomainError {
    /// The wire class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            DomainError::InvalidText { .. } | DomainError::OutOfRange { .. } => {
                ErrorClass::InvalidArgument
            }
            DomainError::NotFound(_) => ErrorClass::NotFound,
            DomainError::AlreadyExists(_) | DomainError::BetIdReused(_) => {
                ErrorClass::AlreadyExists
            }
            DomainError::SeedMismatch | DomainError::Corrupt(_) => ErrorClass::Internal,
            DomainError::ClientSeedFixed(_)
            | DomainError::SeatAlreadyContributed(_)
            | DomainError::PlayerAlreadyContributed(_)
            | DomainError::NoDelayedSource
            | DomainError::DelayedValueBound
            | DomainError::DrandBindsItself { .. }
            | DomainError::DrandWrongRound { .. }
            | DomainError::DrandStall { .. }
            | DomainError::DelayedValueMissing(_)
            | DomainError::Timelock(_)
            | DomainError::GameNotStarted
            | DomainError::AlreadyRevealed
            | DomainError::OperatorReveal(_)
            | DomainError::NonceExhausted
            | DomainError::BetPairRotated(_) => ErrorClass::FailedPrecondition,
        }
    }
}

/// Why a seed was revealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RevealReason {
    /// The normal end: the game finished (or, for a seed pair, the player rotated).
    Finished,
    /// An audited operator action before the normal end (e.g. an abandoned table).
    Operator {
        /// Who did it (operator account or name).
        operator: String,
        /// Why, as recorded in the event for auditors.
        justification: String,
    },
}

/// Longest accepted operator name of an audited reveal, in characters.
pub const MAX_OPERATOR_CHARS: usize = 64;

/// Longest accepted justification of an audited reveal, in characters.
pub const MAX_JUSTIFICATION_CHARS: usize = 500;

impl RevealReason {
    /// Validates an operator reveal's fields: `operator` 1 to [`MAX_OPERATOR_CHARS`]
    /// characters, `justification` 1 to [`MAX_JUSTIFICATION_CHARS`], neither blank nor with
    /// control characters (they go to the event and to the audit log line).
    pub fn operator(operator: &str, justification: &str) -> Result<Self, DomainError> {
        if operator.trim().is_empty() {
            return Err(DomainError::OperatorReveal("the operator's name"));
        }
        if justification.trim().is_empty() {
            return Err(DomainError::OperatorReveal("a justification"));
        }
        check_chars("operator", operator, MAX_OPERATOR_CHARS)?;
        check_chars("justification", justification, MAX_JUSTIFICATION_CHARS)?;
        Ok(RevealReason::Operator {
            operator: operator.to_owned(),
            justification: justification.to_owned(),
        })
    }

    /// An operator reveal as recorded in a stored event: both fields non-blank, but no
    /// length bound, so events recorded before the bounds existed still replay.
    pub fn recorded(operator: &str, justification: &str) -> Result<Self, DomainError> {
        if operator.trim().is_empty() {
            return Err(DomainError::OperatorReveal("the operator's name"));
        }
        if justification.trim().is_empty() {
            return Err(DomainError::OperatorReveal("a justification"));
        }
        Ok(RevealReason::Operator {
            operator: operator.to_owned(),
            justification: justification.to_owned(),
        })
    }
}

/// Rejects text over `max` bytes or with control characters, naming the field and the
/// bound (the caller's value is never echoed). Empty text is left to the caller's rule.
pub(crate) fn check_bytes(field: &'static str, value: &str, max: usize) -> Result<(), DomainError> {
    if value.len() > max {
        return Err(DomainError::InvalidText {
            field,
            reason: format!("is {} bytes, at most {max} allowed", value.len()),
        });
    }
    check_controls(field, value)
}

/// Rejects text over `max` characters, with control characters or with bidirectional controls
/// and invisible formatting characters (it is read by others), naming the field and the bound.
pub(crate) fn check_chars(field: &'static str, value: &str, max: usize) -> Result<(), DomainError> {
    // Bytes bound characters from above: a short text is never counted.
    if value.len() > max {
        let count = value.chars().count();
        if count > max {
            return Err(DomainError::InvalidText {
                field,
                reason: format!("is {count} characters, at most {max} allowed"),
            });
        }
    }
    check_controls(field, value)?;
    check_visible(field, value)
}

/// Rejects control characters, naming the field.
pub(crate) fn check_controls(field: &'static str, value: &str) -> Result<(), DomainError> {
    if value.chars().any(char::is_control) {
        return Err(DomainError::InvalidText {
            field,
            reason: "must not contain control characters".into(),
        });
    }
    Ok(())
}

/// Rejects the bidirectional controls and invisible formatting characters of text others
/// read (`fairdeal_text::check_visible`, the platform's one rule), naming the field and the
/// character's code point.
pub(crate) fn check_visible(field: &'static str, value: &str) -> Result<(), DomainError> {
    fairdeal_text::check_visible(value).map_err(|hidden| DomainError::InvalidText {
        field,
        reason: hidden.to_string(),
    })
}

/// Longest text accepted where a UUID is expected (the URN form, the longest
/// `uuid` accepts, is 45 characters).
pub const MAX_UUID_CHARS: usize = 45;

/// Parses a UUID field (`table_id`, `player_id`, `user_id`, `tournament_id`, `bet_id`):
/// an over-long or malformed value is named with a short quoted prefix of it.
pub fn parse_uuid(field: &'static str, value: &str) -> Result<uuid::Uuid, DomainError> {
    let bad = |reason: String| DomainError::InvalidText { field, reason };
    if value.is_empty() {
        return Err(bad("is required (a UUID)".into()));
    }
    if value.len() > MAX_UUID_CHARS {
        return Err(bad(format!(
            "must be a UUID (at most {MAX_UUID_CHARS} characters), got {} bytes",
            value.len()
        )));
    }
    uuid::Uuid::parse_str(value).map_err(|_| {
        bad(format!(
            "must be a UUID, got \"{}\"",
            fairdeal_text::shown(value)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_reveals_are_bounded() {
        assert!(RevealReason::operator(&"o".repeat(64), &"j".repeat(500)).is_ok());
        // Characters, not bytes: 500 two-byte characters fit.
        assert!(RevealReason::operator("ops", &"é".repeat(500)).is_ok());
        let err = RevealReason::operator(&"o".repeat(65), "why").unwrap_err();
        assert_eq!(err.class(), ErrorClass::InvalidArgument);
        assert_eq!(
            err.to_string(),
            "operator is 65 characters, at most 64 allowed"
        );
        let err = RevealReason::operator("ops", &"j".repeat(1_000_000)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "justification is 1000000 characters, at most 500 allowed"
        );
        let err = RevealReason::operator("ops", "line\nbreak").unwrap_err();
        assert!(err.to_string().starts_with("justification"), "{err}");
        let err = RevealReason::operator("o\u{1b}[31m", "why").unwrap_err();
        assert!(err.to_string().starts_with("operator"), "{err}");
        // Both are read by auditors: no text that displays as something else.
        let err = RevealReason::operator("ops\u{202E}", "why").unwrap_err();
        assert_eq!(err.class(), ErrorClass::InvalidArgument);
        assert!(
            err.to_string()
                .starts_with("operator must not contain U+202E"),
            "{err}"
        );
        let err = RevealReason::operator("ops", "abandoned\u{2067}by all").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("justification must not contain U+2067"),
            "{err}"
        );
        assert!(RevealReason::recorded("ops\u{202E}", "why").is_ok());
        // Stored events keep replaying whatever their length.
        assert!(RevealReason::recorded("ops", &"j".repeat(1_000_000)).is_ok());
        assert!(RevealReason::recorded("", "why").is_err());
    }

    #[test]
    fn uuid_fields_are_bounded_and_named() {
        let id = uuid::Uuid::now_v7();
        assert_eq!(parse_uuid("table_id", &id.to_string()), Ok(id));
        let err = parse_uuid("table_id", &"x".repeat(1_000_000)).unwrap_err();
        assert_eq!(err.class(), ErrorClass::InvalidArgument);
        let text = err.to_string();
        assert!(
            text.starts_with("table_id") && text.contains("45"),
            "{text}"
        );
        assert!(text.len() < 100, "{text}");
        let text = parse_uuid("player_id", "not-a-uuid")
            .unwrap_err()
            .to_string();
        assert_eq!(text, "player_id must be a UUID, got \"not-a-uuid\"");
        assert!(parse_uuid("user_id", "").is_err());
    }
}
