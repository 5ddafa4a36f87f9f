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
//! - [`table`]: a table's commitment: created, contributions, delayed value, client seed
//!   fixed at the first deal, revealed at the end.
//! - [`pair`]: a player's single-player seed pairs: active commitment, changeable client
//!   seed, bet counter, rotation.
//! - [`tournament`]: tournament sets: committed secret, named delayed value, bound value,
//!   generated boards, reveal.

pub mod client_seed;
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
    /// The client seed (or a set) needs the delayed value, still unknown.
    #[error("the delayed value of {0:?} is not bound yet")]
    DelayedValueMissing(String),
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
            | DomainError::DelayedValueMissing(_)
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

impl RevealReason {
    /// Validates an operator reveal's fields.
    pub fn operator(operator: &str, justification: &str) -> Result<Self, DomainError> {
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
