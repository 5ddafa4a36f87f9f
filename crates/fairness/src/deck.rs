//! Canonical decks and card codes (SPEC section 2).
//!
//! A card is identified by its index in its deck's canonical order; the code (`AS`, `TH`,
//! `T21`, `EX`, `10H`, `NS`, ...) is how it is written on the wire and in files. Keeping the
//! index as the in-memory form makes shuffles and distribution numbers plain integer work.

use std::fmt;
use std::str::FromStr;

/// Every deck the fairness core can shuffle and deal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Deck {
    /// 52 cards, dealt one at a time to N, E, S, W.
    Bridge,
    /// 40 cards of Jeu du 10, dealt one at a time to 4 hands.
    Dix,
    /// 36 cards of Ruff / Deux-Cents (no sixes), dealt one at a time to 4 hands.
    Ruff,
    /// 78 Tarot cards for 3 players (24 cards each, chien of 6).
    Tarot3,
    /// 78 Tarot cards for 4 players (18 cards each, chien of 6).
    Tarot4,
    /// 78 Tarot cards for 5 players (15 cards each, chien of 3).
    Tarot5,
}

/// The error for a deck name that is not one of [`Deck::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown game {0:?} (expected one of bridge, dix, ruff, tarot3, tarot4, tarot5)")]
pub struct UnknownDeck(pub String);

impl Deck {
    /// All decks, in a stable order.
    pub const ALL: [Deck; 6] = [
        Deck::Bridge,
        Deck::Dix,
        Deck::Ruff,
        Deck::Tarot3,
        Deck::Tarot4,
        Deck::Tarot5,
    ];

    /// The name used on the command line and on the wire.
    pub const fn name(self) -> &'static str {
        match self {
            Deck::Bridge => "bridge",
            Deck::Dix => "dix",
            Deck::Ruff => "ruff",
            Deck::Tarot3 => "tarot3",
            Deck::Tarot4 => "tarot4",
            Deck::Tarot5 => "tarot5",
        }
    }

    /// The card codes in canonical order.
    pub const fn codes(self) -> &'static [&'static str] {
        match self {
            Deck::Bridge => &BRIDGE,
            Deck::Dix => &DIX,
            Deck::Ruff => &RUFF,
            Deck::Tarot3 | Deck::Tarot4 | Deck::Tarot5 => &TAROT,
        }
    }

    /// Number of cards in the deck.
    pub const fn len(self) -> usize {
        self.codes().len()
    }

    /// Decks are never empty; present for API symmetry with `len`.
    pub const fn is_empty(self) -> bool {
        false
    }

    /// Number of hands dealt.
    pub const fn hands(self) -> usize {
        match self {
            Deck::Bridge | Deck::Dix | Deck::Ruff | Deck::Tarot4 => 4,
            Deck::Tarot3 => 3,
            Deck::Tarot5 => 5,
        }
    }

    /// Number of cards in the chien (0 for non-Tarot decks).
    pub const fn chien_len(self) -> usize {
        match self {
            Deck::Tarot3 | Deck::Tarot4 => 6,
            Deck::Tarot5 => 3,
            Deck::Bridge | Deck::Dix | Deck::Ruff => 0,
        }
    }

    /// Cards per hand.
    pub const fn hand_len(self) -> usize {
        (self.len() - self.chien_len()) / self.hands()
    }

    /// Whether this is one of the Tarot decks (packets of 3 and a chien).
    pub const fn is_tarot(self) -> bool {
        matches!(self, Deck::Tarot3 | Deck::Tarot4 | Deck::Tarot5)
    }

    /// The code of the card at `index` in canonical order, if it exists.
    pub fn code(self, index: u8) -> Option<&'static str> {
        self.codes().get(usize::from(index)).copied()
    }

    /// The canonical index of a card code, if the deck has that card.
    pub fn index_of(self, code: &str) -> Option<u8> {
        self.codes()
            .iter()
            .position(|c| *c == code)
            .and_then(|i| u8::try_from(i).ok())
    }
}

impl fmt::Display for Deck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Deck {
    type Err = UnknownDeck;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Deck::ALL
            .into_iter()
            .find(|d| d.name() == s)
            // Deck names are short; keep a pasted wall of text out of the message.
            .ok_or_else(|| UnknownDeck(s.chars().take(16).collect()))
    }
}

const BRIDGE: [&str; 52] = [
    "AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S", "5S", "4S", "3S", "2S", "AH", "KH", "QH",
    "JH", "TH", "9H", "8H", "7H", "6H", "5H", "4H", "3H", "2H", "AD", "KD", "QD", "JD", "TD", "9D",
    "8D", "7D", "6D", "5D", "4D", "3D", "2D", "AC", "KC", "QC", "JC", "TC", "9C", "8C", "7C", "6C",
    "5C", "4C", "3C", "2C",
];
const DIX: [&str; 40] = [
    "AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S", "5S", "AH", "KH", "QH", "JH", "TH", "9H",
    "8H", "7H", "6H", "5H", "AD", "KD", "QD", "JD", "TD", "9D", "8D", "7D", "6D", "5D", "AC", "KC",
    "QC", "JC", "TC", "9C", "8C", "7C", "6C", "5C",
];
const RUFF: [&str; 36] = [
    "AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "5S", "AH", "KH", "QH", "JH", "TH", "9H", "8H",
    "7H", "5H", "AD", "KD", "QD", "JD", "TD", "9D", "8D", "7D", "5D", "AC", "KC", "QC", "JC", "TC",
    "9C", "8C", "7C", "5C",
];
const TAROT: [&str; 78] = [
    "T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9", "T10", "T11", "T12", "T13", "T14", "T15",
    "T16", "T17", "T18", "T19", "T20", "T21", "EX", "1S", "2S", "3S", "4S", "5S", "6S", "7S", "8S",
    "9S", "10S", "JS", "NS", "QS", "KS", "1H", "2H", "3H", "4H", "5H", "6H", "7H", "8H", "9H",
    "10H", "JH", "NH", "QH", "KH", "1D", "2D", "3D", "4D", "5D", "6D", "7D", "8D", "9D", "10D",
    "JD", "ND", "QD", "KD", "1C", "2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C", "10C", "JC",
    "NC", "QC", "KC",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_spec() {
        let sizes: Vec<_> = Deck::ALL
            .iter()
            .map(|d| (d.len(), d.hands(), d.hand_len(), d.chien_len()))
            .collect();
        assert_eq!(
            sizes,
            [
                (52, 4, 13, 0),
                (40, 4, 10, 0),
                (36, 4, 9, 0),
                (78, 3, 24, 6),
                (78, 4, 18, 6),
                (78, 5, 15, 3)
            ]
        );
    }

    #[test]
    fn codes_are_unique_and_round_trip() {
        for deck in Deck::ALL {
            for (i, code) in deck.codes().iter().enumerate() {
                assert_eq!(deck.index_of(code), Some(u8::try_from(i).unwrap()));
            }
            assert_eq!(deck.code(u8::try_from(deck.len()).unwrap()), None);
        }
    }

    #[test]
    fn first_and_last_cards() {
        assert_eq!((BRIDGE[0], BRIDGE[51]), ("AS", "2C"));
        assert_eq!((DIX[0], DIX[9], DIX[39]), ("AS", "5S", "5C"));
        assert_eq!((RUFF[7], RUFF[8]), ("7S", "5S"));
        assert_eq!(
            (TAROT[0], TAROT[20], TAROT[21], TAROT[22], TAROT[77]),
            ("T1", "T21", "EX", "1S", "KC")
        );
        assert_eq!(Deck::Tarot4.index_of("NS"), Some(33));
        assert_eq!(Deck::Tarot4.index_of("10H"), Some(45));
    }

    #[test]
    fn names_parse() {
        for deck in Deck::ALL {
            assert_eq!(deck.name().parse::<Deck>(), Ok(deck));
        }
        assert!("poker".parse::<Deck>().is_err());
    }
}
