//! # fairdeal tables service
//!
//! Live tables: create (variant, time per move, bot seats), the lobby, sit and leave before
//! the start, seed contributions, moves, and each caller's view as a snapshot (`GetTable`)
//! or as a versioned stream (`Watch`). The game is the only rules authority; this service
//! maps commands and events between the wire, the game and the store, and drives the
//! fairness flow: a table's server seed is committed by the commitment service before any
//! seat is taken, every hand is dealt by the dealing service (salt = hand number), and the
//! seed is revealed when the game finishes.
//!
//! The game is [`Game`], its one registration: the table ([`domain`]) is generic over the
//! contract every game gives (`fairdeal_table_game::TableGame`), and the service reads and
//! writes the game's messages through its mapping (`fairdeal_games_wire::WireGame`), so it
//! names no rule, card or message of the game itself.
//!
//! Layout:
//! - [`clock`]: injected time for turn deadlines.
//! - [`domain`]: the table aggregate (pure): events, fold, decisions, visibility.
//! - [`events`]: domain events <-> protobuf (`fairdeal.tables.v1`), the `Aggregate` impl.
//! - [`view`]: a table as one caller sees it.
//! - [`lobby`]: the projections of the tables' events (the lobby and its query, the
//!   pending turn deadlines).
//! - [`service`]: the use cases on `Streams<Table>`, the calls to commitment and dealing,
//!   the advance of a table (deals, bots, timeouts, reveal).
//! - [`timers`]: the turn timers (a table advanced when its player's deadline passes).
//! - [`watch`]: watchers, each event sent as stored or as a placeholder.
//! - [`grpc`]: the tonic adapter: caller, parsing, status mapping.
//! - [`startup`]: settings and the [`Application`] on the platform kit.
#![forbid(unsafe_code)]

pub mod clock;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod lobby;
pub mod route;
pub mod service;
pub mod startup;
pub mod timers;
pub mod view;
pub mod watch;

pub use startup::{Application, TablesService, TablesSettings};

/// The games this service's tables play, as one: Jeu du 10 (crates/games) or French Tarot
/// (crates/tarot), each table's from its options (`fairdeal_games_wire::any`).
pub type Game = fairdeal_games_wire::any::AnyGame;
/// A table of [`Game`].
pub type Table = domain::Table<Game>;
/// An event of a table of [`Game`].
pub type TableEvent = domain::TableEvent<Game>;
/// Why a request to a table of [`Game`] is refused.
pub type TableError = domain::TableError<<Game as fairdeal_table_game::TableGame>::Error>;
/// A decision's events at a table of [`Game`].
pub type Decided = domain::Decided<Game>;
