//! Single-round games (SPEC section 3), computed from any [`NumberSource`].
//!
//! A game's result depends only on the numbers `U_0, U_1, ...` of cursors `0, 1, ...` read in
//! order, so the same code serves the seeded [`Generator`] (what the platform runs) and
//! [`RawNumbers`] (the raw generator output a verifier pastes). Every index is
//! `floor(u * n) = (U * n) >> 64` ([`pick`]); every decimal is kept as an exact integer
//! count of hundredths ([`Hundredths`]), never as a float.
//!
//! Layout:
//! - [`Game`] names a game; [`Options`] are its untyped parameters as a caller supplies them;
//!   [`Round::new`] validates them into a [`Round`], whose parameters are newtypes that
//!   cannot hold an out-of-range value ([`MineCount`], [`Tickets`], [`Pins`], [`Spins`]).
//! - [`Round::play`] reads the numbers and returns the typed [`Outcome`];
//!   [`Round::from_seeds`] and [`Round::from_bytes`] are the two usual entry points, and
//!   [`Round::explain_seeds`] / [`Round::explain_bytes`] also return a walk-through of every
//!   number used and how it became the result.
//!
//! Files: this module holds the shared types ([`Game`], [`Options`], [`Round`], [`Outcome`])
//! and the dispatch from a round to its game; each game or family of games has its own
//! file with its constants and its one implementation: `dice`, `wheel` (double, x50,
//! jackpot), `crash` (crash, overgo), `mines`, `tower`, `slot`, `plinko`; `hundredths`
//! holds the exact decimals of [`Hundredths`]. Everything public is re-exported here.
//!
//! How many numbers each game reads (this fixes how many raw bytes a verifier must supply:
//! whole 64-byte cursor blocks covering them; extra blocks are ignored):
//!
//! | game                                   | numbers read            | cursors        |
//! |----------------------------------------|-------------------------|----------------|
//! | dice, double, x50, jackpot, crash, overgo | `U_0`                | 1              |
//! | mines                                  | `U_0 .. U_23` (shuffle of 25 cells) | 3  |
//! | tower                                  | `U_0 .. U_39` (row `r`: `U_4r .. U_4r+3`) | 5 |
//! | slot, `K` spins                        | spin `k`: first 5 numbers of cursor `k` | `K` |
//! | plinko, `n` pins                       | `U_0 .. U_(n-1)`        | 1 (n = 8) or 2 |
//!
//! JSON form (serde): `{"game": "<name>", "result": <result>}` where the result is
//! - dice, crash, overgo: a decimal **string** with exactly two decimals (`"50.00"`,
//!   `"1.90"`). Strings, because a JSON number goes through a binary float in most readers
//!   and `0.29` is not representable; a verifier compares the text exactly.
//! - double, x50: the slot index (`0..15`, `0..54`); jackpot: the winning ticket (`1..=T`).
//! - mines: the mine cells (0..24, row by row from the top-left), in the order the shuffle
//!   placed them (the first `M` cells of the permutation).
//! - tower: 10 rows, each the 4 positions (0..4) drawn, in drawing order.
//! - slot: one array of 5 reel stops per spin.
//! - plinko: `{"bucket": b, "path": [..]}`, the path being each pin's `floor(u * 2)`
//!   (0 = left, 1 = right) and the bucket their sum (0..=n).

mod crash;
mod dice;
mod hundredths;
mod mines;
mod plinko;
mod slot;
mod tower;
mod wheel;

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::explain::{Explanation, Recorder};
use crate::generator::{
    BLOCK_LEN, BadRawLength, Exhausted, Generator, NUMBERS_PER_BLOCK, NumberSource, RawNumbers,
    pick,
};

pub use hundredths::{BadHundredths, Hundredths};
pub use mines::MINES_CELLS;
pub use plinko::PlinkoDrop;
pub use slot::{SLOT_LAST_STOPS, SLOT_STOPS};
pub use tower::{TOWER_DRAWN, TOWER_POSITIONS, TOWER_ROWS};

/// The single-round games.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Game {
    /// A roll from 0.00 to 100.00.
    Dice,
    /// A wheel of 15 slots.
    Double,
    /// A wheel of 54 slots.
    X50,
    /// One winning ticket among `T`.
    Jackpot,
    /// A crash multiplier with a 5% house edge.
    Crash,
    /// A crash multiplier with a 3% house edge.
    Overgo,
    /// `M` mines on a 5x5 board.
    Mines,
    /// 10 rows of 5 positions, 4 drawn per row.
    Tower,
    /// 5 reels (4 of 30 stops, 1 of 41), one cursor per spin.
    Slot,
    /// A ball falling through `n` pins.
    Plinko,
}

/// A game name that is not one of [`Game::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown game {0:?} (expected one of dice, double, x50, jackpot, crash, overgo, mines, tower, slot, plinko)"
)]
pub struct UnknownGame(pub String);

impl Game {
    /// All games, in a stable order.
    pub const ALL: [Game; 10] = [
        Game::Dice,
        Game::Double,
        Game::X50,
        Game::Jackpot,
        Game::Crash,
        Game::Overgo,
        Game::Mines,
        Game::Tower,
        Game::Slot,
        Game::Plinko,
    ];

    /// The name used on the command line and in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Game::Dice => "dice",
            Game::Double => "double",
            Game::X50 => "x50",
            Game::Jackpot => "jackpot",
            Game::Crash => "crash",
            Game::Overgo => "overgo",
            Game::Mines => "mines",
            Game::Tower => "tower",
            Game::Slot => "slot",
            Game::Plinko => "plinko",
        }
    }
}

/// The round as the arguments of `fairdeal outcome` that replay it: the game, then its
/// option (`dice`, `mines --mines 3`, `jackpot --tickets 500`, `slot --spins 1`,
/// `plinko --pins 16`). Records of a bet carry it so an auditor can rerun the bet as
/// written.
impl fmt::Display for Round {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let game = self.game().name();
        match self {
            Round::Jackpot(tickets) => write!(f, "{game} --tickets {}", tickets.get()),
            Round::Mines(mines) => write!(f, "{game} --mines {}", mines.get()),
            Round::Slot(spins) => write!(f, "{game} --spins {}", spins.get()),
            Round::Plinko(pins) => write!(f, "{game} --pins {}", pins.get()),
            Round::Dice
            | Round::Double
            | Round::X50
            | Round::Crash
            | Round::Overgo
            | Round::Tower => f.write_str(game),
        }
    }
}

impl fmt::Display for Game {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Game {
    type Err = UnknownGame;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Game::ALL
            .into_iter()
            .find(|g| g.name() == s)
            .ok_or_else(|| UnknownGame(s.to_owned()))
    }
}

/// Game parameters as a caller supplies them, before validation by [`Round::new`].
///
/// Each field is `None` when not given. Wide integer types so that validation, not the
/// parser, reports an out-of-range value with the option's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Number of mines (mines only): 1..=24.
    pub mines: Option<u64>,
    /// Number of tickets (jackpot only): at least 1.
    pub tickets: Option<u64>,
    /// Number of pins (plinko only): 8..=16.
    pub pins: Option<u64>,
    /// Number of spins (slot only): 1..=[`MAX_SPINS`], default 1.
    pub spins: Option<u64>,
}

/// A game parameter that is missing, out of range, or not a parameter of the game.
///
/// The message starts with the option's name (`mines: 25 is out of range (1..=24)`), so a
/// command line can prefix it with `--`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// The game needs this option and it was not given. There are no defaults for the
    /// parameters that change the result's meaning: a verifier must state the ones the game
    /// was played with.
    #[error("{option}: required by {game}")]
    Missing {
        /// The option's name.
        option: &'static str,
        /// The game that needs it.
        game: Game,
    },
    /// The value is outside the allowed range.
    #[error("{option}: {value} is out of range ({allowed})")]
    OutOfRange {
        /// The option's name.
        option: &'static str,
        /// The value given.
        value: u64,
        /// The allowed range, as text.
        allowed: &'static str,
    },
    /// The option was given to a game that has no such parameter.
    #[error("{option}: not a parameter of {game}")]
    NotApplicable {
        /// The option's name.
        option: &'static str,
        /// The game it was given to.
        game: Game,
    },
}

impl OptionError {
    /// The name of the offending option.
    pub fn option(&self) -> &'static str {
        match self {
            OptionError::Missing { option, .. }
            | OptionError::OutOfRange { option, .. }
            | OptionError::NotApplicable { option, .. } => option,
        }
    }
}

/// Number of mines on the 5x5 board: 1..=24.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MineCount(u8);

impl MineCount {
    /// Validates a mine count.
    pub fn new(value: u64) -> Result<Self, OptionError> {
        match u8::try_from(value) {
            Ok(m @ 1..=24) => Ok(MineCount(m)),
            _ => Err(OptionError::OutOfRange {
                option: "mines",
                value,
                allowed: "1..=24",
            }),
        }
    }

    /// The count.
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// Number of jackpot tickets: at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tickets(NonZeroU64);

impl Tickets {
    /// Validates a ticket count.
    pub fn new(value: u64) -> Result<Self, OptionError> {
        NonZeroU64::new(value)
            .map(Tickets)
            .ok_or(OptionError::OutOfRange {
                option: "tickets",
                value,
                allowed: "at least 1",
            })
    }

    /// The count.
    pub const fn get(self) -> u64 {
        self.0.get()
    }
}

/// Number of plinko pins (rows the ball bounces on): 8..=16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pins(u8);

impl Pins {
    /// Validates a pin count.
    pub fn new(value: u64) -> Result<Self, OptionError> {
        match u8::try_from(value) {
            Ok(n @ 8..=16) => Ok(Pins(n)),
            _ => Err(OptionError::OutOfRange {
                option: "pins",
                value,
                allowed: "8..=16",
            }),
        }
    }

    /// The count.
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// The most slot spins one request may ask for. Each spin is one HMAC call; the cap keeps
/// a single verification request cheap (1,000 spins is 64 kB of raw bytes).
pub const MAX_SPINS: u16 = 1000;

/// Number of slot spins: 1..=[`MAX_SPINS`]. Spin `k` uses cursor `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Spins(u16);

impl Spins {
    /// Validates a spin count.
    pub fn new(value: u64) -> Result<Self, OptionError> {
        match u16::try_from(value) {
            Ok(k @ 1..=MAX_SPINS) => Ok(Spins(k)),
            _ => Err(OptionError::OutOfRange {
                option: "spins",
                value,
                allowed: "1..=1000",
            }),
        }
    }

    /// The count.
    pub const fn get(self) -> u16 {
        self.0
    }
}

/// One validated game with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Round {
    /// `floor(u0 * 10001) / 100`.
    Dice,
    /// `floor(u0 * 15)`.
    Double,
    /// `floor(u0 * 54)`.
    X50,
    /// `floor(u0 * T) + 1`.
    Jackpot(Tickets),
    /// `max(1, 950000 / (h + 1))`, `h = floor(u0 * 10^6)`, rounded half-up to 2 decimals.
    Crash,
    /// As crash with 970000.
    Overgo,
    /// The first `M` cells of the shuffle of the 25 cells.
    Mines(MineCount),
    /// 10 rows, 4 of 5 positions drawn per row, each with `floor(u * remaining)`. (The
    /// published reference code for this game forgets the multiplication by `remaining`;
    /// this is the algorithm the SPEC describes.)
    Tower,
    /// `K` spins of 5 reels.
    Slot(Spins),
    /// `n` pins, bucket = number of right bounces.
    Plinko(Pins),
}

impl Round {
    /// Validates `options` for `game`.
    ///
    /// mines, tickets and pins are required by their game; spins defaults to 1. An option
    /// given to a game that does not take it is an error rather than silently ignored: a
    /// verifier who passes `--mines` to `tower` has mistyped something.
    pub fn new(game: Game, options: &Options) -> Result<Round, OptionError> {
        let given = [
            ("mines", options.mines.is_some(), Game::Mines),
            ("tickets", options.tickets.is_some(), Game::Jackpot),
            ("pins", options.pins.is_some(), Game::Plinko),
            ("spins", options.spins.is_some(), Game::Slot),
        ];
        for (option, is_given, owner) in given {
            if is_given && owner != game {
                return Err(OptionError::NotApplicable { option, game });
            }
        }
        let required =
            |value: Option<u64>, option| value.ok_or(OptionError::Missing { option, game });
        Ok(match game {
            Game::Dice => Round::Dice,
            Game::Double => Round::Double,
            Game::X50 => Round::X50,
            Game::Jackpot => Round::Jackpot(Tickets::new(required(options.tickets, "tickets")?)?),
            Game::Crash => Round::Crash,
            Game::Overgo => Round::Overgo,
            Game::Mines => Round::Mines(MineCount::new(required(options.mines, "mines")?)?),
            Game::Tower => Round::Tower,
            Game::Slot => Round::Slot(Spins::new(options.spins.unwrap_or(1))?),
            Game::Plinko => Round::Plinko(Pins::new(required(options.pins, "pins")?)?),
        })
    }

    /// The game played.
    pub const fn game(&self) -> Game {
        match self {
            Round::Dice => Game::Dice,
            Round::Double => Game::Double,
            Round::X50 => Game::X50,
            Round::Jackpot(_) => Game::Jackpot,
            Round::Crash => Game::Crash,
            Round::Overgo => Game::Overgo,
            Round::Mines(_) => Game::Mines,
            Round::Tower => Game::Tower,
            Round::Slot(_) => Game::Slot,
            Round::Plinko(_) => Game::Plinko,
        }
    }

    /// How many numbers [`Round::play`] reads (for slot, including the 3 unused numbers of
    /// each spin's cursor).
    pub const fn numbers_read(&self) -> usize {
        match self {
            Round::Dice
            | Round::Double
            | Round::X50
            | Round::Jackpot(_)
            | Round::Crash
            | Round::Overgo => 1,
            Round::Mines(_) => MINES_CELLS as usize - 1,
            Round::Tower => TOWER_ROWS * TOWER_DRAWN,
            Round::Slot(spins) => spins.get() as usize * NUMBERS_PER_BLOCK,
            Round::Plinko(pins) => pins.get() as usize,
        }
    }

    /// How many cursors (HMAC calls, 64-byte blocks) the round needs.
    pub const fn cursors(&self) -> usize {
        self.numbers_read().div_ceil(NUMBERS_PER_BLOCK)
    }

    /// Plays the round with the numbers of `source`, read from its current position (which
    /// must be the start of cursor 0 for the SPEC's result).
    pub fn play<S: NumberSource + ?Sized>(&self, source: &mut S) -> Result<Outcome, Exhausted> {
        play_traced(self, &mut Reader::new(source), None)
    }

    /// Plays the round for one `(server_seed, client_seed, salt)` triple.
    pub fn from_seeds(&self, server_seed: &str, client_seed: &str, salt: &str) -> Outcome {
        let generator = Generator::new(server_seed, client_seed, salt);
        self.play_generator(&generator)
    }

    /// Plays the round from an already built generator.
    pub fn play_generator(&self, generator: &Generator) -> Outcome {
        let mut numbers = generator.numbers();
        match self.play(&mut numbers) {
            Ok(outcome) => outcome,
            // The seeded stream never runs out, so `play` cannot fail on it; this arm keeps
            // the function total without a panic path.
            Err(_) => self.fallback(),
        }
    }

    /// Plays the round from raw generator output (cursor blocks of 64 bytes, concatenated,
    /// cursor 0 first). Blocks beyond [`Round::cursors`] are ignored.
    pub fn from_bytes(&self, bytes: &[u8]) -> Result<Outcome, RawError> {
        let mut source = self.raw_source(bytes)?;
        self.play(&mut source)
            .map_err(|_| self.too_few(bytes.len()))
    }

    /// [`Round::from_seeds`] with a walk-through: the seeds, the key, every cursor used with
    /// its numbers, and each step from the numbers to the result.
    pub fn explain_seeds(
        &self,
        server_seed: &str,
        client_seed: &str,
        salt: &str,
    ) -> (Outcome, Explanation) {
        let generator = Generator::new(server_seed, client_seed, salt);
        let mut explanation = Explanation::new();
        explanation.seeds(server_seed, client_seed, salt, generator.key());
        let mut numbers = generator.numbers();
        match self.explain_into(&mut numbers, Some(client_seed), explanation) {
            Ok(done) => done,
            // Unreachable for the endless seeded stream; see `play_generator`.
            Err(_) => (self.fallback(), Explanation::new()),
        }
    }

    /// [`Round::from_bytes`] with a walk-through of every number used.
    pub fn explain_bytes(&self, bytes: &[u8]) -> Result<(Outcome, Explanation), RawError> {
        let mut source = self.raw_source(bytes)?;
        let mut explanation = Explanation::new();
        explanation.line(format!(
            "generator bytes: {} cursor block(s) of 64 bytes supplied",
            bytes.len() / BLOCK_LEN
        ));
        self.explain_into(&mut source, None, explanation)
            .map_err(|_| self.too_few(bytes.len()))
    }

    fn raw_source<'a>(&self, bytes: &'a [u8]) -> Result<RawNumbers<'a>, RawError> {
        let source = RawNumbers::new(bytes)?;
        if bytes.len() / BLOCK_LEN < self.cursors() {
            return Err(self.too_few(bytes.len()));
        }
        Ok(source)
    }

    fn too_few(&self, got: usize) -> RawError {
        RawError::TooFewBytes {
            game: self.game(),
            needed: self.cursors() * BLOCK_LEN,
            got,
        }
    }

    fn explain_into<S: NumberSource + ?Sized>(
        &self,
        source: &mut S,
        client_seed: Option<&str>,
        mut explanation: Explanation,
    ) -> Result<(Outcome, Explanation), Exhausted> {
        let mut recorder = Recorder::new(source);
        let mut steps = Explanation::new();
        let outcome = play_traced(self, &mut Reader::new(&mut recorder), Some(&mut steps))?;
        let used = recorder.read.len();
        // Complete the last cursor so its full 64 bytes are shown: a verifier compares them
        // with an HMAC computed elsewhere. The extra numbers play no part in the result.
        while !recorder.read.len().is_multiple_of(NUMBERS_PER_BLOCK) {
            recorder.next_number()?;
        }
        explanation.line(format!(
            "game: {} ({} number(s) read, {} cursor(s))",
            describe(self),
            used,
            self.cursors()
        ));
        explanation.numbers(client_seed, &recorder.read);
        if used < recorder.read.len() {
            explanation.line(format!(
                "(U[{used}] and later numbers of the last cursor are not used)"
            ));
        }
        explanation.line(steps.finish().trim_end_matches('\n'));
        explanation.line(format!("result: {outcome}"));
        Ok((outcome, explanation))
    }

    /// A well-formed outcome of the right game, only returned on the unreachable failure of
    /// a seeded stream.
    fn fallback(&self) -> Outcome {
        match self.play(&mut Zeros) {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Dice(Hundredths(0)),
        }
    }
}

/// An endless source of zeros, for [`Round::fallback`].
struct Zeros;

impl NumberSource for Zeros {
    fn next_number(&mut self) -> Result<u64, Exhausted> {
        Ok(0)
    }
}

/// Raw generator output that cannot be used for a round.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RawError {
    /// Not a whole, non-empty number of 64-byte blocks.
    #[error(transparent)]
    BadLength(#[from] BadRawLength),
    /// Fewer cursor blocks than the game reads.
    #[error("{game} needs {needed} bytes of generator output, got {got}")]
    TooFewBytes {
        /// The game played.
        game: Game,
        /// Bytes needed (whole cursor blocks).
        needed: usize,
        /// Bytes supplied.
        got: usize,
    },
}

/// The result of a round (see the module docs for the JSON form).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "game", content = "result", rename_all = "lowercase")]
pub enum Outcome {
    /// The roll, `0.00..=100.00`.
    Dice(Hundredths),
    /// The slot, `0..15`.
    Double(u8),
    /// The slot, `0..54`.
    X50(u8),
    /// The winning ticket, `1..=T`.
    Jackpot(u64),
    /// The multiplier, at least `1.00`.
    Crash(Hundredths),
    /// The multiplier, at least `1.00`.
    Overgo(Hundredths),
    /// The `M` mine cells (`0..25`), in shuffle order.
    Mines(Vec<u8>),
    /// For each of the 10 rows, the 4 positions (`0..5`) drawn, in drawing order.
    Tower(Vec<[u8; TOWER_DRAWN]>),
    /// For each spin, the 5 reel stops (`0..30` four times, then `0..41`).
    Slot(Vec<[u8; 5]>),
    /// The plinko drop.
    Plinko(PlinkoDrop),
}

impl Outcome {
    /// The game this outcome belongs to.
    pub const fn game(&self) -> Game {
        match self {
            Outcome::Dice(_) => Game::Dice,
            Outcome::Double(_) => Game::Double,
            Outcome::X50(_) => Game::X50,
            Outcome::Jackpot(_) => Game::Jackpot,
            Outcome::Crash(_) => Game::Crash,
            Outcome::Overgo(_) => Game::Overgo,
            Outcome::Mines(_) => Game::Mines,
            Outcome::Tower(_) => Game::Tower,
            Outcome::Slot(_) => Game::Slot,
            Outcome::Plinko(_) => Game::Plinko,
        }
    }
}

/// Human-readable result, as the last line of an explanation shows it.
impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(f: &mut fmt::Formatter<'_>, items: &[u8]) -> fmt::Result {
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{x}")?;
            }
            Ok(())
        }
        match self {
            Outcome::Dice(h) | Outcome::Crash(h) | Outcome::Overgo(h) => write!(f, "{h}"),
            Outcome::Double(s) | Outcome::X50(s) => write!(f, "slot {s}"),
            Outcome::Jackpot(t) => write!(f, "ticket {t}"),
            Outcome::Mines(cells) => {
                f.write_str("mines at cells ")?;
                list(f, cells)
            }
            Outcome::Tower(rows) => {
                for (r, row) in rows.iter().enumerate() {
                    write!(f, "{}row {r}: ", if r > 0 { "; " } else { "" })?;
                    list(f, row)?;
                }
                Ok(())
            }
            Outcome::Slot(spins) => {
                for (k, stops) in spins.iter().enumerate() {
                    write!(f, "{}spin {k}: ", if k > 0 { "; " } else { "" })?;
                    list(f, stops)?;
                }
                Ok(())
            }
            Outcome::Plinko(drop) => {
                write!(f, "bucket {} (path ", drop.bucket)?;
                for step in &drop.path {
                    write!(f, "{step}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// The game and its parameters, for explanation headers.
fn describe(round: &Round) -> String {
    match round {
        Round::Jackpot(t) => format!("jackpot with {} tickets", t.get()),
        Round::Mines(m) => format!("mines with {} mines", m.get()),
        Round::Slot(k) => format!("slot, {} spin(s)", k.get()),
        Round::Plinko(n) => format!("plinko with {} pins", n.get()),
        other => other.game().name().to_owned(),
    }
}

/// Reads numbers and counts them, so explanations can name `U[i]`.
struct Reader<'a, S: NumberSource + ?Sized> {
    source: &'a mut S,
    /// Index of the next number.
    index: usize,
}

impl<'a, S: NumberSource + ?Sized> Reader<'a, S> {
    fn new(source: &'a mut S) -> Self {
        Reader { source, index: 0 }
    }

    /// The next number and its index.
    #[inline]
    fn next(&mut self) -> Result<(usize, u64), Exhausted> {
        let n = self.source.next_number()?;
        let i = self.index;
        self.index += 1;
        Ok((i, n))
    }
}

impl<S: NumberSource + ?Sized> NumberSource for Reader<'_, S> {
    #[inline]
    fn next_number(&mut self) -> Result<u64, Exhausted> {
        self.next().map(|(_, n)| n)
    }
}

/// Adds a line to the walk-through, if one is being written. The line is built lazily so
/// that plain play never formats text.
#[inline]
fn note(steps: &mut Option<&mut Explanation>, line: impl FnOnce() -> String) {
    if let Some(steps) = steps.as_deref_mut() {
        steps.line(line());
    }
}

/// The one implementation of every game; `steps` receives the walk-through when asked.
fn play_traced<S: NumberSource + ?Sized>(
    round: &Round,
    reader: &mut Reader<'_, S>,
    mut steps: Option<&mut Explanation>,
) -> Result<Outcome, Exhausted> {
    let steps = &mut steps;
    Ok(match *round {
        Round::Dice => Outcome::Dice(dice::roll(reader, steps)?),
        Round::Double => Outcome::Double(wheel::slot(reader, 15, steps)?),
        Round::X50 => Outcome::X50(wheel::slot(reader, 54, steps)?),
        Round::Jackpot(tickets) => Outcome::Jackpot(wheel::ticket(reader, tickets, steps)?),
        Round::Crash => Outcome::Crash(crash::crash(reader, crash::CRASH_NUMERATOR, steps)?),
        Round::Overgo => Outcome::Overgo(crash::crash(reader, crash::OVERGO_NUMERATOR, steps)?),
        Round::Mines(count) => Outcome::Mines(mines::place(reader, count, steps)?),
        Round::Tower => Outcome::Tower(tower::rows(reader, steps)?),
        Round::Slot(spins) => Outcome::Slot(slot::spins(reader, spins, steps)?),
        Round::Plinko(pins) => Outcome::Plinko(plinko::fall(reader, pins, steps)?),
    })
}

/// Draws `count` items from `items` without replacement: each number `u` takes the item at
/// `floor(u * remaining)` out of the remaining list (SPEC section 2). When `count` is one
/// less than the list, the last item is appended, giving the full shuffle of section 2.
fn draw<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    mut items: Vec<u8>,
    count: usize,
    steps: &mut Option<&mut Explanation>,
) -> Result<Vec<u8>, Exhausted> {
    let full = count + 1 == items.len();
    let mut out = Vec::with_capacity(items.len());
    for _ in 0..count {
        let (i, u) = reader.next()?;
        let k = pick(u, items.len() as u64) as usize;
        if let Some(s) = steps.as_deref_mut() {
            let names: Vec<String> = items.iter().map(u8::to_string).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            s.pick(i, u, &refs);
        }
        // `k < items.len()` because `pick(u, n) < n`; the check keeps it panic-free anyway.
        if k < items.len() {
            out.push(items.remove(k));
        }
    }
    if full {
        out.append(&mut items);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::shuffle;
    use proptest::prelude::*;

    /// Raw bytes whose first numbers are `numbers`, padded with zeros to `blocks` blocks.
    pub(super) fn bytes_of(numbers: &[u64], blocks: usize) -> Vec<u8> {
        let mut out: Vec<u8> = numbers.iter().flat_map(|n| n.to_be_bytes()).collect();
        out.resize(blocks * BLOCK_LEN, 0);
        out
    }

    /// The smallest `U` with `floor(U * n / 2^64) = k`.
    pub(super) fn number_for(k: u64, n: u64) -> u64 {
        let v = (u128::from(k) << 64).div_ceil(u128::from(n));
        u64::try_from(v).unwrap()
    }

    fn round(game: Game, options: Options) -> Round {
        Round::new(game, &options).unwrap()
    }

    #[test]
    fn game_names_round_trip() {
        for game in Game::ALL {
            assert_eq!(game.name().parse::<Game>(), Ok(game));
            let json = serde_json::to_string(&game).unwrap();
            assert_eq!(json, format!("\"{}\"", game.name()));
        }
        assert!("roulette".parse::<Game>().is_err());
    }

    #[test]
    fn options_are_validated_by_name() {
        let err = |game, options| Round::new(game, &options).unwrap_err();
        let e = err(Game::Mines, Options::default());
        assert_eq!(e.to_string(), "mines: required by mines");
        for bad in [0, 25, 300] {
            let e = err(
                Game::Mines,
                Options {
                    mines: Some(bad),
                    ..Options::default()
                },
            );
            assert_eq!(e.option(), "mines");
            assert!(e.to_string().contains("out of range (1..=24)"), "{e}");
        }
        let e = err(
            Game::Jackpot,
            Options {
                tickets: Some(0),
                ..Options::default()
            },
        );
        assert_eq!(e.option(), "tickets");
        for bad in [7, 17, u64::MAX] {
            let e = err(
                Game::Plinko,
                Options {
                    pins: Some(bad),
                    ..Options::default()
                },
            );
            assert_eq!(e.option(), "pins");
        }
        for bad in [0, 1001, 1 << 40] {
            let e = err(
                Game::Slot,
                Options {
                    spins: Some(bad),
                    ..Options::default()
                },
            );
            assert_eq!(e.option(), "spins");
        }
        let e = err(
            Game::Tower,
            Options {
                mines: Some(3),
                ..Options::default()
            },
        );
        assert_eq!(e.to_string(), "mines: not a parameter of tower");
        assert_eq!(round(Game::Slot, Options::default()), Round::Slot(Spins(1)));
        assert_eq!(
            round(
                Game::Mines,
                Options {
                    mines: Some(24),
                    ..Options::default()
                }
            ),
            Round::Mines(MineCount(24))
        );
        assert_eq!(
            round(
                Game::Plinko,
                Options {
                    pins: Some(8),
                    ..Options::default()
                }
            ),
            Round::Plinko(Pins(8))
        );
    }

    #[test]
    fn cursors_per_game() {
        let o = Options::default();
        assert_eq!(round(Game::Dice, o).cursors(), 1);
        assert_eq!(
            round(
                Game::Mines,
                Options {
                    mines: Some(1),
                    ..o
                }
            )
            .cursors(),
            3
        );
        assert_eq!(round(Game::Tower, o).cursors(), 5);
        assert_eq!(
            round(
                Game::Slot,
                Options {
                    spins: Some(7),
                    ..o
                }
            )
            .cursors(),
            7
        );
        assert_eq!(
            round(Game::Plinko, Options { pins: Some(8), ..o }).cursors(),
            1
        );
        assert_eq!(
            round(Game::Plinko, Options { pins: Some(9), ..o }).cursors(),
            2
        );
    }

    #[test]
    fn too_few_bytes_names_the_game() {
        let tower = Round::Tower;
        let err = tower.from_bytes(&[0; 4 * BLOCK_LEN]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tower needs 320 bytes of generator output, got 256"
        );
        assert!(matches!(
            Round::Dice.from_bytes(&[0; 65]),
            Err(RawError::BadLength(BadRawLength(65)))
        ));
        assert!(Round::Dice.from_bytes(&[]).is_err());
        // Extra blocks are ignored.
        assert_eq!(
            Round::Dice.from_bytes(&[0; 3 * BLOCK_LEN]),
            Ok(Outcome::Dice(Hundredths(0)))
        );
    }

    #[test]
    fn json_shape() {
        let cases = [
            (
                Outcome::Dice(Hundredths(5000)),
                r#"{"game":"dice","result":"50.00"}"#,
            ),
            (
                Outcome::Crash(Hundredths(109)),
                r#"{"game":"crash","result":"1.09"}"#,
            ),
            (Outcome::X50(3), r#"{"game":"x50","result":3}"#),
            (
                Outcome::Mines(vec![4, 0]),
                r#"{"game":"mines","result":[4,0]}"#,
            ),
            (
                Outcome::Plinko(PlinkoDrop {
                    bucket: 1,
                    path: vec![0, 1],
                }),
                r#"{"game":"plinko","result":{"bucket":1,"path":[0,1]}}"#,
            ),
        ];
        for (outcome, json) in cases {
            assert_eq!(serde_json::to_string(&outcome).unwrap(), json);
            assert_eq!(serde_json::from_str::<Outcome>(json).unwrap(), outcome);
        }
    }

    #[test]
    fn explanations_show_every_number_and_the_result() {
        let (outcome, e) = Round::Dice.explain_seeds("server", "client", "0");
        assert_eq!(outcome, Round::Dice.from_seeds("server", "client", "0"));
        let text = e.finish();
        assert!(text.contains("HMAC-SHA512(key, \"client:0\")"), "{text}");
        assert!(text.contains("floor(U[0] * 10001)"), "{text}");
        assert!(text.contains("U[7] ="), "{text}");
        assert!(text.ends_with(&format!("result: {outcome}\n")), "{text}");

        let mines = Round::Mines(MineCount::new(3).unwrap());
        let bytes: Vec<u8> = (0..3)
            .flat_map(|c| Generator::new("s", "c", "1").block(c))
            .collect();
        let (outcome, e) = mines.explain_bytes(&bytes).unwrap();
        assert_eq!(outcome, mines.from_seeds("s", "c", "1"));
        let text = e.finish();
        assert!(text.contains("step 23: floor(U[23] * 2)"), "{text}");
        assert!(!text.contains("U[24]"), "{text}");

        let (_, e) = Round::Crash.explain_seeds("s", "c", "2");
        assert!(e.finish().contains("rounded half-up"), "{}", e.finish());
        let (_, e) = Round::Tower.explain_seeds("s", "c", "2");
        assert!(e.finish().contains("row 9:"), "{}", e.finish());
        assert!(Round::Tower.explain_bytes(&bytes).is_err());
    }

    fn any_round() -> impl Strategy<Value = Round> {
        prop_oneof![
            Just(Round::Dice),
            Just(Round::Double),
            Just(Round::X50),
            (1u64..).prop_map(|t| Round::Jackpot(Tickets::new(t).unwrap())),
            Just(Round::Crash),
            Just(Round::Overgo),
            (1u64..=24).prop_map(|m| Round::Mines(MineCount::new(m).unwrap())),
            Just(Round::Tower),
            (1u64..=12).prop_map(|k| Round::Slot(Spins::new(k).unwrap())),
            (8u64..=16).prop_map(|n| Round::Plinko(Pins::new(n).unwrap())),
        ]
    }

    proptest! {
        /// Plain play and the walk-through take different routes for some games (mines
        /// uses the shuffle's paired removals, the walk-through removes one cell at a time
        /// to show each list): the results must agree.
        #[test]
        fn the_walk_through_reaches_the_same_result(round in any_round(), seed in any::<u32>(), nonce in any::<u64>()) {
            let (seed, nonce) = (seed.to_string(), nonce.to_string());
            let (explained, _) = round.explain_seeds(&seed, "client", &nonce);
            prop_assert_eq!(explained, round.from_seeds(&seed, "client", &nonce));
        }

        #[test]
        fn raw_path_equals_seeded_path(round in any_round(), seed in any::<u32>(), nonce in any::<u64>()) {
            let g = Generator::new(&seed.to_string(), "client", &nonce.to_string());
            let bytes: Vec<u8> = (0..round.cursors() as u64).flat_map(|c| g.block(c)).collect();
            let seeded = round.from_seeds(&seed.to_string(), "client", &nonce.to_string());
            prop_assert_eq!(round.from_bytes(&bytes), Ok(seeded.clone()));
            prop_assert_eq!(seeded.game(), round.game());
            // One block short is an error, never a different result.
            if round.cursors() > 1 {
                let short = &bytes[..bytes.len() - BLOCK_LEN];
                let is_too_few = matches!(round.from_bytes(short), Err(RawError::TooFewBytes { .. }));
                prop_assert!(is_too_few);
            }
            let (explained, _) = round.explain_bytes(&bytes).unwrap();
            prop_assert_eq!(explained, seeded);
        }

        #[test]
        fn results_are_in_range(round in any_round(), numbers in prop::collection::vec(any::<u64>(), 96)) {
            let bytes = bytes_of(&numbers, 12);
            let outcome = round.from_bytes(&bytes).unwrap();
            match (round, outcome) {
                (Round::Dice, Outcome::Dice(h)) => prop_assert!(h.0 <= 10_000),
                (Round::Double, Outcome::Double(s)) => prop_assert!(s < 15),
                (Round::X50, Outcome::X50(s)) => prop_assert!(s < 54),
                (Round::Jackpot(t), Outcome::Jackpot(w)) => prop_assert!((1..=t.get()).contains(&w)),
                (Round::Crash, Outcome::Crash(h)) => prop_assert!((100..=95_000_000).contains(&h.0)),
                (Round::Overgo, Outcome::Overgo(h)) => prop_assert!((100..=97_000_000).contains(&h.0)),
                (Round::Mines(m), Outcome::Mines(cells)) => {
                    prop_assert_eq!(cells.len(), usize::from(m.get()));
                    let mut sorted = cells.clone();
                    sorted.sort_unstable();
                    sorted.dedup();
                    prop_assert_eq!(sorted.len(), cells.len());
                    prop_assert!(cells.iter().all(|&c| c < MINES_CELLS));
                    // The mines are the first cells of the section 2 shuffle of 25 cells.
                    let order = shuffle(25, &mut RawNumbers::new(&bytes).unwrap()).unwrap().order;
                    prop_assert_eq!(&order[..cells.len()], &cells[..]);
                }
                (Round::Tower, Outcome::Tower(rows)) => {
                    prop_assert_eq!(rows.len(), TOWER_ROWS);
                    for row in rows {
                        let mut sorted = row;
                        sorted.sort_unstable();
                        prop_assert!(sorted.windows(2).all(|w| w[0] < w[1]));
                        prop_assert!(row.iter().all(|&p| p < TOWER_POSITIONS));
                    }
                }
                (Round::Slot(k), Outcome::Slot(spins)) => {
                    prop_assert_eq!(spins.len(), usize::from(k.get()));
                    for stops in spins {
                        prop_assert!(stops[..4].iter().all(|&s| u64::from(s) < SLOT_STOPS));
                        prop_assert!(u64::from(stops[4]) < SLOT_LAST_STOPS);
                    }
                }
                (Round::Plinko(n), Outcome::Plinko(drop)) => {
                    prop_assert_eq!(drop.path.len(), usize::from(n.get()));
                    prop_assert!(drop.path.iter().all(|&p| p <= 1));
                    prop_assert_eq!(u64::from(drop.bucket), drop.path.iter().map(|&p| u64::from(p)).sum::<u64>());
                }
                (round, outcome) => prop_assert!(false, "{round:?} gave {outcome:?}"),
            }
        }
    }
    #[test]
    fn a_round_displays_as_the_cli_arguments_that_replay_it() {
        let cases = [
            (Game::Dice, Options::default(), "dice"),
            (Game::Tower, Options::default(), "tower"),
            (
                Game::Mines,
                Options {
                    mines: Some(3),
                    ..Options::default()
                },
                "mines --mines 3",
            ),
            (
                Game::Jackpot,
                Options {
                    tickets: Some(500),
                    ..Options::default()
                },
                "jackpot --tickets 500",
            ),
            (Game::Slot, Options::default(), "slot --spins 1"),
            (
                Game::Plinko,
                Options {
                    pins: Some(16),
                    ..Options::default()
                },
                "plinko --pins 16",
            ),
        ];
        for (game, options, text) in cases {
            let round = Round::new(game, &options).unwrap();
            assert_eq!(round.to_string(), text);
            // Parsed back as the CLI would, the words name the same round.
            let words: Vec<&str> = text.split(' ').collect();
            let mut parsed = Options::default();
            if let [_, flag, value] = words[..] {
                let value = Some(value.parse().unwrap());
                match flag {
                    "--mines" => parsed.mines = value,
                    "--tickets" => parsed.tickets = value,
                    "--spins" => parsed.spins = value,
                    "--pins" => parsed.pins = value,
                    other => panic!("unexpected flag {other}"),
                }
            }
            assert_eq!(Round::new(words[0].parse().unwrap(), &parsed), Ok(round));
        }
    }
}
