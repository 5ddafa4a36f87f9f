//! The event log: its JSON form is stable, it replays to the live state, and the auditor's
//! re-decision rejects any tampering.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_games::sim::{MatchSetup, PlayedMatch, play_match};
use fairdeal_games::{
    Bid, Bot, Card, Event, Game, HandScore, HeuristicBot, MatchEnd, RuleError, Seat, Suit,
    TableOptions, Team, VerifyError,
};

fn seat(n: u8) -> Seat {
    Seat::new(n).unwrap()
}

fn played() -> PlayedMatch {
    let setup = MatchSetup {
        options: TableOptions::default(),
        first_dealer: seat(3),
        server_seed: "server".into(),
        client_seed: "client".into(),
        max_hands: 100,
    };
    let bot = HeuristicBot::new(9);
    let bots: [&dyn Bot; 4] = [&bot, &bot, &bot, &bot];
    play_match(&setup, bots).unwrap()
}

/// The persisted format: one line per event type. Changing any of these strings breaks
/// every stored log, so this test must only change together with a migration.
#[test]
fn event_json_is_stable() {
    let card = |c: &str| c.parse::<Card>().unwrap();
    let cases: Vec<(Event, &str)> = vec![
        (
            Event::MatchStarted {
                options: TableOptions::default(),
                first_dealer: seat(3),
            },
            r#"{"type":"match_started","options":{"deck":"dix","penalised_aces":false,"made_or_nothing":false,"purchase":null,"budget":null},"first_dealer":3}"#,
        ),
        (
            Event::HandStarted {
                hand: 0,
                dealer: seat(3),
                hands: vec![
                    vec![card("AS")],
                    vec![card("TH")],
                    vec![card("5D")],
                    vec![card("9C")],
                ],
            },
            r#"{"type":"hand_started","hand":0,"dealer":3,"hands":[["AS"],["TH"],["5D"],["9C"]]}"#,
        ),
        (
            Event::BidPlaced {
                seat: seat(0),
                bid: Bid::Points(70),
            },
            r#"{"type":"bid_placed","seat":0,"bid":{"points":70}}"#,
        ),
        (
            Event::BidPlaced {
                seat: seat(1),
                bid: Bid::Game,
            },
            r#"{"type":"bid_placed","seat":1,"bid":"game"}"#,
        ),
        (
            Event::PlayerPassed { seat: seat(2) },
            r#"{"type":"player_passed","seat":2}"#,
        ),
        (
            Event::AuctionWon {
                seat: seat(0),
                bid: Bid::Points(70),
            },
            r#"{"type":"auction_won","seat":0,"bid":{"points":70}}"#,
        ),
        (
            Event::TrumpNamed {
                seat: seat(0),
                suit: Suit::Hearts,
            },
            r#"{"type":"trump_named","seat":0,"suit":"hearts"}"#,
        ),
        (
            Event::CardPlayed {
                seat: seat(0),
                card: card("TH"),
            },
            r#"{"type":"card_played","seat":0,"card":"TH"}"#,
        ),
        (
            Event::TrickWon {
                seat: seat(2),
                trick: 9,
                points: 25,
            },
            r#"{"type":"trick_won","seat":2,"trick":9,"points":25}"#,
        ),
        (
            Event::HandScored(HandScore {
                hand: 4,
                declarer: seat(0),
                bid: Bid::Points(70),
                card_points: [60, 40],
                ace_transfers: [0, 0],
                contract_made: Some(false),
                deltas: [-70, 40],
                scores: [130, 240],
            }),
            r#"{"type":"hand_scored","hand":4,"declarer":0,"bid":{"points":70},"card_points":[60,40],"ace_transfers":[0,0],"contract_made":false,"deltas":[-70,40],"scores":[130,240]}"#,
        ),
        (
            Event::MatchWon {
                team: Team::ALL[1],
                reason: MatchEnd::BothReachedDeclarerWins,
                scores: [510, 505],
            },
            r#"{"type":"match_won","team":1,"reason":"both_reached_declarer_wins","scores":[510,505]}"#,
        ),
    ];
    for (event, json) in cases {
        assert_eq!(serde_json::to_string(&event).unwrap(), json);
        assert_eq!(serde_json::from_str::<Event>(json).unwrap(), event);
    }
}

#[test]
fn replay_and_verify_rebuild_the_live_state() {
    let m = played();
    assert!(m.finished());
    assert_eq!(Game::replay(&m.events), m.game);
    assert_eq!(Game::verify(&m.events), Ok(m.game.clone()));
    // Any prefix is a valid (unfinished) log whose fold matches step-by-step play.
    let cut = m.events.len() / 2;
    let prefix = &m.events[..cut];
    let state = Game::replay(prefix);
    assert_eq!(state.version(), cut as u64);
}

#[test]
fn verify_rejects_a_forged_score() {
    let m = played();
    let mut forged = m.events.clone();
    let i = forged
        .iter()
        .position(|e| matches!(e, Event::HandScored(_)))
        .unwrap();
    if let Event::HandScored(s) = &mut forged[i] {
        s.deltas[0] += 10;
        s.scores[0] += 10;
    }
    // The batch starting at the card that ended the hand differs.
    assert!(matches!(
        Game::verify(&forged),
        Err(VerifyError::Mismatch { index, .. }) if index == i - 2
    ));
}

#[test]
fn verify_rejects_an_illegal_card() {
    let m = played();
    let mut forged = m.events.clone();
    let i = forged
        .iter()
        .position(|e| matches!(e, Event::CardPlayed { .. }))
        .unwrap();
    // Make the first card played one that seat does not hold.
    let Event::CardPlayed { seat, .. } = forged[i] else {
        unreachable!()
    };
    let game = Game::replay(&forged[..i]);
    let foreign = game.hand_of(seat.next()).iter().next().unwrap();
    forged[i] = Event::CardPlayed {
        seat,
        card: foreign,
    };
    assert_eq!(
        Game::verify(&forged),
        Err(VerifyError::Refused {
            index: i,
            error: RuleError::CardNotInHand { card: foreign }
        })
    );
}

#[test]
fn verify_rejects_consequences_out_of_place() {
    let m = played();
    let mut forged = m.events.clone();
    forged.insert(
        2,
        Event::TrickWon {
            seat: seat(0),
            trick: 0,
            points: 0,
        },
    );
    assert_eq!(
        Game::verify(&forged),
        Err(VerifyError::Unexpected {
            index: 2,
            kind: "trick_won"
        })
    );
    // A missing auction_won: the pass that ended the auction now stands alone.
    let mut forged = m.events.clone();
    let i = forged
        .iter()
        .position(|e| matches!(e, Event::AuctionWon { .. }))
        .unwrap();
    forged.remove(i);
    assert!(matches!(
        Game::verify(&forged),
        Err(VerifyError::Mismatch { index, .. }) if index == i - 1
    ));
}

#[test]
fn apply_is_total_on_nonsense() {
    // Events out of any order never panic (they come from a corrupt log, not `decide`).
    let mut game = Game::new();
    let nonsense = [
        Event::CardPlayed {
            seat: seat(1),
            card: "AS".parse().unwrap(),
        },
        Event::TrickWon {
            seat: seat(2),
            trick: 200,
            points: 255,
        },
        Event::AuctionWon {
            seat: seat(3),
            bid: Bid::Game,
        },
        Event::HandStarted {
            hand: u32::MAX,
            dealer: seat(0),
            hands: vec![vec![]; 7],
        },
        Event::PlayerPassed { seat: seat(0) },
        Event::MatchWon {
            team: Team::ALL[0],
            reason: MatchEnd::TargetReached,
            scores: [i32::MAX, i32::MIN],
        },
    ];
    for e in &nonsense {
        game.apply(e);
    }
    assert_eq!(game.version(), nonsense.len() as u64);
}
