//! Choosing moves as a client does: the engine's bot over the view `GetTable` returns, and
//! the wire forms of its choice.

use fairdeal_games::{Bid, Bot, Command, Phase, PublicView, RandomBot, Seat, SeatView};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::act_request::Action;
use pb::legal_action::Action as Legal;

/// A legal move of the wire as the engine's command.
pub(crate) fn command(legal: &pb::LegalAction) -> Command {
    match legal.action.as_ref().unwrap() {
        Legal::Bid(b) => Command::Bid {
            bid: match b.kind.as_ref().unwrap() {
                pb::bid::Kind::Points(n) => Bid::Points(u16::try_from(*n).unwrap()),
                pb::bid::Kind::Game(_) => Bid::Game,
            },
        },
        Legal::Pass(_) => Command::Pass,
        Legal::NameTrump(s) => Command::NameTrump {
            suit: fairdeal_games::Suit::ALL[usize::try_from(*s - 1).unwrap()],
        },
        Legal::PlayCard(c) => Command::PlayCard {
            card: c.parse().unwrap(),
        },
    }
}

/// The wire action of a command.
pub(crate) fn action(command: &Command) -> Action {
    match command {
        Command::Bid { bid } => Action::Bid(pb::Bid {
            kind: Some(match bid {
                Bid::Points(n) => pb::bid::Kind::Points(u32::from(*n)),
                Bid::Game => pb::bid::Kind::Game(true),
            }),
        }),
        Command::Pass => Action::Pass(pb::PassAction {}),
        Command::NameTrump { suit } => Action::NameTrump(i32::from(suit.index()) + 1),
        Command::PlayCard { card } => Action::PlayCard(card.to_string()),
        other => panic!("not a seat command: {other:?}"),
    }
}

/// The engine's random bot choosing from `view` (the caller's `GetTable` view): it needs the
/// seat, the legal moves and the version.
pub(crate) fn choose(view: &pb::TableView, seed: u64) -> Option<Action> {
    let game = view.game.as_ref().unwrap();
    let seat = Seat::new(u8::try_from(game.my_seat?).unwrap()).unwrap();
    let seat_view = SeatView {
        seat,
        hand: game.my_hand.iter().map(|c| c.parse().unwrap()).collect(),
        legal: game.legal.iter().map(command).collect(),
        table: PublicView {
            version: view.version,
            phase: Phase::Playing,
            options: None,
            target: None,
            scores: [0; 2],
            budgets: [0; 2],
            hand: game.hand,
            dealer: None,
            turn: Some(seat),
            card_counts: [0; 4],
            auction: Vec::new(),
            highest_bid: None,
            contract: None,
            trump: None,
            trick: Vec::new(),
            tricks: Vec::new(),
            trick_points: [0; 2],
            last_score: None,
            result: None,
        },
    };
    RandomBot::new(seed).choose(&seat_view).map(|c| action(&c))
}
