//! Why a request is refused: [`TableError`].

use fairdeal_table_game::Seat;

use super::MAX_SPECTATORS;

/// Why a request is refused, `E` being the game's own refusals. Every refusal changes
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError<E> {
    /// A request field is malformed (names it).
    #[error("{field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// No such table.
    #[error("table not found")]
    NotFound,
    /// The table exists already (a repeated create).
    #[error("the table exists already")]
    Exists,
    /// The caller holds no seat at this table.
    #[error("you are not seated at this table")]
    NotSeated,
    /// The seat is taken by another player.
    #[error("{0} is taken")]
    SeatTaken(Seat),
    /// The seat is held by a bot (taken, as tables.proto says: ALREADY_EXISTS).
    #[error("{0} is taken by a bot")]
    BotSeat(Seat),
    /// The caller sits at another seat of this table.
    #[error("you already sit at {0}")]
    AlreadySeated(Seat),
    /// The match has started: seats are fixed.
    #[error("the match has started: seats are fixed")]
    Started,
    /// The first hand has been dealt: the client seed is fixed.
    #[error("the first hand has been dealt: the client seed is fixed")]
    SeedFixed,
    /// The seat contributed already.
    #[error("{0} has already contributed a seed")]
    AlreadyContributed(Seat),
    /// A seated player cannot spectate their own table.
    #[error("you sit at {0} of this table: players do not spectate it")]
    SeatedSpectator(Seat),
    /// The table has as many spectators as it takes.
    #[error("the table has {MAX_SPECTATORS} spectators already")]
    SpectatorsFull,
    /// The client's version is not the table's.
    #[error("expected_version {expected} is stale: the table is at version {current}")]
    Stale {
        /// What the client sent.
        expected: u64,
        /// The table's version.
        current: u64,
    },
    /// The table reached its latest end (its seed is timelocked): nothing more is played.
    #[error("the table reached its latest end: nothing more is played at it")]
    Expired,
    /// The game refused the move (names the rule).
    #[error("{0}")]
    Rule(E),
}
