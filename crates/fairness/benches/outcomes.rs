//! Outcomes per second for dice, crash, mines and plinko (seeded), each beside the bound the
//! hashing sets, measured in the same run.
//!
//! Each outcome has its own salt (the bet counter), so it needs its own key: the bound per
//! outcome is one SHA-256 (`server_seed ":" salt`), one HMAC-SHA512 keying (two SHA-512
//! compressions for the ipad/opad states) and one keyed HMAC call per cursor (clone the
//! keyed state, update with `client_seed ":" cursor`, finalize). The bound loop does exactly
//! that work and nothing else; the outcome loop calls `Round::from_seeds`.
//!
//! The machine is shared, so the bound is timed right after the outcomes inside every
//! criterion sample (same `iters`, same salts) and the ratio is the median of the per-sample
//! ratios: a load change hits both halves of a pair alike. Target: outcome rate >= 80 % of
//! the bound. Run with `cargo bench -p fairdeal-fairness --bench outcomes`; the summary table
//! is printed after criterion's own output.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use fairdeal_fairness::outcome::{Game, Options, Round};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

type HmacSha512 = Hmac<Sha512>;

const SERVER: &str = "3f1c8a0e5b7d92c4e6a1f0b3d5c7e9a2b4d6f8a0c2e4f6a8b0d2f4a6c8e0a2b4";
const CLIENT: &str = "a-player-chosen-client-seed";

/// Per benchmark: (nanoseconds per outcome, nanoseconds per bound) of each sample.
static SAMPLES: Mutex<BTreeMap<String, Vec<(f64, f64)>>> = Mutex::new(BTreeMap::new());

fn record(name: &str, iters: u64, measured: Duration, bound: Duration) {
    let per = |d: Duration| d.as_secs_f64() * 1e9 / iters.max(1) as f64;
    SAMPLES
        .lock()
        .unwrap()
        .entry(name.to_owned())
        .or_default()
        .push((per(measured), per(bound)));
}

/// Realistic salts: bet counters, as single-player games use.
fn salts() -> Vec<String> {
    (0..4096u64).map(|i| (1_000_000 + i).to_string()).collect()
}

/// The hashing an outcome cannot avoid: its key, and `cursors` keyed HMAC calls.
fn bound(prefix: &[u8], salt: &str, cursors: u8) -> u8 {
    let mut h = Sha256::new();
    h.update(SERVER.as_bytes());
    h.update(b":");
    h.update(salt.as_bytes());
    let key = h.finalize();
    let keyed = HmacSha512::new_from_slice(&key).unwrap();
    let mut acc = 0u8;
    for cursor in 0..cursors {
        let mut mac = keyed.clone();
        mac.update(prefix);
        mac.update(&[b'0' + cursor]);
        acc ^= mac.finalize().into_bytes()[0];
    }
    acc
}

fn time_bound(prefix: &[u8], salts: &[String], iters: u64, cursors: u8) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let salt = &salts[i as usize % salts.len()];
        black_box(bound(prefix, black_box(salt), cursors));
    }
    start.elapsed()
}

fn outcomes(c: &mut Criterion) {
    let salts = salts();
    let prefix = format!("{CLIENT}:").into_bytes();
    let rounds = [
        ("dice", Round::new(Game::Dice, &Options::default()).unwrap()),
        (
            "crash",
            Round::new(Game::Crash, &Options::default()).unwrap(),
        ),
        (
            "mines",
            Round::new(
                Game::Mines,
                &Options {
                    mines: Some(3),
                    ..Options::default()
                },
            )
            .unwrap(),
        ),
        (
            "plinko16",
            Round::new(
                Game::Plinko,
                &Options {
                    pins: Some(16),
                    ..Options::default()
                },
            )
            .unwrap(),
        ),
    ];
    let mut group = c.benchmark_group("outcomes");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(4));
    for (name, round) in rounds {
        let cursors = u8::try_from(round.cursors()).unwrap();
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for i in 0..iters {
                    let salt = &salts[i as usize % salts.len()];
                    black_box(round.from_seeds(SERVER, CLIENT, black_box(salt)));
                }
                let measured = start.elapsed();
                let bound = time_bound(&prefix, &salts, iters, cursors);
                record(name, iters, measured, bound);
                measured
            });
        });
    }
    group.finish();

    // The primitives, for the report: one keyed call, and one key setup.
    let mut group = c.benchmark_group("primitives");
    group.throughput(Throughput::Elements(1));
    let key: [u8; 32] = Sha256::digest(b"key").into();
    let keyed = HmacSha512::new_from_slice(&key).unwrap();
    group.bench_function("hmac_sha512_keyed_call", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters {
                let mut mac = keyed.clone();
                mac.update(&prefix);
                mac.update(&[b'0' + (i % 10) as u8]);
                black_box(mac.finalize());
            }
            let d = start.elapsed();
            record("hmac_sha512_keyed_call", iters, d, d);
            d
        });
    });
    group.bench_function("key_setup", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters {
                let salt = &salts[i as usize % salts.len()];
                let mut h = Sha256::new();
                h.update(SERVER.as_bytes());
                h.update(b":");
                h.update(salt.as_bytes());
                black_box(HmacSha512::new_from_slice(&h.finalize()).unwrap());
            }
            let d = start.elapsed();
            record("key_setup", iters, d, d);
            d
        });
    });
    group.finish();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn report() {
    let samples = SAMPLES.lock().unwrap();
    println!();
    println!(
        "{:<24} {:>14} {:>14} {:>8}",
        "benchmark", "per second", "bound / s", "ratio"
    );
    for (name, pairs) in samples.iter() {
        let rate = 1e9 / median(pairs.iter().map(|p| p.0).collect());
        let bound = 1e9 / median(pairs.iter().map(|p| p.1).collect());
        let ratio = median(pairs.iter().map(|p| p.1 / p.0).collect());
        if name.starts_with("hmac") || name.starts_with("key") {
            println!("{name:<24} {rate:>14.0}");
        } else {
            let verdict = if ratio >= 0.80 { "ok" } else { "BELOW 80 %" };
            println!(
                "{name:<24} {rate:>14.0} {bound:>14.0} {:>7.1}%  {verdict}",
                ratio * 100.0
            );
        }
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    outcomes(&mut c);
    c.final_summary();
    report();
}
