//! A set of a game's cards as a bit mask over its deck's card numbers.
//!
//! A game numbers its deck's cards 0 up to [`IndexedCard::COUNT`] (at most 128) in its
//! canonical order; a [`CardSet`] is then one `u128`, so hands, won piles and follow-suit
//! checks are single integer operations. What a set means in a game (a suit, the trumps,
//! the points it is worth) is the game's to say, from [`CardSet::from_bits`] and the set
//! operations here.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A card of a game's deck, numbered in the game's canonical order so that sets of them
/// are bit masks ([`CardSet`]).
pub trait IndexedCard: Copy {
    /// How many cards the game has (at most 128): their numbers are `0..COUNT`.
    const COUNT: u8;

    /// The card's number, below [`IndexedCard::COUNT`].
    fn set_index(self) -> u8;

    /// The card numbered `index`; `None` at or past [`IndexedCard::COUNT`].
    fn from_set_index(index: u8) -> Option<Self>;
}

/// A set of cards, as a bit mask over their numbers ([`IndexedCard`]).
///
/// Iterates in the game's canonical order (ascending numbers); serialised as the list of
/// its cards, in that order.
pub struct CardSet<C> {
    bits: u128,
    card: PhantomData<fn() -> C>,
}

impl<C: IndexedCard> CardSet<C> {
    /// The empty set.
    pub const EMPTY: CardSet<C> = CardSet::from_bits(0);

    /// Every card of the game.
    pub const ALL: CardSet<C> = CardSet::from_bits(u128::MAX);

    /// The set of the cards whose numbers are the bits of `bits` (bits at or past
    /// [`IndexedCard::COUNT`] are dropped).
    pub const fn from_bits(bits: u128) -> CardSet<C> {
        let all = match 1u128.checked_shl(C::COUNT as u32) {
            Some(past) => past - 1,
            None => u128::MAX,
        };
        CardSet {
            bits: bits & all,
            card: PhantomData,
        }
    }

    /// The bit mask: bit `n` set when the card numbered `n` is in the set.
    pub const fn bits(self) -> u128 {
        self.bits
    }

    fn bit(card: C) -> u128 {
        1u128 << (card.set_index() & 127)
    }

    /// Whether `card` is in the set.
    pub fn contains(self, card: C) -> bool {
        self.bits & Self::bit(card) != 0
    }

    /// Adds `card`; returns whether it was absent.
    pub fn insert(&mut self, card: C) -> bool {
        let absent = !self.contains(card);
        self.bits |= Self::bit(card);
        absent
    }

    /// Removes `card`; returns whether it was present.
    pub fn remove(&mut self, card: C) -> bool {
        let present = self.contains(card);
        self.bits &= !Self::bit(card);
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
    pub const fn intersection(self, other: CardSet<C>) -> CardSet<C> {
        CardSet::from_bits(self.bits & other.bits)
    }

    /// Cards in either set.
    pub const fn union(self, other: CardSet<C>) -> CardSet<C> {
        CardSet::from_bits(self.bits | other.bits)
    }

    /// Cards of `self` not in `other`.
    pub const fn difference(self, other: CardSet<C>) -> CardSet<C> {
        CardSet::from_bits(self.bits & !other.bits)
    }

    /// Number of cards.
    pub const fn len(self) -> usize {
        self.bits.count_ones() as usize
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The card first in canonical order.
    pub fn first(self) -> Option<C> {
        self.iter().next()
    }

    /// The card last in canonical order.
    pub fn last(self) -> Option<C> {
        match self.bits.checked_ilog2() {
            Some(top) => C::from_set_index(top as u8),
            None => None,
        }
    }

    /// The cards in canonical order.
    pub fn iter(self) -> Iter<C> {
        Iter {
            bits: self.bits,
            card: PhantomData,
        }
    }

    /// The cards in canonical order, collected.
    pub fn to_vec(self) -> Vec<C> {
        self.iter().collect()
    }
}

// Written out rather than derived: a derive would ask the card type for each trait, where
// only the mask is compared, hashed or copied.
impl<C> Clone for CardSet<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for CardSet<C> {}

impl<C> PartialEq for CardSet<C> {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<C> Eq for CardSet<C> {}

impl<C> Hash for CardSet<C> {
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
pub struct Iter<C> {
    bits: u128,
    card: PhantomData<fn() -> C>,
}

impl<C> Clone for Iter<C> {
    fn clone(&self) -> Self {
        Iter {
            bits: self.bits,
            card: PhantomData,
        }
    }
}

impl<C> fmt::Debug for Iter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Iter").field(&self.bits).finish()
    }
}

impl<C: IndexedCard> Iterator for Iter<C> {
    type Item = C;

    fn next(&mut self) -> Option<C> {
        while self.bits != 0 {
            let index = self.bits.trailing_zeros() as u8;
            self.bits &= self.bits - 1;
            // A set only holds the numbers of cards (`from_bits` drops the others).
            if let Some(card) = C::from_set_index(index) {
                return Some(card);
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.bits.count_ones() as usize;
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

    /// A deck of 100 cards, past what a `u64` holds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    struct Numbered(u8);

    impl IndexedCard for Numbered {
        const COUNT: u8 = 100;

        fn set_index(self) -> u8 {
            self.0
        }

        fn from_set_index(index: u8) -> Option<Self> {
            (index < Self::COUNT).then_some(Numbered(index))
        }
    }

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
    fn all_is_the_deck_and_bits_past_it_are_dropped() {
        assert_eq!(Set::ALL.len(), 100);
        assert_eq!(Set::from_bits(u128::MAX), Set::ALL);
        assert_eq!(Set::from_bits(1 << 100 | 1).to_vec(), [Numbered(0)]);
        assert_eq!(Set::ALL.bits().count_ones(), 100);
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
