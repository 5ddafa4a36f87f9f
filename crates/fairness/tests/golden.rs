//! Golden vectors: every field of `golden/deals.json`, produced by the independent Python
//! implementation `golden/generate_deals.py`, must be reproduced bit for bit.
// Test helpers outside #[test] functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::number::{self, BigUint};
use fairdeal_fairness::{Deck, Generator};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Golden {
    decks: BTreeMap<String, Vec<String>>,
    factorials: BTreeMap<String, String>,
    deals: Vec<DealVector>,
    numbers: Vec<NumberVector>,
}

#[derive(Deserialize)]
struct DealVector {
    game: String,
    server_seed: String,
    client_seed: String,
    salt: String,
    key: String,
    cursor0: String,
    cursor1: String,
    cursors_used: u64,
    indices: Vec<u8>,
    order: Vec<String>,
    hands: Vec<Vec<String>>,
    chien: Vec<String>,
    distribution_number: String,
}

#[derive(Deserialize)]
struct NumberVector {
    game: String,
    distribution_number: String,
    order: Vec<String>,
    hands: Vec<Vec<String>>,
    chien: Vec<String>,
}

fn golden() -> Golden {
    serde_json::from_str(include_str!("golden/deals.json")).expect("deals.json parses")
}

fn codes(deal: &Deal, cards: &[u8]) -> Vec<String> {
    deal.codes(cards).into_iter().map(String::from).collect()
}

fn hands(deal: &Deal) -> Vec<Vec<String>> {
    deal.hands.iter().map(|h| codes(deal, h)).collect()
}

#[test]
fn decks_and_factorials_match() {
    let golden = golden();
    assert_eq!(golden.decks.len(), Deck::ALL.len());
    for deck in Deck::ALL {
        assert_eq!(golden.decks[deck.name()], deck.codes(), "{deck}");
        assert_eq!(
            golden.factorials[deck.name()],
            number::factorial(deck.len()).to_string(),
            "{deck}"
        );
    }
}

#[test]
fn seeded_deals_match() {
    let golden = golden();
    assert!(golden.deals.len() >= 6 * 8);
    for v in &golden.deals {
        let deck: Deck = v.game.parse().unwrap();
        let context = format!(
            "{} {:?} {:?} {:?}",
            v.game, v.server_seed, v.client_seed, v.salt
        );
        let generator = Generator::new(&v.server_seed, &v.client_seed, &v.salt);
        assert_eq!(hex::encode(generator.key()), v.key, "key of {context}");
        assert_eq!(
            hex::encode(generator.block(0)),
            v.cursor0,
            "cursor 0 of {context}"
        );
        assert_eq!(
            hex::encode(generator.block(1)),
            v.cursor1,
            "cursor 1 of {context}"
        );

        let mut numbers = generator.numbers();
        let deal = Deal::from_source(deck, &mut numbers).unwrap();
        assert_eq!(
            numbers.cursors_used(),
            v.cursors_used,
            "cursors of {context}"
        );
        assert_eq!(
            Deal::from_seeds(deck, &v.server_seed, &v.client_seed, &v.salt),
            deal
        );
        assert_eq!(deal.indices, v.indices, "indices of {context}");
        assert_eq!(codes(&deal, &deal.order), v.order, "order of {context}");
        assert_eq!(hands(&deal), v.hands, "hands of {context}");
        assert_eq!(codes(&deal, &deal.chien), v.chien, "chien of {context}");
        let number = deal.distribution_number();
        assert_eq!(
            number.to_string(),
            v.distribution_number,
            "number of {context}"
        );

        // And back: the number and the written order both give the same deal.
        let parsed = number::parse(&v.distribution_number, deck.len()).unwrap();
        assert_eq!(Deal::from_number(deck, &parsed).as_ref(), Ok(&deal));
        assert_eq!(
            Deal::from_codes(deck, v.order.iter().map(String::as_str)).as_ref(),
            Ok(&deal)
        );
    }
}

#[test]
fn numbered_deals_match() {
    let golden = golden();
    for v in &golden.numbers {
        let deck: Deck = v.game.parse().unwrap();
        let number: BigUint = number::parse(&v.distribution_number, deck.len()).unwrap();
        let deal = Deal::from_number(deck, &number).unwrap();
        let context = format!("{} number {}", v.game, v.distribution_number);
        assert_eq!(codes(&deal, &deal.order), v.order, "order of {context}");
        assert_eq!(hands(&deal), v.hands, "hands of {context}");
        assert_eq!(codes(&deal, &deal.chien), v.chien, "chien of {context}");
        assert_eq!(deal.distribution_number(), number, "{context}");
    }
}
