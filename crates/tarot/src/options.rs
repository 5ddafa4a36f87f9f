//! Table options: how many seats and how long the match is.
//!
//! JSON: `{"seats": 4, "rounds": 1}`; both fields may be omitted (4 seats, one round) and
//! unknown fields are rejected. A round is one deal per seat, so every seat deals the same
//! number of times; a match is `seats * rounds` deals, passed-out and annulled deals
//! included, so it always ends.

use fairdeal_fairness::Deck;
use serde::{Deserialize, Serialize};

/// The most rounds a match may have (a round is one deal per seat).
pub const MAX_ROUNDS: u8 = 10;

/// The options a Tarot table is created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TarotOptions {
    /// Players: 3, 4 or 5 (dealt from `Deck::Tarot3`, `Tarot4`, `Tarot5`).
    pub seats: u8,
    /// Rounds of the match, 1..=[`MAX_ROUNDS`]: the match is `seats * rounds` deals.
    pub rounds: u8,
}

impl Default for TarotOptions {
    fn default() -> Self {
        TarotOptions {
            seats: 4,
            rounds: 1,
        }
    }
}

/// Why table options were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// French Tarot is played by 3, 4 or 5 (FFT: "il se joue à 3, 4 et 5 joueurs").
    #[error("French Tarot is played by 3, 4 or 5 players, not {0}")]
    Seats(u8),
    /// A match has 1 to [`MAX_ROUNDS`] rounds.
    #[error("a match has 1 to {MAX_ROUNDS} rounds, not {0}")]
    Rounds(u8),
}

impl TarotOptions {
    /// The options, checked.
    pub fn validate(self) -> Result<TarotOptions, OptionsError> {
        if !(3..=5).contains(&self.seats) {
            return Err(OptionsError::Seats(self.seats));
        }
        if !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(OptionsError::Rounds(self.rounds));
        }
        Ok(self)
    }

    /// Seats at the table.
    pub const fn seat_count(self) -> usize {
        self.seats as usize
    }

    /// Deals in the match.
    pub const fn deals(self) -> u32 {
        self.seats as u32 * self.rounds as u32
    }

    /// The deck the fairness crate deals for this many seats.
    pub const fn deck(self) -> Deck {
        match self.seats {
            3 => Deck::Tarot3,
            5 => Deck::Tarot5,
            _ => Deck::Tarot4,
        }
    }

    /// Cards in each hand (24, 18, 15).
    pub const fn hand_len(self) -> usize {
        self.deck().hand_len()
    }

    /// Cards in the chien (6, 6, 3).
    pub const fn chien_len(self) -> usize {
        self.deck().chien_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_and_rounds_are_checked_and_give_the_deck() {
        assert_eq!(TarotOptions::default().validate().map(|o| o.deals()), Ok(4));
        let o = |seats, rounds| TarotOptions { seats, rounds }.validate();
        assert_eq!(o(2, 1), Err(OptionsError::Seats(2)));
        assert_eq!(o(6, 1), Err(OptionsError::Seats(6)));
        assert_eq!(o(3, 0), Err(OptionsError::Rounds(0)));
        assert_eq!(o(3, 11), Err(OptionsError::Rounds(11)));
        let sizes: Vec<_> = (3..=5)
            .map(|s| {
                let t = TarotOptions {
                    seats: s,
                    rounds: 2,
                };
                (t.deck(), t.hand_len(), t.chien_len(), t.deals())
            })
            .collect();
        assert_eq!(
            sizes,
            [
                (Deck::Tarot3, 24, 6, 6),
                (Deck::Tarot4, 18, 6, 8),
                (Deck::Tarot5, 15, 3, 10)
            ]
        );
    }
}
