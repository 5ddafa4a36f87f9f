//! Full bot matches per second on one core, state folding included.
//!
//! Each iteration plays a batch of 32 whole standard matches (different seeds, so
//! different deals and lengths) with four heuristic bots: dealing every hand through the
//! fairness crate, every bot decision from its seat view, every `decide` and `apply`,
//! then folds the finished log again with `Game::replay` (what a service does when it
//! loads a table) and re-decides it with `Game::verify` (what the auditor does).
//! Throughput is reported in matches.
//!
//! Baseline in the same run: dealing the same number of hands alone (the fairness
//! crate's HMAC-SHA512 shuffles), so the figure reads as "a match costs N deals".
//!
//! Run: `cargo bench -p fairdeal-games --bench matches`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_games::sim::{MatchSetup, play_match};
use fairdeal_games::{Bot, Game, HeuristicBot, RandomBot, Seat, TableOptions};

const BATCH: u64 = 32;

fn setup(seed: u64) -> MatchSetup {
    MatchSetup {
        options: TableOptions::default(),
        first_dealer: Seat::ALL[(seed % 4) as usize],
        server_seed: format!("bench-server-{seed}"),
        client_seed: "bench-client".to_owned(),
        max_hands: 500,
    }
}

fn heuristic_match(seed: u64) -> usize {
    let bot = HeuristicBot::new(seed);
    let bots: [&dyn Bot; 4] = [&bot, &bot, &bot, &bot];
    let played = play_match(&setup(seed), bots).unwrap();
    let replayed = Game::replay(&played.events);
    assert_eq!(replayed.version(), played.game.version());
    played.events.len()
}

fn matches(c: &mut Criterion) {
    // Hands per batch, to size the dealing baseline; every match must reach its end.
    let hands: u64 = (0..BATCH)
        .map(|seed| {
            let bot = HeuristicBot::new(seed);
            let bots: [&dyn Bot; 4] = [&bot, &bot, &bot, &bot];
            let played = play_match(&setup(seed), bots).unwrap();
            assert!(played.finished(), "match {seed} did not finish");
            u64::from(played.game.next_hand_number())
        })
        .sum();
    // Context for reading the figures (criterion prints its own lines on stdout).
    #[allow(clippy::print_stderr)]
    {
        eprintln!("a batch is {BATCH} heuristic matches of {hands} hands in all");
    }

    let mut group = c.benchmark_group("jeu_du_10");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("baseline_deal_the_same_hands", |b| {
        b.iter(|| {
            for h in 0..hands {
                black_box(Deal::from_seeds(
                    Deck::Dix,
                    "bench-server",
                    "bench-client",
                    &h.to_string(),
                ));
            }
        });
    });
    group.bench_function("heuristic_match_with_replay", |b| {
        b.iter(|| {
            for seed in 0..BATCH {
                black_box(heuristic_match(seed));
            }
        });
    });
    group.bench_function("heuristic_match_with_replay_and_verify", |b| {
        b.iter(|| {
            for seed in 0..BATCH {
                let bot = HeuristicBot::new(seed);
                let bots: [&dyn Bot; 4] = [&bot, &bot, &bot, &bot];
                let played = play_match(&setup(seed), bots).unwrap();
                black_box(Game::replay(&played.events));
                black_box(Game::verify(&played.events).unwrap());
            }
        });
    });
    group.bench_function("random_match_with_replay", |b| {
        b.iter(|| {
            for seed in 0..BATCH {
                let bot = RandomBot::new(seed);
                let bots: [&dyn Bot; 4] = [&bot, &bot, &bot, &bot];
                let played = play_match(&setup(seed), bots).unwrap();
                black_box(Game::replay(&played.events));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, matches);
criterion_main!(benches);
