//! Dealing conventions (SPEC section 2): how a shuffled order becomes hands (and a chien).
//!
//! - bridge, dix, ruff: card `k` of the order goes to hand `k mod 4` (bridge: N E S W).
//! - Tarot: packets of 3 cards in turn from hand 0; after every packet except the first,
//!   the next single card goes to the chien until it is full (6 cards, 3 with 5 players).
//!
//! Hand 0 is the first player served, the dealer's left.

use crate::deck::Deck;
use crate::generator::{Generator, NumberSource};
use crate::number::{self, BigUint, NumberError};
use crate::shuffle::{Shuffle, ShuffleError, indices_from_order, order_from_indices, shuffle};

/// Why a list of card codes is not a dealt order of a deck.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    /// A code that is not a card of the deck.
    #[error("unknown card {code:?} (not a card of the {deck} deck)")]
    UnknownCard {
        /// The code as given (at most 16 characters of it).
        code: String,
        /// The deck it was checked against.
        deck: Deck,
    },
    /// A card listed twice.
    #[error("card {0} appears more than once")]
    RepeatedCard(&'static str),
    /// Cards of the deck that are not listed.
    #[error("missing card{}: {}", if .0.len() == 1 { "" } else { "s" }, .0.join(" "))]
    MissingCards(Vec<&'static str>),
}

/// One deal: the dealt order and how it was split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deal {
    /// The deck dealt.
    pub deck: Deck,
    /// Canonical card indices in dealing order (first = first card dealt).
    pub order: Vec<u8>,
    /// The shuffle's picks `i_k` (the digits of the distribution number).
    pub indices: Vec<u8>,
    /// The hands, hand 0 first, each in the order its cards were received.
    pub hands: Vec<Vec<u8>>,
    /// The chien (Tarot only; empty otherwise), in the order its cards were dealt.
    pub chien: Vec<u8>,
}

impl Deal {
    /// Deals `deck` from the numbers of `source` (it reads `deck.len() - 1` numbers).
    pub fn from_source<S: NumberSource + ?Sized>(
        deck: Deck,
        source: &mut S,
    ) -> Result<Deal, ShuffleError> {
        let Shuffle { order, indices } = shuffle(deck.len(), source)?;
        let (hands, chien) = split(deck, &order);
        Ok(Deal {
            deck,
            order,
            indices,
            hands,
            chien,
        })
    }

    /// Deals `deck` for one round of the generator (salt = the hand's sequence number for
    /// table games).
    pub fn from_seeds(deck: Deck, server_seed: &str, client_seed: &str, salt: &str) -> Deal {
        Deal::from_generator(deck, &Generator::new(server_seed, client_seed, salt))
    }

    /// Deals `deck` from the numbers of `generator`, cursor 0 on (hand after hand under one
    /// server seed: build the generators with a [`crate::SeedKeyer`]).
    pub fn from_generator(deck: Deck, generator: &Generator) -> Deal {
        let mut numbers = generator.numbers();
        match Deal::from_source(deck, &mut numbers) {
            Ok(deal) => deal,
            // The seeded stream is endless and every deck is shorter than 256 cards.
            Err(_) => Deal::from_indices(deck, &vec![0; deck.len()]).unwrap_or_else(|| Deal {
                deck,
                order: Vec::new(),
                indices: Vec::new(),
                hands: Vec::new(),
                chien: Vec::new(),
            }),
        }
    }

    /// The deal whose shuffle picked `indices`; `None` if they are not valid picks for the
    /// deck (wrong length, or `i_k > n - 1 - k`).
    pub fn from_indices(deck: Deck, indices: &[u8]) -> Option<Deal> {
        if indices.len() != deck.len() {
            return None;
        }
        let order = order_from_indices(indices)?;
        let (hands, chien) = split(deck, &order);
        Some(Deal {
            deck,
            order,
            indices: indices.to_vec(),
            hands,
            chien,
        })
    }

    /// The deal whose dealt order is `order` (canonical indices, first card dealt first);
    /// `None` unless it is a permutation of the deck.
    pub fn from_order(deck: Deck, order: &[u8]) -> Option<Deal> {
        if order.len() != deck.len() {
            return None;
        }
        let indices = indices_from_order(order)?;
        let (hands, chien) = split(deck, order);
        Some(Deal {
            deck,
            order: order.to_vec(),
            indices,
            hands,
            chien,
        })
    }

    /// The deal whose dealt order is written as card codes, first card dealt first.
    ///
    /// Every card of the deck must appear exactly once; the error names the first unknown
    /// or repeated code, or every missing card.
    pub fn from_codes<'a>(
        deck: Deck,
        codes: impl IntoIterator<Item = &'a str>,
    ) -> Result<Deal, OrderError> {
        let mut order = Vec::with_capacity(deck.len());
        let mut seen = [false; 256];
        for code in codes {
            let card = deck.index_of(code).ok_or_else(|| OrderError::UnknownCard {
                // Codes are short; keep a pasted wall of text out of the message.
                code: code.chars().take(16).collect(),
                deck,
            })?;
            let slot = &mut seen[usize::from(card)];
            if *slot {
                return Err(OrderError::RepeatedCard(
                    deck.code(card).unwrap_or_default(),
                ));
            }
            *slot = true;
            order.push(card);
        }
        let missing: Vec<&'static str> = deck
            .codes()
            .iter()
            .zip(seen)
            .filter(|(_, seen)| !seen)
            .map(|(code, _)| *code)
            .collect();
        if !missing.is_empty() {
            return Err(OrderError::MissingCards(missing));
        }
        // Every card exactly once: a permutation, so `from_order` succeeds.
        Deal::from_order(deck, &order).ok_or(OrderError::MissingCards(Vec::new()))
    }

    /// The deal numbered `number` (see [`crate::number`]); an error if `number >= n!`.
    pub fn from_number(deck: Deck, number: &BigUint) -> Result<Deal, NumberError> {
        let indices = number::to_indices(number, deck.len())?;
        // `to_indices` only returns valid picks of the right length.
        Deal::from_indices(deck, &indices).ok_or(NumberError::NotAnOrder(deck.len()))
    }

    /// The distribution number of this deal: the rank of its dealt order, in `[0, n!)`.
    ///
    /// Computed from `indices` (one chunked Horner pass, no validation: every constructor
    /// produces valid picks; for altered fields it is the formula's value as is).
    pub fn distribution_number(&self) -> BigUint {
        number::mixed_radix(&self.indices)
    }

    /// Card codes of a list of canonical indices.
    pub fn codes(&self, cards: &[u8]) -> Vec<&'static str> {
        cards.iter().filter_map(|&c| self.deck.code(c)).collect()
    }
}

/// Splits a dealt order into hands and chien by the deck's convention.
///
/// `order` should hold `deck.len()` cards; extra cards are ignored and missing cards leave
/// hands short, so the function is total.
pub fn split(deck: Deck, order: &[u8]) -> (Vec<Vec<u8>>, Vec<u8>) {
    match order.get(..deck.len()) {
        // A full order (the hot path): every position of the layout is below
        // `deck.len() == cards.len()`.
        Some(cards) => split_with(deck, |positions| {
            positions.iter().map(|&p| cards[usize::from(p)]).collect()
        }),
        // A hand's (or the chien's) positions increase, so a short order fills each one up
        // to its first position past the end, as dealing card by card would.
        None => split_with(deck, |positions| {
            positions
                .iter()
                .map_while(|&p| order.get(usize::from(p)).copied())
                .collect()
        }),
    }
}

/// The hands and the chien, each gathered from its positions in the deck's layout.
fn split_with(deck: Deck, gather: impl Fn(&[u8]) -> Vec<u8>) -> (Vec<Vec<u8>>, Vec<u8>) {
    let layout = Layout::of(deck);
    let hands = layout.hands[..deck.hands()]
        .iter()
        .map(|positions| gather(&positions[..deck.hand_len()]))
        .collect();
    (hands, gather(&layout.chien[..deck.chien_len()]))
}

/// Most hands of a deck, and most cards in a hand or in a chien.
const MAX_HANDS: usize = 5;
const MAX_HAND_LEN: usize = 24;
const MAX_CHIEN_LEN: usize = 6;

/// Where each hand's cards and the chien's lie in a full dealt order: the dealing
/// convention worked out once per deck, at compile time.
struct Layout {
    /// Dealt positions of each hand's cards, in the order the hand receives them.
    hands: [[u8; MAX_HAND_LEN]; MAX_HANDS],
    /// Dealt positions of the chien's cards.
    chien: [u8; MAX_CHIEN_LEN],
}

impl Layout {
    const BRIDGE: Layout = Layout::new(Deck::Bridge);
    const DIX: Layout = Layout::new(Deck::Dix);
    const RUFF: Layout = Layout::new(Deck::Ruff);
    const TAROT3: Layout = Layout::new(Deck::Tarot3);
    const TAROT4: Layout = Layout::new(Deck::Tarot4);
    const TAROT5: Layout = Layout::new(Deck::Tarot5);

    fn of(deck: Deck) -> &'static Layout {
        match deck {
            Deck::Bridge => &Layout::BRIDGE,
            Deck::Dix => &Layout::DIX,
            Deck::Ruff => &Layout::RUFF,
            Deck::Tarot3 => &Layout::TAROT3,
            Deck::Tarot4 => &Layout::TAROT4,
            Deck::Tarot5 => &Layout::TAROT5,
        }
    }

    /// The convention of the module documentation, position by position.
    const fn new(deck: Deck) -> Layout {
        let mut layout = Layout {
            hands: [[0; MAX_HAND_LEN]; MAX_HANDS],
            chien: [0; MAX_CHIEN_LEN],
        };
        let mut held = [0usize; MAX_HANDS];
        let mut chien = 0;
        let players = deck.hands();
        let mut position = 0;
        if deck.is_tarot() {
            let mut packet = 0;
            while position < deck.len() {
                let hand = packet % players;
                let mut k = 0;
                while k < 3 && position < deck.len() {
                    layout.hands[hand][held[hand]] = position as u8;
                    held[hand] += 1;
                    position += 1;
                    k += 1;
                }
                if packet > 0 && chien < deck.chien_len() && position < deck.len() {
                    layout.chien[chien] = position as u8;
                    chien += 1;
                    position += 1;
                }
                packet += 1;
            }
        } else {
            while position < deck.len() {
                let hand = position % players;
                layout.hands[hand][held[hand]] = position as u8;
                held[hand] += 1;
                position += 1;
            }
        }
        layout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dealing convention card by card: the reference [`split`]'s layouts must agree with,
    /// for full and short orders alike.
    fn split_card_by_card(deck: Deck, order: &[u8]) -> (Vec<Vec<u8>>, Vec<u8>) {
        let players = deck.hands();
        let mut hands: Vec<Vec<u8>> = (0..players)
            .map(|_| Vec::with_capacity(deck.hand_len()))
            .collect();
        let mut chien = Vec::with_capacity(deck.chien_len());
        if deck.is_tarot() {
            let mut cards = order.iter().copied().take(deck.len());
            let mut packet = 0usize;
            loop {
                let hand = &mut hands[packet % players];
                let before = hand.len();
                hand.extend(cards.by_ref().take(3));
                if hand.len() == before {
                    break;
                }
                if packet > 0 && chien.len() < deck.chien_len() {
                    match cards.next() {
                        Some(c) => chien.push(c),
                        None => break,
                    }
                }
                packet += 1;
            }
        } else {
            for (k, &c) in order.iter().take(deck.len()).enumerate() {
                hands[k % players].push(c);
            }
        }
        (hands, chien)
    }

    fn identity(deck: Deck) -> Vec<u8> {
        (0..deck.len()).map(|i| i as u8).collect()
    }

    #[test]
    fn one_by_one_decks() {
        let (hands, chien) = split(Deck::Bridge, &identity(Deck::Bridge));
        assert!(chien.is_empty());
        assert_eq!(hands[0][..3], [0, 4, 8]);
        assert_eq!(hands[3][12], 51);
        let (hands, _) = split(Deck::Dix, &identity(Deck::Dix));
        assert!(hands.iter().all(|h| h.len() == 10));
        let (hands, _) = split(Deck::Ruff, &identity(Deck::Ruff));
        assert!(hands.iter().all(|h| h.len() == 9));
    }

    #[test]
    fn tarot_packets_and_chien() {
        let (hands, chien) = split(Deck::Tarot4, &identity(Deck::Tarot4));
        // packet 0 -> hand 0 (0,1,2); packet 1 -> hand 1 (3,4,5), chien 6; packet 2 -> hand 2
        // (7,8,9), chien 10; ...; packet 4 -> hand 0 (15,16,17), chien 18.
        assert_eq!(hands[0][..6], [0, 1, 2, 15, 16, 17]);
        assert_eq!(hands[1][..3], [3, 4, 5]);
        assert_eq!(hands[2][..3], [7, 8, 9]);
        assert_eq!(chien, [6, 10, 14, 18, 22, 26]);
        for deck in [Deck::Tarot3, Deck::Tarot4, Deck::Tarot5] {
            let (hands, chien) = split(deck, &identity(deck));
            assert_eq!(chien.len(), deck.chien_len());
            assert!(hands.iter().all(|h| h.len() == deck.hand_len()), "{deck}");
        }
    }

    #[test]
    fn layouts_match_the_card_by_card_walk() {
        for deck in Deck::ALL {
            for salt in 0..20 {
                let order = Deal::from_seeds(deck, "layout", "c", &salt.to_string()).order;
                assert_eq!(
                    split(deck, &order),
                    split_card_by_card(deck, &order),
                    "{deck}"
                );
                let mut longer = order.clone();
                longer.push(0);
                assert_eq!(
                    split(deck, &longer),
                    split_card_by_card(deck, &order),
                    "{deck}"
                );
                for len in 0..order.len() {
                    let short = &order[..len];
                    assert_eq!(
                        split(deck, short),
                        split_card_by_card(deck, short),
                        "{deck}"
                    );
                }
            }
            let (hands, chien) = split(deck, &identity(deck));
            assert_eq!(
                (hands, chien),
                split_card_by_card(deck, &identity(deck)),
                "{deck}"
            );
        }
    }

    #[test]
    fn short_orders_do_not_panic() {
        for deck in Deck::ALL {
            for len in 0..deck.len() {
                let (hands, chien) = split(deck, &identity(deck)[..len]);
                assert_eq!(hands.iter().map(Vec::len).sum::<usize>() + chien.len(), len);
            }
        }
    }

    #[test]
    fn numbers_and_codes_round_trip() {
        for deck in Deck::ALL {
            let deal = Deal::from_seeds(deck, "server", "client", "1");
            let number = deal.distribution_number();
            assert_eq!(number::from_order(&deal.order), Ok(number.clone()));
            assert_eq!(Deal::from_number(deck, &number), Ok(deal.clone()));
            assert_eq!(Deal::from_order(deck, &deal.order).as_ref(), Some(&deal));
            let codes = deal.codes(&deal.order);
            assert_eq!(Deal::from_codes(deck, codes.iter().copied()), Ok(deal));
        }
        assert_eq!(
            Deal::from_number(Deck::Dix, &number::factorial(40)),
            Err(NumberError::TooLarge { n: 40 })
        );
        assert_eq!(Deal::from_order(Deck::Dix, &[0, 1]), None);
    }

    #[test]
    fn bad_code_lists_name_the_card() {
        let dix = Deck::Dix.codes();
        let unknown = Deal::from_codes(Deck::Dix, ["AS", "6X"]).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "unknown card \"6X\" (not a card of the dix deck)"
        );
        let repeated = Deal::from_codes(Deck::Dix, ["AS", "KS", "AS"]).unwrap_err();
        assert_eq!(repeated, OrderError::RepeatedCard("AS"));
        let missing = Deal::from_codes(Deck::Dix, dix[1..].iter().copied()).unwrap_err();
        assert_eq!(missing.to_string(), "missing card: AS");
        let missing = Deal::from_codes(Deck::Dix, dix[..37].iter().copied()).unwrap_err();
        assert_eq!(missing.to_string(), "missing cards: 7C 6C 5C");
        // A six is not a Ruff card.
        assert!(matches!(
            Deal::from_codes(Deck::Ruff, ["6S"]),
            Err(OrderError::UnknownCard { .. })
        ));
    }

    #[test]
    fn from_seeds_is_a_partition() {
        for deck in Deck::ALL {
            let deal = Deal::from_seeds(deck, "server", "client", "0");
            let mut all: Vec<u8> = deal.hands.concat();
            all.extend(&deal.chien);
            all.sort_unstable();
            assert_eq!(all, identity(deck));
            assert_eq!(
                Deal::from_indices(deck, &deal.indices).as_ref(),
                Some(&deal)
            );
        }
    }
}
