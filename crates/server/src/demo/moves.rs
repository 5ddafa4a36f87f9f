//! A client's move: the engine's bot chooses from the seat's own `GetTable` view, rebuilt as
//! the engine's [`SeatView`] (everything the bots read; the last hand's score and the result
//! are left out), and the choice goes back as the wire action.

use anyhow::{Context as _, anyhow};
use fairdeal_games::game::{AuctionCall, PlayedCard, Trick};
use fairdeal_games::view::SeatBid;
use fairdeal_games::{
    Bid, Bot as _, Call, Card, Command, HeuristicBot, Phase, PublicView, Purchase, Seat, SeatView,
    Suit, TableOptions,
};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::act_request::Action;
use pb::legal_action::Action as Legal;

/// Seat names, by seat number.
pub const SEAT_NAMES: [&str; 4] = ["north", "east", "south", "west"];

/// The seat's one-letter name.
pub fn seat_letter(seat: u32) -> &'static str {
    ["N", "E", "S", "W"]
        .get(seat as usize)
        .copied()
        .unwrap_or("?")
}

fn seat(n: u32) -> anyhow::Result<Seat> {
    u8::try_from(n)
        .ok()
        .and_then(Seat::new)
        .ok_or_else(|| anyhow!("seat {n} out of range"))
}

fn card(code: &str) -> anyhow::Result<Card> {
    code.parse()
        .map_err(|_| anyhow!("card code {code:?} not understood"))
}

fn suit(value: i32) -> anyhow::Result<Suit> {
    usize::try_from(value - 1)
        .ok()
        .and_then(|i| Suit::ALL.get(i).copied())
        .ok_or_else(|| anyhow!("suit {value} out of range"))
}

fn bid(b: Option<&pb::Bid>) -> anyhow::Result<Bid> {
    match b.and_then(|b| b.kind.as_ref()) {
        Some(pb::bid::Kind::Points(n)) => Ok(Bid::Points(u16::try_from(*n)?)),
        Some(pb::bid::Kind::Game(_)) => Ok(Bid::Game),
        None => Err(anyhow!("a bid without a kind")),
    }
}

/// A bid as text: `80` or `the game`.
pub fn bid_text(b: Option<&pb::Bid>) -> String {
    match b.and_then(|b| b.kind.as_ref()) {
        Some(pb::bid::Kind::Points(n)) => n.to_string(),
        Some(pb::bid::Kind::Game(_)) => "the game".to_owned(),
        None => "?".to_owned(),
    }
}

/// A suit's name.
pub fn suit_name(value: i32) -> &'static str {
    match pb::Suit::try_from(value) {
        Ok(pb::Suit::Spades) => "spades",
        Ok(pb::Suit::Hearts) => "hearts",
        Ok(pb::Suit::Diamonds) => "diamonds",
        Ok(pb::Suit::Clubs) => "clubs",
        _ => "?",
    }
}

fn command(legal: &pb::LegalAction) -> anyhow::Result<Command> {
    Ok(
        match legal
            .action
            .as_ref()
            .context("a legal action without action")?
        {
            Legal::Bid(b) => Command::Bid { bid: bid(Some(b))? },
            Legal::Pass(_) => Command::Pass,
            Legal::NameTrump(s) => Command::NameTrump { suit: suit(*s)? },
            Legal::PlayCard(c) => Command::PlayCard { card: card(c)? },
        },
    )
}

/// The wire action of a seat's command.
pub fn action(command: &Command) -> anyhow::Result<Action> {
    Ok(match command {
        Command::Bid { bid } => Action::Bid(pb::Bid {
            kind: Some(match bid {
                Bid::Points(n) => pb::bid::Kind::Points(u32::from(*n)),
                Bid::Game => pb::bid::Kind::Game(true),
            }),
        }),
        Command::Pass => Action::Pass(pb::PassAction {}),
        Command::NameTrump { suit } => Action::NameTrump(i32::from(suit.index()) + 1),
        Command::PlayCard { card } => Action::PlayCard(card.to_string()),
        other => return Err(anyhow!("not a seat's command: {other:?}")),
    })
}

fn played(p: &pb::PlayedCard) -> anyhow::Result<PlayedCard> {
    Ok(PlayedCard {
        seat: seat(p.seat)?,
        card: card(&p.card)?,
    })
}

fn seat_bid(c: Option<&pb::AuctionCall>) -> anyhow::Result<Option<SeatBid>> {
    c.map(|c| {
        Ok(SeatBid {
            seat: seat(c.seat)?,
            bid: bid(c.bid.as_ref())?,
        })
    })
    .transpose()
}

fn pair<T: Copy>(field: &str, v: &[T]) -> anyhow::Result<[T; 2]> {
    match v {
        [a, b] => Ok([*a, *b]),
        _ => Err(anyhow!("{field}: expected 2 values, got {}", v.len())),
    }
}

fn options(o: &pb::TableOptions) -> anyhow::Result<TableOptions> {
    Ok(TableOptions {
        deck: if o.deck == pb::Deck::Ruff as i32 {
            fairdeal_fairness::Deck::Ruff
        } else {
            fairdeal_fairness::Deck::Dix
        },
        penalised_aces: o.penalised_aces,
        made_or_nothing: o.made_or_nothing,
        purchase: match pb::Purchase::try_from(o.purchase)? {
            pb::Purchase::Unspecified => None,
            pb::Purchase::Points => Some(Purchase::Points),
            pb::Purchase::Budget => Some(Purchase::Budget),
        },
        budget: o.budget,
    })
}

/// The engine's view of the caller's seat, from its `GetTable` view; `None` for a caller
/// without a seat.
pub fn seat_view(view: &pb::TableView) -> anyhow::Result<Option<SeatView>> {
    let game = view.game.as_ref().context("a table view without game")?;
    let Some(me) = game.my_seat else {
        return Ok(None);
    };
    let counts = &game.card_counts;
    let count = |i: usize| counts.get(i).map_or(0, |n| *n as usize);
    Ok(Some(SeatView {
        seat: seat(me)?,
        hand: game
            .my_hand
            .iter()
            .map(|c| card(c))
            .collect::<Result<_, _>>()?,
        legal: game.legal.iter().map(command).collect::<Result<_, _>>()?,
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
            options: view.options.as_ref().map(options).transpose()?,
            target: Some(game.target),
            scores: pair("scores", &game.scores)?,
            budgets: pair("budgets", &game.budgets)?,
            hand: game.hand,
            dealer: game.dealer.map(seat).transpose()?,
            turn: game.turn.map(seat).transpose()?,
            card_counts: [count(0), count(1), count(2), count(3)],
            auction: game
                .auction
                .iter()
                .map(|c| {
                    Ok(AuctionCall {
                        seat: seat(c.seat)?,
                        call: match &c.bid {
                            Some(b) => Call::Bid(bid(Some(b))?),
                            None => Call::Pass,
                        },
                    })
                })
                .collect::<anyhow::Result<_>>()?,
            highest_bid: seat_bid(game.highest_bid.as_ref())?,
            contract: seat_bid(game.contract.as_ref())?,
            trump: (game.trump != 0).then(|| suit(game.trump)).transpose()?,
            trick: game.trick.iter().map(played).collect::<Result<_, _>>()?,
            tricks: game
                .tricks
                .iter()
                .map(|t| {
                    let cards: Vec<PlayedCard> =
                        t.cards.iter().map(played).collect::<Result<_, _>>()?;
                    Ok(Trick {
                        cards: cards
                            .try_into()
                            .map_err(|_| anyhow!("a trick of other than 4 cards"))?,
                        winner: seat(t.winner)?,
                        points: u8::try_from(t.points)?,
                    })
                })
                .collect::<anyhow::Result<_>>()?,
            trick_points: pair("trick_points", &game.trick_points)?,
            last_score: None,
            result: None,
        },
    }))
}

/// The heuristic bot's move for the caller's seat (seeded per seat), `None` when the view
/// offers no move.
pub fn choose(view: &pb::TableView, seed: u64) -> anyhow::Result<Option<Action>> {
    let Some(seat_view) = seat_view(view)? else {
        return Ok(None);
    };
    HeuristicBot::new(seed)
        .choose(&seat_view)
        .map(|c| action(&c))
        .transpose()
}
