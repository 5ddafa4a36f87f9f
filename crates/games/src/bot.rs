//! Bots: players that choose a command from a [`SeatView`], so they see exactly what a
//! human at that seat sees and nothing more.
//!
//! Both bots are deterministic: a bot holds a seed, and each decision draws from a small
//! PRNG (xorshift, from `rand_xorshift`) seeded with the bot's seed, the seat and the
//! state's version. A decision is therefore a pure function of (seed, view): the same
//! seeds and deals replay the same match, and a service can run a bot for an absent
//! player without keeping any bot state.
//!
//! - [`RandomBot`]: a uniformly random legal player. In the auction it bids "the game"
//!   one time in 16 when that is legal (bid uniformly, it would end nearly every random
//!   match in its first hand), otherwise passes half the time when it may, and else bids
//!   a uniformly chosen legal amount.
//! - [`HeuristicBot`]: bids from hand strength, names its best suit, and plays sensibly:
//!   draws trumps when it holds the master trump, cashes master cards, wins cheap tricks,
//!   gives points to a partner who is winning, and discards low cards rather than aces.

use fairdeal_fairness::pick;
use fairdeal_table_game::decision_seed;
use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;

use crate::card::{Card, CardSet, JeuDu10Cards, Rank, Suit};
use crate::command::{Bid, Command};
use crate::game::trick_winner;
use crate::options::Purchase;
use crate::view::SeatView;

/// A player that picks one of the legal commands of a view.
pub trait Bot {
    /// The command to send, or `None` when the view offers none (not this seat's turn).
    fn choose(&self, view: &SeatView) -> Option<Command>;
}

/// The PRNG of one decision: a function of the bot's seed, the seat and the version
/// ([`fairdeal_table_game::decision_seed`]; `seed_from_u64` mixes its bits).
fn decision_rng(seed: u64, view: &SeatView) -> XorShiftRng {
    XorShiftRng::seed_from_u64(decision_seed(seed, view.table.version, view.seat.into()))
}

/// A uniform index in `[0, n)` (exact: no modulo bias), `n >= 1`.
fn index(rng: &mut XorShiftRng, n: usize) -> usize {
    usize::try_from(pick(rng.next_u64(), n as u64)).unwrap_or(0)
}

/// A uniformly random legal player.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomBot {
    /// Seed of its decisions.
    pub seed: u64,
}

impl RandomBot {
    /// A random bot with this seed.
    pub const fn new(seed: u64) -> RandomBot {
        RandomBot { seed }
    }
}

impl Bot for RandomBot {
    fn choose(&self, view: &SeatView) -> Option<Command> {
        if view.legal.is_empty() {
            return None;
        }
        let mut rng = decision_rng(self.seed, view);
        let (passes, bids): (Vec<&Command>, Vec<&Command>) =
            view.legal.iter().partition(|c| matches!(c, Command::Pass));
        let is_auction = view
            .legal
            .iter()
            .any(|c| matches!(c, Command::Pass | Command::Bid { .. }));
        if is_auction {
            let (game, points): (Vec<&Command>, Vec<&Command>) = bids
                .into_iter()
                .partition(|c| matches!(c, Command::Bid { bid: Bid::Game }));
            // "The game" only one time in 16 when legal: bid uniformly, it would end
            // nearly every random match in its first hand.
            if let Some(game) = game.first()
                && index(&mut rng, 16) == 0
            {
                return Some((*game).clone());
            }
            // Pass half the time when allowed, so auctions do not always climb to the top.
            if let Some(pass) = passes.first()
                && (points.is_empty() || rng.next_u64() >> 63 == 0)
            {
                return Some((*pass).clone());
            }
            return points
                .get(index(&mut rng, points.len()))
                .or(game.first())
                .map(|c| (*c).clone());
        }
        view.legal.get(index(&mut rng, view.legal.len())).cloned()
    }
}

/// A player with simple card sense; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeuristicBot {
    /// Seed of its decisions (they vary its bids a little; its play is deterministic).
    pub seed: u64,
}

impl HeuristicBot {
    /// A heuristic bot with this seed.
    pub const fn new(seed: u64) -> HeuristicBot {
        HeuristicBot { seed }
    }
}

impl Bot for HeuristicBot {
    fn choose(&self, view: &SeatView) -> Option<Command> {
        let first = view.legal.first()?;
        if view.legal.len() == 1 {
            return Some(first.clone());
        }
        let mut rng = decision_rng(self.seed, view);
        let hand = view.hand_set();
        match first {
            Command::NameTrump { .. } => Some(Command::NameTrump {
                suit: best_trump(hand).0,
            }),
            Command::PlayCard { .. } => {
                let legal: CardSet = view
                    .legal
                    .iter()
                    .filter_map(|c| match c {
                        Command::PlayCard { card } => Some(*card),
                        _ => None,
                    })
                    .collect();
                Some(Command::PlayCard {
                    card: choose_card(view, hand, legal)?,
                })
            }
            _ => choose_call(view, hand, &mut rng),
        }
    }
}

/// The bot's estimate of what its team makes with `trump`, on the 100-point scale.
fn estimate(hand: CardSet, trump: Suit) -> i32 {
    let trumps = hand.of_suit(trump);
    let n_trumps = trumps.len() as i32;
    let mut value = 30 + 6 * n_trumps;
    for rank in [Rank::Ace, Rank::King, Rank::Queen] {
        if trumps.contains(Card::new(trump, rank)) {
            value += 4;
        }
    }
    for suit in Suit::ALL {
        let cards = hand.of_suit(suit);
        let has = |r| cards.contains(Card::new(suit, r));
        if suit != trump {
            if has(Rank::Ace) {
                value += 8;
                if has(Rank::Ten) {
                    value += 6;
                }
            } else if has(Rank::Ten) && has(Rank::King) {
                value += 3;
            }
            if cards.is_empty() && n_trumps >= 2 {
                value += 5;
            }
        }
        if has(Rank::Five) {
            value += 2;
        }
    }
    value
}

/// The suit the bot would name, and its estimate with it.
fn best_trump(hand: CardSet) -> (Suit, i32) {
    Suit::ALL.into_iter().map(|s| (s, estimate(hand, s))).fold(
        (Suit::Spades, i32::MIN),
        |best, cur| {
            if cur.1 > best.1 { cur } else { best }
        },
    )
}

/// A bid or a pass, among the view's legal commands.
fn choose_call(view: &SeatView, hand: CardSet, rng: &mut XorShiftRng) -> Option<Command> {
    let can_pass = view.legal.iter().any(|c| matches!(c, Command::Pass));
    let bids: Vec<Bid> = view
        .legal
        .iter()
        .filter_map(|c| match c {
            Command::Bid { bid } => Some(*bid),
            _ => None,
        })
        .collect();
    let lowest = bids.iter().copied().filter(|b| *b != Bid::Game).min();
    let (_, estimate) = best_trump(hand);
    // A little noise, so identical hands do not always bid identically: -5, 0 or +5.
    let estimate = estimate + 5 * (index(rng, 3) as i32 - 1);
    let options = view.table.options.clone().unwrap_or_default();
    let partner_holds = view
        .table
        .highest_bid
        .is_some_and(|h| h.seat == view.seat.partner());
    let budget = view.table.budgets[view.seat.team().index()];
    let willing: i32 = match options.purchase {
        // Contract: bid up to the estimate (scaled to 60 with penalised aces); do not
        // overbid a partner unless clearly stronger.
        None => {
            let scaled = if options.penalised_aces {
                estimate * 60 / 100
            } else {
                estimate
            };
            if bids.contains(&Bid::Game) && estimate >= 115 {
                return Some(Command::Bid { bid: Bid::Game });
            }
            if partner_holds { scaled - 15 } else { scaled }
        }
        // Price in points: pay up to half the advantage over an average hand.
        Some(Purchase::Points) => (estimate - 55) / 2,
        // Budget: spend a unit per 5 points of advantage, keeping some for later.
        Some(Purchase::Budget) => {
            let keep_half = i32::try_from(budget / 2).unwrap_or(0);
            ((estimate - 55) / 5).min(keep_half)
        }
    };
    let affordable = bids
        .iter()
        .copied()
        .filter(|b| b.points().is_some_and(|p| i32::from(p) <= willing))
        .min();
    let bid = |bid| Some(Command::Bid { bid });
    match (affordable, can_pass, lowest) {
        (Some(b), _, _) if !partner_holds || options.purchase.is_none() => bid(b),
        (_, true, _) => Some(Command::Pass),
        // Forced to bid: the lowest allowed.
        (_, false, Some(b)) => bid(b),
        (_, false, None) => view.legal.first().cloned(),
    }
}

/// Whether no card still out (not in `hand`, not played) beats `card` within its suit.
fn is_master(card: Card, out: CardSet) -> bool {
    out.of_suit(card.suit())
        .iter()
        .all(|c| c.rank() < card.rank())
}

/// The card to play.
fn choose_card(view: &SeatView, hand: CardSet, legal: CardSet) -> Option<Card> {
    let table = &view.table;
    let trump = table.trump?;
    let deck = CardSet::of_deck(
        table
            .options
            .as_ref()
            .map_or(fairdeal_fairness::Deck::Dix, |o| o.deck),
    )?;
    let out = deck.difference(hand).difference(table.played());
    let me = view.seat;
    let declaring = table.contract.is_some_and(|c| c.seat.team() == me.team());
    let lowest_plain = |set: CardSet| {
        set.iter()
            .min_by_key(|c| (c.points(), c.suit() == trump, c.rank()))
    };

    if table.trick.is_empty() {
        // Leading.
        let trumps = legal.of_suit(trump);
        if declaring
            && !out.of_suit(trump).is_empty()
            && let Some(top) = trumps.highest().filter(|c| is_master(*c, out))
        {
            return Some(top);
        }
        let masters = legal.iter().filter(|c| {
            c.suit() != trump && is_master(*c, out) && out.of_suit(c.suit()).len() >= 2
        });
        if let Some(card) = masters.max_by_key(|c| (c.points(), c.rank())) {
            return Some(card);
        }
        let side = legal.difference(CardSet::suit(trump));
        let longest = Suit::ALL
            .into_iter()
            .filter(|s| *s != trump)
            .max_by_key(|s| side.of_suit(*s).len())
            .map(|s| side.of_suit(s))
            .filter(|s| !s.is_empty())
            .unwrap_or(legal);
        return lowest_plain(longest);
    }

    // Following.
    let led = table.trick.first()?.card.suit();
    let winner_seat = trick_winner(&table.trick, trump)?;
    let winning = table.trick.iter().find(|p| p.seat == winner_seat)?.card;
    let last = table.trick.len() == 3;
    let trick_points: u32 = table.trick.iter().map(|p| u32::from(p.card.points())).sum();
    let beaters: CardSet = legal
        .iter()
        .filter(|c| c.beats(winning, led, trump))
        .collect();

    if winner_seat == me.partner() {
        let safe = last
            || (is_master(winning, out)
                && (winning.suit() == trump
                    || out.of_suit(trump).is_empty()
                    || !out.of_suit(led).is_empty()));
        if safe {
            // Give points to the partner, but keep aces.
            let gift = legal
                .iter()
                .filter(|c| c.rank() != Rank::Ace && c.points() > 0)
                .max_by_key(|c| (c.points(), std::cmp::Reverse(c.rank())));
            if let Some(card) = gift {
                return Some(card);
            }
        }
        return lowest_plain(legal);
    }

    if !beaters.is_empty() {
        if last {
            // Win, banking as many points as possible with the card played.
            return beaters.iter().max_by_key(|c| {
                (
                    c.points(),
                    std::cmp::Reverse(c.suit() == trump),
                    std::cmp::Reverse(c.rank()),
                )
            });
        }
        // Win cheaply; with points at stake prefer a card nobody can beat.
        if trick_points >= 10
            && let Some(master) = beaters
                .iter()
                .filter(|c| is_master(*c, out))
                .min_by_key(|c| (c.suit() == trump, c.rank()))
        {
            return Some(master);
        }
        let cheap = beaters
            .iter()
            .filter(|c| c.points() == 0)
            .min_by_key(|c| (c.suit() == trump, c.rank()));
        if let Some(card) = cheap {
            return Some(card);
        }
        if trick_points >= 5 {
            return beaters.iter().min_by_key(|c| (c.suit() == trump, c.rank()));
        }
    }
    lowest_plain(legal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Actor;
    use crate::event::Event;
    use crate::game::Game;
    use crate::options::TableOptions;
    use crate::seat::Seat;

    fn started() -> Game {
        let mut game = Game::new();
        let events = game
            .decide(
                Actor::Table,
                &Command::StartMatch {
                    options: TableOptions::default(),
                    first_dealer: Seat::ALL[3],
                },
            )
            .unwrap();
        events.iter().for_each(|e| game.apply(e));
        let deal =
            fairdeal_fairness::deal::Deal::from_seeds(fairdeal_fairness::Deck::Dix, "s", "c", "0");
        let events = game
            .decide(Actor::Table, &Command::start_hand(&deal).unwrap())
            .unwrap();
        events.iter().for_each(|e| game.apply(e));
        game
    }

    #[test]
    fn bots_choose_legal_commands_deterministically() {
        let game = started();
        let view = game.seat_view(Seat::ALL[0]);
        for bot in [&RandomBot::new(7) as &dyn Bot, &HeuristicBot::new(7)] {
            let a = bot.choose(&view).unwrap();
            assert!(view.legal.contains(&a));
            assert_eq!(bot.choose(&view), Some(a));
        }
        // Not its turn: nothing to do.
        assert_eq!(
            RandomBot::new(1).choose(&game.seat_view(Seat::ALL[1])),
            None
        );
        assert_eq!(
            HeuristicBot::new(1).choose(&game.seat_view(Seat::ALL[1])),
            None
        );
    }

    /// A hand in play (folded from events, so hands may be short): `leader` won the
    /// auction at 50 and named `trump`, then `played` cards were played from `leader` on.
    fn in_play(by_seat: [&str; 4], trump: Suit, leader: u8, played: &[&str]) -> Game {
        let cards =
            |s: &str| -> Vec<Card> { s.split_whitespace().map(|c| c.parse().unwrap()).collect() };
        let mut game = Game::new();
        let seat = |n: u8| Seat::new(n).unwrap();
        let mut events = vec![
            Event::MatchStarted {
                options: TableOptions::default(),
                first_dealer: seat(3),
            },
            Event::HandStarted {
                hand: 0,
                dealer: seat(3),
                hands: by_seat.iter().map(|h| cards(h)).collect(),
            },
            Event::AuctionWon {
                seat: seat(leader),
                bid: Bid::Points(50),
            },
            Event::TrumpNamed {
                seat: seat(leader),
                suit: trump,
            },
        ];
        for (k, code) in played.iter().enumerate() {
            events.push(Event::CardPlayed {
                seat: seat(leader).offset(k),
                card: code.parse().unwrap(),
            });
        }
        events.iter().for_each(|e| game.apply(e));
        game
    }

    fn heuristic_play(game: &Game) -> Card {
        let seat = game.turn().unwrap();
        match HeuristicBot::new(0).choose(&game.seat_view(seat)) {
            Some(Command::PlayCard { card }) => card,
            other => panic!("expected a card, got {other:?}"),
        }
    }

    #[test]
    fn gives_points_to_a_winning_partner_but_keeps_aces() {
        // Seat 0 leads 8H, seat 1 wins it with the AH, seat 2 follows; seat 3 plays last
        // behind its winning partner: it gives its TH rather than the 6H.
        let game = in_play(
            ["8H 5C", "AH 6C", "7H 7C", "TH 6H AS"],
            Suit::Clubs,
            0,
            &["8H", "AH", "7H"],
        );
        assert_eq!(heuristic_play(&game).to_string(), "TH");
    }

    #[test]
    fn wins_cheaply_when_not_last() {
        // Seat 0 leads 9H; seat 1 holds QH and AH: the queen wins as well, for free.
        let game = in_play(
            ["9H 5C", "QH AH 6C", "7H 7C", "8H 6H"],
            Suit::Clubs,
            0,
            &["9H"],
        );
        assert_eq!(heuristic_play(&game).to_string(), "QH");
    }

    #[test]
    fn banks_points_when_winning_last() {
        // Last to play against an opponent's 9H: the ace wins and banks 10 points.
        let game = in_play(
            ["9H 5C", "7H 6C", "8H 7C", "QH AH 6H"],
            Suit::Clubs,
            0,
            &["9H", "7H", "8H"],
        );
        assert_eq!(heuristic_play(&game).to_string(), "AH");
    }

    #[test]
    fn discards_low_cards_not_aces() {
        // Void in hearts and trumps, cannot win: throw the 6D, not the AS or the TD.
        let game = in_play(
            ["9H 5C", "AS TD 6D", "8H 7C", "QH 6H"],
            Suit::Clubs,
            0,
            &["9H"],
        );
        assert_eq!(heuristic_play(&game).to_string(), "6D");
    }

    #[test]
    fn draws_trumps_with_the_master_trump() {
        // Declarer on lead with the ace of trumps while trumps are out: lead it.
        let game = in_play(
            ["AC 7C AH 5D", "KC 9H", "8H 6D", "QC 6H"],
            Suit::Clubs,
            0,
            &[],
        );
        assert_eq!(heuristic_play(&game).to_string(), "AC");
    }

    #[test]
    fn estimate_prefers_long_strong_suits() {
        let hand: CardSet = "AS KS QS TS 9S AH TH 5D 7C 8C"
            .split_whitespace()
            .map(|c| c.parse::<Card>().unwrap())
            .collect();
        let (suit, value) = best_trump(hand);
        assert_eq!(suit, Suit::Spades);
        assert!(value > estimate(hand, Suit::Clubs));
        assert!(value >= 80, "{value}");
    }
}
