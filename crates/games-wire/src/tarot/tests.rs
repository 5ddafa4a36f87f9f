//! The mapping is a bijection on what the engine produces: every value, event, seat view
//! and move written reads back as itself (over bot matches at 3, 4 and 5 seats, also
//! through the stored bytes), a plain card of the écart and an unseen chien reach no message
//! or view another seat or a spectator can read, and what does not map is refused with its
//! field named.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::{Actor, Seat, TableGame};
use fairdeal_tarot::options::MAX_ROUNDS;
use fairdeal_tarot::sim::{MatchSetup, play_match, play_match_with};
use fairdeal_tarot::{Camp, Card, Chelem, Command, Contract, Event, Phase, Poignee, Tarot};
use pb::table_event::Event as W;
use proptest::prelude::*;

use super::*;
use crate::game::WireGame;

fn field_of<T: std::fmt::Debug>(result: Result<T, WireError>) -> String {
    result.expect_err("refused").field
}

fn message_of<T: std::fmt::Debug>(result: Result<T, WireError>) -> String {
    result.expect_err("refused").to_string()
}

#[test]
fn values_read_back_as_written() {
    let cards: Vec<Card> = Card::all().collect();
    assert_eq!(cards.len(), 78);
    assert_eq!(cards_of("cards", &card_codes(&cards)), Ok(cards));
    for contract in Contract::ALL {
        assert_eq!(
            contract_of("c", contract_message(contract) as i32),
            Ok(contract)
        );
    }
    // The wire numbers the contracts 1..=4, lowest first.
    for (i, contract) in Contract::ALL.into_iter().enumerate() {
        assert_eq!(contract_message(contract) as usize, i + 1);
    }
    for poignee in Poignee::ALL {
        assert_eq!(
            poignee_of("p", poignee_message(poignee) as i32),
            Ok(poignee)
        );
    }
    for camp in [Camp::Attack, Camp::Defence] {
        assert_eq!(camp_of("c", camp_message(camp) as i32), Ok(camp));
    }
    for chelem in [
        Chelem::None,
        Chelem::AnnouncedMade,
        Chelem::Made,
        Chelem::AnnouncedFailed,
        Chelem::Defence,
    ] {
        assert_eq!(chelem_of("c", chelem_message(chelem) as i32), Ok(chelem));
    }
    for phase in [
        Phase::NotStarted,
        Phase::AwaitingDeal,
        Phase::Bidding,
        Phase::Calling,
        Phase::Discarding,
        Phase::Announcing,
        Phase::Playing,
        Phase::Finished,
    ] {
        assert_eq!(phase_of("phase", phase_name(phase)), Ok(phase));
    }
    assert_eq!(MAX_ROUNDS, 10, "the range the mapping names");
    for seats in 3..=5 {
        for rounds in 1..=MAX_ROUNDS {
            let options = TarotOptions { seats, rounds };
            let message = options_message(&options);
            assert_eq!(options_of("options", Some(&message)), Ok(options));
            assert_eq!(
                <Tarot as WireGame>::options_of("options", Some(&message)),
                Ok(options)
            );
        }
    }
}

#[test]
fn options_that_are_not_a_tarot_tables_are_refused_with_their_field() {
    assert_eq!(
        options_of("options", None),
        Err(WireError::missing("options"))
    );
    assert_eq!(
        message_of(options_of("options", Some(&pb::TableOptions::default()))),
        "options.tarot: missing"
    );
    let tarot = |seats, rounds| pb::TableOptions {
        tarot: Some(pb::TarotOptions { seats, rounds }),
        ..pb::TableOptions::default()
    };
    assert_eq!(
        message_of(options_of("options", Some(&tarot(6, 1)))),
        "options.tarot.seats: 6 is out of range (3..=5)"
    );
    assert_eq!(
        field_of(options_of("options", Some(&tarot(2, 1)))),
        "options.tarot.seats"
    );
    assert_eq!(
        message_of(options_of("options", Some(&tarot(4, 0)))),
        "options.tarot.rounds: 0 is out of range (1..=10)"
    );
    assert_eq!(
        field_of(options_of("options", Some(&tarot(4, 11)))),
        "options.tarot.rounds"
    );
    // Jeu du 10's variants on a Tarot table's options.
    let mixed = pb::TableOptions {
        deck: pb::Deck::Ruff as i32,
        ..tarot(4, 1)
    };
    assert_eq!(
        message_of(options_of("options", Some(&mixed))),
        "options: Jeu du 10's variants are set: not a Tarot table's options"
    );
    // And the other way round: a Jeu du 10 table refuses a Tarot table's options.
    assert_eq!(
        message_of(crate::jeu_du_10::options_of("options", Some(&tarot(4, 1)))),
        "options.tarot: a French Tarot table's options, not Jeu du 10's"
    );
}

fn act(action: pb::act_request::Action) -> pb::ActRequest {
    pb::ActRequest {
        table_id: "t".into(),
        expected_version: 3,
        command_id: "c".into(),
        action: Some(action),
    }
}

#[test]
fn moves_read_back_as_written_and_a_bad_one_is_refused_with_its_field() {
    use pb::act_request::Action;
    let trumps: Vec<Card> = (1..=10).filter_map(Card::trump).collect();
    let commands = [
        Command::Pass,
        Command::Bid {
            contract: Contract::GardeSans,
        },
        Command::CallKing {
            card: "KH".parse().unwrap(),
        },
        Command::Discard {
            card: "3S".parse().unwrap(),
        },
        Command::DeclareChelem { announce: true },
        Command::DeclareChelem { announce: false },
        Command::ShowPoignee { trumps },
        Command::PlayCard { card: Card::EXCUSE },
    ];
    for command in &commands {
        let action = act_action(command).unwrap();
        assert_eq!(act_command(&act(action.clone())).as_ref(), Ok(command));
        assert_eq!(
            <Tarot as WireGame>::act_command(&act(action)).as_ref(),
            Ok(command)
        );
        let legal = legal_action(command).unwrap();
        assert_eq!(legal_command(&legal).as_ref(), Ok(command));
    }
    let start = Command::StartMatch {
        options: TarotOptions::default(),
        first_dealer: Seat::FIRST,
    };
    assert_eq!(act_action(&start), None);
    assert_eq!(legal_action(&start), None);

    let bid = act(Action::TarotBid(pb::TarotBid { contract: 9 }));
    assert_eq!(
        message_of(act_command(&bid)),
        "tarot_bid.contract: 9 is out of range (1..=4)"
    );
    let unspecified = act(Action::TarotBid(pb::TarotBid::default()));
    assert_eq!(field_of(act_command(&unspecified)), "tarot_bid.contract");
    assert_eq!(
        message_of(act_command(&act(Action::TarotPlayCard("AS".into())))),
        "tarot_play_card: \"AS\" is not a Tarot card code"
    );
    assert_eq!(
        field_of(act_command(&act(Action::TarotCallKing("K".into())))),
        "tarot_call_king"
    );
    assert_eq!(
        field_of(act_command(&act(Action::TarotDiscard(String::new())))),
        "tarot_discard"
    );
    let poignee = act(Action::TarotShowPoignee(pb::TarotShowPoignee {
        trumps: vec!["T1".into(), "T22".into()],
    }));
    assert_eq!(field_of(act_command(&poignee)), "tarot_show_poignee.trumps");
    let nothing = pb::ActRequest {
        action: None,
        ..act(Action::Pass(pb::PassAction {}))
    };
    assert_eq!(field_of(act_command(&nothing)), "action");
    // Jeu du 10's moves at a Tarot table, and Tarot's at a Jeu du 10 table.
    assert_eq!(
        message_of(act_command(&act(Action::PlayCard("KS".into())))),
        "play_card: a Jeu du 10 move, not a Tarot table's"
    );
    assert_eq!(
        field_of(act_command(&act(Action::Bid(pb::Bid::default())))),
        "bid"
    );
    assert_eq!(
        field_of(act_command(&act(Action::NameTrump(1)))),
        "name_trump"
    );
    let tarot_move = act(Action::TarotPlayCard("KS".into()));
    assert_eq!(
        message_of(<fairdeal_games::Game as WireGame>::act_command(&tarot_move)),
        "action: a French Tarot move, not a Jeu du 10 table's"
    );
    let offered = legal_action(&Command::PlayCard {
        card: "KS".parse().unwrap(),
    })
    .unwrap();
    assert_eq!(
        field_of(crate::jeu_du_10::legal_command(&offered)),
        "action"
    );
    assert_eq!(
        field_of(legal_command(&pb::LegalAction { action: None })),
        "action"
    );
}

/// The events of another game are not Tarot's and Tarot's are not another game's: `None`
/// from both readers, as stored too.
#[test]
fn a_tarot_event_is_not_jeu_du_10s_and_the_other_way_round() {
    let tarot = event_message(
        "t",
        &Event::CardPlayed {
            seat: Seat::FIRST,
            card: "KS".parse().unwrap(),
        },
        None,
    );
    assert!(<fairdeal_games::Game as WireGame>::event_of(&tarot).is_none());
    assert!(<fairdeal_games::Game as WireGame>::stored_message(&tarot).is_none());
    let (name, bytes) = <Tarot as WireGame>::stored_message(&tarot).unwrap();
    assert_eq!(name, "fairdeal.tables.v1.TarotCardPlayed");
    assert!(<fairdeal_games::Game as WireGame>::stored_event(&name, &bytes).is_none());
    let jeu_du_10 = W::CardPlayed(pb::CardPlayed {
        table_id: "t".into(),
        seat: 0,
        card: "KS".into(),
        command: None,
    });
    assert!(event_of(&jeu_du_10).is_none());
    assert!(<Tarot as WireGame>::stored_message(&jeu_du_10).is_none());
    assert!(<Tarot as WireGame>::stored_event("fairdeal.tables.v1.CardPlayed", &[]).is_none());
    assert!(<Tarot as WireGame>::stored_event("fairdeal.chat.v1.TarotCardPlayed", &[]).is_none());
    // The deal's public part is the table's own message, read by neither game.
    assert!(event_of(&W::HandStarted(pb::HandStarted::default())).is_none());
}

fn read_error(message: W) -> String {
    message_of(event_of(&message).expect("a Tarot event"))
}

fn a_score() -> pb::TarotScore {
    pb::TarotScore {
        deal: 2,
        taker: 1,
        contract: pb::TarotContract::Garde as i32,
        multiplier: 2,
        called: None,
        partner: None,
        half_points: 120,
        oudlers: 2,
        target: 41,
        made: true,
        difference: 19,
        petit_au_bout: Some(pb::TarotCamp::Defence as i32),
        poignees: vec![pb::TarotPoignee::Simple as i32],
        chelem: pb::TarotChelem::None as i32,
        value: 68,
        deltas: vec![-68, 204, -68, -68],
        scores: vec![-68, 204, -68, -68],
    }
}

fn scored(score: pb::TarotScore) -> W {
    W::TarotDealScored(pb::TarotDealScored {
        table_id: "t".into(),
        score: Some(score),
    })
}

#[test]
fn an_event_field_that_does_not_map_is_refused_with_its_name() {
    assert_eq!(
        read_error(W::TarotBidPlaced(pb::TarotBidPlaced {
            table_id: "t".into(),
            seat: 5,
            contract: 1,
            command: None,
        })),
        "seat: 5 is out of range (0..=4)"
    );
    assert_eq!(
        read_error(W::TarotAuctionWon(pb::TarotAuctionWon {
            table_id: "t".into(),
            seat: 0,
            contract: 5,
        })),
        "contract: 5 is out of range (1..=4)"
    );
    assert_eq!(
        read_error(W::TarotChienShown(pb::TarotChienShown {
            table_id: "t".into(),
            cards: vec!["T1".into(), "TH".into()],
        })),
        "cards: \"TH\" is not a Tarot card code"
    );
    // A public discard never reads a plain card, a private one never a trump.
    assert_eq!(
        read_error(W::TarotTrumpDiscarded(pb::TarotTrumpDiscarded {
            table_id: "t".into(),
            seat: 0,
            card: "3S".into(),
            command: None,
        })),
        "card: a public discard shows a trump only"
    );
    assert_eq!(
        read_error(W::TarotCardDiscarded(pb::TarotCardDiscarded {
            table_id: "t".into(),
            seat: 0,
            card: "T4".into(),
            command: None,
        })),
        "card: a trump discarded is shown in public (TarotTrumpDiscarded)"
    );
    assert_eq!(
        read_error(W::TarotPoigneeShown(pb::TarotPoigneeShown {
            table_id: "t".into(),
            seat: 0,
            poignee: 0,
            trumps: Vec::new(),
            command: None,
        })),
        "poignee: 0 is out of range (1..=3)"
    );
    assert_eq!(
        read_error(W::TarotTrickWon(pb::TarotTrickWon {
            table_id: "t".into(),
            seat: 0,
            trick: 256,
        })),
        "trick: 256 is out of range (0..=255)"
    );
    assert_eq!(
        read_error(W::TarotMatchStarted(pb::TarotMatchStarted {
            table_id: "t".into(),
            options: Some(pb::TarotOptions {
                seats: 4,
                rounds: 1,
            }),
            first_dealer: 7,
        })),
        "first_dealer: 7 is out of range (0..=4)"
    );
    assert_eq!(
        read_error(W::TarotMatchStarted(pb::TarotMatchStarted::default())),
        "options: missing"
    );
    assert_eq!(
        read_error(W::TarotMatchEnded(pb::TarotMatchEnded {
            table_id: "t".into(),
            scores: vec![1, -1],
        })),
        "scores: one entry per seat: 3, 4 or 5"
    );

    // A deal's score: read as written, then each field that does not map, by its path.
    assert!(event_of(&scored(a_score())).unwrap().is_ok());
    assert_eq!(
        read_error(W::TarotDealScored(pb::TarotDealScored::default())),
        "score: missing"
    );
    let bad = |f: fn(&mut pb::TarotScore)| {
        let mut score = a_score();
        f(&mut score);
        read_error(scored(score))
    };
    assert_eq!(
        bad(|s| s.contract = 0),
        "score.contract: 0 is out of range (1..=4)"
    );
    assert_eq!(
        bad(|s| s.multiplier = 4),
        "score.multiplier: must be the contract's (1, 2, 4 or 6)"
    );
    assert_eq!(
        bad(|s| s.half_points = 183),
        "score.half_points: 183 is out of range (0..=182)"
    );
    assert_eq!(
        bad(|s| s.oudlers = 4),
        "score.oudlers: 4 is out of range (0..=3)"
    );
    assert_eq!(
        bad(|s| s.petit_au_bout = Some(0)),
        "score.petit_au_bout: 0 is out of range (1..=2)"
    );
    assert_eq!(
        bad(|s| s.poignees = vec![4]),
        "score.poignees: 4 is out of range (1..=3)"
    );
    assert_eq!(
        bad(|s| s.chelem = 0),
        "score.chelem: 0 is out of range (1..=5)"
    );
    assert_eq!(
        bad(|s| s.called = Some("KZ".into())),
        "score.called: \"KZ\" is not a Tarot card code"
    );
    assert_eq!(
        bad(|s| s.partner = Some(5)),
        "score.partner: 5 is out of range (0..=4)"
    );
    assert_eq!(
        bad(|s| s.deltas.truncate(3)),
        "score.deltas: has 3 entries, needs 4"
    );
    assert_eq!(
        bad(|s| s.scores = vec![0; 6]),
        "score.scores: one entry per seat: 3, 4 or 5"
    );
}

/// A seat's view read from a `TableView` with its Tarot part.
fn table_view(seen: &fairdeal_tarot::SeatView) -> pb::TableView {
    pb::TableView {
        version: seen.table.version,
        options: seen.table.options.as_ref().map(options_message),
        game: Some(seat_game_view(seen)),
        ..pb::TableView::default()
    }
}

#[test]
fn a_view_field_that_does_not_map_is_refused_with_its_path() {
    let setup = setup(TarotOptions::default(), 1, 0);
    let played = play_match(&setup, 3).unwrap();
    // The first deal, once bidding (one event after the deal).
    let mut game = Tarot::new();
    for event in played.events.iter().take(3) {
        game.apply(event);
    }
    let seat = game.turn().unwrap();
    let view = table_view(&game.seat_view(seat));
    assert!(seat_view_of(&view).unwrap().is_some());
    let bad = |f: &dyn Fn(&mut pb::GameView)| {
        let mut view = view.clone();
        f(view.game.as_mut().unwrap());
        message_of(seat_view_of(&view))
    };
    assert_eq!(bad(&|g| g.tarot = None), "game.tarot: missing");
    assert_eq!(
        bad(&|g| g.phase = "naming_trump".into()),
        "game.phase: \"naming_trump\" is not a Tarot phase"
    );
    assert_eq!(
        bad(&|g| g.turn = Some(5)),
        "game.turn: 5 is out of range (0..=4)"
    );
    assert_eq!(
        bad(&|g| g.tarot.as_mut().unwrap().auction.push(pb::TarotCall {
            seat: 1,
            contract: Some(7),
        })),
        "game.tarot.auction.contract: 7 is out of range (1..=4)"
    );
    assert_eq!(
        bad(&|g| g.tarot.as_mut().unwrap().ecart_trumps.push("KS".into())),
        "game.tarot.ecart_trumps: trumps only"
    );
    assert_eq!(
        bad(&|g| g.tarot.as_mut().unwrap().my_ecart.push("XX".into())),
        "game.tarot.my_ecart: \"XX\" is not a Tarot card code"
    );
    assert_eq!(
        bad(&|g| g.tricks.push(pb::Trick {
            cards: Vec::new(),
            winner: 0,
            points: 10,
        })),
        "game.tricks.points: 0 on a Tarot table (no points per trick)"
    );
    assert_eq!(
        bad(&|g| g.trick.push(pb::PlayedCard {
            seat: 0,
            card: "1X".into(),
        })),
        "game.trick.card: \"1X\" is not a Tarot card code"
    );
    assert_eq!(
        bad(&|g| g.legal.push(pb::LegalAction {
            action: Some(pb::legal_action::Action::TarotBid(pb::TarotBid {
                contract: 0
            })),
        })),
        "game.legal.tarot_bid.contract: 0 is out of range (1..=4)"
    );
    // Jeu du 10 refuses a Tarot table's view, and the other way round.
    assert_eq!(
        message_of(crate::jeu_du_10::seat_view_of(&view)),
        "game.tarot: a French Tarot table's view, not Jeu du 10's"
    );
    let mut options = view.clone();
    options.options = Some(pb::TableOptions::default());
    assert_eq!(message_of(seat_view_of(&options)), "options.tarot: missing");
    // A spectator's view (no seat) reads as no seat's.
    let spectator = pb::TableView {
        game: Some(game_view(&game.public_view())),
        ..pb::TableView::default()
    };
    assert_eq!(seat_view_of(&spectator), Ok(None));
}

fn setup(options: TarotOptions, seed: u64, dealer: u8) -> MatchSetup {
    MatchSetup {
        options,
        first_dealer: Seat::new(dealer % options.seats).unwrap(),
        server_seed: format!("server-{seed}"),
        client_seed: "client".into(),
    }
}

/// The cards a Tarot event message names as cards someone holds or held (the called card
/// is a name the rules announce, not a card shown: left out).
fn message_cards(message: &W) -> Vec<String> {
    match message {
        W::TarotChienShown(m) => m.cards.clone(),
        W::TarotTrumpDiscarded(m) => vec![m.card.clone()],
        W::TarotCardDiscarded(m) => vec![m.card.clone()],
        W::TarotPoigneeShown(m) => m.trumps.clone(),
        W::TarotCardPlayed(m) => vec![m.card.clone()],
        _ => Vec::new(),
    }
}

/// The cards a `GameView` shows (the called card aside, as above): the public part, and
/// with `own` the viewer's hand, écart and the cards of its moves.
fn view_cards(view: &pb::GameView, own: bool) -> Vec<String> {
    use pb::legal_action::Action as L;
    let tarot = view.tarot.clone().unwrap_or_default();
    let mut cards: Vec<String> = view
        .trick
        .iter()
        .chain(view.tricks.iter().flat_map(|t| &t.cards))
        .map(|p| p.card.clone())
        .chain(tarot.chien.iter().cloned())
        .chain(tarot.ecart_trumps.iter().cloned())
        .chain(tarot.poignees.iter().flat_map(|p| p.trumps.clone()))
        .collect();
    if own {
        cards.extend(view.my_hand.iter().cloned());
        cards.extend(tarot.my_ecart.iter().cloned());
        for legal in &view.legal {
            match &legal.action {
                Some(L::TarotDiscard(c) | L::TarotPlayCard(c)) => cards.push(c.clone()),
                Some(L::TarotShowPoignee(p)) => cards.extend(p.trumps.iter().cloned()),
                _ => {}
            }
        }
    }
    cards
}

/// What must stay unseen in one deal: by the taker's opponents and spectators, the plain
/// cards of the écart that the shown chien did not show; by everyone, the taker included,
/// the chien of a garde sans or contre.
#[derive(Debug, Default, Clone)]
struct Secrets {
    taker: Option<Seat>,
    ecart: BTreeSet<String>,
    chien: BTreeSet<String>,
}

/// Each deal's secrets, by deal (a deal is counted from its `DealStarted`).
fn secrets(events: &[Event]) -> Vec<Secrets> {
    let mut deals: Vec<Secrets> = Vec::new();
    let mut chien: Vec<Card> = Vec::new();
    for event in events {
        match event {
            Event::DealStarted { chien: dealt, .. } => {
                deals.push(Secrets::default());
                chien.clone_from(dealt);
            }
            Event::AuctionWon { seat, contract } => {
                let deal = deals.last_mut().unwrap();
                deal.taker = Some(*seat);
                if !contract.shows_chien() {
                    deal.chien = chien.iter().map(|c| card_code(*c)).collect();
                }
            }
            Event::CardDiscarded { card, .. } if !card.is_trump() && !chien.contains(card) => {
                deals.last_mut().unwrap().ecart.insert(card_code(*card));
            }
            _ => {}
        }
    }
    deals
}

fn assert_unseen(cards: &[String], secret: &BTreeSet<String>, what: &str) {
    let seen: Vec<&String> = cards.iter().filter(|c| secret.contains(*c)).collect();
    assert!(seen.is_empty(), "{what} shows {seen:?}");
}

/// Which kinds of event a match had, whether a trump was discarded in it, and how many of
/// its deals had secrets to keep (an écart's plain cards, an unseen chien).
#[derive(Debug, Default)]
struct Seen {
    kinds: BTreeSet<&'static str>,
    trump_discarded: bool,
    secret_ecarts: usize,
    secret_chiens: usize,
}

/// How the seats play a checked match.
#[derive(Debug, Clone, Copy)]
enum Players {
    /// The engine's bot everywhere.
    Bots,
    /// The bot, except that a seat bids the highest garde it may (garde contre, else garde
    /// sans): the chien stays unseen.
    Gardes,
}

/// Every event of a match, every seat's view after each of them and every move offered
/// read back as written (also as stored); each message is private exactly when the engine
/// says so; and the deal's secrets reach no message or view they must not.
fn check_match(options: TarotOptions, seed: u64, bot: u64, dealer: u8, players: Players) -> Seen {
    let setup = setup(options, seed, dealer);
    let played = match players {
        Players::Bots => play_match(&setup, bot),
        Players::Gardes => play_match_with(&setup, |view| {
            [Contract::GardeContre, Contract::GardeSans]
                .into_iter()
                .map(|contract| Command::Bid { contract })
                .find(|bid| view.legal.contains(bid))
                .or_else(|| <Tarot as TableGame>::bot_command(view, bot))
        }),
    }
    .unwrap();
    let deals = secrets(&played.events);
    let mut deal = Secrets::default();
    let mut dealt = 0;
    let mut seen = Seen {
        secret_ecarts: deals.iter().filter(|d| !d.ecart.is_empty()).count(),
        secret_chiens: deals.iter().filter(|d| !d.chien.is_empty()).count(),
        ..Seen::default()
    };
    let mut game = Tarot::new();
    let command = crate::table::command_message("c".into(), 7, Some((Seat::FIRST, 5)));
    for event in &played.events {
        seen.kinds.insert(event.kind());
        if matches!(event, Event::DealStarted { .. }) {
            deal = deals[dealt].clone();
            dealt += 1;
        }
        let wire = <Tarot as WireGame>::event_message("t", event, Some(command.clone()));
        if <Tarot as TableGame>::dealt(event).is_some() {
            // The deal's public part: the table's own message, which no game reads.
            let W::HandStarted(m) = &wire else {
                panic!("{event:?} written as {wire:?}");
            };
            let Event::DealStarted { deal, dealer, .. } = event else {
                unreachable!()
            };
            assert_eq!((m.hand, m.salt.clone()), (*deal, deal.to_string()));
            assert_eq!(crate::table::seat_of("dealer", m.dealer), Ok(*dealer));
            assert!(<Tarot as WireGame>::event_of(&wire).is_none());
        } else {
            let (name, bytes) = <Tarot as WireGame>::stored_message(&wire).unwrap();
            let back = <Tarot as WireGame>::stored_event(&name, &bytes)
                .unwrap()
                .unwrap();
            assert_eq!(back, wire);
            let (read, carried) = <Tarot as WireGame>::event_of(&back).unwrap().unwrap();
            assert_eq!(&read, event);
            let by_seat = <Tarot as TableGame>::command_of(event)
                .is_some_and(|(actor, _)| actor != Actor::Table);
            assert_eq!(carried, by_seat.then(|| command.clone()), "{event:?}");
            // Not Jeu du 10's.
            assert!(<fairdeal_games::Game as WireGame>::event_of(&wire).is_none());
        }

        // Privacy: private exactly when the engine says so, to the taker, and a public
        // message never names a secret card.
        let private = <Tarot as WireGame>::private_to(&wire).unwrap();
        assert_eq!(private, event.private_to(), "{event:?}");
        if let Event::CardDiscarded { card, .. } = event {
            seen.trump_discarded |= card.is_trump();
        }
        match private {
            Some(seat) => {
                assert_eq!(Some(seat), deal.taker);
                assert!(matches!(wire, W::TarotCardDiscarded(_)));
            }
            None => {
                let cards = message_cards(&wire);
                assert_unseen(&cards, &deal.ecart, "a public message");
                assert_unseen(&cards, &deal.chien, "a public message");
            }
        }

        game.apply(event);
        let public = game.public_view();
        let spectator = game_view(&public);
        assert_unseen(&view_cards(&spectator, false), &deal.ecart, "a spectator");
        assert_unseen(&view_cards(&spectator, false), &deal.chien, "a spectator");
        for seat in Seat::all(options.seat_count()) {
            let seen = game.seat_view(seat);
            for command in &seen.legal {
                let legal = legal_action(command).unwrap();
                assert_eq!(legal_command(&legal).as_ref(), Ok(command));
                let action = act_action(command).unwrap();
                let request = act(action);
                assert_eq!(
                    <Tarot as WireGame>::act_command(&request).as_ref(),
                    Ok(command)
                );
            }
            let view = table_view(&seen);
            assert_eq!(seat_view_of(&view), Ok(Some(seen.clone())));
            assert_eq!(
                <Tarot as WireGame>::seat_view_of(&view),
                Ok(Some(seen.clone()))
            );
            let game_view = view.game.unwrap();
            let shown = view_cards(&game_view, true);
            assert_unseen(&shown, &deal.chien, "a seat's view");
            if Some(seat) != deal.taker {
                assert_unseen(&shown, &deal.ecart, "another seat's view");
                assert!(game_view.tarot.as_ref().unwrap().my_ecart.is_empty());
            }
            // A spectator sees the seat's view without what is the seat's own.
            let mut public_part = game_view.clone();
            public_part.my_seat = None;
            public_part.my_hand.clear();
            public_part.legal.clear();
            public_part.tarot.as_mut().unwrap().my_ecart.clear();
            assert_eq!(public_part, spectator);
        }
    }
    assert_eq!(game.phase(), Phase::Finished);
    seen
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn matches_read_back_as_written(
        seats in 3u8..=5,
        seed in any::<u64>(),
        bot in any::<u64>(),
        dealer in any::<u8>(),
    ) {
        check_match(TarotOptions { seats, rounds: 1 }, seed, bot, dealer, Players::Bots);
    }
}

/// Matches at 3, 4 and 5 seats over two rounds, with bots and with seats that bid the
/// gardes without the chien: every kind of event a match has reads back as written, and
/// the deals had secrets to keep (so the privacy checks checked something).
#[test]
fn every_kind_of_event_reads_back_as_written_at_each_table_size() {
    let mut kinds = BTreeSet::new();
    let (mut ecarts, mut chiens) = (0, 0);
    for seats in 3..=5 {
        for seed in 0..3 {
            for players in [Players::Bots, Players::Gardes] {
                let options = TarotOptions { seats, rounds: 2 };
                let seen = check_match(options, seed, seed + 1, seats, players);
                kinds.extend(seen.kinds);
                ecarts += seen.secret_ecarts;
                chiens += seen.secret_chiens;
            }
        }
    }
    for kind in [
        "match_started",
        "deal_started",
        "bid_placed",
        "player_passed",
        "auction_won",
        "king_called",
        "chien_shown",
        "card_discarded",
        "chelem_declared",
        "card_played",
        "trick_won",
        "deal_scored",
        "match_ended",
    ] {
        assert!(kinds.contains(kind), "no {kind} in {kinds:?}");
    }
    assert!(ecarts > 0 && chiens > 0, "{ecarts} écarts, {chiens} chiens");
}

/// The events bot matches rarely have (a petit sec, a trump in the écart, every chelem)
/// read back as written, also as stored, and the trump's discard is public.
#[test]
fn rare_events_read_back_as_written() {
    let seat = |n| Seat::new(n).unwrap();
    let mut score = score_of(&a_score()).unwrap();
    let mut events = vec![
        Event::DealAnnulled {
            deal: 3,
            seat: seat(4),
        },
        Event::CardDiscarded {
            seat: seat(2),
            card: Card::trump(7).unwrap(),
        },
        Event::ChelemDeclared {
            seat: seat(2),
            announced: true,
        },
        Event::AllPassed { deal: 9 },
    ];
    for chelem in [
        Chelem::None,
        Chelem::AnnouncedMade,
        Chelem::Made,
        Chelem::AnnouncedFailed,
        Chelem::Defence,
    ] {
        score.chelem = chelem;
        score.called = Some("KD".parse().unwrap());
        score.partner = Some(seat(0));
        score.petit_au_bout = None;
        events.push(Event::DealScored(score.clone()));
    }
    for event in &events {
        let wire = event_message("t", event, None);
        let (name, bytes) = <Tarot as WireGame>::stored_message(&wire).unwrap();
        let back = <Tarot as WireGame>::stored_event(&name, &bytes)
            .unwrap()
            .unwrap();
        assert_eq!(event_of(&back), Some(Ok((event.clone(), None))));
        assert_eq!(private_to(&wire), Ok(None));
    }
    assert!(matches!(
        event_message("t", &events[1], None),
        W::TarotTrumpDiscarded(_)
    ));
}

/// A seat's view during the écart: the taker sees its écart, the others and spectators
/// only its size and trumps.
#[test]
fn the_ecart_is_the_takers_alone() {
    for seed in 0..20 {
        let played = play_match(&setup(TarotOptions::default(), seed, 0), seed).unwrap();
        let mut game = Tarot::new();
        for event in &played.events {
            game.apply(event);
            if let Event::CardDiscarded { seat: taker, card } = event
                && !card.is_trump()
            {
                let mine = seat_game_view(&game.seat_view(*taker)).tarot.unwrap();
                assert!(mine.my_ecart.contains(&card_code(*card)));
                assert_eq!(mine.ecart_len as usize, mine.my_ecart.len());
                let spectator = game_view(&game.public_view()).tarot.unwrap();
                let others = Seat::all(4)
                    .filter(|s| s != taker)
                    .map(|seat| seat_game_view(&game.seat_view(seat)).tarot.unwrap());
                for part in others.chain([spectator]) {
                    assert!(part.my_ecart.is_empty());
                    assert_eq!(part.ecart_len, mine.ecart_len);
                    assert_eq!(part.ecart_trumps, mine.ecart_trumps);
                }
                let wire = event_message("t", event, None);
                assert_eq!(private_to(&wire), Ok(Some(*taker)));
                return;
            }
        }
    }
    panic!("no plain card discarded in 20 matches");
}
