//! The 78 Tarot cards and sets of them.
//!
//! A [`Card`] is its index in the fairness crate's canonical Tarot order (SPEC section 2,
//! `fairdeal_fairness::Deck::Tarot3/4/5`): trumps `T1`..`T21` (0..=20), the excuse `EX`
//! (21), then for spades, hearts, diamonds and clubs the ranks `1`..`10`, `J` (valet), `N`
//! (cavalier), `Q` (dame), `K` (roi), 14 per suit. A deal's canonical indices are therefore
//! the cards themselves, and a card's code is the fairness crate's code, so a deal's codes
//! round-trip through this crate unchanged.
//!
//! Card points are counted in half-points to stay exact (FFT: oudlers and kings 4.5,
//! queens 3.5, cavaliers 2.5, valets 1.5, every other card 0.5; 91 points, 182
//! half-points, in the deck). A [`CardSet`] (the table contract's bit-mask set, numbered by
//! the canonical index) is a 78-bit mask in a `u128`, so hands, piles and the follow-suit
//! checks are single integer operations.
//!
//! On the wire a card is its code (`"T21"`, `"EX"`, `"10H"`, `"NS"`), a suit its lower-case
//! English name.

use std::fmt;
use std::str::FromStr;

use fairdeal_fairness::Deck;
use fairdeal_table_game::IndexedCard;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The four plain suits, in canonical deck order (S, H, D, C): the fairness crate's.
pub use fairdeal_fairness::Suit;

/// Rank of a valet (jack) in a plain suit.
pub const VALET: u8 = 11;
/// Rank of a cavalier (knight) in a plain suit.
pub const CAVALIER: u8 = 12;
/// Rank of a dame (queen) in a plain suit.
pub const DAME: u8 = 13;
/// Rank of a roi (king) in a plain suit.
pub const ROI: u8 = 14;

/// Cards in the deck.
pub const DECK_LEN: usize = 78;
/// Half-points in the deck (91 points).
pub const DECK_HALF_POINTS: u16 = 182;

/// The deck used for card codes (the three Tarot decks share their codes).
const CODES: Deck = Deck::Tarot4;

/// One Tarot card: its canonical index (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Card(u8);

/// A card kind: a trump with its number, the excuse, or a plain card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A trump (atout), numbered 1 (the petit) to 21.
    Trump(u8),
    /// The excuse.
    Excuse,
    /// A plain card: its suit and rank, 1 up to [`ROI`].
    Plain(Suit, u8),
}

impl Card {
    /// The petit, trump 1 (an oudler).
    pub const PETIT: Card = Card(0);
    /// Trump 21 (an oudler).
    pub const VINGT_ET_UN: Card = Card(20);
    /// The excuse (an oudler).
    pub const EXCUSE: Card = Card(21);

    /// The card at canonical index `index` (0..78).
    pub const fn from_index(index: u8) -> Option<Card> {
        if (index as usize) < DECK_LEN {
            Some(Card(index))
        } else {
            None
        }
    }

    /// The canonical index (the fairness crate's card index in the Tarot decks).
    pub const fn index(self) -> u8 {
        self.0
    }

    /// Trump number `n` (1..=21).
    pub const fn trump(n: u8) -> Option<Card> {
        if n >= 1 && n <= 21 {
            Some(Card(n - 1))
        } else {
            None
        }
    }

    /// The plain card of `suit` and `rank` (1..=[`ROI`]).
    pub const fn plain(suit: Suit, rank: u8) -> Option<Card> {
        if rank >= 1 && rank <= ROI {
            Some(Card(22 + suit.index() * 14 + rank - 1))
        } else {
            None
        }
    }

    /// What the card is.
    pub const fn kind(self) -> Kind {
        match self.0 {
            0..=20 => Kind::Trump(self.0 + 1),
            21 => Kind::Excuse,
            n => {
                let k = n.saturating_sub(22);
                match Suit::from_index(k / 14) {
                    Some(suit) => Kind::Plain(suit, k % 14 + 1),
                    // Indices are below 78 by construction.
                    None => Kind::Excuse,
                }
            }
        }
    }

    /// Whether this is one of the 21 trumps (not the excuse).
    pub const fn is_trump(self) -> bool {
        self.0 <= 20
    }

    /// Whether this is the excuse.
    pub const fn is_excuse(self) -> bool {
        self.0 == 21
    }

    /// The plain suit, `None` for trumps and the excuse.
    pub const fn suit(self) -> Option<Suit> {
        match self.kind() {
            Kind::Plain(suit, _) => Some(suit),
            _ => None,
        }
    }

    /// The trump number or plain rank (1..=21 or 1..=14); 0 for the excuse.
    pub const fn rank(self) -> u8 {
        match self.kind() {
            Kind::Trump(n) | Kind::Plain(_, n) => n,
            Kind::Excuse => 0,
        }
    }

    /// Whether this is an oudler (bout): the petit, the 21 or the excuse.
    pub const fn is_oudler(self) -> bool {
        matches!(self.0, 0 | 20 | 21)
    }

    /// Whether this is a king.
    pub const fn is_king(self) -> bool {
        matches!(self.kind(), Kind::Plain(_, ROI))
    }

    /// The card's value in half-points: oudlers and kings 9, queens 7, cavaliers 5,
    /// valets 3, every other card 1 (FFT, "valeur des cartes").
    pub const fn half_points(self) -> u16 {
        if self.is_oudler() {
            return 9;
        }
        match self.kind() {
            Kind::Plain(_, ROI) => 9,
            Kind::Plain(_, DAME) => 7,
            Kind::Plain(_, CAVALIER) => 5,
            Kind::Plain(_, VALET) => 3,
            _ => 1,
        }
    }

    /// The card's code, as the fairness crate writes it (`"T1"`, `"EX"`, `"NS"`, `"KC"`).
    pub fn code(self) -> &'static str {
        CODES.code(self.0).unwrap_or("??")
    }

    /// The card for a fairness deal's index in a Tarot deck; `None` for other decks or an
    /// index past the deck.
    pub fn from_deck_index(deck: Deck, index: u8) -> Option<Card> {
        if deck.is_tarot() {
            Card::from_index(index)
        } else {
            None
        }
    }

    /// Every card, in canonical order.
    pub fn all() -> impl Iterator<Item = Card> + Clone {
        (0..DECK_LEN as u8).map(Card)
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl fmt::Debug for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A card code that is not a Tarot card.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a Tarot card code")]
pub struct BadCardCode(pub String);

impl FromStr for Card {
    type Err = BadCardCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CODES
            .index_of(s)
            .map(Card)
            // Codes are short; keep a pasted wall of text out of the message.
            .ok_or_else(|| BadCardCode(s.chars().take(8).collect()))
    }
}

impl Serialize for Card {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        code.parse().map_err(serde::de::Error::custom)
    }
}

impl IndexedCard for Card {
    type Bits = u128;
    const ALL: u128 = (1 << DECK_LEN) - 1;

    fn set_index(self) -> u8 {
        self.0
    }

    fn from_set_index(index: u8) -> Option<Card> {
        Card::from_index(index)
    }
}

/// A set of cards, as a bit mask over canonical indices (the contract's
/// [`fairdeal_table_game::CardSet`]); iterates in canonical order, so the last trump of a
/// set is its strongest. What a set is in Tarot (a suit, its trumps, its oudlers, its
/// value) is [`TarotCards`].
pub type CardSet = fairdeal_table_game::CardSet<Card>;

/// Tarot's sets of cards: its suits, trumps and oudlers, and what a set is worth.
pub trait TarotCards: Sized {
    /// The 21 trumps (without the excuse).
    const TRUMPS: Self;
    /// The three oudlers.
    const OUDLERS: Self;

    /// The cards of `suit`.
    fn suit(suit: Suit) -> Self;

    /// The trumps of the set (without the excuse).
    fn trumps(self) -> Self;

    /// The cards of `suit` in the set.
    fn of_suit(self, suit: Suit) -> Self;

    /// The value of the cards in half-points.
    fn half_points(self) -> u16;

    /// The number of oudlers in the set.
    fn oudlers(self) -> usize;
}

impl TarotCards for CardSet {
    const TRUMPS: CardSet = CardSet::from_bits((1 << 21) - 1);
    const OUDLERS: CardSet = CardSet::from_bits(1 | 1 << 20 | 1 << 21);

    fn suit(suit: Suit) -> CardSet {
        CardSet::from_bits(((1u128 << 14) - 1) << (22 + 14 * suit.index() as u32))
    }

    fn trumps(self) -> CardSet {
        self.intersection(CardSet::TRUMPS)
    }

    fn of_suit(self, suit: Suit) -> CardSet {
        self.intersection(<CardSet as TarotCards>::suit(suit))
    }

    fn half_points(self) -> u16 {
        self.iter().map(Card::half_points).sum()
    }

    fn oudlers(self) -> usize {
        self.intersection(CardSet::OUDLERS).len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn codes_round_trip_with_the_fairness_deck() {
        for deck in [Deck::Tarot3, Deck::Tarot4, Deck::Tarot5] {
            for (i, code) in deck.codes().iter().enumerate() {
                let card = Card::from_deck_index(deck, i as u8).unwrap();
                assert_eq!(card.code(), *code);
                assert_eq!(code.parse::<Card>(), Ok(card));
                assert_eq!(serde_json::to_string(&card).unwrap(), format!("\"{code}\""));
            }
        }
        assert_eq!(Card::from_deck_index(Deck::Dix, 0), None);
        assert_eq!(Card::from_index(78), None);
        assert!("ZZ".parse::<Card>().is_err());
    }

    #[test]
    fn kinds_and_named_cards() {
        assert_eq!(Card::trump(1), Some(Card::PETIT));
        assert_eq!(Card::trump(21), Some(Card::VINGT_ET_UN));
        assert_eq!(Card::trump(22), None);
        assert_eq!(Card::EXCUSE.code(), "EX");
        assert_eq!(Card::plain(Suit::Hearts, 10).unwrap().code(), "10H");
        assert_eq!(Card::plain(Suit::Spades, CAVALIER).unwrap().code(), "NS");
        assert_eq!(Card::plain(Suit::Clubs, ROI).unwrap().code(), "KC");
        assert_eq!(
            "QD".parse::<Card>().unwrap().kind(),
            Kind::Plain(Suit::Diamonds, DAME)
        );
        assert_eq!("T7".parse::<Card>().unwrap().kind(), Kind::Trump(7));
        assert!(Card::EXCUSE.is_oudler() && !Card::EXCUSE.is_trump());
        assert_eq!(CardSet::suit(Suit::Clubs).len(), 14);
        assert_eq!(CardSet::ALL.len(), DECK_LEN);
    }

    /// FFT, "valeur des cartes": 91 points in all; 3 oudlers + 4 kings at 4.5, 4 queens
    /// at 3.5, 4 cavaliers at 2.5, 4 valets at 1.5, 59 other cards at 0.5.
    #[test]
    fn the_deck_is_worth_91_points() {
        assert_eq!(CardSet::ALL.half_points(), DECK_HALF_POINTS);
        assert_eq!(CardSet::OUDLERS.half_points(), 27);
        let small = Card::all().filter(|c| c.half_points() == 1).count();
        assert_eq!(small, 59);
    }
}
