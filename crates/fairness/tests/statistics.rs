//! Statistical checks of the dealing chain (generator, shuffle, split) on 200,000 Jeu du 10
//! deals with fixed seeds, so the outcome is deterministic: a pass today is a pass forever,
//! and a change in the chain that breaks uniformity fails loudly.
//!
//! - The suit pattern of hand 0 (4-3-2-1, 5-3-1-1, ... as unordered patterns) against the
//!   exact combinatorial probabilities.
//! - Per-position card uniformity: the 40 x 40 table of (position in the dealt order, card).
//!
//! Critical values are the chi-square upper `1e-4` quantiles from the Wilson-Hilferty
//! approximation, which errs slightly high (on the safe side) at small degrees of freedom
//! and is accurate to well under 1% at the ~1,500 degrees of freedom of the table. A fair
//! dealer fails a given check with probability about 1e-4; the fixed seeds make that one
//! draw, and a real bias of a few percent on any cell or pattern pushes the statistic far
//! past the bound (see `a_biased_dealer_is_caught`).
// Test helpers outside #[test] functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::generator::{Exhausted, NumberSource};
use fairdeal_fairness::{Deck, Generator};
use std::collections::BTreeMap;

const DEALS: usize = 200_000;
const CARDS: usize = 40;
const SUIT_SIZE: usize = 10;
const HAND: usize = 10;
/// Standard normal upper quantile for p = 1e-4.
const Z_1E4: f64 = 3.719_016;
/// Standard normal upper quantile for p = 1e-4 / 40 (Bonferroni over the 40 positions).
const Z_1E4_OVER_40: f64 = 4.564_788;

/// Wilson-Hilferty: the chi-square quantile with `df` degrees of freedom at upper tail `z`.
fn critical(df: usize, z: f64) -> f64 {
    let df = df as f64;
    let c = 2.0 / (9.0 * df);
    df * (1.0 - c + z * c.sqrt()).powi(3)
}

fn binomial(n: u64, k: u64) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Exact probability of each unordered suit pattern (counts sorted descending) of a
/// 10-card hand from the 40-card deck: sum over ordered suit counts of
/// `prod C(10, s_i) / C(40, 10)`.
fn pattern_probabilities() -> BTreeMap<[u8; 4], f64> {
    let total = binomial(CARDS as u64, HAND as u64);
    let mut probabilities = BTreeMap::new();
    let max = SUIT_SIZE as u8;
    for a in 0..=max {
        for b in 0..=max {
            for c in 0..=max {
                let Some(d) = (HAND as u8).checked_sub(a + b + c) else {
                    continue;
                };
                if d > max {
                    continue;
                }
                let ways: f64 = [a, b, c, d]
                    .iter()
                    .map(|&s| binomial(SUIT_SIZE as u64, u64::from(s)))
                    .product();
                *probabilities.entry(pattern([a, b, c, d])).or_insert(0.0) += ways / total;
            }
        }
    }
    probabilities
}

fn pattern(mut counts: [u8; 4]) -> [u8; 4] {
    counts.sort_unstable_by(|x, y| y.cmp(x));
    counts
}

/// Pearson's statistic over patterns, merging the patterns expected fewer than 5 times
/// into one bin (the usual validity condition); returns (statistic, degrees of freedom).
fn pattern_chi_square(observed: &BTreeMap<[u8; 4], u64>, deals: usize) -> (f64, usize) {
    let mut bins: Vec<(f64, f64)> = Vec::new();
    let (mut rare_expected, mut rare_observed) = (0.0, 0.0);
    for (p, probability) in pattern_probabilities() {
        let expected = probability * deals as f64;
        let seen = observed.get(&p).copied().unwrap_or(0) as f64;
        if expected < 5.0 {
            rare_expected += expected;
            rare_observed += seen;
        } else {
            bins.push((expected, seen));
        }
    }
    bins.push((rare_expected, rare_observed));
    let statistic = bins.iter().map(|(e, o)| (o - e) * (o - e) / e).sum();
    (statistic, bins.len() - 1)
}

/// Pearson's statistic of a `positions x cards` table whose rows and columns all sum to
/// `deals` (every position holds one card, every card one position): expected `deals / 40`
/// per cell, `(40 - 1)^2` degrees of freedom.
fn table_chi_square(table: &[[u64; CARDS]; CARDS], deals: usize) -> f64 {
    let expected = deals as f64 / CARDS as f64;
    table
        .iter()
        .flatten()
        .map(|&o| (o as f64 - expected).powi(2) / expected)
        .sum()
}

/// Per-position statistic (39 degrees of freedom each).
fn row_chi_square(row: &[u64; CARDS], deals: usize) -> f64 {
    let expected = deals as f64 / CARDS as f64;
    row.iter()
        .map(|&o| (o as f64 - expected).powi(2) / expected)
        .sum()
}

struct Tally {
    patterns: BTreeMap<[u8; 4], u64>,
    table: Box<[[u64; CARDS]; CARDS]>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            patterns: BTreeMap::new(),
            table: Box::new([[0; CARDS]; CARDS]),
        }
    }

    fn add(&mut self, deal: &Deal) {
        let mut suits = [0u8; 4];
        for &card in &deal.hands[0] {
            suits[usize::from(card) / SUIT_SIZE] += 1;
        }
        *self.patterns.entry(pattern(suits)).or_insert(0) += 1;
        for (position, &card) in deal.order.iter().enumerate() {
            self.table[position][usize::from(card)] += 1;
        }
    }
}

#[test]
fn pattern_probabilities_are_exact() {
    let p = pattern_probabilities();
    let sum: f64 = p.values().sum();
    assert!((sum - 1.0).abs() < 1e-12, "{sum}");
    // Hand-checked: 4-3-2-1 is 4! * C(10,4) C(10,3) C(10,2) C(10,1) / C(40,10).
    let expected = 24.0 * 210.0 * 120.0 * 45.0 * 10.0 / 847_660_528.0;
    assert!((p[&[4, 3, 2, 1]] - expected).abs() < 1e-15);
    // 10-0-0-0: 4 / C(40,10).
    assert!((p[&[10, 0, 0, 0]] - 4.0 / 847_660_528.0).abs() < 1e-20);
    // Wilson-Hilferty against exact quantiles (regularized incomplete gamma, computed
    // offline): p = 1e-4 at 10, 39 and 1521 df, p = 2.5e-6 at 39 df. It errs high (safe).
    for (df, z, exact) in [
        (10, Z_1E4, 35.564),
        (39, Z_1E4, 80.646),
        (1521, Z_1E4, 1734.723),
        (39, Z_1E4_OVER_40, 93.176),
    ] {
        let approx = critical(df, z);
        assert!(
            approx >= exact && approx - exact < 0.5,
            "{df} df: {approx} vs {exact}"
        );
    }
}

#[test]
fn dix_deals_are_uniform() {
    let mut tally = Tally::new();
    for hand in 0..DEALS {
        let deal = Deal::from_seeds(Deck::Dix, "statistics", "dix", &hand.to_string());
        tally.add(&deal);
    }

    let (statistic, df) = pattern_chi_square(&tally.patterns, DEALS);
    let bound = critical(df, Z_1E4);
    println!("suit patterns: chi2 = {statistic:.2}, {df} df, bound {bound:.2}");
    assert!(df >= 15, "too few pattern bins: {df}");
    assert!(
        statistic < bound,
        "suit patterns: chi2 {statistic} >= {bound} ({df} df)"
    );

    let statistic = table_chi_square(&tally.table, DEALS);
    let df = (CARDS - 1) * (CARDS - 1);
    let bound = critical(df, Z_1E4);
    println!("position x card: chi2 = {statistic:.2}, {df} df, bound {bound:.2}");
    assert!(
        statistic < bound,
        "position x card: chi2 {statistic} >= {bound}"
    );

    // Each position on its own, Bonferroni-corrected over the 40 positions (p = 1e-4 / 40):
    // a bias confined to one position cannot hide in the overall sum.
    let bound = critical(CARDS - 1, Z_1E4_OVER_40);
    for (position, row) in tally.table.iter().enumerate() {
        let statistic = row_chi_square(row, DEALS);
        assert!(
            statistic < bound,
            "position {position}: chi2 {statistic} >= {bound}"
        );
    }
}

/// A dealer whose numbers lean low (`U * (1 - u / 64)`): a bias of at most 1.6% towards
/// the front of the remaining list.
struct Leaning<'a, S: NumberSource>(&'a mut S);

impl<S: NumberSource> NumberSource for Leaning<'_, S> {
    fn next_number(&mut self) -> Result<u64, Exhausted> {
        let u = self.0.next_number()?;
        Ok(u - (((u128::from(u) * u128::from(u)) >> 70) as u64))
    }
}

#[test]
fn a_biased_dealer_is_caught() {
    // 20,000 deals with a small bias: the position x card check must reject them, so the
    // statistics above are not vacuous.
    let deals = 20_000;
    let mut tally = Tally::new();
    for hand in 0..deals {
        let generator = Generator::new("statistics", "biased", &hand.to_string());
        let mut numbers = generator.numbers();
        let deal = Deal::from_source(Deck::Dix, &mut Leaning(&mut numbers)).unwrap();
        tally.add(&deal);
    }
    let statistic = table_chi_square(&tally.table, deals);
    let bound = critical((CARDS - 1) * (CARDS - 1), Z_1E4);
    println!("biased position x card: chi2 = {statistic:.2}, bound {bound:.2}");
    assert!(statistic > bound);
}
