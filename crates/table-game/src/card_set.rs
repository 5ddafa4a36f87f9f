//! A set of a game's cards as a bit mask over its deck's card numbers.
//!
//! A game numbers its deck's cards from 0 in its canonical order and picks the unsigned
//! integer that has a bit for each ([`IndexedCard::Bits`]: `u64` up to 64 cards, `u128` up
//! to 128); a [`CardSet`] is then one such integer, so hands, won piles and follow-suit
//! checks are single integer operations, no wider than the deck needs. What a set means in
//! a game (a suit, the trumps, the points it is worth) is the game's to say, from
//! [`CardSet::from_bits`] and the set operations here.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::ops::{BitAnd, BitOr, Not};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An unsigned integer used as a bit mask: bit `n` stands for the card numbered `n`.
pub trait Bits:
    Copy
    + Eq
    + Hash
    + fmt::Debug
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + Not<Output = Self>
    + Send
    + Sync
    + 'static
{
    /// No bit set.
    const ZERO: Self;

    /// Only bit `index` set (`index` below the width).
    fn bit(index: u8) -> Self;

    /// How many bits are set.
    fn count(self) -> u32;

    /// The lowest bit set (the width when none is).
    fn lowest(self) -> u32;

    /// The highest bit set, if any.
    fn highest(self) -> Option<u32>;

    /// The mask without its lowest bit set.
    fn without_lowest(self) -> Self;
}

macro_rules! bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            const ZERO: $t = 0;

            fn bit(index: u8) -> $t {
                // `wrapping_shl` keeps the shift below the width (one instruction).
                (1 as $t).wrapping_shl(u32::from(index))
            }

            fn count(self) -> u32 {
                self.count_ones()
            }

            fn lowest(self) -> u32 {
                self.trailing_zeros()
            }

            fn highest(self) -> Option<u32> {
                self.checked_ilog2()
            }

            fn without_lowest(self) -> $t {
                self & self.wrapping_sub(1)
            }
        }
    )*};
}

bits!(u64, u128);

/// A card of a game's deck, numbered in the game's canonical order so that sets of them
/// are bit masks ([`CardSet`]).
pub trait IndexedCard: Copy {
    /// The mask a set of these cards is: an unsigned integer with a bit for each card.
    type Bits: Bits;

    /// Every card's bit: bits `0..n` for a deck of `n` cards.
    const ALL: Self::Bits;

    /// The card's number, a bit of [`IndexedCard::ALL`].
    fn set_index(self) -> u8;

    /// The card numbered `index`; `None` for a number that is no card's.
    fn from_set_index(index: u8) -> Option<Self>;
}

/// A set of cards, as a bit mask over their numbers ([`IndexedCard`]).
///
/// Iterates in the game's canonical order (ascending numbers); serialised as the list of
/// its cards, in that order.
pub struct CardSet<C: IndexedCard> {
    bits: C::Bits,
    card: PhantomData<fn() -> C>,
}

impl<C: IndexedCard> CardSet<C> {
    /// The empty set.
    pub const EMPTY: CardSet<C> = CardSet::from_bits(<C::Bits as Bits>::ZERO);

    /// Every card of the game.
    pub const ALL: CardSet<C> = CardSet::from_bits(C::ALL);

    /// The set of the cards whose numbers are the bits of `bits`, which must be bits of
    /// [`IndexedCard::ALL`] (a game's own masks: a suit, its trumps).
    pub const fn from_bits(bits: C::Bits) -> CardSet<C> {
        CardSet {
            bits,
            card: PhantomData,
        }
    }

    /// The bit mask: bit `n` set when the card numbered `n` is in the set.
    pub fn bits(self) -> C::Bits {
        self.bits
    }

    fn bit(card: C) -> C::Bits {
        C::Bits::bit(card.set_index())
    }

    /// Whether `card` is in the set.
    pub fn contains(self, card: C) -> bool {
        self.bits & Self::bit(card) != C::Bits::ZERO
    }

    /// Adds `card`; returns whether it was absent.
    pub fn insert(&mut self, card: C) -> bool {
        let absent = !self.contains(card);
        self.bits = self.bits | Self::bit(card);
        absent
    }

    /// Removes `card`; returns whether it was present.
    pub fn remove(&mut self, card: C) -> bool {
        let present = self.contains(card);
        self.bits = self.bits & !Self::bit(card);
        present
    }

    /// The set with `card` added.
    pub fn with(self, card: C) -> CardSet<C> {
        CardSet::from_bits(self.bits | Self::bit(card))
    }

    /// The set with `card` removed.
    pub fn without(self, card: C) -> CardSet<C> {
        CardSet::from_bits(self.bits & !Self::bit(card))
    }

    /// Cards in both sets.
    pub fn intersection(self, other: CardSet<C>) -> CardSet<C> {
        CardSet::from_bits(self.bits & other.bits)
    }

    /// Cards in either set.
    pub fn union(self, other: CardSet<C>) -> CardSet<C> {
        CardSet::from_bits(self.bits | other.bits)
    }

    /// Cards of `self` not in `other`.
    pub fn difference(self, other: CardSet<C>) -> CardSet<C> {
        CardSet::from_bits(self.bits & !other.bits)
    }

    /// Number of cards.
    pub fn len(self) -> usize {
        self.bits.count() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.bits == C::Bits::ZERO
    }

    /// The card first in canonical order.
    pub fn first(self) -> Option<C> {
        self.iter().next()
    }

    /// The card last in canonical order.
    pub fn last(self) -> Option<C> {
        C::from_set_index(self.bits.highest()? as u8)
    }

    /// The cards in canonical order.
    pub fn iter(self) -> Iter<C> {
        Iter { bits: self.bits }
    }

    /// The cards in canonical order, collected.
    pub fn to_vec(self) -> Vec<C> {
        self.iter().collect()
    }
}

// Written out rather than derived: a derive would ask the card type for each trait, where
// only the mask is compared, hashed or copied.
impl<C: IndexedCard> Clone for CardSet<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: IndexedCard> Copy for CardSet<C> {}

impl<C: IndexedCard> PartialEq for CardSet<C> {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<C: IndexedCard> Eq for CardSet<C> {}

impl<C: IndexedCard> Hash for CardSet<C> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bits.hash(state);
    }
}

impl<C: IndexedCard> Default for CardSet<C> {
    fn default() -> Self {
        CardSet::EMPTY
    }
}

impl<C: IndexedCard + fmt::Debug> fmt::Debug for CardSet<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<C: IndexedCard> FromIterator<C> for CardSet<C> {
    fn from_iter<I: IntoIterator<Item = C>>(iter: I) -> Self {
        iter.into_iter().fold(CardSet::EMPTY, CardSet::with)
    }
}

impl<C: IndexedCard> IntoIterator for CardSet<C> {
    type Item = C;
    type IntoIter = Iter<C>;

    fn into_iter(self) -> Iter<C> {
        self.iter()
    }
}

/// Iterator over a [`CardSet`] in canonical order.
pub struct Iter<C: IndexedCard> {
    bits: C::Bits,
}

impl<C: IndexedCard> Clone for Iter<C> {
    fn clone(&self) -> Self {
        Iter { bits: self.bits }
    }
}

impl<C: IndexedCard> fmt::Debug for Iter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Iter").field(&self.bits).finish()
    }
}

impl<C: IndexedCard> Iterator for Iter<C> {
    type Item = C;

    fn next(&mut self) -> Option<C> {
        while self.bits != C::Bits::ZERO {
            let index = self.bits.lowest() as u8;
            self.bits = self.bits.without_lowest();
            // A set holds the numbers of cards only (`from_bits` takes a game's masks).
            if let Some(card) = C::from_set_index(index) {
                return Some(card);
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.bits.count() as usize;
        (n, Some(n))
    }
}

impl<C: IndexedCard> ExactSizeIterator for Iter<C> {}

/// The cards of a list of card codes separated by white space (`"AS TH 5C"`).
impl<C: IndexedCard + FromStr> FromStr for CardSet<C> {
    type Err = C::Err;

    fn from_str(codes: &str) -> Result<Self, C::Err> {
        codes.split_whitespace().map(str::parse).collect()
    }
}

impl<C: IndexedCard + Serialize> Serialize for CardSet<C> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, C: IndexedCard + Deserialize<'de>> Deserialize<'de> for CardSet<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let cards = Vec::<C>::deserialize(deserializer)?;
        Ok(cards.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A test deck `$name` of `$n` cards numbered `0..$n`, in a mask of `$bits`.
    macro_rules! deck {
        ($name:ident, $n:literal, $bits:ty) => {
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
            struct $name(u8);

            impl IndexedCard for $name {
                type Bits = $bits;
                const ALL: $bits = (1 << $n) - 1;

                fn set_index(self) -> u8 {
                    self.0
                }

                fn from_set_index(index: u8) -> Option<Self> {
                    (index < $n).then_some($name(index))
                }
            }
        };
    }

    // 100 cards, past what a `u64` holds; 40 cards in a `u64`.
    deck!(Numbered, 100, u128);
    deck!(Small, 40, u64);

    type Set = CardSet<Numbered>;

    #[test]
    fn sets_add_remove_and_combine_cards_by_number() {
        let mut set = Set::EMPTY;
        assert!(set.insert(Numbered(99)));
        assert!(!set.insert(Numbered(99)));
        assert!(set.insert(Numbered(3)));
        assert_eq!(set.len(), 2);
        assert!(set.contains(Numbered(3)) && !set.contains(Numbered(4)));
        assert_eq!(set.first(), Some(Numbered(3)));
        assert_eq!(set.last(), Some(Numbered(99)));
        assert_eq!(set.to_vec(), [Numbered(3), Numbered(99)]);
        assert_eq!(set.iter().len(), 2);
        let other: Set = [Numbered(3), Numbered(50)].into_iter().collect();
        assert_eq!(set.intersection(other).to_vec(), [Numbered(3)]);
        assert_eq!(set.union(other).len(), 3);
        assert_eq!(set.difference(other).to_vec(), [Numbered(99)]);
        assert_eq!(
            set.without(Numbered(99)).with(Numbered(7)).to_vec(),
            [Numbered(3), Numbered(7)]
        );
        assert!(set.remove(Numbered(99)));
        assert!(!set.remove(Numbered(99)));
        assert_eq!(Set::EMPTY.first(), None);
        assert_eq!(Set::EMPTY.last(), None);
        assert!(Set::default().is_empty());
    }

    #[test]
    fn all_is_the_deck_in_the_width_the_game_picks() {
        assert_eq!(Set::ALL.len(), 100);
        assert_eq!(Set::ALL.last(), Some(Numbered(99)));
        assert_eq!(
            Set::from_bits(1 << 99 | 1).to_vec(),
            [Numbered(0), Numbered(99)]
        );
        assert_eq!(Set::ALL.bits().count_ones(), 100);
        let small: CardSet<Small> = [Small(39), Small(0)].into_iter().collect();
        assert_eq!(small.bits(), 1 << 39 | 1);
        assert_eq!(small.to_vec(), [Small(0), Small(39)]);
        assert_eq!(small.last(), Some(Small(39)));
        assert_eq!(CardSet::<Small>::ALL.difference(small).len(), 38);
    }

    impl FromStr for Numbered {
        type Err = std::num::ParseIntError;

        fn from_str(s: &str) -> Result<Self, Self::Err> {
            s.parse().map(Numbered)
        }
    }

    #[test]
    fn a_list_of_codes_parses_into_its_set() {
        let set: Set = " 64 2\n7 ".parse().unwrap();
        assert_eq!(set.to_vec(), [Numbered(2), Numbered(7), Numbered(64)]);
        assert_eq!("".parse::<Set>().unwrap(), Set::EMPTY);
        assert!("2 x".parse::<Set>().is_err());
    }

    #[test]
    fn a_set_is_the_list_of_its_cards_on_the_wire_and_in_debug() {
        let set: Set = [Numbered(64), Numbered(2)].into_iter().collect();
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, "[2,64]");
        assert_eq!(serde_json::from_str::<Set>(&json).unwrap(), set);
        assert_eq!(format!("{set:?}"), "[Numbered(2), Numbered(64)]");
    }
}
