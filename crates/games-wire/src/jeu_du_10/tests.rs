//! The mapping is a bijection on what the engine produces: every value, event and seat
//! view written reads back as itself (over every variant's bot matches), and what does not
//! map is refused with its field named.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_games::sim::{MatchSetup, first_turn, play_mixed, variants};
use fairdeal_games::{
    Actor, Bid, Card, Command, Event, Game, MatchEnd, Phase, RuleError, Seat, Suit, TableOptions,
    Team,
};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use proptest::prelude::*;

use super::*;
use crate::error::Reason;
use crate::game::WireGame;
use fairdeal_games::TableGame;

fn field_of<T: std::fmt::Debug>(result: Result<T, WireError>) -> String {
    result.expect_err("refused").field
}

#[test]
fn values_read_back_as_written() {
    for seat in Seat::ALL {
        assert_eq!(seat_of("seat", seat_number(seat)), Ok(seat));
    }
    for team in Team::ALL {
        assert_eq!(team_of("team", team_number(team)), Ok(team));
    }
    for suit in Suit::ALL {
        assert_eq!(suit_of("suit", suit_message(suit) as i32), Ok(suit));
    }
    // The wire numbers the suits 1..=4 in the engine's canonical order.
    for (i, suit) in Suit::ALL.into_iter().enumerate() {
        assert_eq!(suit_message(suit) as usize, i + 1);
    }
    let cards: Vec<Card> = (0..40).filter_map(Card::from_id).collect();
    assert_eq!(cards.len(), 40);
    assert_eq!(cards_of("cards", &card_codes(&cards)), Ok(cards));
    for end in [
        MatchEnd::TargetReached,
        MatchEnd::BothReachedDeclarerWins,
        MatchEnd::GameBidMade,
        MatchEnd::GameBidFailed,
    ] {
        assert_eq!(
            match_end_of("reason", match_end_message(end) as i32),
            Ok(end)
        );
    }
    for phase in [
        Phase::NotStarted,
        Phase::AwaitingDeal,
        Phase::Auction,
        Phase::NamingTrump,
        Phase::Playing,
        Phase::Finished,
    ] {
        assert_eq!(phase_of("phase", phase_name(phase)), Ok(phase));
    }
    for options in variants() {
        let message = options_message(&options);
        assert_eq!(options_of("options", Some(&message)), Ok(options));
    }
    assert_eq!(options_of("options", None), Ok(TableOptions::default()));
    assert_eq!(
        options_of("options", Some(&pb::TableOptions::default())),
        Ok(TableOptions::default()),
        "DECK_UNSPECIFIED is the dix deck"
    );
    assert_eq!(team_seats().len(), 2);
    assert_eq!(team_seats()[1].seats, [1, 3]);
}

proptest! {
    #[test]
    fn bids_read_back_as_written(points in any::<u16>(), game in any::<bool>()) {
        let bid = if game { Bid::Game } else { Bid::Points(points) };
        prop_assert_eq!(bid_of("bid", Some(&bid_message(bid))), Ok(bid));
    }

    #[test]
    fn per_team_lists_need_two_entries(values in proptest::collection::vec(any::<i32>(), 0..5)) {
        let read = per_team("scores", &values);
        if values.len() == 2 {
            prop_assert_eq!(read, Ok([values[0], values[1]]));
        } else {
            prop_assert_eq!(
                read,
                Err(WireError::new(
                    "scores",
                    Reason::Length { expected: 2, actual: values.len() }
                ))
            );
        }
    }
}

#[test]
fn what_does_not_map_is_refused_with_its_field() {
    assert_eq!(
        seat_of("seat", 4).unwrap_err().to_string(),
        "seat: 4 is out of range (0..=3)"
    );
    assert_eq!(field_of(team_of("winner", 2)), "winner");
    assert_eq!(field_of(suit_of("suit", 0)), "suit");
    assert_eq!(field_of(suit_of("suit", 5)), "suit");
    assert_eq!(field_of(match_end_of("reason", 0)), "reason");
    assert_eq!(field_of(phase_of("phase", "lunch")), "phase");
    assert_eq!(
        card_of("card", "ZZ").unwrap_err().to_string(),
        "card: \"ZZ\" is not a card code"
    );
    assert_eq!(
        field_of(cards_of("cards", &["AS".into(), "1X".into()])),
        "cards"
    );
    let points = |n| pb::Bid {
        kind: Some(pb::bid::Kind::Points(n)),
    };
    assert_eq!(
        bid_of("bid", Some(&points(65_536)))
            .unwrap_err()
            .to_string(),
        "bid.points: 65536 is out of range (0..=65535)"
    );
    let not_game = pb::Bid {
        kind: Some(pb::bid::Kind::Game(false)),
    };
    assert_eq!(
        bid_of("bid", Some(&not_game)).unwrap_err().to_string(),
        "bid.game: must be true when set"
    );
    assert_eq!(bid_of("bid", None), Err(WireError::missing("bid")));
    assert_eq!(
        bid_of("bid", Some(&pb::Bid::default())),
        Err(WireError::missing("bid"))
    );
    let deck = pb::TableOptions {
        deck: 9,
        ..pb::TableOptions::default()
    };
    assert_eq!(
        options_of("variant", Some(&deck)).unwrap_err().to_string(),
        "variant.deck: 9 is out of range (0..=2)"
    );
    let purchase = pb::TableOptions {
        purchase: -1,
        ..pb::TableOptions::default()
    };
    assert_eq!(
        field_of(options_of("options", Some(&purchase))),
        "options.purchase"
    );
}

/// A bid of 0 points reads as what it is: the price of trump taken for nothing where the
/// engine records one (`AuctionWon`, `HandScored`), and, as a bid, a bid the engine
/// refuses (legality is the engine's, not the mapping's).
#[test]
fn a_zero_point_bid_reads_and_the_engine_refuses_it_as_a_bid() {
    let s3 = Seat::new(3).unwrap();
    let won = engine_message(
        "t",
        &Event::AuctionWon {
            seat: s3,
            bid: Bid::Points(0),
        },
        None,
    );
    assert_eq!(
        won.event(),
        Some(Ok(Event::AuctionWon {
            seat: s3,
            bid: Bid::Points(0)
        }))
    );
    let placed = pb::BidPlaced {
        table_id: "t".into(),
        seat: 1,
        bid: Some(bid_message(Bid::Points(0))),
        command: None,
    };
    let event = placed.event().unwrap();
    assert_eq!(
        event,
        Event::BidPlaced {
            seat: Seat::new(1).unwrap(),
            bid: Bid::Points(0)
        }
    );

    // At the first turn of an auction, in every variant, the engine refuses it.
    for options in variants() {
        let game = first_turn(options).unwrap();
        let turn = game.turn().unwrap();
        let refused = game.decide(
            Actor::Seat(turn),
            &Command::Bid {
                bid: Bid::Points(0),
            },
        );
        assert!(
            matches!(refused, Err(RuleError::BidTooLow { bid: 0, .. })),
            "{refused:?}"
        );
    }
}

/// Every event of a match, every seat's view after each of them and every move offered
/// read back as written.
fn check_match(options: TableOptions, seed: u64, mix: u8, dealer: u8, max_hands: u32) -> bool {
    let setup = MatchSetup {
        options: options.clone(),
        first_dealer: Seat::new(dealer % 4).unwrap(),
        server_seed: format!("server-{seed}"),
        client_seed: format!("client-{mix}"),
        max_hands,
    };
    let played = play_mixed(&setup, seed, mix).unwrap();
    let mut game = Game::new();
    for event in &played.events {
        let command = crate::table::command_message("c".into(), 7, Some((Seat::ALL[1].into(), 5)));
        let message = engine_message("t", event, Some(command.clone()));
        match (message.event(), &message) {
            (None, EngineMessage::HandStarted(m)) => {
                let Event::HandStarted { hand, dealer, .. } = event else {
                    panic!("{event:?} written as HandStarted");
                };
                assert_eq!((m.hand, m.salt.clone()), (*hand, hand.to_string()));
                assert_eq!(seat_of("dealer", m.dealer), Ok(*dealer));
            }
            (Some(read), _) => assert_eq!(read.as_ref(), Ok(event)),
            (None, other) => panic!("{other:?} reads as no event"),
        }
        // Through the trait, as stored: the same event and command back (the deal aside,
        // which a table records as its own messages).
        let wire = <Game as WireGame>::event_message("t", event, Some(command.clone()));
        if <Game as TableGame>::dealt(event).is_none() {
            let (name, bytes) = <Game as WireGame>::stored_message(&wire).unwrap();
            let back = <Game as WireGame>::stored_event(&name, &bytes)
                .unwrap()
                .unwrap();
            assert_eq!(back, wire);
            let (read, carried) = <Game as WireGame>::event_of(&back).unwrap().unwrap();
            assert_eq!(&read, event);
            assert_eq!(
                carried.is_some(),
                <Game as TableGame>::command_of(event)
                    .is_some_and(|(a, _)| a != fairdeal_table_game::Actor::Table)
            );
        }
        let carried = match &message {
            EngineMessage::BidPlaced(m) => m.command(),
            EngineMessage::PlayerPassed(m) => m.command(),
            EngineMessage::TrumpNamed(m) => m.command(),
            EngineMessage::CardPlayed(m) => m.command(),
            _ => None,
        };
        if let Some(carried) = carried {
            assert_eq!(carried, &command);
        }

        game.apply(event);
        for seat in Seat::ALL {
            let seen = game.seat_view(seat);
            for command in &seen.legal {
                if let Some(legal) = legal_action(command) {
                    assert_eq!(legal_command(&legal).as_ref(), Ok(command));
                    assert!(act_action(command).is_some());
                }
            }
            let view = pb::TableView {
                version: seen.table.version,
                options: seen.table.options.as_ref().map(options_message),
                game: Some(seat_game_view(&seen)),
                ..pb::TableView::default()
            };
            let mut expected = seen.clone();
            expected.table.result = None;
            assert_eq!(seat_view_of(&view), Ok(Some(expected)));
        }
    }
    // A spectator's view (no seat) reads as no seat's.
    let spectator = pb::TableView {
        game: Some(game_view(&game.public_view())),
        ..pb::TableView::default()
    };
    assert_eq!(seat_view_of(&spectator), Ok(None));
    played.finished()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn matches_read_back_as_written(
        variant in 0usize..20,
        seed in any::<u64>(),
        mix in any::<u8>(),
        dealer in any::<u8>(),
    ) {
        check_match(variants()[variant % 20].clone(), seed, mix, dealer, 3);
    }
}

/// A whole match to its end in the standard game (the result, the last score).
#[test]
fn a_match_to_its_end_reads_back_as_written() {
    assert!(check_match(TableOptions::default(), 11, 1, 0, 200));
}
