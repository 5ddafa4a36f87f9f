//! Tarot duplicate-deal selection (SPEC section 4, 4 players, deck `tarot4`).
//!
//! In duplicate Tarot the same deal is played at several tables, so a deal that is dull
//! (everyone passes) or lopsided (the taker cannot lose, or cannot win) is wasted at every
//! table. Candidates are therefore dealt and judged in turn, and the first one that survives
//! is played. Everything is reproducible by a verifier from the revealed seeds:
//!
//! 1. Candidate `j = 0, 1, ...` of hand `sequence` uses salt `"<sequence>:dup:<j>"`. Its
//!    deal is the SPEC section 2 shuffle of the 78 cards, read from numbers `U_0 .. U_76`
//!    (cursors 0 to 9), dealt in packets of 3 with a chien of 6.
//! 2. Each hand, without the chien, is valued by the point count below and bids.
//!    If all four pass, the candidate is rejected ([`Rejection::AllPassed`]).
//! 3. The taker is the highest bidder; on equal bids the first in seat order from hand 0
//!    (as in a real auction, where a later player must overbid). The taker's cards are
//!    examined with the chien added for a petite (prise) or a garde, and without it for a
//!    garde sans or garde contre, where the chien stays unseen. In that examination:
//!    - 12 or more trumps: rejected ([`Rejection::TooManyTrumps`]);
//!    - 5 trumps or fewer: rejected ([`Rejection::TooFewTrumps`]);
//!    - all of T17, T18, T19, T20, T21: rejected ([`Rejection::TopTrumps`]);
//!    - 9 / 10 / 11 trumps: one draw, rejected with probability 80 / 85 / 90 %
//!      ([`Rejection::ManyTrumps`]);
//!    - then, if the longest plain suit has 7 / 8 / 9 or more cards: one draw, rejected with
//!      probability 70 / 85 / 90 % ([`Rejection::LongSuit`]).
//!
//!    The excuse is **not** a trump in these counts (it neither wins tricks nor is
//!    trumped); it counts as an honour in the point count only.
//! 4. The first candidate not rejected is the deal. After [`MAX_CANDIDATES`] rejections the
//!    selection stops with an error rather than loop (the expected number of candidates is
//!    about 2.5; 10,000 rejections in a row has probability below `10^-1000`).
//!
//! **Draws.** The deterministic tests draw nothing. The probabilistic tests run in the order
//! above, each only if it applies and the candidate is still alive, and each takes the next
//! unused number of the candidate's stream: the first draw is `U_77` (the 78th number,
//! cursor 9 block 5), the second `U_78`. A draw with probability `p %` rejects iff
//! `U < ceil(p * 2^64 / 100)`, i.e. iff `u < p / 100` exactly; see [`threshold`].
//!
//! **Point count** of a hand (a common French count; pass below 40, petite 40..=55,
//! garde 56..=70, garde sans 71..=80, garde contre 81 and above):
//! - 2 per trump (T1..T21);
//! - T21: +10; the excuse: +8; T1 (le petit): +8 with 7 or more trumps, +5 with 5 or 6,
//!   nothing with fewer (a short petit is usually lost); T16..T20: +2 each;
//! - per plain card: king 6, queen 3, knight 2, jack 1;
//! - per plain suit: void +6, singleton +3, 5 cards +5, 6 cards +7, 7 or more +9.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::deal::Deal;
use crate::deck::Deck;
use crate::explain::Explanation;
use crate::generator::{Exhausted, Generator, NumberSource};

/// The most candidates examined before [`select`] gives up.
pub const MAX_CANDIDATES: u32 = 10_000;

/// Numbers read by a candidate's shuffle (`U_0 .. U_76`); the draws follow.
pub const SHUFFLE_NUMBERS: usize = 77;

/// Players at a duplicate table.
pub const PLAYERS: usize = 4;

/// The canonical index of the excuse in the Tarot deck.
const EXCUSE: u8 = 21;
/// The first plain card (1 of spades) in the Tarot deck.
const FIRST_PLAIN: u8 = 22;
/// Cards per plain suit.
const SUIT_LEN: u8 = 14;

/// A Tarot bid, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bid {
    /// No bid.
    Pass,
    /// Petite (prise): the taker takes the chien.
    Petite,
    /// Garde: the taker takes the chien, stakes doubled.
    Garde,
    /// Garde sans: the chien goes unseen to the taker's tricks.
    GardeSans,
    /// Garde contre: the chien goes unseen to the defence.
    GardeContre,
}

impl Bid {
    /// The bid a hand worth `points` makes (see the module docs).
    pub const fn for_points(points: u32) -> Bid {
        match points {
            0..=39 => Bid::Pass,
            40..=55 => Bid::Petite,
            56..=70 => Bid::Garde,
            71..=80 => Bid::GardeSans,
            _ => Bid::GardeContre,
        }
    }

    /// Whether the taker sees (and takes) the chien with this bid.
    pub const fn takes_chien(self) -> bool {
        matches!(self, Bid::Petite | Bid::Garde)
    }

    /// The name used in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Bid::Pass => "pass",
            Bid::Petite => "petite",
            Bid::Garde => "garde",
            Bid::GardeSans => "garde_sans",
            Bid::GardeContre => "garde_contre",
        }
    }
}

impl fmt::Display for Bid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A plain suit, in canonical deck order (S, H, D, C), the order of every deck's codes;
/// the games' suit too (Jeu du 10's and French Tarot's `Suit` are this one).
///
/// Serialised as its lower-case English name (`"spades"`), displayed the same way; its
/// letter is the one card codes end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suit {
    /// Spades, pique (`S`).
    Spades,
    /// Hearts, cœur (`H`).
    Hearts,
    /// Diamonds, carreau (`D`).
    Diamonds,
    /// Clubs, trèfle (`C`).
    Clubs,
}

impl Suit {
    /// The four suits in canonical order.
    pub const ALL: [Suit; 4] = [Suit::Spades, Suit::Hearts, Suit::Diamonds, Suit::Clubs];

    /// Position in canonical order (0..4).
    pub const fn index(self) -> u8 {
        self as u8
    }

    /// The suit at canonical position `index`.
    pub const fn from_index(index: u8) -> Option<Suit> {
        match index {
            0 => Some(Suit::Spades),
            1 => Some(Suit::Hearts),
            2 => Some(Suit::Diamonds),
            3 => Some(Suit::Clubs),
            _ => None,
        }
    }

    /// The letter card codes end with.
    pub const fn letter(self) -> char {
        match self {
            Suit::Spades => 'S',
            Suit::Hearts => 'H',
            Suit::Diamonds => 'D',
            Suit::Clubs => 'C',
        }
    }

    /// The suit of a card-code letter.
    pub const fn from_letter(letter: char) -> Option<Suit> {
        match letter {
            'S' => Some(Suit::Spades),
            'H' => Some(Suit::Hearts),
            'D' => Some(Suit::Diamonds),
            'C' => Some(Suit::Clubs),
            _ => None,
        }
    }
}

impl fmt::Display for Suit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Suit::Spades => "spades",
            Suit::Hearts => "hearts",
            Suit::Diamonds => "diamonds",
            Suit::Clubs => "clubs",
        })
    }
}

/// What a canonical Tarot index stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Card {
    /// Trump `1..=21`.
    Trump(u8),
    /// The excuse.
    Excuse,
    /// A plain card; `rank` 0..=9 are the pips 1..10, then 10 J, 11 N, 12 Q, 13 K.
    Plain { suit: usize, rank: u8 },
    /// Not a Tarot card (an index past 77); ignored by every count.
    Unknown,
}

fn card(index: u8) -> Card {
    match index {
        0..=20 => Card::Trump(index + 1),
        EXCUSE => Card::Excuse,
        FIRST_PLAIN..=77 => Card::Plain {
            suit: usize::from((index - FIRST_PLAIN) / SUIT_LEN),
            rank: (index - FIRST_PLAIN) % SUIT_LEN,
        },
        _ => Card::Unknown,
    }
}

/// Trumps (T1..T21; not the excuse) among `cards`.
fn trump_count(cards: &[u8]) -> usize {
    cards
        .iter()
        .filter(|&&c| matches!(card(c), Card::Trump(_)))
        .count()
}

/// Cards per plain suit, in [`Suit::ALL`] order.
fn suit_lengths(cards: &[u8]) -> [usize; 4] {
    let mut lengths = [0usize; 4];
    for &c in cards {
        if let Card::Plain { suit, .. } = card(c)
            && let Some(n) = lengths.get_mut(suit)
        {
            *n += 1;
        }
    }
    lengths
}

/// The point count of a hand (see the module docs). Indices that are not Tarot cards count
/// nothing; the function is total.
pub fn hand_points(hand: &[u8]) -> u32 {
    let trumps = trump_count(hand);
    // Each trump is worth 2; a hand holds at most 78 cards, so no count overflows.
    let mut points = 2 * trumps as u32;
    for &c in hand {
        points += match card(c) {
            Card::Trump(21) => 10,
            Card::Trump(1) => match trumps {
                7.. => 8,
                5 | 6 => 5,
                _ => 0,
            },
            Card::Trump(16..=20) => 2,
            Card::Trump(_) | Card::Unknown => 0,
            Card::Excuse => 8,
            Card::Plain { rank, .. } => match rank {
                13 => 6,
                12 => 3,
                11 => 2,
                10 => 1,
                _ => 0,
            },
        };
    }
    for length in suit_lengths(hand) {
        points += match length {
            0 => 6,
            1 => 3,
            5 => 5,
            6 => 7,
            7.. => 9,
            _ => 0,
        };
    }
    points
}

/// `ceil(percent * 2^64 / 100)`: a draw `U` rejects iff `U < threshold(percent)`, which is
/// exactly `U / 2^64 < percent / 100`. `percent` is capped at 100 (which would always
/// reject; the function returns `u64::MAX` then, one short of certainty, so the result fits).
pub const fn threshold(percent: u8) -> u64 {
    let p = if percent > 100 { 100 } else { percent } as u128;
    let t = (p << 64).div_ceil(100);
    if t > u64::MAX as u128 {
        u64::MAX
    } else {
        t as u64
    }
}

/// One probabilistic acceptance test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Draw {
    /// Which number of the candidate's stream was used (77 for the first draw).
    pub number_index: usize,
    /// The number `U`, as 16 hex digits in JSON.
    #[serde(serialize_with = "hex_u64")]
    pub number: u64,
    /// The rejection probability, in percent.
    pub percent: u8,
    /// [`threshold`] of `percent`, as 16 hex digits in JSON.
    #[serde(serialize_with = "hex_u64")]
    pub threshold: u64,
    /// Whether `number < threshold`, i.e. the candidate was rejected by this draw.
    pub rejected: bool,
}

fn hex_u64<S: serde::Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
    // JSON numbers above 2^53 lose precision in most readers; hex keeps every bit.
    s.collect_str(&format_args!("{n:016x}"))
}

/// Why a candidate was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Rejection {
    /// All four players passed.
    AllPassed,
    /// The taker held 12 or more trumps.
    TooManyTrumps {
        /// Trumps held.
        trumps: u8,
    },
    /// The taker held 5 trumps or fewer.
    TooFewTrumps {
        /// Trumps held.
        trumps: u8,
    },
    /// The taker held all of T17..T21.
    TopTrumps,
    /// The taker held 9 to 11 trumps and the draw rejected.
    ManyTrumps {
        /// Trumps held.
        trumps: u8,
        /// The draw that rejected.
        draw: Draw,
    },
    /// The taker's longest plain suit had 7 or more cards and the draw rejected.
    LongSuit {
        /// The suit (the first in S, H, D, C order among equally long ones).
        suit: Suit,
        /// Its length.
        length: u8,
        /// The draw that rejected.
        draw: Draw,
    },
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::AllPassed => f.write_str("all four players passed"),
            Rejection::TooManyTrumps { trumps } => {
                write!(f, "the taker holds {trumps} trumps (12 or more)")
            }
            Rejection::TooFewTrumps { trumps } => {
                write!(f, "the taker holds {trumps} trumps (5 or fewer)")
            }
            Rejection::TopTrumps => f.write_str("the taker holds all of T17..T21"),
            Rejection::ManyTrumps { trumps, draw } => write!(
                f,
                "the taker holds {trumps} trumps and U[{}] fell in the {} % rejection range",
                draw.number_index, draw.percent
            ),
            Rejection::LongSuit { suit, length, draw } => write!(
                f,
                "the taker holds {length} {suit:?} and U[{}] fell in the {} % rejection range",
                draw.number_index, draw.percent
            ),
        }
    }
}

/// How the taker's cards were examined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Examination {
    /// The taker's seat (hand index, 0 = first served).
    pub taker: u8,
    /// The winning bid.
    pub bid: Bid,
    /// Whether the chien was added (petite and garde).
    pub with_chien: bool,
    /// Trumps in the examined cards (the excuse is not counted).
    pub trumps: u8,
    /// The longest plain suit (first in S, H, D, C order on ties) and its length.
    pub longest_suit: Suit,
    /// Length of [`Examination::longest_suit`].
    pub longest_suit_len: u8,
    /// The probabilistic tests run, in order (at most two).
    pub draws: Vec<Draw>,
}

/// The judgement of one candidate deal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Judgement {
    /// Each hand's points, seat 0 first.
    pub points: Vec<u32>,
    /// Each hand's bid, seat 0 first.
    pub bids: Vec<Bid>,
    /// The taker's examination, absent when everyone passed.
    pub examination: Option<Examination>,
    /// Why the candidate was rejected, absent when it was accepted.
    pub rejection: Option<Rejection>,
}

impl Judgement {
    /// Whether the candidate survived every test.
    pub fn accepted(&self) -> bool {
        self.rejection.is_none()
    }
}

/// Judges a deal given as its hands (seat order from hand 0) and chien; the probabilistic
/// tests read `draws` (for a real candidate, the numbers following its shuffle's).
///
/// Total for any input: cards that are not Tarot indices are ignored, and any number of
/// hands is accepted (seats beyond 255 cannot take).
pub fn judge<S: NumberSource + ?Sized>(
    hands: &[Vec<u8>],
    chien: &[u8],
    draws: &mut S,
) -> Result<Judgement, Exhausted> {
    let points: Vec<u32> = hands.iter().map(|h| hand_points(h)).collect();
    let bids: Vec<Bid> = points.iter().map(|&p| Bid::for_points(p)).collect();
    let mut judgement = Judgement {
        points,
        bids,
        examination: None,
        rejection: None,
    };
    // Highest bid; `max_by_key` would keep the last of equal bids, so fold keeping the first.
    let best =
        judgement
            .bids
            .iter()
            .enumerate()
            .fold(
                None,
                |best: Option<(usize, Bid)>, (seat, &bid)| match best {
                    Some((_, b)) if b >= bid => best,
                    _ => Some((seat, bid)),
                },
            );
    let (seat, bid) = match best {
        Some((seat, bid)) if bid > Bid::Pass => (seat, bid),
        _ => {
            judgement.rejection = Some(Rejection::AllPassed);
            return Ok(judgement);
        }
    };
    let Some(hand) = hands.get(seat) else {
        judgement.rejection = Some(Rejection::AllPassed);
        return Ok(judgement);
    };
    let mut cards = hand.clone();
    if bid.takes_chien() {
        cards.extend_from_slice(chien);
    }
    // At most 255 trumps / suit cards can be told apart; real hands hold at most 24 cards.
    let trumps = u8::try_from(trump_count(&cards)).unwrap_or(u8::MAX);
    let lengths = suit_lengths(&cards);
    let (suit_index, longest) =
        lengths.iter().enumerate().fold(
            (0, 0),
            |(bi, bl), (i, &l)| if l > bl { (i, l) } else { (bi, bl) },
        );
    let longest = u8::try_from(longest).unwrap_or(u8::MAX);
    let mut exam = Examination {
        taker: u8::try_from(seat).unwrap_or(u8::MAX),
        bid,
        with_chien: bid.takes_chien(),
        trumps,
        longest_suit: Suit::ALL.get(suit_index).copied().unwrap_or(Suit::Spades),
        longest_suit_len: longest,
        draws: Vec::new(),
    };
    let has_top_trumps = (16..=20u8).all(|index| cards.contains(&index)); // T17..T21 are indices 16..=20
    let mut drawn = 0usize;
    let mut draw = |percent: u8, draws_out: &mut Vec<Draw>| -> Result<Draw, Exhausted> {
        let number = draws.next_number()?;
        let t = threshold(percent);
        let d = Draw {
            number_index: SHUFFLE_NUMBERS + drawn,
            number,
            percent,
            threshold: t,
            rejected: number < t,
        };
        drawn += 1;
        draws_out.push(d);
        Ok(d)
    };
    let rejection = if trumps >= 12 {
        Some(Rejection::TooManyTrumps { trumps })
    } else if trumps <= 5 {
        Some(Rejection::TooFewTrumps { trumps })
    } else if has_top_trumps {
        Some(Rejection::TopTrumps)
    } else {
        let mut rejection = None;
        let trump_percent = match trumps {
            9 => Some(80),
            10 => Some(85),
            11 => Some(90),
            _ => None,
        };
        if let Some(percent) = trump_percent {
            let d = draw(percent, &mut exam.draws)?;
            if d.rejected {
                rejection = Some(Rejection::ManyTrumps { trumps, draw: d });
            }
        }
        let suit_percent = match longest {
            7 => Some(70),
            8 => Some(85),
            9.. => Some(90),
            _ => None,
        };
        if rejection.is_none()
            && let Some(percent) = suit_percent
        {
            let d = draw(percent, &mut exam.draws)?;
            if d.rejected {
                rejection = Some(Rejection::LongSuit {
                    suit: exam.longest_suit,
                    length: longest,
                    draw: d,
                });
            }
        }
        rejection
    };
    judgement.examination = Some(exam);
    judgement.rejection = rejection;
    Ok(judgement)
}

/// One candidate deal with its verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// `j`, its position in the selection.
    pub index: u32,
    /// `"<sequence>:dup:<j>"`.
    pub salt: String,
    /// The deal (`tarot4`).
    pub deal: Deal,
    /// Bids, examination and verdict.
    pub judgement: Judgement,
}

/// The result of a duplicate selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The hand's sequence number.
    pub sequence: u64,
    /// The first candidate that survived.
    pub accepted: Candidate,
    /// Every candidate rejected before it, in order.
    pub rejected: Vec<Candidate>,
}

/// The selection gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DuplicateError {
    /// Every candidate up to the cap was rejected.
    #[error("no duplicate deal accepted among {0} candidates")]
    NoCandidateAccepted(u32),
}

/// The salt of candidate `j` of hand `sequence`.
pub fn candidate_salt(sequence: u64, j: u32) -> String {
    format!("{sequence}:dup:{j}")
}

/// Deals and judges candidate `j` of hand `sequence`.
pub fn candidate(server_seed: &str, client_seed: &str, sequence: u64, j: u32) -> Candidate {
    let salt = candidate_salt(sequence, j);
    let generator = Generator::new(server_seed, client_seed, &salt);
    let mut numbers = generator.numbers();
    let deal = match Deal::from_source(Deck::Tarot4, &mut numbers) {
        Ok(deal) => deal,
        // The seeded stream is endless and the deck has 78 cards: unreachable. Keep the
        // function total with the seeded deal helper, which has its own fallback.
        Err(_) => Deal::from_seeds(Deck::Tarot4, server_seed, client_seed, &salt),
    };
    let judgement = match judge(&deal.hands, &deal.chien, &mut numbers) {
        Ok(j) => j,
        // Unreachable for the same reason; an unjudgeable candidate is rejected.
        Err(_) => Judgement {
            points: Vec::new(),
            bids: Vec::new(),
            examination: None,
            rejection: Some(Rejection::AllPassed),
        },
    };
    Candidate {
        index: j,
        salt,
        deal,
        judgement,
    }
}

/// Runs the selection for hand `sequence` (at most [`MAX_CANDIDATES`] candidates).
pub fn select(
    server_seed: &str,
    client_seed: &str,
    sequence: u64,
) -> Result<Selection, DuplicateError> {
    select_capped(server_seed, client_seed, sequence, MAX_CANDIDATES)
}

/// [`select`] with an explicit cap on the number of candidates.
pub fn select_capped(
    server_seed: &str,
    client_seed: &str,
    sequence: u64,
    cap: u32,
) -> Result<Selection, DuplicateError> {
    let mut rejected = Vec::new();
    for j in 0..cap {
        let c = candidate(server_seed, client_seed, sequence, j);
        if c.judgement.accepted() {
            return Ok(Selection {
                sequence,
                accepted: c,
                rejected,
            });
        }
        rejected.push(c);
    }
    Err(DuplicateError::NoCandidateAccepted(cap))
}

impl Selection {
    /// Every candidate in order, the accepted one last.
    pub fn candidates(&self) -> impl Iterator<Item = &Candidate> {
        self.rejected.iter().chain(std::iter::once(&self.accepted))
    }

    /// A walk-through of the selection: per candidate its salt and key, the hands and
    /// chien, each hand's points and bid, the taker's examination with every draw, and the
    /// verdict. (The shuffles' own numbers are shown by `fairdeal deal --explain`.)
    pub fn explain(&self, server_seed: &str, client_seed: &str) -> Explanation {
        let mut e = Explanation::new();
        e.line(format!("server seed : {server_seed}"))
            .line(format!("client seed : {client_seed}"))
            .line(format!("sequence    : {}", self.sequence))
            .line(
                "each candidate j uses salt \"<sequence>:dup:<j>\"; its deal reads U[0]..U[76], \
                 its acceptance draws U[77], U[78]",
            );
        for c in self.candidates() {
            let key = Generator::new(server_seed, client_seed, &c.salt);
            e.line("")
                .line(format!("candidate {} (salt {})", c.index, c.salt))
                .line(format!(
                    "  key = SHA-256(server_seed \":\" salt) = {}",
                    hex::encode(key.key())
                ));
            e.line(format!(
                "  distribution number: {}",
                c.deal.distribution_number()
            ));
            let j = &c.judgement;
            for (seat, hand) in c.deal.hands.iter().enumerate() {
                let mut sorted = hand.clone();
                sorted.sort_unstable();
                e.line(format!(
                    "  hand {seat}: {:<72} {:>3} points -> {}",
                    c.deal.codes(&sorted).join(" "),
                    j.points.get(seat).copied().unwrap_or(0),
                    j.bids.get(seat).copied().unwrap_or(Bid::Pass)
                ));
            }
            let mut chien = c.deal.chien.clone();
            chien.sort_unstable();
            e.line(format!("  chien : {}", c.deal.codes(&chien).join(" ")));
            if let Some(x) = &j.examination {
                e.line(format!(
                    "  taker: hand {} ({}), examined {} the chien: {} trumps (excuse not \
                     counted), longest plain suit {:?} with {} cards",
                    x.taker,
                    x.bid,
                    if x.with_chien { "with" } else { "without" },
                    x.trumps,
                    x.longest_suit,
                    x.longest_suit_len
                ));
                for d in &x.draws {
                    e.line(format!(
                        "  draw U[{}] = 0x{:016x} vs threshold ceil({} % * 2^64) = 0x{:016x}: {}",
                        d.number_index,
                        d.number,
                        d.percent,
                        d.threshold,
                        if d.rejected {
                            "below, reject"
                        } else {
                            "not below, keep"
                        }
                    ));
                }
            }
            match &j.rejection {
                Some(r) => e.line(format!("  rejected: {r}")),
                None => e.line("  accepted"),
            };
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::RawNumbers;

    /// Canonical index of a Tarot card code.
    fn ix(code: &str) -> u8 {
        Deck::Tarot4.index_of(code).unwrap()
    }

    fn cards(codes: &str) -> Vec<u8> {
        codes.split_whitespace().map(ix).collect()
    }

    /// Draw numbers: each given number then zeros, in whole blocks.
    fn numbers(ns: &[u64]) -> Vec<u8> {
        let mut out: Vec<u8> = ns.iter().flat_map(|n| n.to_be_bytes()).collect();
        out.resize(64, 0);
        out
    }

    /// Three weak hands (well under 40 points) and the taker's hand at seat `seat`.
    fn table(taker_hand: &str, seat: usize) -> Vec<Vec<u8>> {
        let weak = [
            "2S 3S 4S 2H 3H 4H 2D 3D 4D 2C 3C 4C T2 T3 5S 5H 5D 5C",
            "6S 7S 8S 6H 7H 8H 6D 7D 8D 6C 7C 8C T4 T5 9S 9H 9D 9C",
            "10S 1S 10H 1H 10D 1D 10C 1C T6 T7 T8 T9 JS JH JD JC NS NH",
        ];
        let mut hands: Vec<Vec<u8>> = weak.iter().map(|h| cards(h)).collect();
        hands.insert(seat, cards(taker_hand));
        hands
    }

    #[test]
    fn point_count_examples() {
        // 2 trumps = 4; no honours; suit lengths 4, 4, 4, 4 score nothing.
        let weak = cards("2S 3S 4S 2H 3H 4H 2D 3D 4D 2C 3C 4C T2 T3 5S 5H 5D 5C");
        assert_eq!(hand_points(&weak), 4);
        assert_eq!(Bid::for_points(4), Bid::Pass);
        // 8 trumps = 16; T21 10; T1 with 8 trumps 8; T20 T19 +4; excuse 8;
        // KS 6 QS 3; spades 5 cards +5; hearts 3 (0); diamonds void +6; clubs 1 (+3); KC 6.
        let hand = cards("T21 T20 T19 T1 T5 T6 T7 T8 EX KS QS 2S 3S 4S 2H 3H 4H KC");
        assert_eq!(hand.len(), 18);
        assert_eq!(
            hand_points(&hand),
            16 + 10 + 8 + 4 + 8 + 6 + 3 + 5 + 6 + 3 + 6
        );
        assert_eq!(Bid::for_points(hand_points(&hand)), Bid::GardeSans);
        // A short petit counts nothing; a petit with 5 trumps counts 5.
        assert_eq!(hand_points(&cards("T1")), 2 + 6 * 4);
        assert_eq!(hand_points(&cards("T1 T2 T3 T4 T5")), 10 + 5 + 6 * 4);
        // Unknown indices are ignored.
        assert_eq!(hand_points(&[200, 255]), 6 * 4);
    }

    #[test]
    fn bid_thresholds() {
        let bids: Vec<Bid> = [0, 39, 40, 55, 56, 70, 71, 80, 81, 500]
            .into_iter()
            .map(Bid::for_points)
            .collect();
        use Bid::*;
        assert_eq!(
            bids,
            [
                Pass,
                Pass,
                Petite,
                Petite,
                Garde,
                Garde,
                GardeSans,
                GardeSans,
                GardeContre,
                GardeContre
            ]
        );
    }

    #[test]
    fn thresholds_are_exact_ceilings() {
        for p in [70u8, 80, 85, 90] {
            let t = threshold(p);
            // t / 2^64 >= p / 100 > (t - 1) / 2^64.
            assert!(u128::from(t) * 100 >= u128::from(p) << 64);
            assert!(u128::from(t - 1) * 100 < u128::from(p) << 64);
        }
        assert_eq!(threshold(0), 0);
        assert_eq!(threshold(100), u64::MAX);
        assert_eq!(threshold(255), u64::MAX);
    }

    #[test]
    fn everyone_passing_rejects_without_drawing() {
        let hands = table("2S 3S 4S 2H 3H 4H 2D 3D 4D 2C 3C 4C T10 T11 5S 5H 5D 5C", 0);
        let bytes = numbers(&[]);
        let j = judge(
            &hands,
            &cards("T12 T13 T14 T15 T16 T17"),
            &mut RawNumbers::new(&bytes).unwrap(),
        )
        .unwrap();
        assert_eq!(j.bids, [Bid::Pass; 4]);
        assert_eq!(j.rejection, Some(Rejection::AllPassed));
        assert_eq!(j.examination, None);
        // No draws at all: even an empty source is fine.
        let j = judge(&hands, &[], &mut Empty).unwrap();
        assert_eq!(j.rejection, Some(Rejection::AllPassed));
    }

    /// A source with no numbers: proves a judgement draws nothing.
    struct Empty;
    impl NumberSource for Empty {
        fn next_number(&mut self) -> Result<u64, Exhausted> {
            Err(Exhausted { available: 0 })
        }
    }

    /// A petite hand: 7 trumps with T21 and the excuse, K and Q, no long suit.
    const PETITE: &str = "T21 T2 T3 T4 T5 T6 T7 EX KS QS 2S 2H 3H 4H 2D 3D 2C 3C";

    #[test]
    fn a_balanced_taker_is_accepted_without_draws() {
        let hands = table(PETITE, 2);
        assert_eq!(Bid::for_points(hand_points(&hands[2])), Bid::Petite);
        // The chien adds one trump: 8 trumps, longest suit 4: no test applies.
        let chien = cards("T8 4S 5H 4D 4C 5C");
        let j = judge(&hands, &chien, &mut Empty).unwrap();
        assert!(j.accepted(), "{j:?}");
        let x = j.examination.unwrap();
        assert_eq!(
            (x.taker, x.bid, x.with_chien, x.trumps),
            (2, Bid::Petite, true, 8)
        );
        assert!(x.draws.is_empty());
    }

    #[test]
    fn ties_go_to_the_first_seat() {
        let mut hands = table(PETITE, 1);
        hands[3] = hands[1].clone();
        let chien = cards("T8 4S 5H 4D 4C 5C");
        let j = judge(&hands, &chien, &mut Empty).unwrap();
        assert_eq!(j.examination.unwrap().taker, 1);
    }

    #[test]
    fn too_few_trumps_with_the_chien() {
        // 5 trumps in hand, none in the chien; the hand still bids on honours.
        let hand = "T21 T2 T3 T4 T5 EX KS QS KH QH KD QD KC 2S 2H 2D 2C 3C";
        let hands = table(hand, 0);
        assert!(Bid::for_points(hand_points(&hands[0])) > Bid::Pass);
        let j = judge(&hands, &cards("4S 5H 4D 4C 5C 6C"), &mut Empty).unwrap();
        assert_eq!(j.rejection, Some(Rejection::TooFewTrumps { trumps: 5 }));
    }

    #[test]
    fn too_many_trumps_with_the_chien() {
        let hands = table(PETITE, 0);
        // 7 trumps in hand + 5 in the chien = 12.
        let j = judge(&hands, &cards("T8 T9 T10 T11 T12 5C"), &mut Empty).unwrap();
        assert_eq!(j.rejection, Some(Rejection::TooManyTrumps { trumps: 12 }));
    }

    #[test]
    fn garde_sans_is_examined_without_the_chien() {
        // A garde sans hand: 11 trumps incl. T21 T20 T19 T1, the excuse.
        let hand = "T21 T20 T19 T18 T1 T2 T3 T4 T5 T6 T10 EX KS KH KD KC QS QH";
        let hands = table(hand, 3);
        let bid = Bid::for_points(hand_points(&hands[3]));
        assert!(
            !bid.takes_chien(),
            "{bid:?} ({} points)",
            hand_points(&hands[3])
        );
        // The chien's trumps would make 12+; unseen, they do not count: 11 trumps -> 90 %.
        let bytes = numbers(&[u64::MAX]);
        let j = judge(
            &hands,
            &cards("T11 T12 T13 T14 T15 T16"),
            &mut RawNumbers::new(&bytes).unwrap(),
        )
        .unwrap();
        let x = j.examination.clone().unwrap();
        assert_eq!((x.with_chien, x.trumps), (false, 11));
        assert_eq!(x.draws.len(), 1);
        assert!(j.accepted(), "U = max survives every test");
    }

    #[test]
    fn all_top_trumps() {
        let hand = "T21 T20 T19 T18 T17 T2 EX 2S 3S 2H 3H 4H 2D 3D 2C 3C 4C KC";
        let hands = table(hand, 0);
        let j = judge(&hands, &cards("4S 5S 6H 4D 6C 7C"), &mut Empty).unwrap();
        assert_eq!(j.rejection, Some(Rejection::TopTrumps));
    }

    #[test]
    fn many_trumps_draw_rejects_below_the_threshold() {
        // 7 trumps in hand + 3 in the chien = 10 trumps: 85 %.
        let hands = table(PETITE, 0);
        let chien = cards("T8 T9 T10 4S 5S 6H");
        let at = threshold(85);
        let bytes = numbers(&[at - 1]);
        let j = judge(&hands, &chien, &mut RawNumbers::new(&bytes).unwrap()).unwrap();
        match j.rejection {
            Some(Rejection::ManyTrumps { trumps: 10, draw }) => {
                assert_eq!(draw.number_index, 77);
                assert_eq!(
                    (draw.number, draw.percent, draw.threshold),
                    (at - 1, 85, at)
                );
                assert!(draw.rejected);
            }
            other => panic!("{other:?}"),
        }
        // Exactly at the threshold survives (u = p is not below p).
        let bytes = numbers(&[at]);
        let j = judge(&hands, &chien, &mut RawNumbers::new(&bytes).unwrap()).unwrap();
        assert!(j.accepted());
        assert_eq!(j.examination.unwrap().draws.len(), 1);
        // 9 and 11 trumps use 80 % and 90 %.
        for (chien, percent) in [("T8 T9 4S 5S 6H 7H", 80), ("T8 T9 T10 T11 5S 6H", 90)] {
            let bytes = numbers(&[0]);
            let j = judge(&hands, &cards(chien), &mut RawNumbers::new(&bytes).unwrap()).unwrap();
            let draw = j.examination.unwrap().draws[0];
            assert_eq!(draw.percent, percent);
        }
    }

    #[test]
    fn long_suit_draw_follows_the_trump_draw() {
        // 7 trumps + 2 = 9 trumps (80 %) and 7 spades with the chien (70 %).
        let hand = "T21 T2 T3 T4 T5 T6 T7 EX KS QS 2S 3S 4S 2H 3H 2D 3D 2C";
        let hands = table(hand, 0);
        let chien = cards("T8 T9 5S 6S 4H 4D");
        let bytes = numbers(&[threshold(80), threshold(70) - 1]);
        let j = judge(&hands, &chien, &mut RawNumbers::new(&bytes).unwrap()).unwrap();
        match j.rejection {
            Some(Rejection::LongSuit {
                suit: Suit::Spades,
                length: 7,
                draw,
            }) => {
                assert_eq!(draw.number_index, 78);
                assert_eq!(draw.percent, 70);
            }
            other => panic!("{other:?}"),
        }
        let x = j.examination.unwrap();
        assert_eq!(x.draws.len(), 2);
        assert!(!x.draws[0].rejected);
        // When the trump draw rejects, the suit draw is not taken.
        let bytes = numbers(&[0, 0]);
        let j = judge(&hands, &chien, &mut RawNumbers::new(&bytes).unwrap()).unwrap();
        assert!(matches!(
            j.rejection,
            Some(Rejection::ManyTrumps { trumps: 9, .. })
        ));
        assert_eq!(j.examination.unwrap().draws.len(), 1);
    }

    #[test]
    fn long_suit_percentages() {
        // 6 trumps (no trump draw), spades of 8 and of 9 with the chien.
        let hand = "T21 T2 T3 T4 T5 EX KS QS 2S 3S 4S 5S 2H 3H 2D 3D 2C 3C";
        let hands = table(hand, 0);
        for (chien, length, percent) in [("T6 6S 7S 4H 4D 4C", 8, 85), ("T6 6S 7S 8S 4D 4C", 9, 90)]
        {
            let bytes = numbers(&[threshold(percent) - 1]);
            let j = judge(&hands, &cards(chien), &mut RawNumbers::new(&bytes).unwrap()).unwrap();
            match j.rejection {
                Some(Rejection::LongSuit {
                    length: l, draw, ..
                }) => {
                    assert_eq!((l, draw.percent, draw.number_index), (length, percent, 77));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn running_out_of_draws_is_an_error() {
        let hands = table(PETITE, 0);
        let chien = cards("T8 T9 T10 4S 5S 6H");
        assert_eq!(
            judge(&hands, &chien, &mut Empty),
            Err(Exhausted { available: 0 })
        );
    }

    #[test]
    fn selection_is_reproducible_and_ends_with_the_first_survivor() {
        let s = select("server", "client", 7).unwrap();
        assert_eq!(s, select("server", "client", 7).unwrap());
        for (j, c) in s.candidates().enumerate() {
            assert_eq!(c.index as usize, j);
            assert_eq!(c.salt, format!("7:dup:{j}"));
            assert_eq!(
                c.deal,
                Deal::from_seeds(Deck::Tarot4, "server", "client", &c.salt)
            );
            assert_eq!(c, &candidate("server", "client", 7, c.index));
        }
        assert!(s.accepted.judgement.accepted());
        assert!(s.rejected.iter().all(|c| !c.judgement.accepted()));
        let text = s.explain("server", "client");
        assert!(text.finish().contains("accepted"), "{}", text.finish());
    }

    #[test]
    fn draws_use_the_numbers_after_the_shuffle() {
        // Find a candidate with a draw and check it used U[77] of its own stream.
        let mut found = false;
        for sequence in 0..200 {
            let s = select("draws", "check", sequence).unwrap();
            for c in s.candidates() {
                let Some(x) = &c.judgement.examination else {
                    continue;
                };
                if let Some(d) = x.draws.first() {
                    let g = Generator::new("draws", "check", &c.salt);
                    assert_eq!(g.numbers().nth(77), Some(d.number));
                    found = true;
                }
            }
            if found {
                break;
            }
        }
        assert!(found);
    }

    #[test]
    fn the_cap_gives_an_error() {
        // Find a sequence whose first candidate is rejected, then cap at 1.
        let sequence = (0..100)
            .find(|&q| !candidate("cap", "test", q, 0).judgement.accepted())
            .unwrap();
        assert_eq!(
            select_capped("cap", "test", sequence, 1),
            Err(DuplicateError::NoCandidateAccepted(1))
        );
        assert_eq!(
            select_capped("cap", "test", sequence, 0),
            Err(DuplicateError::NoCandidateAccepted(0))
        );
    }

    #[test]
    fn rejection_json() {
        let r = Rejection::TooFewTrumps { trumps: 5 };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"reason":"too_few_trumps","trumps":5}"#
        );
        let d = Draw {
            number_index: 77,
            number: 1,
            percent: 80,
            threshold: threshold(80),
            rejected: true,
        };
        let json = serde_json::to_string(&Rejection::ManyTrumps { trumps: 9, draw: d }).unwrap();
        assert!(json.contains(r#""number":"0000000000000001""#), "{json}");
        assert!(json.contains(r#""reason":"many_trumps""#), "{json}");
    }
}
