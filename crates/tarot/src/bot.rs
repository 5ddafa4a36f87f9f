//! The bot: a player that chooses one of a [`SeatView`]'s legal commands from that view
//! alone, so it sees exactly what a human at the seat sees.
//!
//! Deterministic: the only randomness is a small noise on its bids, drawn from a xorshift
//! PRNG seeded with the bot's seed, the seat and the state's version, so a decision is a
//! pure function of (view, seed) and needs no bot state.
//!
//! - **Bidding** from a hand count (oudlers, trumps, kings and honours, long suits and
//!   voids), scaled to an 18-card hand: about 40 for a petite, 56 a garde, 71 a garde sans,
//!   81 a garde contre; it bids the highest contract it is worth above the last bid.
//! - **Calling** (at 5) the king of the suit where it holds most cards without the king.
//! - **Écart**: plain cards of its shortest suits first, the valuable ones first (they then
//!   count for it), trumps only when forced (the legal list enforces the rules).
//! - **Chelem**: announced only with an overwhelming hand; **poignée**: shown by the attack.
//! - **Play**: draws trumps with the master trump when long in trumps, cashes kings, leads
//!   low from its longest suit; gives points to a partner who holds the trick when that is
//!   safe (and saves the petit when last to play behind a partner), wins a trick as cheaply
//!   as it can when an opponent holds it, and otherwise plays its cheapest card, using the
//!   excuse to save an honour and never keeping the excuse for the last trick.

use fairdeal_fairness::pick;
use fairdeal_table_game::{Seat, decision_seed};
use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;

use crate::card::{Card, CardSet, DAME, Suit, TarotCards};
use crate::command::Command;
use crate::contract::Contract;
use crate::trick::winning_position;
use crate::view::SeatView;

/// The PRNG of one decision: a function of the seed, the seat and the version
/// ([`decision_seed`]).
fn decision_rng(seed: u64, view: &SeatView) -> XorShiftRng {
    XorShiftRng::seed_from_u64(decision_seed(seed, view.table.version, view.seat))
}

/// The bot's command for `view`; `None` when the view offers none.
pub fn choose(view: &SeatView, seed: u64) -> Option<Command> {
    let first = view.legal.first()?;
    if view.legal.len() == 1 {
        return Some(first.clone());
    }
    let hand = view.hand_set();
    match first {
        Command::Pass | Command::Bid { .. } => {
            let mut rng = decision_rng(seed, view);
            Some(bid(view, hand, &mut rng))
        }
        Command::CallKing { .. } => call(view, hand),
        Command::Discard { .. } => discard(view, hand),
        Command::DeclareChelem { .. } => Some(Command::DeclareChelem {
            announce: overwhelming(hand),
        }),
        Command::PlayCard { .. } | Command::ShowPoignee { .. } => play(view, hand),
        Command::StartMatch { .. } | Command::StartDeal { .. } => Some(first.clone()),
    }
}

/// The hand count the bot bids on, for an 18-card hand.
pub fn strength(hand: CardSet) -> i32 {
    let trumps = hand.trumps();
    let n = trumps.len() as i32;
    let mut value = 0;
    if hand.contains(Card::VINGT_ET_UN) {
        value += 10;
    }
    if hand.contains(Card::EXCUSE) {
        value += 8;
    }
    if hand.contains(Card::PETIT) {
        value += if n >= 6 {
            8
        } else if n >= 4 {
            5
        } else {
            0
        };
    }
    value += 2 * n + trumps.iter().filter(|c| c.rank() >= 16).count() as i32;
    if n >= 6 {
        value += 2 * (n - 5);
    }
    for suit in Suit::ALL {
        let cards = hand.of_suit(suit);
        let len = cards.len() as i32;
        for card in cards.iter() {
            value += match card.rank() {
                14 => 6,
                13 => 3,
                12 => 2,
                11 => 1,
                _ => 0,
            };
        }
        if len >= 5 {
            value += 2 * (len - 4);
        }
        if len == 0 && n >= 4 {
            value += 6;
        } else if len == 1 && n >= 4 {
            value += 3;
        }
    }
    let size = hand.len().max(1) as i32;
    value * 18 / size
}

/// A hand the bot announces a chelem with: the 21, every other card a trump or a king, and
/// at least two thirds of the hand in trumps.
fn overwhelming(hand: CardSet) -> bool {
    let trumps = hand.trumps().len();
    hand.contains(Card::VINGT_ET_UN)
        && hand.iter().all(|c| c.suit().is_none() || c.is_king())
        && trumps * 3 >= hand.len() * 2
}

fn bid(view: &SeatView, hand: CardSet, rng: &mut XorShiftRng) -> Command {
    // A little noise, so identical hands do not always bid identically: -3, 0 or +3.
    let noise = 3 * (pick(rng.next_u64(), 3) as i32 - 1);
    let value = strength(hand) + noise;
    let worth = [
        (81, Contract::GardeContre),
        (71, Contract::GardeSans),
        (56, Contract::Garde),
        (40, Contract::Petite),
    ]
    .into_iter()
    .find(|(threshold, _)| value >= *threshold)
    .map(|(_, c)| c);
    let legal = |contract| view.legal.contains(&Command::Bid { contract });
    match worth {
        Some(contract) if legal(contract) => Command::Bid { contract },
        _ => Command::Pass,
    }
}

fn call(view: &SeatView, hand: CardSet) -> Option<Command> {
    view.legal
        .iter()
        .filter_map(|c| match c {
            Command::CallKing { card } => Some(*card),
            _ => None,
        })
        .filter(|card| !hand.contains(*card))
        .max_by_key(|card| {
            let suit = card.suit().map_or(0, |s| hand.of_suit(s).len());
            (card.rank(), suit)
        })
        .or_else(|| {
            // Holding every callable card: call one of its own (and play alone).
            view.legal.iter().find_map(|c| match c {
                Command::CallKing { card } => Some(*card),
                _ => None,
            })
        })
        .map(|card| Command::CallKing { card })
}

fn discard(view: &SeatView, hand: CardSet) -> Option<Command> {
    view.legal
        .iter()
        .filter_map(|c| match c {
            Command::Discard { card } => Some(*card),
            _ => None,
        })
        .min_by_key(|card| {
            let suit_len = card.suit().map_or(99, |s| hand.of_suit(s).len());
            (
                card.is_trump(),
                suit_len,
                std::cmp::Reverse(card.half_points()),
                card.rank(),
            )
        })
        .map(|card| Command::Discard { card })
}

/// What the bot knows of a seat's side.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Ally,
    Opponent,
    Unknown,
}

fn side_of(view: &SeatView, hand: CardSet, other: Seat) -> Side {
    let me = view.seat;
    let table = &view.table;
    let Some(taker) = table.taker else {
        return Side::Unknown;
    };
    // At 5, the partner: whoever played the called card, or me if I hold it.
    let partner = table
        .called_played_by
        .or_else(|| table.called.filter(|c| hand.contains(*c)).map(|_| me));
    let five = table.options.is_some_and(|o| o.seats == 5);
    let attack = |s: Seat| s == taker || Some(s) == partner.filter(|p| *p != taker);
    let i_attack = attack(me);
    if attack(other) {
        return if i_attack { Side::Ally } else { Side::Opponent };
    }
    match (i_attack, five && partner.is_none()) {
        (true, _) => Side::Opponent,
        (false, true) => Side::Unknown,
        (false, false) => Side::Ally,
    }
}

fn play(view: &SeatView, hand: CardSet) -> Option<Command> {
    let i_attack =
        view.table.taker == Some(view.seat) || view.table.called.is_some_and(|c| hand.contains(c));
    // The attack shows its poignée, the biggest it has.
    if i_attack
        && let Some(show) = view
            .legal
            .iter()
            .rev()
            .find(|c| matches!(c, Command::ShowPoignee { .. }))
    {
        return Some(show.clone());
    }
    let legal: CardSet = view
        .legal
        .iter()
        .filter_map(|c| match c {
            Command::PlayCard { card } => Some(*card),
            _ => None,
        })
        .collect();
    let card = choose_card(view, hand, legal)?;
    Some(Command::PlayCard { card })
}

/// The cheapest card: fewest points, then lowest; the petit and the excuse last.
fn cheapest(cards: CardSet) -> Option<Card> {
    cards
        .iter()
        .min_by_key(|c| (c.is_oudler(), c.half_points(), c.is_trump(), c.rank()))
}

fn choose_card(view: &SeatView, hand: CardSet, legal: CardSet) -> Option<Card> {
    let table = &view.table;
    let seats = table.options.map_or(4, |o| o.seat_count());
    // Never keep the excuse for the last trick (it would change sides).
    if legal.contains(Card::EXCUSE) && hand.len() <= 2 {
        return Some(Card::EXCUSE);
    }
    let trick: Vec<Card> = table.trick.iter().map(|p| p.card).collect();
    let played = table.played();
    let out = CardSet::ALL.difference(played).difference(hand);
    if trick.is_empty() {
        return lead(view, hand, legal, out);
    }
    let last_to_play = trick.len() + 1 == seats;
    let winner = winning_position(&trick)
        .and_then(|i| table.trick.get(i))
        .map(|p| p.seat);
    let partner_holds = winner.is_some_and(|w| side_of(view, hand, w) == Side::Ally);
    let without_excuse = legal.difference(CardSet::EMPTY.with(Card::EXCUSE));
    if partner_holds {
        let safe = last_to_play
            || trick.iter().any(|c| {
                *c == Card::VINGT_ET_UN
                    || (c.is_trump() && out.trumps().iter().all(|o| o.rank() < c.rank()))
            });
        if safe {
            // Save the petit behind a partner, else give points.
            if without_excuse.contains(Card::PETIT) {
                return Some(Card::PETIT);
            }
            let give = without_excuse.difference(CardSet::OUDLERS);
            return give
                .iter()
                .max_by_key(|c| (c.half_points(), !c.is_trump(), std::cmp::Reverse(c.rank())))
                .or_else(|| cheapest(legal));
        }
        return cheapest(without_excuse).or_else(|| cheapest(legal));
    }
    let winners: Vec<Card> = without_excuse
        .iter()
        .filter(|c| *c != Card::PETIT || last_to_play)
        .filter(|c| {
            let mut with = trick.clone();
            with.push(*c);
            winning_position(&with) == Some(trick.len())
        })
        .collect();
    let points: u16 = trick.iter().map(|c| c.half_points()).sum();
    if let Some(&lowest) = winners.iter().min_by_key(|c| (c.is_trump(), c.rank())) {
        // The lowest winner when last; otherwise a strong one that later players are
        // unlikely to beat.
        let strongest = winners
            .iter()
            .copied()
            .max_by_key(|c| (c.is_trump(), c.rank()));
        let pick = if last_to_play || points < 5 {
            lowest
        } else {
            strongest.unwrap_or(lowest)
        };
        return Some(pick);
    }
    let cheap = cheapest(without_excuse);
    // Use the excuse rather than give away an honour.
    if legal.contains(Card::EXCUSE) && cheap.is_none_or(|c| c.half_points() >= 5) {
        return Some(Card::EXCUSE);
    }
    cheap.or_else(|| cheapest(legal))
}

fn lead(view: &SeatView, hand: CardSet, legal: CardSet, out: CardSet) -> Option<Card> {
    let i_attack =
        view.table.taker == Some(view.seat) || view.table.called.is_some_and(|c| hand.contains(c));
    let trumps = legal.trumps();
    let master = trumps
        .last()
        .filter(|t| out.trumps().iter().all(|o| o.rank() < t.rank()));
    let long_in_trumps = hand.trumps().len() * 2 >= hand.len();
    if i_attack
        && long_in_trumps
        && !out.trumps().is_empty()
        && let Some(master) = master
    {
        return Some(master);
    }
    if let Some(king) = legal.iter().find(|c| c.is_king()) {
        return Some(king);
    }
    // Low from the longest plain suit; queens and cavaliers are not led.
    let longest = Suit::ALL
        .into_iter()
        .map(|s| legal.of_suit(s))
        .filter(|cards| !cards.is_empty())
        .max_by_key(|cards| cards.len());
    if let Some(cards) = longest {
        let low = cards
            .iter()
            .filter(|c| c.rank() < DAME)
            .min_by_key(|c| c.rank());
        if let Some(low) = low {
            return Some(low);
        }
    }
    let plain_or_trump = legal.difference(CardSet::OUDLERS);
    cheapest(plain_or_trump).or_else(|| cheapest(legal))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn set(codes: &str) -> CardSet {
        codes.parse().unwrap()
    }

    #[test]
    fn strong_hands_count_more_than_weak_ones() {
        let strong = set("T21 T20 T18 T15 T12 T9 T7 T5 T1 EX KS KH QH 3H 4H KD 2C 5C");
        let weak = set("T2 T3 T6 2S 3S 4S 5S 6S 2H 3H 4H 5H 2D 3D 4D 2C 3C 4C");
        assert!(strength(strong) >= 71, "{}", strength(strong));
        assert!(strength(weak) < 40, "{}", strength(weak));
        assert!(overwhelming(set(
            "T21 T20 T19 T18 T17 T16 T15 T14 T13 T12 T11 T10 KS KH KD KC EX T9"
        )));
        assert!(!overwhelming(strong));
    }
}
