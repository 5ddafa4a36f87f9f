//! The table: a stream `table-<uuid>` of [`TableEvent`]s folded into a [`Table`], with the
//! game inside as the only rules authority. Generic over the game: everything a table
//! needs of one goes through its contract, [`TableGame`](fairdeal_table_game::TableGame).
//!
//! Pure: no IO, no clock. Every decision takes the state and returns the events to append
//! (or a [`TableError`]); nothing here mutates except [`Table::apply`]. What needs the
//! outside world (the commitment, a deal) is fetched by the service first and handed in.
//!
//! Visibility: every event is public except [`TableEvent::CardsDealt`], private to its seat,
//! and [`TableEvent::TalonDealt`], hidden from everyone, until the stream holds
//! [`TableEvent::GameFinished`] ([`visible`], the one rule both [`TableEvent::visible_to`]
//! and the watchers' wire path apply).
//!
//! Spectators: [`TableEvent::SpectatorJoined`] / [`TableEvent::SpectatorLeft`] record who
//! spectates (the chat channel's members); they change nothing a player decides on, so they
//! do not make a player's `expected_version` stale ([`Table::decided_at`]).
//!
//! Layout:
//! - `event`: the events ([`TableEvent`] and what they carry), who may see each, and what
//!   each says about who acts next.
//! - `error`: why a request is refused ([`TableError`]).
//! - `table`: the state ([`Table`]), its fold ([`Table::apply`], [`FoldError`]) and
//!   queries, and the engine's log of a stream ([`engine_log`]).
//! - `decide`: the decisions (sit, leave, spectate, contribute, act, deal, bots, timeouts,
//!   reveal), what the table needs next ([`Table::next`]), and the parsing of a new table's
//!   fields.

use fairdeal_table_game::Seat;

mod decide;
mod error;
mod event;
mod table;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod toy;

pub use decide::{
    DealtHand, Decided, Decision, Next, Setup, bot_seed, create, parse_command_id, parse_setup,
    seat_number,
};
pub use error::TableError;
pub use event::{
    CommandRef, Created, Due, FinishReason, Finished, Privacy, TableEvent, Viewer, visible,
};
pub use table::{FoldError, Table, engine_log};

/// Seconds per move when the creator asks for none.
pub const DEFAULT_MOVE_SECONDS: u32 = 30;
/// Allowed seconds per move.
pub const MOVE_SECONDS: std::ops::RangeInclusive<u32> = 5..=600;
/// The dealer of hand 0 (the deal then passes clockwise): seat 0, so seat 1 bids first.
pub const FIRST_DEALER: Seat = Seat::FIRST;
/// Longest command id.
pub const MAX_COMMAND_ID: usize = 64;
/// Consecutive timeouts after which a seat is abandoned to the bot.
pub const MAX_TIMEOUTS: u32 = 3;
/// Most users spectating one table at once.
pub const MAX_SPECTATORS: usize = 1_000;
