//! A seat's `GetTable` view (the wire) as the rules engine's [`SeatView`], and the engine's
//! commands as wire actions: what a client needs to let the engine's bot choose its moves.
//!
//! Everything here reads only what the server sent to this seat; a malformed view (a card
//! code the engine does not know, a seat out of range) is a [`ViewError`], never a panic.

use fairdeal_fairness::Deck;
use fairdeal_games::game::{AuctionCall, PlayedCard, Trick};
use fairdeal_games::view::SeatBid;
use fairdeal_games::{
    Bid, Bot, Call, Card, Command, HeuristicBot, Phase, PublicView, Purchase, Seat, SeatView, Suit,
    TableOptions,
};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::act_request::Action;
use pb::legal_action::Action as Legal;

/// A view the engine cannot read: the server sent something this client does not
/// understand (a newer protocol, or a bug); the field is named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable table view: {field}")]
pub struct ViewError {
    /// The field that could not be read.
    pub field: &'static str,
}

fn bad(field: &'static str) -> ViewError {
    ViewError { field }
}

fn seat(n: u32) -> Result<Seat, ViewError> {
    u8::try_from(n).ok().and_then(Seat::new).ok_or(bad("seat"))
}

fn card(code: &str) -> Result<Card, ViewError> {
    code.parse().map_err(|_| bad("card"))
}

fn suit(wire: i32) -> Result<Suit, ViewError> {
    usize::try_from(wire - 1)
        .ok()
        .and_then(|i| Suit::ALL.get(i).copied())
        .ok_or(bad("suit"))
}

fn bid(b: Option<&pb::Bid>) -> Result<Bid, ViewError> {
    match b.and_then(|b| b.kind.as_ref()).ok_or(bad("bid"))? {
        pb::bid::Kind::Points(n) => Ok(Bid::Points(
            u16::try_from(*n).map_err(|_| bad("bid.points"))?,
        )),
        pb::bid::Kind::Game(_) => Ok(Bid::Game),
    }
}

fn played(p: &pb::PlayedCard) -> Result<PlayedCard, ViewError> {
    Ok(PlayedCard {
        seat: seat(p.seat)?,
        card: card(&p.card)?,
    })
}

fn seat_bid(c: Option<&pb::AuctionCall>) -> Result<Option<SeatBid>, ViewError> {
    c.map(|c| {
        Ok(SeatBid {
            seat: seat(c.seat)?,
            bid: bid(c.bid.as_ref())?,
        })
    })
    .transpose()
}

/// A legal move of the wire as the engine's command.
pub fn command(legal: &pb::LegalAction) -> Result<Command, ViewError> {
    Ok(match legal.action.as_ref().ok_or(bad("legal.action"))? {
        Legal::Bid(b) => Command::Bid { bid: bid(Some(b))? },
        Legal::Pass(_) => Command::Pass,
        Legal::NameTrump(s) => Command::NameTrump { suit: suit(*s)? },
        Legal::PlayCard(c) => Command::PlayCard { card: card(c)? },
    })
}

/// The wire action of a seat's command (`None` for a command no seat sends: the service's
/// own, such as a deal).
pub fn action(command: &Command) -> Option<Action> {
    Some(match command {
        Command::Bid { bid } => Action::Bid(pb::Bid {
            kind: Some(match bid {
                Bid::Points(n) => pb::bid::Kind::Points(u32::from(*n)),
                Bid::Game => pb::bid::Kind::Game(true),
            }),
        }),
        Command::Pass => Action::Pass(pb::PassAction {}),
        Command::NameTrump { suit } => Action::NameTrump(i32::from(suit.index()) + 1),
        Command::PlayCard { card } => Action::PlayCard(card.to_string()),
        _ => return None,
    })
}

fn options(o: &pb::TableOptions) -> Result<TableOptions, ViewError> {
    Ok(TableOptions {
        deck: if o.deck == pb::Deck::Ruff as i32 {
            Deck::Ruff
        } else {
            Deck::Dix
        },
        penalised_aces: o.penalised_aces,
        made_or_nothing: o.made_or_nothing,
        purchase: match pb::Purchase::try_from(o.purchase).map_err(|_| bad("options.purchase"))? {
            pb::Purchase::Unspecified => None,
            pb::Purchase::Points => Some(Purchase::Points),
            pb::Purchase::Budget => Some(Purchase::Budget),
        },
        budget: o.budget,
    })
}

fn phase(name: &str) -> Phase {
    match name {
        "auction" => Phase::Auction,
        "naming_trump" => Phase::NamingTrump,
        "playing" => Phase::Playing,
        "awaiting_deal" => Phase::AwaitingDeal,
        "finished" => Phase::Finished,
        _ => Phase::NotStarted,
    }
}

fn pair<T: Copy>(values: &[T], field: &'static str) -> Result<[T; 2], ViewError> {
    match values {
        [a, b] => Ok([*a, *b]),
        _ => Err(bad(field)),
    }
}

/// The engine's view of the caller's seat, rebuilt from the caller's `GetTable` view
/// (everything a bot reads; the last hand's score and the result are left out). `None`
/// when the caller holds no seat (a spectator) or the match has not started.
pub fn seat_view(view: &pb::TableView) -> Result<Option<SeatView>, ViewError> {
    let Some(game) = view.game.as_ref() else {
        return Ok(None);
    };
    let Some(me) = game.my_seat else {
        return Ok(None);
    };
    let counts: [u32; 4] = game
        .card_counts
        .as_slice()
        .try_into()
        .map_err(|_| bad("card_counts"))?;
    let tricks = game
        .tricks
        .iter()
        .map(|t| {
            let cards: [pb::PlayedCard; 4] = t
                .cards
                .clone()
                .try_into()
                .map_err(|_| bad("tricks.cards"))?;
            Ok(Trick {
                cards: [
                    played(&cards[0])?,
                    played(&cards[1])?,
                    played(&cards[2])?,
                    played(&cards[3])?,
                ],
                winner: seat(t.winner)?,
                points: u8::try_from(t.points).map_err(|_| bad("tricks.points"))?,
            })
        })
        .collect::<Result<Vec<_>, ViewError>>()?;
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
            phase: phase(&game.phase),
            options: view.options.as_ref().map(options).transpose()?,
            target: Some(game.target),
            scores: pair(&game.scores, "scores")?,
            budgets: pair(&game.budgets, "budgets")?,
            hand: game.hand,
            dealer: game.dealer.map(seat).transpose()?,
            turn: game.turn.map(seat).transpose()?,
            card_counts: counts.map(|n| n as usize),
            auction: game
                .auction
                .iter()
                .map(|c| {
                    Ok(AuctionCall {
                        seat: seat(c.seat)?,
                        call: match c.bid.as_ref() {
                            None => Call::Pass,
                            Some(b) => Call::Bid(bid(Some(b))?),
                        },
                    })
                })
                .collect::<Result<_, ViewError>>()?,
            highest_bid: seat_bid(game.highest_bid.as_ref())?,
            contract: seat_bid(game.contract.as_ref())?,
            trump: (game.trump != 0).then(|| suit(game.trump)).transpose()?,
            trick: game.trick.iter().map(played).collect::<Result<_, _>>()?,
            tricks,
            trick_points: pair(&game.trick_points, "trick_points")?,
            last_score: None,
            result: None,
        },
    }))
}

/// The move the engine's heuristic bot (seeded with `seed`) makes from the caller's view,
/// as a wire action; `None` when the caller has nothing to do.
pub fn choose(view: &pb::TableView, seed: u64) -> Result<Option<Action>, ViewError> {
    let Some(seat_view) = seat_view(view)? else {
        return Ok(None);
    };
    Ok(HeuristicBot::new(seed)
        .choose(&seat_view)
        .as_ref()
        .and_then(action))
}
