//! # fairdeal fairness core
//!
//! Everything an independent verifier needs to re-derive a deal or an outcome, bit-exact
//! (see the project's SPEC, sections 1 to 4). The crate is pure: no IO, no async, no clock,
//! and no panics on any input: every fallible step returns a typed error. The only impure
//! functions are [`commitment::new_server_seed`] and [`squaredeal::generate_session_key`],
//! which read the OS CSPRNG.
//!
//! Layout, in the order a deal is computed:
//! - [`generator`]: `SHA-256` key, `HMAC-SHA512` cursor blocks, numbers, `pick`.
//! - [`deck`]: canonical decks and card codes.
//! - [`shuffle`]: the `n - 1` number shuffle and its indices.
//! - [`number`]: distribution numbers (rank/unrank of dealt orders, up to 78!).
//! - [`deal`]: dealing conventions (one by one, Tarot packets and chien), sequence numbers.
//! - [`explain`]: human-readable walk-throughs (key, cursor bytes, each pick).
//! - [`commitment`]: server seeds, commitments and short codes.
//! - [`client_seed`]: a table's client seed from its players' contributions and a public
//!   delayed value.
//! - [`outcome`]: single-round games (dice, crash, mines, ...).
//! - [`duplicate`]: Tarot duplicate-deal selection with its candidate log.
//! - [`bigdeal`] and [`squaredeal`]: BigDeal-compatible bridge boards and the SquareDeal
//!   procedure.
#![forbid(unsafe_code)]

pub mod bigdeal;
pub mod client_seed;
pub mod commitment;
pub mod deal;
pub mod deck;
pub mod duplicate;
pub mod explain;
pub mod generator;
pub mod number;
pub mod outcome;
pub mod shuffle;
pub mod squaredeal;

pub use deck::Deck;
pub use duplicate::Suit;
pub use generator::{Generator, NumberSource, RawNumbers, SeedKeyer, pick};
