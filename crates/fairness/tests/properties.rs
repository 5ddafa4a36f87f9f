//! Properties of the public API: distribution numbers are a bijection on `[0, n!)` for
//! every deck, every deal is a partition of its deck with the SPEC's hand sizes, and the
//! decks are the SPEC's.
// Test helpers outside #[test] functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::number::{self, BigUint, NumberError};
use proptest::prelude::*;

/// A uniform-ish big integer in `[0, n!)`: random bytes of n!'s width, reduced.
fn below_factorial(n: usize) -> impl Strategy<Value = BigUint> {
    let limit = number::factorial(n);
    let width = limit.to_bytes_le().len() + 8;
    proptest::collection::vec(any::<u8>(), width)
        .prop_map(move |bytes| BigUint::from_bytes_le(&bytes) % &limit)
}

fn deck() -> impl Strategy<Value = Deck> {
    proptest::sample::select(Deck::ALL.to_vec())
}

fn assert_partition(deal: &Deal) {
    let deck = deal.deck;
    assert_eq!(deal.hands.len(), deck.hands());
    assert!(deal.hands.iter().all(|h| h.len() == deck.hand_len()));
    assert_eq!(deal.chien.len(), deck.chien_len());
    let mut all: Vec<u8> = deal.hands.concat();
    all.extend(&deal.chien);
    all.sort_unstable();
    let canonical: Vec<u8> = (0..deck.len()).map(|i| i as u8).collect();
    assert_eq!(
        all, canonical,
        "{deck}: hands and chien are not a partition"
    );
    let mut order = deal.order.clone();
    order.sort_unstable();
    assert_eq!(order, canonical, "{deck}: order is not a permutation");
}

proptest! {
    #[test]
    fn numbers_round_trip_for_78_cards(number in below_factorial(78)) {
        for deck in [Deck::Tarot3, Deck::Tarot4, Deck::Tarot5] {
            let deal = Deal::from_number(deck, &number).unwrap();
            assert_partition(&deal);
            prop_assert_eq!(deal.distribution_number(), number.clone());
            prop_assert_eq!(number::from_order(&deal.order), Ok(number.clone()));
        }
    }

    #[test]
    fn numbers_round_trip_for_every_deck(
        (deck, number) in deck().prop_flat_map(|d| (Just(d), below_factorial(d.len())))
    ) {
        let deal = Deal::from_number(deck, &number).unwrap();
        assert_partition(&deal);
        prop_assert_eq!(deal.distribution_number(), number.clone());
        let text = number.to_string();
        prop_assert_eq!(number::parse(&text, deck.len()), Ok(number));
    }

    #[test]
    fn seeded_deals_are_partitions_and_numbered(
        deck in deck(),
        server in "\\PC{0,40}",
        client in "\\PC{0,40}",
        salt in "\\PC{0,20}",
    ) {
        let deal = Deal::from_seeds(deck, &server, &client, &salt);
        assert_partition(&deal);
        let number = deal.distribution_number();
        prop_assert!(number < number::factorial(deck.len()));
        prop_assert_eq!(Deal::from_number(deck, &number), Ok(deal.clone()));
        let codes = deal.codes(&deal.order);
        prop_assert_eq!(Deal::from_codes(deck, codes.iter().copied()), Ok(deal));
    }
}

#[test]
fn edges_of_every_deck() {
    for deck in Deck::ALL {
        let n = deck.len();
        let last = number::factorial(n) - 1u8;
        let first = Deal::from_number(deck, &BigUint::ZERO).unwrap();
        assert_eq!(first.order, (0..n).map(|i| i as u8).collect::<Vec<_>>());
        let reversed = Deal::from_number(deck, &last).unwrap();
        assert_eq!(
            reversed.order,
            (0..n).rev().map(|i| i as u8).collect::<Vec<_>>()
        );
        assert_eq!(reversed.distribution_number(), last);
        assert_eq!(
            Deal::from_number(deck, &number::factorial(n)),
            Err(NumberError::TooLarge { n })
        );
    }
}

#[test]
fn decks_follow_the_spec() {
    // Built from the SPEC's wording, independently of the tables in deck.rs.
    let plain = |ranks: &str| -> Vec<String> {
        "SHDC"
            .chars()
            .flat_map(|s| ranks.chars().map(move |r| format!("{r}{s}")))
            .collect()
    };
    let mut tarot: Vec<String> = (1..=21).map(|t| format!("T{t}")).collect();
    tarot.push("EX".into());
    for s in "SHDC".chars() {
        for r in [
            "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "N", "Q", "K",
        ] {
            tarot.push(format!("{r}{s}"));
        }
    }
    let expected = [
        (Deck::Bridge, plain("AKQJT98765432")),
        (Deck::Dix, plain("AKQJT98765")),
        (Deck::Ruff, plain("AKQJT9875")),
        (Deck::Tarot3, tarot.clone()),
        (Deck::Tarot4, tarot.clone()),
        (Deck::Tarot5, tarot),
    ];
    for (deck, codes) in expected {
        assert_eq!(deck.codes(), codes, "{deck}");
    }
    assert_eq!(Deck::Bridge.codes().first(), Some(&"AS"));
    assert_eq!(Deck::Bridge.codes().last(), Some(&"2C"));
}
