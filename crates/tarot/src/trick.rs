//! The play of the cards (FFT, "le jeu de la carte"): which cards a player may play to a
//! trick, and who wins it.
//!
//! - Follow the suit led if you can. Otherwise you must trump; and a trump (whether the
//!   trick was led in trumps or you are trumping a suit) must be higher than every trump
//!   already in the trick when you hold a higher one, otherwise any trump. With neither
//!   the suit nor a trump, play any card.
//! - The excuse may be played at any time instead; when it is led, the next card sets the
//!   suit to follow.
//! - The highest trump wins the trick, else the highest card of the suit led; the excuse
//!   never wins (except in a chelem's last trick, decided by the game, which knows the
//!   sides).

use fairdeal_table_game::Seat;
use serde::{Deserialize, Serialize};

use crate::card::{Card, CardSet, Suit, TarotCards};
use crate::error::RuleError;

/// One card played, by whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlayedCard {
    /// The player.
    pub seat: Seat,
    /// The card.
    pub card: Card,
}

/// A finished trick.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Trick {
    /// The cards in the order played (the first was led).
    pub cards: Vec<PlayedCard>,
    /// Who won it.
    pub winner: Seat,
}

impl Trick {
    /// The trick's cards as a set.
    pub fn set(&self) -> CardSet {
        self.cards.iter().map(|p| p.card).collect()
    }

    /// The seat that played `card` in this trick.
    pub fn player_of(&self, card: Card) -> Option<Seat> {
        self.cards.iter().find(|p| p.card == card).map(|p| p.seat)
    }
}

/// The card that sets what must be followed: the first card that is not the excuse.
fn led(trick: &[Card]) -> Option<Card> {
    trick.iter().copied().find(|c| !c.is_excuse())
}

/// The highest trump number in the trick, 0 when none.
fn highest_trump(trick: &[Card]) -> u8 {
    trick
        .iter()
        .filter(|c| c.is_trump())
        .map(|c| c.rank())
        .max()
        .unwrap_or(0)
}

/// The trumps of `trumps` a player must choose from: those above `highest` if any.
fn overtrump(trumps: CardSet, highest: u8) -> CardSet {
    let higher: CardSet = trumps.iter().filter(|c| c.rank() > highest).collect();
    if higher.is_empty() { trumps } else { higher }
}

/// The cards of `hand` that may be played to `trick` (the cards already in it, in order).
pub fn playable(hand: CardSet, trick: &[Card]) -> CardSet {
    let Some(led) = led(trick) else {
        return hand;
    };
    let trumps = hand.trumps();
    let must = match led.suit() {
        Some(suit) if !hand.of_suit(suit).is_empty() => hand.of_suit(suit),
        _ if !trumps.is_empty() => overtrump(trumps, highest_trump(trick)),
        _ => hand,
    };
    if hand.contains(Card::EXCUSE) {
        must.with(Card::EXCUSE)
    } else {
        must
    }
}

/// Why `card` may not be played from `hand` to `trick` (it is held: checked before).
pub fn check_play(hand: CardSet, trick: &[Card], card: Card) -> Result<(), RuleError> {
    if playable(hand, trick).contains(card) {
        return Ok(());
    }
    let Some(led) = led(trick) else {
        return Ok(());
    };
    match led.suit() {
        Some(suit) if !hand.of_suit(suit).is_empty() => {
            Err(RuleError::MustFollowSuit { suit, card })
        }
        _ if !card.is_trump() => Err(RuleError::MustTrump { card }),
        _ => Err(RuleError::MustOvertrump {
            highest: highest_trump(trick),
            card,
        }),
    }
}

/// The position in `trick` of the card that wins it by the cards alone: the highest trump,
/// else the highest card of the suit led; `None` for an empty trick (or the excuse alone).
pub fn winning_position(trick: &[Card]) -> Option<usize> {
    let best_trump = trick
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_trump())
        .max_by_key(|(_, c)| c.rank());
    if let Some((i, _)) = best_trump {
        return Some(i);
    }
    let suit: Suit = led(trick)?.suit()?;
    trick
        .iter()
        .enumerate()
        .filter(|(_, c)| c.suit() == Some(suit))
        .max_by_key(|(_, c)| c.rank())
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn set(codes: &str) -> CardSet {
        codes.parse().unwrap()
    }

    fn cards(codes: &str) -> Vec<Card> {
        codes
            .split_whitespace()
            .map(|c| c.parse().unwrap())
            .collect()
    }

    #[test]
    fn follow_then_trump_then_overtrump_and_the_excuse_always() {
        let hand = set("3H KH T5 T12 EX 2S");
        assert_eq!(playable(hand, &cards("7H")), set("3H KH EX"));
        // No diamond: trump, and overtrump the 8 with the 12.
        assert_eq!(playable(hand, &cards("4D T8")), set("T12 EX"));
        // Cannot overtrump the 14: any trump.
        assert_eq!(playable(hand, &cards("4D T14")), set("T5 T12 EX"));
        // Trumps led: a higher trump.
        assert_eq!(playable(hand, &cards("T7")), set("T12 EX"));
        // Excuse led: the next card sets the suit.
        assert_eq!(playable(hand, &cards("EX 9S")), set("2S EX"));
        assert_eq!(playable(hand, &cards("EX")), hand);
        // Neither the suit nor a trump: anything.
        let poor = set("3H 2S");
        assert_eq!(playable(poor, &cards("4D")), poor);
        assert_eq!(
            check_play(hand, &cards("7H"), "2S".parse().unwrap()),
            Err(RuleError::MustFollowSuit {
                suit: Suit::Hearts,
                card: "2S".parse().unwrap()
            })
        );
        assert_eq!(
            check_play(hand, &cards("4D"), "3H".parse().unwrap()),
            Err(RuleError::MustTrump {
                card: "3H".parse().unwrap()
            })
        );
        assert_eq!(
            check_play(hand, &cards("4D T8"), "T5".parse().unwrap()),
            Err(RuleError::MustOvertrump {
                highest: 8,
                card: "T5".parse().unwrap()
            })
        );
    }

    #[test]
    fn the_highest_trump_wins_else_the_highest_of_the_suit_led() {
        assert_eq!(winning_position(&cards("7H KH 2H QH")), Some(1));
        assert_eq!(winning_position(&cards("7H KH T1 QH")), Some(2));
        assert_eq!(winning_position(&cards("EX 3S KD 4S")), Some(3));
        assert_eq!(winning_position(&cards("KD EX T2 T9")), Some(3));
        assert_eq!(winning_position(&[]), None);
    }
}
