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
//! - [`any`]: [`AnyGame`](any::AnyGame), every game a table can play as one game, the
//!   registration the tables service, the auditor and the client name.
//! - [`jeu_du_10`]: Jeu du 10 (`fairdeal.tables.v1`): seats, teams, cards, suits, bids,
//!   options, hand scores, the engine's events, views and actions.
//! - [`tarot`]: French Tarot (`fairdeal.tables.v1`, `tarot.proto` and `tarot_events.proto`):
//!   cards, contracts, poignées, chelems, options, deal scores, the engine's events (the
//!   écart's plain cards in a message private to the taker), views and actions.
//!
//! Each game reads only its own messages: a Tarot variant (event, options part, view part,
//! move) is not Jeu du 10's (`event_of` gives `None`, the others an error naming the field),
//! and the other way round.
//!
//! Reading validates everything it maps (a seat is one a table may have, a suit one of four,
//! a card code one the game's deck has); whether a value is *legal* (a bid above the last, a card the seat
//! holds) is the engine's to say. Writing is total: every engine value has its message.
//! Decoding bytes, message envelopes and which event a viewer may see stay with the callers.
#![forbid(unsafe_code)]

pub mod any;
pub mod error;
pub mod game;
pub mod jeu_du_10;
pub mod table;
pub mod tarot;

pub use error::{Reason, WireError};
pub use game::{WireEvent, WireGame};
