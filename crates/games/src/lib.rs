//! # fairdeal games: rules engines
//!
//! Jeu du 10 (SPEC section 5): a trick-taking game for two teams of two, with its
//! variants (penalised aces, made-or-nothing, trump by purchase in points or with a
//! budget, Ruff / Deux-Cents). The crate is pure: no IO, no clock, no OS randomness and
//! no panics on any input, so the tables service runs a match live and the auditor
//! replays a finished one through the very same code.
//!
//! ## Shape: decide, then apply
//!
//! A match is a [`Game`]: the fold of its [`Event`]s.
//! - [`Game::decide`]`(&game, actor, &command)` checks a [`Command`] (start the match,
//!   start a hand from a deal, bid, pass, name trump, play a card) and returns the events
//!   it causes, or a [`RuleError`] saying why not. It never mutates: an illegal command
//!   changes nothing.
//! - [`Game::apply`]`(&mut game, &event)` is the only mutation; [`Game::replay`] folds a
//!   log, and [`Game::verify`] re-decides a log event by event (what an auditor runs).
//! - [`Game::seat_view`] and [`Game::public_view`] are what a seat and a spectator may see.
//! - [`table_game`]: the match as a table runs it, through the contract every game gives
//!   the tables service, the auditor and the client ([`TableGame`]).
//! - [`bot`] holds deterministic bots choosing from a [`SeatView`]; [`sim`] plays whole
//!   matches with them, dealt by the fairness crate.
//!
//! Layout: [`card`] (cards and sets), [`seat`] (seats and teams), [`options`] (table
//! options, validated into [`Rules`]), [`command`], [`event`], [`error`], [`scoring`]
//! (pure scoring functions), [`game`] (the state machine), [`view`], [`bot`], [`sim`].
//!
//! ## Deals
//!
//! Hands come from `fairdeal_fairness::deal::Deal` (deck `dix` or `ruff`), hand 0 being
//! the first player served, the dealer's left: [`Command::start_hand`] converts a deal,
//! and the `hand_started` event keeps the hands in that dealing order with the dealer, so
//! an auditor compares them with the re-derived deal directly. Hand `h` uses salt `h`
//! ([`Game::next_hand_number`]).
//!
//! ## Rule decisions where SPEC is silent
//!
//! The full list, with reasons, is in `crates/games/RULES.md`; in short:
//! - The first dealer is chosen by the table (`start_match.first_dealer`); the deal then
//!   passes clockwise. The auction starts at the dealer's left.
//! - "The game" may be bid over any bid, including 100; nothing can be bid over it. It
//!   is "made" when the team wins every card point of the hand (not necessarily every
//!   trick). The hand then moves no score: the match is won or lost outright.
//! - Under penalised aces "card points" are the net points (non-ace points plus ace
//!   transfers); the defence above the threshold that did not bid scores nothing, not
//!   even its negative transfers.
//! - Made-or-nothing's failure award (bid plus shortfall) replaces the defence's card
//!   points, so the defence threshold does not apply to it.
//! - Trump by purchase uses the same auction (ascending bids, a pass is final, the last
//!   player left with no bid must bid); bids are multiples of 5 from 5 up to the hand's
//!   points (100, or 60 with penalised aces) in points mode, and whole amounts from 1 up
//!   to the team's remaining budget in budget mode. The buyer names trump and leads.
//!   There is no defence threshold and no "game" bid. A team whose budget is empty may
//!   pass even as the last player; if everyone has then passed, that last player takes
//!   trump for nothing (price 0). Budgets are per match and never refilled.
//! - When both teams reach the target in the same hand, the declarer's (buyer's) team
//!   wins, in every mode.
#![forbid(unsafe_code)]

pub mod bot;
pub mod card;
pub mod command;
pub mod error;
pub mod event;
pub mod game;
pub mod options;
pub mod scoring;
pub mod seat;
pub mod sim;
pub mod table_game;
pub mod view;

pub use bot::{Bot, HeuristicBot, RandomBot};
pub use card::{Card, CardSet, JeuDu10Cards, Rank, Suit};
pub use command::{Actor, Bid, Call, Command};
pub use error::{ContractError, DealError, Phase, RuleError};
pub use event::{Event, HandScore, MatchEnd};
pub use game::{Game, VerifyError};
pub use options::{OptionsError, Purchase, Rules, TableOptions};
pub use seat::{Seat, Team};
pub use table_game::engine_seat;
pub use view::{PublicView, SeatView};

/// The contract a table runs a game through, implemented for [`Game`] in [`table_game`].
pub use fairdeal_table_game::TableGame;
