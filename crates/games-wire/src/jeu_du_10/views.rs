//! The game as one caller sees it (`GameView` in a `TableView`) <-> the engine's
//! [`PublicView`] and [`SeatView`], and a seat's moves (`LegalAction`, `ActRequest.action`)
//! <-> the engine's [`Command`]s.

use fairdeal_games::game::{AuctionCall, PlayedCard, Trick};
use fairdeal_games::view::SeatBid;
use fairdeal_games::{Call, Command, PublicView, SeatView};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::act_request::Action;
use pb::legal_action::Action as Legal;

use super::{
    bid_message, bid_of, card_code, card_codes, card_of, fixed, hand_score_message, hand_score_of,
    options_of, out_of_range, per_team, phase_name, phase_of, seat_number, seat_of, suit_message,
    suit_of, team_number,
};
use crate::error::{Reason, WireError};

/// A seat's command as the move its view offers; `None` for the table's own commands
/// (starting the match, dealing), which no seat sends.
pub fn legal_action(command: &Command) -> Option<pb::LegalAction> {
    let action = match command {
        Command::Bid { bid } => Legal::Bid(bid_message(*bid)),
        Command::Pass => Legal::Pass(pb::PassAction {}),
        Command::NameTrump { suit } => Legal::NameTrump(suit_message(*suit) as i32),
        Command::PlayCard { card } => Legal::PlayCard(card_code(*card)),
        Command::StartMatch { .. } | Command::StartHand { .. } => return None,
    };
    Some(pb::LegalAction {
        action: Some(action),
    })
}

/// The command of a move a view offers (fields named relative to the `LegalAction`).
pub fn legal_command(legal: &pb::LegalAction) -> Result<Command, WireError> {
    Ok(match legal.action.as_ref() {
        Some(Legal::Bid(b)) => Command::Bid {
            bid: bid_of("bid", Some(b))?,
        },
        Some(Legal::Pass(_)) => Command::Pass,
        Some(Legal::NameTrump(s)) => Command::NameTrump {
            suit: suit_of("name_trump", *s)?,
        },
        Some(Legal::PlayCard(c)) => Command::PlayCard {
            card: card_of("play_card", c)?,
        },
        Some(
            Legal::TarotBid(_)
            | Legal::TarotCallKing(_)
            | Legal::TarotDiscard(_)
            | Legal::TarotDeclareChelem(_)
            | Legal::TarotShowPoignee(_)
            | Legal::TarotPlayCard(_),
        ) => {
            return Err(WireError::new(
                "action",
                Reason::Invalid("a French Tarot move, not a Jeu du 10 table's"),
            ));
        }
        None => return Err(WireError::missing("action")),
    })
}

/// A seat's command as the action of its `ActRequest`; `None` for the table's own
/// commands, which no seat sends.
pub fn act_action(command: &Command) -> Option<Action> {
    Some(match command {
        Command::Bid { bid } => Action::Bid(bid_message(*bid)),
        Command::Pass => Action::Pass(pb::PassAction {}),
        Command::NameTrump { suit } => Action::NameTrump(suit_message(*suit) as i32),
        Command::PlayCard { card } => Action::PlayCard(card_code(*card)),
        Command::StartMatch { .. } | Command::StartHand { .. } => return None,
    })
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn played_card(p: &PlayedCard) -> pb::PlayedCard {
    pb::PlayedCard {
        seat: seat_number(p.seat),
        card: card_code(p.card),
    }
}

fn auction_call(seat_bid: SeatBid) -> pb::AuctionCall {
    pb::AuctionCall {
        seat: seat_number(seat_bid.seat),
        bid: Some(bid_message(seat_bid.bid)),
    }
}

/// The public view as a `GameView` (no seat, hand or moves: see [`seat_game_view`]).
pub fn game_view(public: &PublicView) -> pb::GameView {
    pb::GameView {
        phase: phase_name(public.phase).to_owned(),
        scores: public.scores.to_vec(),
        budgets: public.budgets.to_vec(),
        hand: public.hand,
        dealer: public.dealer.map(seat_number),
        turn: public.turn.map(seat_number),
        card_counts: public.card_counts.iter().map(|n| count(*n)).collect(),
        auction: public
            .auction
            .iter()
            .map(|c| pb::AuctionCall {
                seat: seat_number(c.seat),
                bid: match c.call {
                    Call::Bid(bid) => Some(bid_message(bid)),
                    Call::Pass => None,
                },
            })
            .collect(),
        highest_bid: public.highest_bid.map(auction_call),
        contract: public.contract.map(auction_call),
        trump: public
            .trump
            .map_or(pb::Suit::Unspecified, suit_message)
            .into(),
        trick: public.trick.iter().map(played_card).collect(),
        tricks_played: count(public.tricks.len()),
        tricks: public
            .tricks
            .iter()
            .map(|t| pb::Trick {
                cards: t.cards.iter().map(played_card).collect(),
                winner: seat_number(t.winner),
                points: u32::from(t.points),
            })
            .collect(),
        target: public.target.unwrap_or_default(),
        trick_points: public.trick_points.to_vec(),
        last_score: public
            .last_score
            .as_ref()
            .map(|s| hand_score_message("", s)),
        winner: public.result.map(|r| team_number(r.team)),
        my_seat: None,
        my_hand: Vec::new(),
        legal: Vec::new(),
        tarot: None,
    }
}

/// A seat's view as a `GameView`: the public view with the seat, its hand and its moves.
pub fn seat_game_view(seen: &SeatView) -> pb::GameView {
    pb::GameView {
        my_seat: Some(seat_number(seen.seat)),
        my_hand: card_codes(&seen.hand),
        legal: seen.legal.iter().filter_map(legal_action).collect(),
        ..game_view(&seen.table)
    }
}

fn played_card_of(p: &pb::PlayedCard) -> Result<PlayedCard, WireError> {
    Ok(PlayedCard {
        seat: seat_of("seat", p.seat)?,
        card: card_of("card", &p.card)?,
    })
}

fn seat_bid_of(c: Option<&pb::AuctionCall>) -> Result<Option<SeatBid>, WireError> {
    c.map(|c| {
        Ok(SeatBid {
            seat: seat_of("seat", c.seat)?,
            bid: bid_of("bid", c.bid.as_ref())?,
        })
    })
    .transpose()
}

fn trick_of(t: &pb::Trick) -> Result<Trick, WireError> {
    let cards: [pb::PlayedCard; 4] = t.cards.clone().try_into().map_err(|_| {
        WireError::new(
            "cards",
            Reason::Length {
                expected: 4,
                actual: t.cards.len(),
            },
        )
    })?;
    let [a, b, c, d] = cards;
    let played = |p: &pb::PlayedCard| played_card_of(p).map_err(|e| e.within("cards"));
    Ok(Trick {
        cards: [played(&a)?, played(&b)?, played(&c)?, played(&d)?],
        winner: seat_of("winner", t.winner)?,
        points: u8::try_from(t.points).map_err(|_| out_of_range("points", t.points, "0..=255"))?,
    })
}

/// The engine's view of the caller's seat, read from the caller's `TableView` (fields named
/// relative to it: `game.tricks.cards`); `None` when the caller holds no seat (a
/// spectator) or the view has no game. A French Tarot table's view (`game.tarot` set) is
/// refused.
///
/// The inverse of [`seat_game_view`] for everything a `GameView` carries: the view's
/// `version` and `options` are the `TableView`'s, a `target` of 0 is none (before the
/// match), and `result` is left out (the view names the winning team, not why it won).
pub fn seat_view_of(view: &pb::TableView) -> Result<Option<SeatView>, WireError> {
    let Some(game) = view.game.as_ref() else {
        return Ok(None);
    };
    let Some(me) = game.my_seat else {
        return Ok(None);
    };
    if game.tarot.is_some() {
        return Err(WireError::new(
            "game.tarot",
            Reason::Invalid("a French Tarot table's view, not Jeu du 10's"),
        ));
    }
    let in_game = |e: WireError| e.within("game");
    let counts: [u32; 4] = fixed("card_counts", &game.card_counts).map_err(in_game)?;
    let tricks = game
        .tricks
        .iter()
        .map(|t| trick_of(t).map_err(|e| e.within("game.tricks")))
        .collect::<Result<Vec<_>, _>>()?;
    let auction = game
        .auction
        .iter()
        .map(|c| {
            Ok(AuctionCall {
                seat: seat_of("seat", c.seat)?,
                call: match c.bid.as_ref() {
                    None => Call::Pass,
                    Some(b) => Call::Bid(bid_of("bid", Some(b))?),
                },
            })
        })
        .collect::<Result<_, WireError>>()
        .map_err(|e| e.within("game.auction"))?;
    Ok(Some(SeatView {
        seat: seat_of("my_seat", me).map_err(in_game)?,
        hand: game
            .my_hand
            .iter()
            .map(|c| card_of("my_hand", c))
            .collect::<Result<_, _>>()
            .map_err(in_game)?,
        legal: game
            .legal
            .iter()
            .map(legal_command)
            .collect::<Result<_, _>>()
            .map_err(|e| e.within("game.legal"))?,
        table: PublicView {
            version: view.version,
            phase: phase_of("phase", &game.phase).map_err(in_game)?,
            options: view
                .options
                .as_ref()
                .map(|o| options_of("options", Some(o)))
                .transpose()?,
            target: (game.target != 0).then_some(game.target),
            scores: per_team("scores", &game.scores).map_err(in_game)?,
            budgets: per_team("budgets", &game.budgets).map_err(in_game)?,
            hand: game.hand,
            dealer: game
                .dealer
                .map(|s| seat_of("dealer", s))
                .transpose()
                .map_err(in_game)?,
            turn: game
                .turn
                .map(|s| seat_of("turn", s))
                .transpose()
                .map_err(in_game)?,
            card_counts: counts.map(|n| n as usize),
            auction,
            highest_bid: seat_bid_of(game.highest_bid.as_ref())
                .map_err(|e| e.within("game.highest_bid"))?,
            contract: seat_bid_of(game.contract.as_ref()).map_err(|e| e.within("game.contract"))?,
            trump: (game.trump != pb::Suit::Unspecified as i32)
                .then(|| suit_of("trump", game.trump))
                .transpose()
                .map_err(in_game)?,
            trick: game
                .trick
                .iter()
                .map(played_card_of)
                .collect::<Result<_, _>>()
                .map_err(|e| e.within("game.trick"))?,
            tricks,
            trick_points: per_team("trick_points", &game.trick_points).map_err(in_game)?,
            last_score: game
                .last_score
                .as_ref()
                .map(hand_score_of)
                .transpose()
                .map_err(|e| e.within("game.last_score"))?,
            result: None,
        },
    }))
}
