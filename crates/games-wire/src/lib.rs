//! fairdeal-games-wire: the one mapping between the games' protobuf messages and the rules
//! engines' pure types (crates/games), in both directions.
//!
//! The tables service writes its events and each caller's view through it and re-reads its
//! stored events through it; the auditor (`fairdeal audit`) decodes an exported game's
//! events through it to replay them; the client reads its seat's view and legal moves
//! through it for its bot. One mapping, so that what one side writes the others read the
//! same way: a seat, a suit or a bid cannot mean one thing to the service and another to
//! the auditor.
//!
//! Layout, one module per game, sharing the error type and the trait each game's mapping
//! implements:
//! - [`game`]: [`WireGame`], a game's messages as the tables service, the auditor and the
//!   client take them (beside the game's contract, `fairdeal_table_game::TableGame`).
//! - [`error`]: [`WireError`], a message field that does not map to the engine's types,
//!   named by its path in the message, with the [`Reason`].
//! - [`table`]: the table's own values, the same for every game (seats, a move's command
//!   reference and next turn, a hand's public start).
//! - [`jeu_du_10`]: Jeu du 10 (`fairdeal.tables.v1`): seats, teams, cards, suits, bids,
//!   options, hand scores, the engine's events, views and actions.
//!
//! Reading validates everything it maps (a seat is 0..3, a suit one of four, a card code
//! one the engine knows); whether a value is *legal* (a bid above the last, a card the seat
//! holds) is the engine's to say. Writing is total: every engine value has its message.
//! Decoding bytes, message envelopes and which event a viewer may see stay with the callers.
#![forbid(unsafe_code)]

pub mod error;
pub mod game;
pub mod jeu_du_10;
pub mod table;

pub use error::{Reason, WireError};
pub use game::{WireEvent, WireGame};
