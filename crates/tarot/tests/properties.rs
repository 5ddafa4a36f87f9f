//! Invariants over hundreds of whole matches at 3, 4 and 5 seats, played by the bot and by
//! a uniformly random legal player (which reaches every contract, poignées and announced
//! chelems), dealt by the fairness crate.
//!
//! Checked from the outside: every card dealt once and played once by the seat that held
//! it, every deal's scores summing to zero, the match ending after its deals; replay of the
//! (JSON) log equal to the live state and the auditor's re-decision accepting it, and
//! rejecting a tampered card, score or bid; `decide` accepting exactly the legal commands
//! (every other card refused); and no view ever showing a card it must not.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_fairness::pick;
use fairdeal_table_game::{Actor, Seat, TableGame, VerifyError};
use fairdeal_tarot::sim::{MatchSetup, PlayedMatch, play_match, play_match_with};
use fairdeal_tarot::{
    Card, CardSet, Command, Contract, Event, Phase, SeatView, Tarot, TarotOptions,
};
use proptest::prelude::*;
use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;

fn setup(seats: u8, rounds: u8, dealer: u8, seed: u64) -> MatchSetup {
    MatchSetup {
        options: TarotOptions { seats, rounds },
        first_dealer: Seat::new(dealer % seats).unwrap(),
        server_seed: format!("server-{seed}"),
        client_seed: "client".into(),
    }
}

fn bot_match(seats: u8, rounds: u8, dealer: u8, seed: u64) -> PlayedMatch {
    match play_match(&setup(seats, rounds, dealer, seed), seed) {
        Ok(played) => played,
        Err(e) => panic!("a bot move was refused: {e}"),
    }
}

/// A uniformly random legal player (seeded), bidding a little less often than it passes
/// so that auctions end in every way.
fn random_match(seats: u8, rounds: u8, dealer: u8, seed: u64) -> PlayedMatch {
    let mut rng = XorShiftRng::seed_from_u64(seed);
    let choose = |view: &SeatView| {
        let n = view.legal.len() as u64;
        if n == 0 {
            return None;
        }
        let i = pick(rng.next_u64(), n) as usize;
        view.legal.get(i).cloned()
    };
    match play_match_with(&setup(seats, rounds, dealer, seed), choose) {
        Ok(played) => played,
        Err(e) => panic!("a legal move was refused: {e}"),
    }
}

/// Checks the log from the outside: cards, scores and the end of the match.
fn check_log(played: &PlayedMatch) {
    let events = &played.events;
    let Some(Event::MatchStarted { options, .. }) = events.first() else {
        panic!("a match starts with match_started");
    };
    let seats = options.seat_count();
    let mut scores = vec![0i32; seats];
    let mut deals = 0;
    let mut held: Vec<CardSet> = Vec::new();
    let mut chien = CardSet::EMPTY;
    let mut ecart = CardSet::EMPTY;
    let mut played_cards = CardSet::EMPTY;
    let mut taker = None;
    let mut shown = false;
    for event in events {
        match event {
            Event::DealStarted {
                deal,
                dealer,
                hands,
                chien: dealt_chien,
            } => {
                assert_eq!(*deal, deals, "deals are numbered in order");
                deals += 1;
                held = vec![CardSet::EMPTY; seats];
                for (i, hand) in hands.iter().enumerate() {
                    assert_eq!(hand.len(), options.hand_len());
                    held[dealer.offset(i + 1, seats).index()] = hand.iter().copied().collect();
                }
                chien = dealt_chien.iter().copied().collect();
                assert_eq!(chien.len(), options.chien_len());
                let all = held.iter().fold(chien, |acc, h| acc.union(*h));
                assert_eq!(all, CardSet::ALL, "every card dealt once");
                ecart = CardSet::EMPTY;
                played_cards = CardSet::EMPTY;
                taker = None;
                shown = false;
            }
            Event::AuctionWon { seat, .. } => taker = Some(*seat),
            Event::ChienShown { cards } => {
                assert_eq!(cards.iter().copied().collect::<CardSet>(), chien);
                let t = taker.expect("a taker before the chien");
                held[t.index()] = held[t.index()].union(chien);
                shown = true;
            }
            Event::CardDiscarded { seat, card } => {
                assert_eq!(Some(*seat), taker);
                assert!(
                    held[seat.index()].remove(*card),
                    "discarded a card not held"
                );
                assert!(!card.is_king() && !card.is_oudler());
                ecart.insert(*card);
            }
            Event::CardPlayed { seat, card } => {
                assert!(
                    held[seat.index()].remove(*card),
                    "{seat} played {card} it did not hold"
                );
                assert!(played_cards.insert(*card));
            }
            Event::DealScored(score) => {
                assert!(held.iter().all(|h| h.is_empty()), "every card played");
                assert_eq!(ecart.len(), if shown { options.chien_len() } else { 0 });
                let rest = if shown { ecart } else { chien };
                assert_eq!(played_cards.union(rest), CardSet::ALL);
                assert_eq!(played_cards.len() + rest.len(), 78);
                assert_eq!(
                    score.deltas.iter().sum::<i32>(),
                    0,
                    "a deal's scores sum to zero"
                );
                assert!(score.half_points <= 182 && score.oudlers <= 3);
                for (s, d) in scores.iter_mut().zip(&score.deltas) {
                    *s += d;
                }
                assert_eq!(score.scores, scores);
                let taker_delta = score.deltas[score.taker.index()];
                assert_eq!(taker_delta.signum(), score.value.signum());
            }
            _ => {}
        }
    }
    assert_eq!(deals, options.deals(), "the match is its number of deals");
    assert_eq!(
        events.last(),
        Some(&Event::MatchEnded {
            scores: scores.clone()
        })
    );
    assert_eq!(played.game.scores(), scores.as_slice());
    let outcome = TableGame::outcome(&played.game).expect("over");
    assert_eq!(outcome.scores, scores);
    assert_eq!(outcome.sides.len(), seats);
    let best = scores.iter().max().unwrap();
    for (side, placing) in outcome.placings.iter().enumerate() {
        assert_eq!(*placing == 1, scores[side] == *best);
    }
}

/// Replays the log (through JSON when `json`, as a service persists it) and re-decides it.
fn check_replay(played: &PlayedMatch, json: bool) {
    let back: Vec<Event> = if json {
        let text = serde_json::to_string(&played.events).unwrap();
        serde_json::from_str(&text).unwrap()
    } else {
        played.events.clone()
    };
    assert_eq!(back, played.events);
    assert_eq!(<Tarot as TableGame>::replay(&back), played.game);
    assert_eq!(<Tarot as TableGame>::verify(&back), Ok(played.game.clone()));
}

/// The auditor rejects a log with a card, a score or a bid changed.
fn check_tampering(played: &PlayedMatch) {
    let events = &played.events;
    let rejected = |log: &[Event]| <Tarot as TableGame>::verify(log).is_err();
    // A card played replaced by another card.
    if let Some(i) = events
        .iter()
        .position(|e| matches!(e, Event::CardPlayed { .. }))
    {
        let mut log = events.clone();
        if let Event::CardPlayed { card, .. } = &mut log[i] {
            let other = Card::from_index((card.index() + 1) % 78).unwrap();
            *card = other;
        }
        assert!(rejected(&log), "a changed card was accepted");
    }
    // A score changed.
    if let Some(i) = events
        .iter()
        .position(|e| matches!(e, Event::DealScored(_)))
    {
        let mut log = events.clone();
        if let Event::DealScored(score) = &mut log[i] {
            score.deltas[0] += 1;
            score.deltas[1] -= 1;
        }
        assert!(matches!(
            <Tarot as TableGame>::verify(&log),
            Err(VerifyError::Mismatch { .. })
        ));
    }
    // The winning bid changed: the auction's result no longer follows.
    let won = events.iter().find_map(|e| match e {
        Event::AuctionWon { seat, contract } => Some((*seat, *contract)),
        _ => None,
    });
    if let Some((taker, contract)) = won {
        let i = events
            .iter()
            .position(|e| {
                *e == Event::BidPlaced {
                    seat: taker,
                    contract,
                }
            })
            .unwrap();
        let mut log = events.clone();
        log[i] = Event::BidPlaced {
            seat: taker,
            contract: if contract == Contract::Petite {
                Contract::Garde
            } else {
                Contract::Petite
            },
        };
        assert!(rejected(&log), "a changed bid was accepted");
    }
    // A dropped event.
    let mut log = events.clone();
    log.remove(log.len() / 2);
    assert!(rejected(&log), "a log with an event missing was accepted");
}

/// Every command a seat could send, for the exhaustive legality check.
fn candidates() -> Vec<Command> {
    let mut out = vec![Command::Pass];
    out.extend(Contract::ALL.map(|contract| Command::Bid { contract }));
    out.extend([false, true].map(|announce| Command::DeclareChelem { announce }));
    for card in Card::all() {
        out.push(Command::PlayCard { card });
        out.push(Command::Discard { card });
        out.push(Command::CallKing { card });
    }
    out
}

/// At every state: `decide` accepts every command `legal_commands` lists and refuses every
/// other candidate (every other card, bid, call, discard), for every seat.
fn check_legality(played: &PlayedMatch) {
    let all = candidates();
    let mut game = Tarot::new();
    for event in &played.events {
        game.apply(event);
        let seats = game.options().map_or(0, |o| o.seat_count());
        for seat in Seat::all(seats) {
            let legal = game.legal_commands(seat);
            if game.turn() != Some(seat) {
                assert!(legal.is_empty());
            }
            for command in &legal {
                assert!(
                    game.decide(Actor::Seat(seat), command).is_ok(),
                    "{seat} {command:?} listed but refused"
                );
            }
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

/// Every card code in a JSON document.
fn cards_in_json(value: &serde_json::Value, out: &mut CardSet) {
    match value {
        serde_json::Value::String(s) => {
            if let Ok(card) = s.parse::<Card>() {
                out.insert(card);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| cards_in_json(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| cards_in_json(v, out)),
        _ => {}
    }
}

fn shown_cards<T: serde::Serialize>(view: &T) -> CardSet {
    let mut out = CardSet::EMPTY;
    cards_in_json(&serde_json::to_value(view).unwrap(), &mut out);
    out
}

/// At every state, no view shows a card it must not: a spectator sees no card a seat holds
/// except those the rules showed (the taken chien, poignées, trumps in the écart) and the
/// called cards' names (this deal's and, in its score, the last one's); a seat sees those and its own hand (and its own écart when taker);
/// the chien of a garde sans or contre and the écart's plain cards are never shown to
/// anyone else.
fn check_views(played: &PlayedMatch) {
    let mut game = Tarot::new();
    for event in &played.events {
        game.apply(event);
        let Some(options) = game.options() else {
            continue;
        };
        if matches!(game.phase(), Phase::AwaitingDeal | Phase::Finished) {
            // Between deals the last deal is over: every card was played.
            continue;
        }
        let spectator = game.public_view();
        let seats = options.seat_count();
        let rules_shown = spectator
            .chien
            .iter()
            .chain(&spectator.ecart_trumps)
            .chain(spectator.poignees.iter().flat_map(|p| p.trumps.iter()))
            .chain(spectator.called.iter())
            // The last deal's called card, named in its score.
            .chain(spectator.last_score.iter().flat_map(|s| s.called.iter()))
            .copied()
            .collect::<CardSet>()
            .union(spectator.played());
        let public = shown_cards(&spectator);
        assert!(
            public.difference(rules_shown).is_empty(),
            "the spectator sees {:?}",
            public.difference(rules_shown)
        );
        let hidden = CardSet::ALL
            .difference(rules_shown)
            .difference(spectator.played());
        for seat in Seat::all(seats) {
            let view = game.seat_view(seat);
            let own = game.hand_of(seat);
            assert_eq!(view.hand_set(), own);
            assert_eq!(spectator.card_counts[seat.index()], own.len());
            let own_ecart = if spectator.taker == Some(seat) {
                game.ecart()
            } else {
                CardSet::EMPTY
            };
            // Legal commands name the seat's own cards (and the callable kings).
            for command in &view.legal {
                match command {
                    Command::PlayCard { card } | Command::Discard { card } => {
                        assert!(own.contains(*card));
                    }
                    Command::ShowPoignee { trumps } => {
                        assert!(trumps.iter().all(|c| own.contains(*c)));
                    }
                    _ => {}
                }
            }
            let mut view = view;
            view.legal.clear();
            let seen = shown_cards(&view);
            let leak = seen
                .intersection(hidden)
                .difference(own)
                .difference(own_ecart);
            assert!(leak.is_empty(), "{seat} sees {leak:?}");
        }
        if !spectator.contract.is_some_and(Contract::shows_chien) {
            assert!(spectator.chien.is_empty());
        }
    }
    assert_eq!(game, played.game);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Bot matches at 3, 4 and 5 seats: they end, keep the invariants, replay and verify,
    /// and the auditor rejects tampering.
    #[test]
    fn bot_matches_keep_every_invariant(seats in 3u8..=5, seed in any::<u64>(), dealer in 0u8..5) {
        let played = bot_match(seats, 1, dealer, seed);
        check_log(&played);
        check_replay(&played, seed % 4 == 0);
        check_tampering(&played);
    }

    /// Random legal players reach every contract, poignée and chelem announcement; the
    /// same invariants hold.
    #[test]
    fn random_matches_keep_every_invariant(seats in 3u8..=5, seed in any::<u64>(), dealer in 0u8..5) {
        let played = random_match(seats, 1, dealer, seed);
        check_log(&played);
        check_replay(&played, seed % 4 == 0);
        check_tampering(&played);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Exhaustive legality at every state of a few matches.
    #[test]
    fn only_legal_moves_are_accepted(seats in 3u8..=5, seed in any::<u64>(), random in any::<bool>()) {
        let played = if random { random_match(seats, 1, 0, seed) } else { bot_match(seats, 1, 0, seed) };
        check_legality(&played);
    }

    /// Views at every state of a few matches.
    #[test]
    fn views_never_show_a_card_they_must_not(seats in 3u8..=5, seed in any::<u64>(), random in any::<bool>()) {
        let played = if random { random_match(seats, 1, 1, seed) } else { bot_match(seats, 1, 1, seed) };
        check_views(&played);
    }
}

/// Longer matches end after exactly their deals at every table size.
#[test]
fn full_bot_matches_finish_at_every_table_size() {
    for seats in 3..=5 {
        for seed in 0..2 {
            let played = bot_match(seats, 3, seed as u8, seed);
            assert_eq!(played.game.phase(), Phase::Finished);
            check_log(&played);
            check_replay(&played, true);
        }
    }
}

/// Same seeds, same match; another seed, another match.
#[test]
fn bot_matches_are_deterministic() {
    for seats in 3..=5 {
        let a = bot_match(seats, 1, 0, 42);
        assert_eq!(a, bot_match(seats, 1, 0, 42));
        assert_ne!(a.events, bot_match(seats, 1, 0, 43).events);
    }
}

/// The bot takes and plays contracts: over many deals it bids sometimes, passes
/// sometimes, and wins more contracts than it loses.
#[test]
fn the_bot_bids_sensibly_and_makes_most_contracts() {
    let (mut made, mut failed, mut passed) = (0, 0, 0);
    for seed in 0..10 {
        let played = bot_match(4, 2, 0, seed);
        for event in &played.events {
            match event {
                Event::DealScored(s) if s.made => made += 1,
                Event::DealScored(_) => failed += 1,
                Event::AllPassed { .. } => passed += 1,
                _ => {}
            }
        }
    }
    assert!(
        made + failed > 20,
        "the bot took only {} contracts",
        made + failed
    );
    assert!(passed > 0, "the bot never passed a deal out");
    assert!(made > failed, "made {made}, failed {failed}");
}
