//! # fairdeal tarot: French Tarot's rules engine
//!
//! French Tarot for 3, 4 and 5 players under the French Tarot Federation's official rules
//! (FFT, "Règlement officiel"): the auction (petite, garde, garde sans, garde contre), the
//! call of a king at 5, the chien and the écart, the play (follow, trump, overtrump, the
//! excuse), poignées, petit au bout, chelem, and the scoring of every deal with each
//! seat's share. Every rule, with its source, and every choice the rules leave open are in
//! `crates/tarot/RULES.md`.
//!
//! The crate is pure: no IO, no clock, no OS randomness and no panics on any input, so the
//! tables service runs a match live and the auditor replays a finished one through the
//! very same code.
//!
//! ## Shape: decide, then apply
//!
//! A match is a [`Tarot`]: the fold of its [`Event`]s.
//! - [`Tarot::decide`]`(&game, actor, &command)` checks a [`Command`] and returns the events
//!   it causes, or a [`RuleError`] naming the rule; it never mutates.
//! - [`Tarot::apply`]`(&mut game, &event)` is the only mutation, and is total.
//! - [`Tarot::seat_view`] and [`Tarot::public_view`] are what a seat and a spectator may
//!   see.
//! - [`table_game`]: the match through the contract every game gives the tables service,
//!   the auditor and the client ([`TableGame`]), whose provided `replay` and `verify` fold
//!   and re-decide a log.
//! - [`bot`] chooses a command from a [`SeatView`] and a seed; [`sim`] plays whole matches
//!   dealt by the fairness crate.
//!
//! Layout: [`card`] (cards, codes, points, sets), [`contract`] (contracts, poignées,
//! chelem), [`options`], [`command`], [`event`], [`error`], [`trick`] (what may be played,
//! who wins), [`scoring`] (pure scoring functions), [`game`] (the state machine), [`view`],
//! [`bot`], [`sim`], [`table_game`].
//!
//! ## Deals
//!
//! A deal comes from `fairdeal_fairness::deal::Deal` (deck `tarot3`, `tarot4` or `tarot5`
//! for 3, 4, 5 seats) with salt = the deal's number: [`Command::start_deal`] takes its
//! hands (hand 0 being the seat after the dealer) and its chien card for card, a card
//! being its canonical index, so the codes round-trip. The table contract's talon is the
//! chien.
#![forbid(unsafe_code)]

pub mod bot;
pub mod card;
pub mod command;
pub mod contract;
pub mod error;
pub mod event;
pub mod game;
pub mod options;
pub mod scoring;
pub mod sim;
pub mod table_game;
pub mod trick;
pub mod view;

pub use card::{Card, CardSet, Kind, Suit, TarotCards};
pub use command::Command;
pub use contract::{Camp, Chelem, Contract, Poignee};
pub use error::{ContractError, DealError, Phase, RuleError};
pub use event::{AuctionCall, DealScore, Event, ShownPoignee};
pub use game::Tarot;
pub use options::{OptionsError, TarotOptions};
pub use trick::{PlayedCard, Trick};
pub use view::{PublicView, SeatView};

/// The contract a table runs a game through, implemented for [`Tarot`] in [`table_game`].
pub use fairdeal_table_game::TableGame;
