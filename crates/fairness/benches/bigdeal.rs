//! BigDeal-compatible boards per second, on the seed of an official set (WBG 2024, Open
//! Round Robin session 1: squaredeal's owner and entropy for that session).
//!
//! - `stream+deal`: the kept numbers and their deals (what a verifier needs);
//! - `stream+deal+pbn`: the same, written as BigDeal's PBN (what BigDeal does per board,
//!   so the figure to compare with BigDeal's own speed on the same seed);
//! - `unrank` / `rank`: the number <-> deal bijection alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fairdeal_fairness::bigdeal::{self, BridgeDeal, DealNumber, Seed};

const BOARDS: u32 = 1_000;

fn official_seed() -> Seed {
    let key = "hrzkVbQb9F0QhgIYEwfBUwKjNHDoGZXMYxVBbJZaWXnJf233CI5MJo7buhPR";
    let (owner, tail) = key.split_at(key.len() / 2);
    // base64("43275.91") = "NDMyNzUuOTE="
    let entropy = format!("{tail}NDMyNzUuOTE=original");
    Seed::new(entropy.as_bytes(), owner.as_bytes())
}

fn boards(c: &mut Criterion) {
    let seed = official_seed();
    let mut group = c.benchmark_group("bigdeal");
    group.throughput(Throughput::Elements(u64::from(BOARDS)));
    group.bench_function("stream+deal", |b| {
        b.iter(|| black_box(bigdeal::boards(black_box(&seed), 1, BOARDS)))
    });
    group.bench_function("stream+deal+pbn", |b| {
        b.iter(|| {
            let mut out = bigdeal::pbn_header("bench");
            for board in bigdeal::boards(black_box(&seed), 1, BOARDS) {
                board.write_pbn("", &mut out);
            }
            black_box(out)
        })
    });
    let numbers: Vec<DealNumber> = seed.deal_numbers().take(BOARDS as usize).collect();
    let deals: Vec<BridgeDeal> = numbers
        .iter()
        .map(|&n| BridgeDeal::from_number(n))
        .collect();
    group.bench_function("unrank", |b| {
        b.iter(|| {
            for &number in black_box(&numbers) {
                black_box(BridgeDeal::from_number(number));
            }
        })
    });
    group.bench_function("rank", |b| {
        b.iter(|| {
            for deal in black_box(&deals) {
                black_box(deal.number());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, boards);
criterion_main!(benches);
