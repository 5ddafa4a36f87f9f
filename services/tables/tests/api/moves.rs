//! Choosing moves as a client does: the engine's bot over the view `GetTable` returns, and
//! the wire forms of its choice.

use fairdeal_games::game::{AuctionCall, PlayedCard, Trick};
use fairdeal_games::view::SeatBid;
use fairdeal_games::{
    Bid, Bot, Call, Command, HeuristicBot, Phase, PublicView, Purchase, Seat, SeatView, Suit,
    TableOptions,
};
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
            suit: Suit::ALL[usize::try_from(*s - 1).unwrap()],
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

fn seat(n: u32) -> Seat {
    Seat::new(u8::try_from(n).unwrap()).unwrap()
}

fn bid(b: &pb::Bid) -> Bid {
    match b.kind.as_ref().unwrap() {
        pb::bid::Kind::Points(n) => Bid::Points(u16::try_from(*n).unwrap()),
        pb::bid::Kind::Game(_) => Bid::Game,
    }
}

fn played(p: &pb::PlayedCard) -> PlayedCard {
    PlayedCard {
        seat: seat(p.seat),
        card: p.card.parse().unwrap(),
    }
}

fn seat_bid(c: Option<&pb::AuctionCall>) -> Option<SeatBid> {
    c.map(|c| SeatBid {
        seat: seat(c.seat),
        bid: bid(c.bid.as_ref().unwrap()),
    })
}

/// The engine's view of a seat, rebuilt from the caller's `GetTable` view (everything a
/// bot reads; the last hand's score and the result are left out).
pub(crate) fn seat_view(view: &pb::TableView) -> Option<SeatView> {
    let game = view.game.as_ref().unwrap();
    let me = seat(game.my_seat?);
    let options = view.options.as_ref().map(|o| TableOptions {
        deck: if o.deck == pb::Deck::Ruff as i32 {
            fairdeal_fairness::Deck::Ruff
        } else {
            fairdeal_fairness::Deck::Dix
        },
        penalised_aces: o.penalised_aces,
        made_or_nothing: o.made_or_nothing,
        purchase: match pb::Purchase::try_from(o.purchase).unwrap() {
            pb::Purchase::Unspecified => None,
            pb::Purchase::Points => Some(Purchase::Points),
            pb::Purchase::Budget => Some(Purchase::Budget),
        },
        budget: o.budget,
    });
    let pair = |v: &[i32]| [v[0], v[1]];
    Some(SeatView {
        seat: me,
        hand: game.my_hand.iter().map(|c| c.parse().unwrap()).collect(),
        legal: game.legal.iter().map(command).collect(),
        table: PublicView {
            version: view.version,
            phase: match game.phase.as_str() {
                "auction" => Phase::Auction,
                "naming_trump" => Phase::NamingTrump,
                "playing" => Phase::Playing,
                "awaiting_deal" => Phase::AwaitingDeal,
                "finished" => Phase::Finished,
                _ => Phase::NotStarted,
            },
            options,
            target: Some(game.target),
            scores: pair(&game.scores),
            budgets: [game.budgets[0], game.budgets[1]],
            hand: game.hand,
            dealer: game.dealer.map(seat),
            turn: game.turn.map(seat),
            card_counts: [0, 1, 2, 3].map(|i| game.card_counts[i] as usize),
            auction: game
                .auction
                .iter()
                .map(|c| AuctionCall {
                    seat: seat(c.seat),
                    call: c.bid.as_ref().map_or(Call::Pass, |b| Call::Bid(bid(b))),
                })
                .collect(),
            highest_bid: seat_bid(game.highest_bid.as_ref()),
            contract: seat_bid(game.contract.as_ref()),
            trump: (game.trump != 0).then(|| Suit::ALL[usize::try_from(game.trump - 1).unwrap()]),
            trick: game.trick.iter().map(played).collect(),
            tricks: game
                .tricks
                .iter()
                .map(|t| Trick {
                    cards: [0, 1, 2, 3].map(|i| played(&t.cards[i])),
                    winner: seat(t.winner),
                    points: u8::try_from(t.points).unwrap(),
                })
                .collect(),
            trick_points: [game.trick_points[0], game.trick_points[1]],
            last_score: None,
            result: None,
        },
    })
}

/// The engine's heuristic bot choosing from `view` (the caller's `GetTable` view), as the
/// player at that seat.
pub(crate) fn choose(view: &pb::TableView, seed: u64) -> Option<Action> {
    let seat_view = seat_view(view)?;
    HeuristicBot::new(seed)
        .choose(&seat_view)
        .map(|c| action(&c))
}
