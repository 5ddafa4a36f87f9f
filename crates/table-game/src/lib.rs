//! # fairdeal table-game: the contract a card game gives a table
//!
//! The tables service runs a game live, the auditor (`fairdeal audit`) re-decides a finished
//! one and the client's bot plays a seat; all three go through [`TableGame`], which a game's
//! pure crate implements (Jeu du 10: `fairdeal_games::Game`). The contract is what a table
//! needs of a game and nothing of how the game plays:
//! - **setup**: the options a table is created with, validated into a [`Layout`] (how many
//!   seats, 3 to [`MAX_SEATS`], and which deck the fairness crate deals), the command that
//!   starts the match, and the command a deal becomes;
//! - **decide, then apply**: [`TableGame::decide`] turns a command of an [`Actor`] into events
//!   or the game's error, never mutating; [`TableGame::apply`] is the only mutation;
//!   [`TableGame::verify`] re-decides a log (what an auditor runs);
//! - **where it stands**: whose [`turn`](TableGame::turn) it is, whether a deal is due, the
//!   [`legal commands`](TableGame::legal_commands) of a seat, the [`Outcome`] once over;
//! - **views and bots**: what a seat and a spectator may see, and a deterministic bot that
//!   chooses from a seat's view only;
//! - **dealing privacy**: the event that deals a hand, taken apart into a [`Dealt`] (each
//!   seat's cards and the talon) so the table stores each seat's cards as its own private
//!   event, and put back together when a log is replayed.
//!
//! Seats are numbered clockwise from 0 ([`Seat`]); sides (teams, or a taker and a called
//! partner against the rest) are the game's to form, reported in the [`Outcome`].
//!
//! What every game needs and would otherwise write again lives here too: the set of a
//! game's cards as a bit mask ([`CardSet`], over a card type numbered by [`IndexedCard`]),
//! the refusals every game makes alike ([`ContractError`], which a game's error embeds, with
//! the checks that make them) and the seed of one bot decision ([`decision_seed`]).
//!
//! Pure: no IO, no clock, no randomness but the seeds handed in.
#![forbid(unsafe_code)]

use std::fmt;

pub use fairdeal_fairness::Deck;
pub use fairdeal_fairness::deal::Deal;
use serde::{Deserialize, Serialize};

pub mod card_set;
pub mod refusal;

pub use card_set::{CardSet, IndexedCard};
pub use refusal::{ContractError, MatchPhase};

/// The most seats a table has (French Tarot for five).
pub const MAX_SEATS: usize = 5;

/// The fewest seats a table has (French Tarot for three).
pub const MIN_SEATS: usize = 3;

/// A seat at a table, numbered clockwise from 0; how many a table has is its game's
/// [`Layout::seats`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(try_from = "u8", into = "u8")]
pub struct Seat(u8);

/// A seat number no table has (at most [`MAX_SEATS`] seats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("seat {0} does not exist (a table has at most {MAX_SEATS} seats)")]
pub struct BadSeat(pub u8);

impl Seat {
    /// Seat 0.
    pub const FIRST: Seat = Seat(0);

    /// The seat numbered `n`, below [`MAX_SEATS`].
    pub const fn new(n: u8) -> Option<Seat> {
        if (n as usize) < MAX_SEATS {
            Some(Seat(n))
        } else {
            None
        }
    }

    /// The seat numbered `n` at a table of `seats` seats.
    pub fn at(n: u32, seats: usize) -> Option<Seat> {
        u8::try_from(n)
            .ok()
            .filter(|n| usize::from(*n) < seats)
            .and_then(Seat::new)
    }

    /// The seats of a table of `seats` seats, clockwise from 0.
    pub fn all(seats: usize) -> impl Iterator<Item = Seat> + Clone {
        (0..seats.min(MAX_SEATS)).map(|n| Seat(n as u8))
    }

    /// The seat number, as an index into per-seat lists.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The seat number.
    pub const fn number(self) -> u8 {
        self.0
    }

    /// The seat `steps` places clockwise from this one at a table of `seats` seats.
    pub fn offset(self, steps: usize, seats: usize) -> Seat {
        let seats = seats.clamp(1, MAX_SEATS);
        Seat(((self.index() + steps % seats) % seats) as u8)
    }
}

impl TryFrom<u8> for Seat {
    type Error = BadSeat;

    fn try_from(n: u8) -> Result<Self, Self::Error> {
        Seat::new(n).ok_or(BadSeat(n))
    }
}

impl From<Seat> for u8 {
    fn from(seat: Seat) -> u8 {
        seat.0
    }
}

impl fmt::Display for Seat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seat {}", self.0)
    }
}

/// The seed of one bot decision: a function of the bot's `seed`, the `version` of the
/// table the deciding seat sees and that `seat`, so that neighbouring versions and seats
/// draw unrelated streams from a PRNG seeded with it.
pub fn decision_seed(seed: u64, version: u64, seat: Seat) -> u64 {
    // Spread version and seat over the word; the PRNG's seeding then mixes the bits.
    let salt = version
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(u64::from(seat.number()) << 56);
    seed ^ salt
}

/// Who sends a command: the table (it starts the match and deals each hand) or a seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The table (the tables service, a simulator, an auditor replaying).
    Table,
    /// The player at a seat.
    Seat(Seat),
}

/// What a table of some options needs: its seats and the deck the fairness crate deals
/// (whose [`Deck::hands`] is the number of seats; its chien, if any, is the talon).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Seats at the table, [`MIN_SEATS`]..=[`MAX_SEATS`].
    pub seats: usize,
    /// The deck each hand is dealt from.
    pub deck: Deck,
}

/// A hand as dealt, taken out of the game's event that deals it ([`TableGame::dealt`]):
/// what the table stores as one public event and one private event per seat (and one for
/// the talon, which no seat sees until the game shows it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dealt<C> {
    /// The hand's number (the salt of its deal).
    pub hand: u32,
    /// Its dealer.
    pub dealer: Seat,
    /// The hands in dealing order: `hands[0]` went to the dealer's left.
    pub hands: Vec<Vec<C>>,
    /// The talon (the Tarot's chien; empty where a game has none).
    pub talon: Vec<C>,
}

impl<C> Dealt<C> {
    /// The seat hand `position` (in dealing order) went to, at a table of `seats` seats.
    pub fn seat_of(&self, position: usize, seats: usize) -> Seat {
        self.dealer.offset(position + 1, seats)
    }
}

/// How a finished game ended: its sides (each a set of seats: a team, or a taker and a
/// called partner, or a lone seat), each side's final score, and each side's placing
/// (1 is first; sides may share a placing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The sides, each its seats ascending; every seat is on exactly one side.
    pub sides: Vec<Vec<Seat>>,
    /// Each side's final score, in the order of `sides`.
    pub scores: Vec<i32>,
    /// Each side's placing, in the order of `sides` (1: won).
    pub placings: Vec<u32>,
}

impl Outcome {
    /// The sides placed first, in the order of `sides`.
    pub fn winners(&self) -> impl Iterator<Item = usize> + '_ {
        self.placings
            .iter()
            .enumerate()
            .filter(|(_, p)| **p == 1)
            .map(|(side, _)| side)
    }
}

/// Why a log is not what the rules produce ([`TableGame::verify`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError<E: std::error::Error, V: fmt::Debug> {
    /// An event that only follows another appears where a command's event was expected.
    #[error("event {index} ({kind}) does not follow from the events before it")]
    Unexpected {
        /// Position in the log.
        index: usize,
        /// Its type.
        kind: &'static str,
    },
    /// The command the event records is illegal at that point.
    #[error("event {index} records an illegal move: {error}")]
    Refused {
        /// Position in the log.
        index: usize,
        /// Why the rules refuse it.
        error: E,
    },
    /// The events from `index` on differ from what the rules produce.
    #[error("events from {index} differ from what the rules produce")]
    Mismatch {
        /// Position in the log.
        index: usize,
        /// What the rules produce there.
        expected: Vec<V>,
    },
}

/// A [`TableGame`]'s [`VerifyError`].
pub type VerifyErrorOf<G> = VerifyError<<G as TableGame>::Error, <G as TableGame>::Event>;

/// The contract a card game gives a table. A value of the type is one match: the fold of
/// its events from [`Default`] (before the match starts).
pub trait TableGame: Clone + fmt::Debug + Default + PartialEq + Eq + Send + Sync + 'static {
    /// The game's name: the registry's key, as tables and exports name it (`"jeu_du_10"`).
    const NAME: &'static str;
    /// The options a table is created with (variants, seats, targets).
    type Options: Clone + fmt::Debug + PartialEq + Eq + Send + Sync + 'static;
    /// What a seat or the table asks of the game.
    type Command: Clone + fmt::Debug + PartialEq + Send + Sync + 'static;
    /// What happened; the state is their fold.
    type Event: Clone + fmt::Debug + PartialEq + Eq + Send + Sync + 'static;
    /// One card of the game's deck.
    type Card: Copy + fmt::Debug + PartialEq + Eq + Send + Sync + 'static;
    /// Why a command or options are refused (names the rule).
    type Error: std::error::Error + Clone + PartialEq + Eq + Send + Sync + 'static;
    /// What a seat's player may see: the public view and the seat's own cards.
    type SeatView: Clone + fmt::Debug + Send + Sync + 'static;
    /// What anyone may see.
    type PublicView: Clone + fmt::Debug + Send + Sync + 'static;

    /// The seats and deck a table of `options` needs, or why the options are refused.
    fn layout(options: &Self::Options) -> Result<Layout, Self::Error>;

    /// The table's command that starts the match, `first_dealer` dealing the first hand.
    fn start(options: &Self::Options, first_dealer: Seat) -> Self::Command;

    /// The table's command that starts a hand with `deal` (dealt from [`Layout::deck`]).
    fn start_hand(deal: &Deal) -> Result<Self::Command, Self::Error>;

    /// The events `command` of `actor` causes, or why the rules refuse it. Never mutates.
    fn decide(
        &self,
        actor: Actor,
        command: &Self::Command,
    ) -> Result<Vec<Self::Event>, Self::Error>;

    /// Folds one event in: the only mutation. Total: an inconsistent event never panics.
    fn apply(&mut self, event: &Self::Event);

    /// The command (and its actor) an event records, for the events a command causes
    /// first; `None` for the events that follow another (a trick won, a hand scored).
    fn command_of(event: &Self::Event) -> Option<(Actor, Self::Command)>;

    /// A short name of the event's type, for errors.
    fn kind(event: &Self::Event) -> &'static str;

    /// The one seat that may see `event` while the game runs (French Tarot's écart is the
    /// taker's); `None`, the default: everyone may. The deal's hands and talon are not the
    /// game's to hide: the table stores them apart ([`TableGame::dealt`]).
    fn seen_only_by(event: &Self::Event) -> Option<Seat> {
        let _ = event;
        None
    }

    /// Whether the match has started.
    fn started(&self) -> bool;

    /// The number of the hand whose deal is due, while the game waits for one.
    fn deal_due(&self) -> Option<u32>;

    /// Hands dealt so far (the number of the next hand).
    fn hands_dealt(&self) -> u32;

    /// The seat that must act, while one must.
    fn turn(&self) -> Option<Seat>;

    /// Every command `seat` may send now (none when it is not the seat's turn).
    fn legal_commands(&self, seat: Seat) -> Vec<Self::Command>;

    /// How the game ended, once it has.
    fn outcome(&self) -> Option<Outcome>;

    /// What the player at `seat` may see (`None`: the game has no such seat).
    fn seat_view(&self, seat: Seat) -> Option<Self::SeatView>;

    /// What anyone may see.
    fn public_view(&self) -> Self::PublicView;

    /// The bot's command from a seat's view: a pure function of `view` and `seed`; `None`
    /// when the seat has nothing to do.
    fn bot_command(view: &Self::SeatView, seed: u64) -> Option<Self::Command>;

    /// The hand an event deals, taken apart; `None` for every other event.
    fn dealt(event: &Self::Event) -> Option<Dealt<Self::Card>>;

    /// The event that deals `dealt`, put back together ([`TableGame::dealt`]'s inverse).
    fn deal_event(dealt: Dealt<Self::Card>) -> Self::Event;

    /// The fold of `events` from the state before the match.
    fn replay<'a>(events: impl IntoIterator<Item = &'a Self::Event>) -> Self {
        let mut game = Self::default();
        for event in events {
            game.apply(event);
        }
        game
    }

    /// Re-decides a whole log: every event must be exactly what [`TableGame::decide`]
    /// produces for the command it records, so a forged score, an illegal card or a
    /// missing trick is rejected with the position of the first bad event. Returns the
    /// final state.
    fn verify(events: &[Self::Event]) -> Result<Self, VerifyErrorOf<Self>> {
        let mut game = Self::default();
        let mut index = 0;
        while let Some(event) = events.get(index) {
            let (actor, command) = Self::command_of(event).ok_or(VerifyError::Unexpected {
                index,
                kind: Self::kind(event),
            })?;
            let produced = game
                .decide(actor, &command)
                .map_err(|error| VerifyError::Refused { index, error })?;
            let end = index + produced.len();
            match events.get(index..end) {
                Some(logged) if logged == produced.as_slice() => {}
                _ => {
                    return Err(VerifyError::Mismatch {
                        index,
                        expected: produced,
                    });
                }
            }
            for e in &produced {
                game.apply(e);
            }
            index = end;
        }
        Ok(game)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_exist_below_the_table_size_and_offsets_wrap_around_it() {
        assert_eq!(Seat::new(4).map(Seat::index), Some(4));
        assert_eq!(Seat::new(5), None);
        assert_eq!(Seat::at(3, 3), None);
        assert_eq!(Seat::at(2, 3).map(Seat::number), Some(2));
        assert_eq!(Seat::at(u32::MAX, 5), None);
        let s = |n| Seat::new(n).unwrap_or_default();
        assert_eq!(s(2).offset(1, 3), s(0));
        assert_eq!(s(4).offset(7, 5), s(1));
        assert_eq!(
            Seat::all(4).map(Seat::number).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let dealt = Dealt::<u8> {
            hand: 0,
            dealer: s(3),
            hands: Vec::new(),
            talon: Vec::new(),
        };
        assert_eq!(dealt.seat_of(0, 4), s(0));
        assert_eq!(dealt.seat_of(3, 4), s(3));
    }

    #[test]
    fn the_winners_are_the_sides_placed_first() {
        let outcome = Outcome {
            sides: vec![vec![Seat(0), Seat(2)], vec![Seat(1), Seat(3)]],
            scores: vec![300, 510],
            placings: vec![2, 1],
        };
        assert_eq!(outcome.winners().collect::<Vec<_>>(), [1]);
    }
}
