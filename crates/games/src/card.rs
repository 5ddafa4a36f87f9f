//! Suits, ranks, cards and sets of cards.
//!
//! A [`Card`] is a suit and a rank, independent of the deck: `5S` is the same card in the
//! 40-card `dix` deck (canonical index 9) and in the 36-card `ruff` deck (index 8). Its id is
//! its position in the full 40-card canonical order (`AS` = 0, `KS` = 1, ..., `5C` = 39), so
//! for the `dix` deck the id *is* the fairness crate's card index, and a [`CardSet`] (the
//! table contract's bit-mask set, numbered by the id) is a 40-bit mask in a `u64`: hands,
//! won piles and follow-suit checks are single integer operations, which keeps bot matches
//! fast.
//!
//! On the wire a card is its code (`"AS"`, `"TH"`, `"5C"`), a set is a list of codes in
//! canonical order, and a suit is its lower-case English name (`"spades"`).

use std::fmt;
use std::str::FromStr;

use fairdeal_fairness::Deck;
use fairdeal_table_game::IndexedCard;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The four suits, in canonical deck order (S, H, D, C): the fairness crate's.
pub use fairdeal_fairness::Suit;

/// Ranks from the weakest to the strongest: 5 < 6 < 7 < 8 < 9 < 10 < J < Q < K < A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rank {
    /// 5: worth 5 points.
    Five,
    /// 6 (absent from the `ruff` deck).
    Six,
    /// 7.
    Seven,
    /// 8.
    Eight,
    /// 9.
    Nine,
    /// 10 (`T` in codes): worth 10 points.
    Ten,
    /// Jack.
    Jack,
    /// Queen.
    Queen,
    /// King.
    King,
    /// Ace: worth 10 points (see the penalised-aces variant).
    Ace,
}

impl Rank {
    /// All ranks, weakest first.
    pub const ALL: [Rank; 10] = [
        Rank::Five,
        Rank::Six,
        Rank::Seven,
        Rank::Eight,
        Rank::Nine,
        Rank::Ten,
        Rank::Jack,
        Rank::Queen,
        Rank::King,
        Rank::Ace,
    ];

    /// Strength in trick-taking: 0 for the five up to 9 for the ace.
    pub const fn strength(self) -> u8 {
        self as u8
    }

    /// Card points: ace 10, ten 10, five 5, others 0 (100 per 40- or 36-card deck).
    pub const fn points(self) -> u8 {
        match self {
            Rank::Ace | Rank::Ten => 10,
            Rank::Five => 5,
            _ => 0,
        }
    }

    /// The character used in card codes.
    pub const fn letter(self) -> char {
        match self {
            Rank::Five => '5',
            Rank::Six => '6',
            Rank::Seven => '7',
            Rank::Eight => '8',
            Rank::Nine => '9',
            Rank::Ten => 'T',
            Rank::Jack => 'J',
            Rank::Queen => 'Q',
            Rank::King => 'K',
            Rank::Ace => 'A',
        }
    }

    /// The rank of a card-code character.
    pub const fn from_letter(letter: char) -> Option<Rank> {
        match letter {
            '5' => Some(Rank::Five),
            '6' => Some(Rank::Six),
            '7' => Some(Rank::Seven),
            '8' => Some(Rank::Eight),
            '9' => Some(Rank::Nine),
            'T' => Some(Rank::Ten),
            'J' => Some(Rank::Jack),
            'Q' => Some(Rank::Queen),
            'K' => Some(Rank::King),
            'A' => Some(Rank::Ace),
            _ => None,
        }
    }
}

/// One card: a suit and a rank.
///
/// Its id is its position in the 40-card canonical order (suit S, H, D, C; A down to 5);
/// serialised as its code, e.g. `"TH"`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Card(u8);

/// Number of distinct cards (the full 40-card `dix` deck).
pub const CARD_IDS: u8 = 40;

/// A string that is not the code of a Jeu du 10 card.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a card code (expected rank A K Q J T 9 8 7 6 5 then suit S H D C, e.g. \"TH\")"
)]
pub struct BadCardCode(pub String);

impl Card {
    /// The card of `suit` and `rank`.
    pub const fn new(suit: Suit, rank: Rank) -> Card {
        Card(suit.index() * 10 + (9 - rank.strength()))
    }

    /// The card with canonical id `id` (0..40).
    pub const fn from_id(id: u8) -> Option<Card> {
        if id < CARD_IDS { Some(Card(id)) } else { None }
    }

    /// Canonical id: position in the 40-card order (`AS` = 0, `5C` = 39).
    pub const fn id(self) -> u8 {
        self.0
    }

    /// The card's suit.
    pub const fn suit(self) -> Suit {
        match Suit::from_index(self.0 / 10) {
            Some(s) => s,
            // Ids are below 40 by construction.
            None => Suit::Clubs,
        }
    }

    /// The card's rank.
    pub const fn rank(self) -> Rank {
        Rank::ALL[(9 - self.0 % 10) as usize]
    }

    /// Card points (A 10, T 10, 5 5).
    pub const fn points(self) -> u8 {
        self.rank().points()
    }

    /// Whether the card beats `other` in a trick where `led` was led and `trump` is trumps
    /// (`other` being the card currently winning the trick).
    pub fn beats(self, other: Card, led: Suit, trump: Suit) -> bool {
        let (s, o) = (self.suit(), other.suit());
        if s == o {
            return self.rank() > other.rank();
        }
        // Different suits: only a trump beats a non-trump; a card that neither follows nor
        // trumps never wins.
        s == trump || (o != trump && s == led && o != led)
    }

    /// The card at canonical index `index` of `deck` (`dix` or `ruff` only).
    pub fn from_deck_index(deck: Deck, index: u8) -> Option<Card> {
        match deck {
            // The 40-card order is the id order.
            Deck::Dix => Card::from_id(index),
            // Nine cards a suit, A K Q J T 9 8 7 5: positions 0..=7 are ids 0..=7 of the
            // suit, position 8 is the five (id 9), the six being absent. Computed rather
            // than parsed from the code: every deal converts 36 of them.
            Deck::Ruff if index < 36 => {
                let (suit, pos) = (index / 9, index % 9);
                Card::from_id(suit * 10 + if pos == 8 { 9 } else { pos })
            }
            _ => None,
        }
    }

    /// The card's canonical index in `deck`, if the deck holds it.
    pub fn deck_index(self, deck: Deck) -> Option<u8> {
        let (suit, pos) = (self.0 / 10, self.0 % 10);
        match (deck, pos) {
            (Deck::Dix, _) => Some(self.0),
            // The inverse of `from_deck_index`: no six, the five moves up to position 8.
            (Deck::Ruff, 8) => None,
            (Deck::Ruff, 9) => Some(suit * 9 + 8),
            (Deck::Ruff, _) => Some(suit * 9 + pos),
            _ => None,
        }
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.rank().letter(), self.suit().letter())
    }
}

impl fmt::Debug for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Card {
    type Err = BadCardCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some(r), Some(su), None) => match (Rank::from_letter(r), Suit::from_letter(su)) {
                (Some(rank), Some(suit)) => Ok(Card::new(suit, rank)),
                _ => Err(BadCardCode(s.to_owned())),
            },
            _ => Err(BadCardCode(s.to_owned())),
        }
    }
}

impl Serialize for Card {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let code = [self.rank().letter() as u8, self.suit().letter() as u8];
        // Both letters are ASCII, so the bytes are valid UTF-8.
        serializer.serialize_str(std::str::from_utf8(&code).unwrap_or("??"))
    }
}

impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        code.parse().map_err(serde::de::Error::custom)
    }
}

impl IndexedCard for Card {
    type Bits = u64;
    const ALL: u64 = (1 << CARD_IDS) - 1;

    fn set_index(self) -> u8 {
        self.0
    }

    fn from_set_index(index: u8) -> Option<Card> {
        Card::from_id(index)
    }
}

/// A set of cards, as a bit mask over card ids (the contract's [`fairdeal_table_game::CardSet`]):
/// [`CardSet::ALL`] is the 40-card `dix` deck.
///
/// Iterates in canonical order; serialised as the list of its cards' codes. What a set is
/// in Jeu du 10 (a deck, a suit, its points, its strongest card) is [`JeuDu10Cards`].
pub type CardSet = fairdeal_table_game::CardSet<Card>;

/// Jeu du 10's sets of cards: its decks and suits, and what a set is worth in a trick.
pub trait JeuDu10Cards: Sized {
    /// The cards of a deck (`dix` or `ruff`); `None` for other decks.
    fn of_deck(deck: Deck) -> Option<Self>;

    /// The cards of one suit (all ten ranks).
    fn suit(suit: Suit) -> Self;

    /// The cards of this set in `suit`.
    fn of_suit(self, suit: Suit) -> Self;

    /// Sum of the card points of the set.
    fn points(self) -> u32;

    /// The strongest card of the set (highest rank; among equal ranks the first suit).
    fn highest(self) -> Option<Card>;

    /// The weakest card of the set (lowest rank; among equal ranks the first suit).
    fn lowest(self) -> Option<Card>;
}

impl JeuDu10Cards for CardSet {
    fn of_deck(deck: Deck) -> Option<CardSet> {
        match deck {
            Deck::Dix => Some(CardSet::ALL),
            Deck::Ruff => Some(
                Suit::ALL
                    .iter()
                    .fold(CardSet::ALL, |set, &s| set.without(Card::new(s, Rank::Six))),
            ),
            _ => None,
        }
    }

    fn suit(suit: Suit) -> CardSet {
        CardSet::from_bits(0x3ff << (suit.index() * 10))
    }

    fn of_suit(self, suit: Suit) -> CardSet {
        self.intersection(<CardSet as JeuDu10Cards>::suit(suit))
    }

    fn points(self) -> u32 {
        self.iter().map(|c| u32::from(c.points())).sum()
    }

    fn highest(self) -> Option<Card> {
        self.iter()
            .max_by_key(|c| (c.rank(), std::cmp::Reverse(c.suit())))
    }

    fn lowest(self) -> Option<Card> {
        self.iter().min_by_key(|c| (c.rank(), c.suit()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any set of the 40 cards survives its wire form, in canonical order.
        #[test]
        fn card_sets_round_trip_through_json(mask in 0u64..(1 << 40)) {
            let set = CardSet::from_bits(mask);
            let json = serde_json::to_string(&set).unwrap();
            prop_assert_eq!(serde_json::from_str::<CardSet>(&json).unwrap(), set);
            let ids: Vec<u8> = set.iter().map(Card::id).collect();
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]));
            prop_assert_eq!(ids.len(), set.len());
        }

        /// Code and id are a bijection on the 40 cards.
        #[test]
        fn codes_and_ids_are_a_bijection(id in 0u8..40) {
            let card = Card::from_id(id).unwrap();
            prop_assert_eq!(card.to_string().parse::<Card>().unwrap(), card);
            prop_assert_eq!(Card::new(card.suit(), card.rank()), card);
        }
    }

    #[test]
    fn ids_follow_the_dix_canonical_order() {
        for i in 0..40u8 {
            let card = Card::from_deck_index(Deck::Dix, i).unwrap();
            assert_eq!(card.id(), i);
            assert_eq!(card.deck_index(Deck::Dix), Some(i));
            assert_eq!(Deck::Dix.code(i), Some(card.to_string().as_str()));
        }
        assert_eq!(Card::from_id(40), None);
        assert_eq!("AS".parse::<Card>().unwrap().id(), 0);
        assert_eq!("5C".parse::<Card>().unwrap().id(), 39);
    }

    #[test]
    fn ruff_deck_maps_by_code() {
        let cards: Vec<Card> = (0..36)
            .map(|i| Card::from_deck_index(Deck::Ruff, i).unwrap())
            .collect();
        assert_eq!(
            cards.iter().copied().collect::<CardSet>(),
            CardSet::of_deck(Deck::Ruff).unwrap()
        );
        for (i, card) in cards.iter().enumerate() {
            let i = u8::try_from(i).unwrap();
            assert_eq!(Deck::Ruff.code(i), Some(card.to_string().as_str()));
            assert_eq!(card.deck_index(Deck::Ruff), Some(i));
        }
        assert_eq!(cards[8].to_string(), "5S");
        assert_eq!("6S".parse::<Card>().unwrap().deck_index(Deck::Ruff), None);
        assert_eq!(Card::from_deck_index(Deck::Ruff, 36), None);
        assert_eq!(Card::from_deck_index(Deck::Bridge, 0), None);
    }

    #[test]
    fn points_sum_to_100_in_both_decks() {
        assert_eq!(CardSet::of_deck(Deck::Dix).unwrap().points(), 100);
        assert_eq!(CardSet::of_deck(Deck::Ruff).unwrap().points(), 100);
        assert_eq!(CardSet::of_deck(Deck::Ruff).unwrap().len(), 36);
    }

    #[test]
    fn codes_parse_and_reject() {
        assert_eq!(
            "TH".parse::<Card>().unwrap(),
            Card::new(Suit::Hearts, Rank::Ten)
        );
        for bad in ["", "A", "ASX", "1S", "AX", "as", "10H"] {
            assert!(bad.parse::<Card>().is_err(), "{bad}");
        }
    }

    #[test]
    fn trick_order() {
        let c = |s: &str| s.parse::<Card>().unwrap();
        let (led, trump) = (Suit::Hearts, Suit::Spades);
        assert!(c("AH").beats(c("KH"), led, trump));
        assert!(!c("5H").beats(c("6H"), led, trump));
        assert!(c("5S").beats(c("AH"), led, trump));
        assert!(!c("AH").beats(c("5S"), led, trump));
        assert!(!c("AD").beats(c("5H"), led, trump));
        assert!(c("6S").beats(c("5S"), led, trump));
    }

    #[test]
    fn set_operations() {
        let c = |s: &str| s.parse::<Card>().unwrap();
        let mut set = CardSet::EMPTY;
        assert!(set.insert(c("AS")));
        assert!(!set.insert(c("AS")));
        set.insert(c("5S"));
        set.insert(c("TH"));
        assert_eq!(set.len(), 3);
        assert_eq!(set.points(), 25);
        assert_eq!(set.of_suit(Suit::Spades).len(), 2);
        assert_eq!(set.highest(), Some(c("AS")));
        assert_eq!(set.lowest(), Some(c("5S")));
        assert!(set.remove(c("AS")));
        assert!(!set.remove(c("AS")));
        assert_eq!(
            set.to_vec(),
            vec![c("TH"), c("5S")]
                .into_iter()
                .collect::<CardSet>()
                .to_vec()
        );
        assert_eq!(serde_json::to_string(&set).unwrap(), r#"["5S","TH"]"#);
        let back: CardSet = serde_json::from_str(r#"["5S","TH"]"#).unwrap();
        assert_eq!(back, set);
        assert!(serde_json::from_str::<CardSet>(r#"["ZZ"]"#).is_err());
    }
}
