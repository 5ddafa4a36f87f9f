//! Invariants over thousands of bot matches, across every valid combination of options.
//!
//! Each case plays a match (random bots, heuristic bots, or one team of each) dealt by
//! the fairness crate, then checks the log from the outside: every card played once by
//! the seat that held it, card points summing to 100 (60 net with penalised aces, whose
//! transfers sum to 0), scores moving as the variant says, the match ending as SPEC says,
//! replay of the JSON log equal to the live state, the auditor's re-decision accepting the
//! log, and views never showing a card another seat still holds.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_games::sim::{MatchSetup, PlayedMatch, play_mixed, variants};
use fairdeal_games::{
    Actor, Bid, Card, CardSet, Command, Event, Game, MatchEnd, Purchase, Rank, Rules, Seat, Suit,
    Team,
};
use proptest::prelude::*;

/// How many variants [`variants`] lists.
const VARIANTS: usize = 20;

fn play(variant: usize, seed: u64, mix: u8, dealer: u8, max_hands: u32) -> PlayedMatch {
    let variants = variants();
    let setup = MatchSetup {
        options: variants[variant % variants.len()].clone(),
        first_dealer: Seat::new(dealer % 4).unwrap(),
        server_seed: format!("server-{seed}"),
        client_seed: format!("client-{mix}"),
        max_hands,
    };
    match play_mixed(&setup, seed, mix) {
        Ok(played) => played,
        Err(e) => panic!("a bot move was refused: {e}"),
    }
}

/// Checks one hand's events (from `hand_started` to `hand_scored`) from the outside.
fn check_hand(rules: &Rules, events: &[Event], scores_before: [i32; 2], prices: &mut [u32; 2]) {
    let Some(Event::HandStarted { dealer, hands, .. }) = events.first() else {
        panic!("a hand starts with hand_started");
    };
    let mut dealt = [CardSet::EMPTY; 4];
    for (i, cards) in hands.iter().enumerate() {
        dealt[dealer.offset(1 + i).index()] = cards.iter().copied().collect();
    }
    let mut played = Vec::new();
    let mut trick: Vec<(Seat, Card)> = Vec::new();
    let mut face = [0u32; 2];
    let mut won = [CardSet::EMPTY; 2];
    let mut tricks = 0;
    let mut contract = None;
    let mut bid_by_team = [false; 2];
    let mut score = None;
    for event in events {
        match event {
            Event::BidPlaced { seat, .. } => bid_by_team[seat.team().index()] = true,
            Event::AuctionWon { seat, bid } => contract = Some((*seat, *bid)),
            Event::CardPlayed { seat, card } => {
                assert!(
                    dealt[seat.index()].contains(*card),
                    "{seat} played {card} it was not dealt"
                );
                played.push(*card);
                trick.push((*seat, *card));
            }
            Event::TrickWon { seat, points, .. } => {
                assert_eq!(trick.len(), 4);
                let sum: u8 = trick.iter().map(|(_, c)| c.points()).sum();
                assert_eq!(sum, *points);
                face[seat.team().index()] += u32::from(*points);
                for (_, c) in trick.drain(..) {
                    won[seat.team().index()].insert(c);
                }
                tricks += 1;
            }
            Event::HandScored(s) => score = Some(s.clone()),
            _ => {}
        }
    }
    // Every card of the deck played exactly once.
    assert_eq!(played.len(), rules.cards().len());
    let set: CardSet = played.iter().copied().collect();
    assert_eq!(set, rules.cards());
    assert_eq!(tricks, rules.hand_len());
    assert_eq!(face[0] + face[1], 100);

    let s = score.expect("the hand is scored");
    let (declarer, bid) = contract.expect("the auction was won");
    assert_eq!((s.declarer, s.bid), (declarer, bid));
    let (d, o) = (declarer.team().index(), declarer.team().other().index());

    // Card points, computed independently from the tricks.
    let mut expected = [face[0] as i32, face[1] as i32];
    let mut transfers = [0i32; 2];
    if rules.penalised_aces() {
        for suit in Suit::ALL {
            let ace = Card::new(suit, Rank::Ace);
            let winner = if won[0].contains(ace) { 0 } else { 1 };
            let holder = Seat::ALL
                .into_iter()
                .find(|s| dealt[s.index()].contains(ace))
                .unwrap()
                .team()
                .index();
            expected[winner] -= 10;
            if holder != winner {
                transfers[winner] += 10;
                transfers[holder] -= 10;
            }
        }
        expected[0] += transfers[0];
        expected[1] += transfers[1];
    }
    assert_eq!(s.card_points, expected);
    assert_eq!(s.ace_transfers, transfers);
    assert_eq!(s.ace_transfers.iter().sum::<i32>(), 0);
    assert_eq!(
        s.card_points.iter().sum::<i32>(),
        if rules.penalised_aces() { 60 } else { 100 }
    );

    // Scores move as the variant says.
    let cp = s.card_points;
    let price = i32::from(bid.points().unwrap_or(0));
    let mut deltas = [0i32; 2];
    match (rules.options().purchase, bid) {
        (Some(Purchase::Points), _) => {
            deltas = cp;
            deltas[d] -= price;
            assert_eq!(s.contract_made, None);
        }
        (Some(Purchase::Budget), _) => {
            deltas = cp;
            prices[d] += price as u32;
            assert_eq!(s.contract_made, None);
        }
        (None, Bid::Game) => {
            assert_eq!(s.contract_made, Some(cp[d] == 100));
        }
        (None, Bid::Points(n)) => {
            let n = i32::from(n);
            let made = cp[d] >= n;
            assert_eq!(s.contract_made, Some(made));
            if rules.options().made_or_nothing {
                if made {
                    deltas[d] = cp[d];
                } else {
                    deltas[o] = 2 * n - cp[d];
                }
            } else {
                deltas[d] = if made { cp[d] } else { -n };
                let threshold = rules.defence_threshold().unwrap();
                if scores_before[o] < threshold || bid_by_team[o] {
                    deltas[o] = cp[o];
                }
            }
        }
    }
    assert_eq!(s.deltas, deltas);
    assert_eq!(
        s.scores,
        [scores_before[0] + deltas[0], scores_before[1] + deltas[1]]
    );
}

/// Checks the whole log: hands, scores, the end of the match.
fn check_log(played: &PlayedMatch) {
    let events = &played.events;
    let Some(Event::MatchStarted { options, .. }) = events.first() else {
        panic!("a match starts with match_started");
    };
    let rules = Rules::new(options).unwrap();
    let starts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Event::HandStarted { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut scores = [0i32; 2];
    let mut prices = [0u32; 2];
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(events.len());
        let hand = &events[start..end];
        let Some(scored) = hand.iter().position(|e| matches!(e, Event::HandScored(_))) else {
            panic!("hand {k} was never scored");
        };
        check_hand(&rules, &hand[..=scored], scores, &mut prices);
        let Event::HandScored(s) = &hand[scored] else {
            unreachable!()
        };
        let before = scores;
        scores = s.scores;
        // The match ends exactly when SPEC says, with the right winner.
        let declarer = s.declarer.team();
        let reached = |t: Team| scores[t.index()] >= rules.target();
        let expected = if s.bid == Bid::Game {
            Some(if s.contract_made == Some(true) {
                (declarer, MatchEnd::GameBidMade)
            } else {
                (declarer.other(), MatchEnd::GameBidFailed)
            })
        } else if reached(declarer) && reached(declarer.other()) {
            Some((declarer, MatchEnd::BothReachedDeclarerWins))
        } else if reached(declarer) {
            Some((declarer, MatchEnd::TargetReached))
        } else if reached(declarer.other()) {
            Some((declarer.other(), MatchEnd::TargetReached))
        } else {
            None
        };
        let actual = hand.get(scored + 1).map(|e| match e {
            Event::MatchWon {
                team,
                reason,
                scores: final_scores,
            } => {
                assert_eq!(*final_scores, scores);
                (*team, *reason)
            }
            other => panic!("unexpected {other:?} after hand_scored"),
        });
        assert_eq!(actual, expected, "scores {before:?} -> {scores:?}");
        if expected.is_some() {
            assert_eq!(end, events.len(), "events after match_won");
        } else {
            assert_eq!(hand.len(), scored + 1, "events after hand_scored");
        }
    }
    assert_eq!(played.game.scores(), scores);
    if let Some(budget) = rules.budget() {
        for (paid, left) in prices.iter().zip(played.game.budgets()) {
            assert!(*paid <= budget);
            assert_eq!(left, budget - paid);
        }
    }
}

/// Replays the log (through JSON when `json`, as a service persists it) and re-decides
/// it: both give the live state.
fn check_replay(played: &PlayedMatch, json: bool) {
    let back: Vec<Event> = if json {
        let text = serde_json::to_string(&played.events).unwrap();
        serde_json::from_str(&text).unwrap()
    } else {
        played.events.clone()
    };
    assert_eq!(back, played.events);
    assert_eq!(Game::replay(&back), played.game);
    assert_eq!(Game::verify(&back), Ok(played.game.clone()));
}

/// Every card code that appears as a JSON string in `json` (one pass over the text).
fn cards_in_json(json: &str) -> CardSet {
    json.as_bytes()
        .windows(4)
        .filter(|w| w[0] == b'"' && w[3] == b'"')
        .filter_map(|w| std::str::from_utf8(&w[1..3]).ok()?.parse::<Card>().ok())
        .collect()
}

/// Folds the log step by step, checking every seat's and the spectator's view at every
/// state (structurally; also as JSON when `json`).
fn check_views(played: &PlayedMatch, json: bool) {
    let mut game = Game::new();
    for event in &played.events {
        game.apply(event);
        let spectator = game.public_view();
        let all_held = Seat::ALL
            .into_iter()
            .fold(CardSet::EMPTY, |acc, s| acc.union(game.hand_of(s)));
        assert!(spectator.played().intersection(all_held).is_empty());
        if json {
            let text = serde_json::to_string(&spectator).unwrap();
            assert!(cards_in_json(&text).intersection(all_held).is_empty());
        }
        for seat in Seat::ALL {
            let held = game.hand_of(seat);
            assert_eq!(spectator.card_counts[seat.index()], held.len());
            let view = game.seat_view(seat);
            assert_eq!(view.hand_set(), held);
            let others = all_held.difference(held);
            assert!(view.table.played().intersection(others).is_empty());
            if json {
                let text = serde_json::to_string(&view).unwrap();
                let shown = cards_in_json(&text);
                assert!(
                    shown.intersection(others).is_empty(),
                    "{seat} sees {:?}",
                    shown.intersection(others)
                );
                assert_eq!(shown.intersection(held), held, "{seat} sees its own hand");
            }
        }
    }
    assert_eq!(game, played.game);
}

/// Every command a seat could send at a state.
fn candidates() -> Vec<Command> {
    let mut out = vec![Command::Pass, Command::Bid { bid: Bid::Game }];
    out.extend((0..=110).map(|n| Command::Bid {
        bid: Bid::Points(n),
    }));
    out.extend(
        Suit::ALL
            .into_iter()
            .map(|suit| Command::NameTrump { suit }),
    );
    out.extend(
        (0..40)
            .filter_map(Card::from_id)
            .map(|card| Command::PlayCard { card }),
    );
    out
}

/// At every state of the match: `decide` accepts a command exactly when
/// `legal_commands` lists it, for every seat and every conceivable command.
fn check_legality(played: &PlayedMatch) {
    let all = candidates();
    let mut game = Game::new();
    for event in &played.events {
        game.apply(event);
        for seat in Seat::ALL {
            let legal = game.legal_commands(seat);
            for command in &all {
                let accepted = game.decide(Actor::Seat(seat), command).is_ok();
                assert_eq!(
                    accepted,
                    legal.contains(command),
                    "{seat} {command:?} in phase {:?}",
                    game.phase()
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Thousands of matches (their first 4 hands): the log's invariants and replay.
    #[test]
    fn bot_matches_keep_every_invariant(
        variant in 0usize..VARIANTS,
        seed in any::<u64>(),
        mix in 0u8..3,
        dealer in 0u8..4,
    ) {
        let played = play(variant, seed, mix, dealer, 4);
        check_log(&played);
        check_replay(&played, seed % 16 == 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// Views at every state of hundreds of matches.
    #[test]
    fn views_never_show_another_seats_cards(
        variant in 0usize..VARIANTS,
        seed in any::<u64>(),
        mix in 0u8..3,
        dealer in 0u8..4,
    ) {
        let played = play(variant, seed, mix, dealer, 2);
        check_views(&played, seed % 2 == 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Exhaustive legality at every state of a few matches.
    #[test]
    fn only_legal_moves_are_accepted(
        variant in 0usize..VARIANTS,
        seed in any::<u64>(),
        mix in 0u8..3,
        dealer in 0u8..4,
    ) {
        let played = play(variant, seed, mix, dealer, 2);
        check_legality(&played);
    }
}

/// Whole matches to the end with heuristic bots, every variant: they finish, and the log
/// passes every check.
#[test]
fn full_heuristic_matches_finish_in_every_variant() {
    assert_eq!(variants().len(), VARIANTS);
    for variant in 0..VARIANTS {
        for seed in 0..3 {
            let played = play(variant, seed, 1, seed as u8, 200);
            assert!(
                played.finished(),
                "variant {variant} seed {seed} did not finish"
            );
            check_log(&played);
            check_replay(&played, true);
        }
    }
}

/// Same seeds, same match: bot games replay exactly.
#[test]
fn bot_matches_are_deterministic() {
    for mix in 0..3 {
        let a = play(5, 42, mix, 1, 50);
        let b = play(5, 42, mix, 1, 50);
        assert_eq!(a, b);
        let c = play(5, 43, mix, 1, 50);
        assert_ne!(a.events, c.events);
    }
}

/// The heuristic bot is better than chance: it beats random bots in most matches.
#[test]
fn heuristic_bots_beat_random_bots() {
    let wins = (0..24)
        .filter(|&seed| {
            let played = play(seed as usize % VARIANTS, seed, 2, 0, 300);
            played.game.result().map(|(t, _)| t) == Some(Team::ALL[0])
        })
        .count();
    assert!(wins >= 20, "heuristic team won only {wins} of 24");
}
