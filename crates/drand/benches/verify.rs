//! The cost of checking one quicknet round, with its baselines measured in the same run:
//! - `sha256_of_signature`: deriving the randomness, the floor of any check;
//! - `hash_to_g1`: the RFC 9380 hash of the round's message to G1, alone (part of a
//!   verification, and what a signer pays too);
//! - `parse_beacon`: `Beacon::from_hex` (hex, decompression and subgroup check of the point);
//! - `verify`: `Chain::verify` of a parsed beacon (hash to G1, a two-pairing check, SHA-256);
//! - `timelock_decrypt`: opening drand/tlock's quicknet ciphertext with its round's beacon
//!   (a verification, then the IBE decryption and age);
//! - `test_chain_sign`: a test chain signing a round.
//!
//! Report `verify` as a ratio to `hash_to_g1` and to `sha256_of_signature`.
//! `cargo bench -p fairdeal-drand --bench verify` runs it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use bls12_381::G1Projective;
use bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fairdeal_drand::{Beacon, Chain, Schedule, TestChain, timelock};
use sha2::{Digest, Sha256};

/// Quicknet round 12040883 (drand/tlock's `TestDecryptText`), with its ciphertext.
const ROUND: u64 = 12_040_883;
const SIGNATURE: &str = "929906c959032ab363c9f26570d215d66f5c06cb0c44fe508c12bb5839f04ec895bb6868e5b9ff13ab289bdb5266b394";
const HELLO_WORLD: &str = "-----BEGIN AGE ENCRYPTED FILE-----
YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IHRsb2NrIDEyMDQwODgzIDUyZGI5YmE3
MGUwY2MwZjZlYWY3ODAzZGQwNzQ0N2ExZjU0Nzc3MzVmZDNmNjYxNzkyYmE5NDYw
MGM4NGU5NzEKa1JjK01NSEUwS005b1V0SmNLTWZGb1JFVzBXN1JQbTNtdzZpVUJ1
cGNXVkZkZDJQb1h6U0JrK25TM01BNnBKNwpHZDl3REhmVU5hTldXTWw2cGVia2Jh
OUVNZGJDWnBuQVNtOWFIb3hqUitwaGFVT2xoS1ppZGl5ZHBLSStPS2N0CmxvT2ZP
SW9KaGtndTVTRnJUOGVVQTJUOGk3aTBwQlBzTDlTWUJUZEJQb28KLS0tIEl6Q1Js
WSt1RXp0d21CbEg0cTFVZGNJaW9pS2l0M0c0bHVxNlNjT2w3UUUKDI4cDlPHPgjy
UnBmtsw6U2LlKh8iDf0E1PfwDenmKFfQaAGm0WLxdlzP8Q==
-----END AGE ENCRYPTED FILE-----
";

const DST_G1: &[u8] = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";

fn bench(c: &mut Criterion) {
    let chain = Chain::quicknet().unwrap();
    let beacon = Beacon::from_hex(ROUND, SIGNATURE, None).unwrap();
    chain.verify(&beacon).unwrap();

    let mut group = c.benchmark_group("round");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));

    let signature = *beacon.signature().as_bytes();
    group.bench_function("sha256_of_signature", |b| {
        b.iter(|| Sha256::digest(black_box(signature)))
    });

    let message = Sha256::digest(ROUND.to_be_bytes());
    group.bench_function("hash_to_g1", |b| {
        b.iter(|| {
            <G1Projective as HashToCurve<ExpandMsgXmd<sha2_09::Sha256>>>::hash_to_curve(
                black_box(message),
                DST_G1,
            )
        })
    });

    group.bench_function("parse_beacon", |b| {
        b.iter(|| Beacon::from_hex(black_box(ROUND), black_box(SIGNATURE), None).unwrap())
    });

    group.bench_function("verify", |b| {
        b.iter(|| chain.verify(black_box(&beacon)).unwrap())
    });

    group.bench_function("timelock_decrypt", |b| {
        b.iter(|| timelock::decrypt(&chain, &beacon, black_box(HELLO_WORLD.as_bytes())).unwrap())
    });

    let test_chain =
        TestChain::from_seed(&[7; 32], Schedule::new(1_700_000_000, 3).unwrap()).unwrap();
    group.bench_function("test_chain_sign", |b| {
        b.iter(|| test_chain.sign(black_box(ROUND)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
