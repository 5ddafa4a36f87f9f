//! The game as one caller sees it (`GameView`, with its `tarot` part, in a `TableView`)
//! <-> the engine's [`PublicView`] and [`SeatView`], and a seat's moves (`LegalAction`,
//! `ActRequest.action`) <-> the engine's [`Command`]s.

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_tarot::{AuctionCall, Command, PlayedCard, PublicView, SeatView, ShownPoignee, Trick};
use pb::act_request::Action;
use pb::legal_action::Action as Legal;

use super::{
    card_code, card_codes, card_of, cards_of, contract_message, contract_of, count, options_of,
    phase_name, phase_of, poignee_message, poignee_of, score_message, score_of,
};
use crate::error::{Reason, WireError};
use crate::table::{seat_number, seat_of};

/// A seat's command as the move its view offers; `None` for the table's own commands
/// (starting the match, dealing), which no seat sends.
pub fn legal_action(command: &Command) -> Option<pb::LegalAction> {
    let action = match command {
        Command::Bid { contract } => Legal::TarotBid(pb::TarotBid {
            contract: contract_message(*contract).into(),
        }),
        Command::Pass => Legal::Pass(pb::PassAction {}),
        Command::CallKing { card } => Legal::TarotCallKing(card_code(*card)),
        Command::Discard { card } => Legal::TarotDiscard(card_code(*card)),
        Command::DeclareChelem { announce } => Legal::TarotDeclareChelem(pb::TarotDeclareChelem {
            announce: *announce,
        }),
        Command::ShowPoignee { trumps } => Legal::TarotShowPoignee(pb::TarotShowPoignee {
            trumps: card_codes(trumps),
        }),
        Command::PlayCard { card } => Legal::TarotPlayCard(card_code(*card)),
        Command::StartMatch { .. } | Command::StartDeal { .. } => return None,
    };
    Some(pb::LegalAction {
        action: Some(action),
    })
}

/// A Jeu du 10 move (`field`) where a Tarot move is read.
fn not_tarot(field: &str) -> WireError {
    WireError::new(
        field,
        Reason::Invalid("a Jeu du 10 move, not a Tarot table's"),
    )
}

/// The command of a move (fields named as in both `LegalAction` and `ActRequest`, whose
/// oneofs name their variants alike: `tarot_bid.contract`).
fn move_command(action: &Legal) -> Result<Command, WireError> {
    Ok(match action {
        Legal::Pass(_) => Command::Pass,
        Legal::TarotBid(b) => Command::Bid {
            contract: contract_of("tarot_bid.contract", b.contract)?,
        },
        Legal::TarotCallKing(c) => Command::CallKing {
            card: card_of("tarot_call_king", c)?,
        },
        Legal::TarotDiscard(c) => Command::Discard {
            card: card_of("tarot_discard", c)?,
        },
        Legal::TarotDeclareChelem(d) => Command::DeclareChelem {
            announce: d.announce,
        },
        Legal::TarotShowPoignee(p) => Command::ShowPoignee {
            trumps: cards_of("tarot_show_poignee.trumps", &p.trumps)?,
        },
        Legal::TarotPlayCard(c) => Command::PlayCard {
            card: card_of("tarot_play_card", c)?,
        },
        Legal::Bid(_) => return Err(not_tarot("bid")),
        Legal::NameTrump(_) => return Err(not_tarot("name_trump")),
        Legal::PlayCard(_) => return Err(not_tarot("play_card")),
    })
}

/// The command of a move a view offers (fields named relative to the `LegalAction`).
pub fn legal_command(legal: &pb::LegalAction) -> Result<Command, WireError> {
    legal
        .action
        .as_ref()
        .ok_or_else(|| WireError::missing("action"))
        .and_then(move_command)
}

/// An `ActRequest`'s action as the same move offered by a view (the two oneofs have the
/// same variants).
fn offered(action: &Action) -> Legal {
    match action.clone() {
        Action::Bid(b) => Legal::Bid(b),
        Action::Pass(p) => Legal::Pass(p),
        Action::NameTrump(s) => Legal::NameTrump(s),
        Action::PlayCard(c) => Legal::PlayCard(c),
        Action::TarotBid(b) => Legal::TarotBid(b),
        Action::TarotCallKing(c) => Legal::TarotCallKing(c),
        Action::TarotDiscard(c) => Legal::TarotDiscard(c),
        Action::TarotDeclareChelem(d) => Legal::TarotDeclareChelem(d),
        Action::TarotShowPoignee(p) => Legal::TarotShowPoignee(p),
        Action::TarotPlayCard(c) => Legal::TarotPlayCard(c),
    }
}

/// A move offered by a view as an `ActRequest`'s action.
fn requested(action: Legal) -> Action {
    match action {
        Legal::Bid(b) => Action::Bid(b),
        Legal::Pass(p) => Action::Pass(p),
        Legal::NameTrump(s) => Action::NameTrump(s),
        Legal::PlayCard(c) => Action::PlayCard(c),
        Legal::TarotBid(b) => Action::TarotBid(b),
        Legal::TarotCallKing(c) => Action::TarotCallKing(c),
        Legal::TarotDiscard(c) => Action::TarotDiscard(c),
        Legal::TarotDeclareChelem(d) => Action::TarotDeclareChelem(d),
        Legal::TarotShowPoignee(p) => Action::TarotShowPoignee(p),
        Legal::TarotPlayCard(c) => Action::TarotPlayCard(c),
    }
}

/// A seat's command as the action of its `ActRequest`; `None` for the table's own
/// commands, which no seat sends.
pub fn act_action(command: &Command) -> Option<Action> {
    legal_action(command)?.action.map(requested)
}

/// The command of a seat's `ActRequest` (an error names the field: `tarot_bid.contract`);
/// Jeu du 10's moves are refused, `pass` is Tarot's too.
pub fn act_command(request: &pb::ActRequest) -> Result<Command, WireError> {
    let action = request.action.as_ref().ok_or_else(|| {
        WireError::new(
            "action",
            Reason::Invalid(
                "one of pass, tarot_bid, tarot_call_king, tarot_discard, \
                 tarot_declare_chelem, tarot_show_poignee, tarot_play_card is required",
            ),
        )
    })?;
    move_command(&offered(action))
}

fn played_card(p: &PlayedCard) -> pb::PlayedCard {
    pb::PlayedCard {
        seat: seat_number(p.seat),
        card: card_code(p.card),
    }
}

fn call_message(call: &AuctionCall) -> pb::TarotCall {
    pb::TarotCall {
        seat: seat_number(call.seat),
        contract: call.bid.map(|c| contract_message(c).into()),
    }
}

fn shown_message(shown: &ShownPoignee) -> pb::TarotShownPoignee {
    pb::TarotShownPoignee {
        seat: seat_number(shown.seat),
        poignee: poignee_message(shown.poignee).into(),
        trumps: card_codes(&shown.trumps),
    }
}

/// The public view as a `GameView` (no seat, hand, écart or moves: see
/// [`seat_game_view`]). The shared fields hold what both games have; the rest is in
/// `tarot` (tarot.proto's `TarotView` says which).
pub fn game_view(public: &PublicView) -> pb::GameView {
    pb::GameView {
        phase: phase_name(public.phase).to_owned(),
        scores: public.scores.clone(),
        hand: public.deal,
        dealer: public.dealer.map(seat_number),
        turn: public.turn.map(seat_number),
        card_counts: public.card_counts.iter().map(|n| count(*n)).collect(),
        trick: public.trick.iter().map(played_card).collect(),
        tricks_played: count(public.tricks.len()),
        tricks: public
            .tricks
            .iter()
            .map(|t| pb::Trick {
                cards: t.cards.iter().map(played_card).collect(),
                winner: seat_number(t.winner),
                points: 0,
            })
            .collect(),
        tarot: Some(pb::TarotView {
            auction: public.auction.iter().map(call_message).collect(),
            highest_bid: public.highest_bid.as_ref().map(call_message),
            taker: public.taker.map(seat_number),
            contract: public.contract.map(|c| contract_message(c).into()),
            called: public.called.map(card_code),
            called_played_by: public.called_played_by.map(seat_number),
            chien: card_codes(&public.chien),
            ecart_len: count(public.ecart_len),
            ecart_trumps: card_codes(&public.ecart_trumps),
            chelem_announced: public.chelem_announced,
            poignees: public.poignees.iter().map(shown_message).collect(),
            last_score: public.last_score.as_ref().map(score_message),
            my_ecart: Vec::new(),
        }),
        ..pb::GameView::default()
    }
}

/// A seat's view as a `GameView`: the public view with the seat, its hand, its own écart
/// (the taker's only) and its moves.
pub fn seat_game_view(seen: &SeatView) -> pb::GameView {
    let mut view = game_view(&seen.table);
    view.my_seat = Some(seat_number(seen.seat));
    view.my_hand = card_codes(&seen.hand);
    view.legal = seen.legal.iter().filter_map(legal_action).collect();
    if let Some(tarot) = view.tarot.as_mut() {
        tarot.my_ecart = card_codes(&seen.ecart);
    }
    view
}

fn played_card_of(p: &pb::PlayedCard) -> Result<PlayedCard, WireError> {
    Ok(PlayedCard {
        seat: seat_of("seat", p.seat)?,
        card: card_of("card", &p.card)?,
    })
}

fn call_of(c: &pb::TarotCall) -> Result<AuctionCall, WireError> {
    Ok(AuctionCall {
        seat: seat_of("seat", c.seat)?,
        bid: c.contract.map(|v| contract_of("contract", v)).transpose()?,
    })
}

fn shown_of(s: &pb::TarotShownPoignee) -> Result<ShownPoignee, WireError> {
    Ok(ShownPoignee {
        seat: seat_of("seat", s.seat)?,
        poignee: poignee_of("poignee", s.poignee)?,
        trumps: cards_of("trumps", &s.trumps)?,
    })
}

fn trick_of(t: &pb::Trick) -> Result<Trick, WireError> {
    if t.points != 0 {
        return Err(WireError::new(
            "points",
            Reason::Invalid("0 on a Tarot table (no points per trick)"),
        ));
    }
    Ok(Trick {
        cards: t
            .cards
            .iter()
            .map(played_card_of)
            .collect::<Result<_, _>>()
            .map_err(|e| e.within("cards"))?,
        winner: seat_of("winner", t.winner)?,
    })
}

/// Every entry of `list` read by `read`, an error named inside `parent`.
fn each<M, T>(
    parent: &str,
    list: &[M],
    read: impl Fn(&M) -> Result<T, WireError>,
) -> Result<Vec<T>, WireError> {
    list.iter()
        .map(|m| read(m).map_err(|e| e.within(parent)))
        .collect()
}

/// The engine's view of the caller's seat, read from the caller's `TableView` (fields named
/// relative to it: `game.tarot.auction.contract`); `None` when the caller holds no seat (a
/// spectator) or the view has no game. A seat's `GameView` without its `tarot` part is not a
/// Tarot table's (`game.tarot: missing`).
///
/// The inverse of [`seat_game_view`]: the view's `version` and `options` are the
/// `TableView`'s. A trumps-only field (`ecart_trumps`) holding another card is refused.
pub fn seat_view_of(view: &pb::TableView) -> Result<Option<SeatView>, WireError> {
    let Some(game) = view.game.as_ref() else {
        return Ok(None);
    };
    let Some(me) = game.my_seat else {
        return Ok(None);
    };
    let in_game = |e: WireError| e.within("game");
    let in_tarot = |e: WireError| e.within("game.tarot");
    let tarot = game
        .tarot
        .as_ref()
        .ok_or_else(|| WireError::missing("game.tarot"))?;
    let ecart_trumps = cards_of("ecart_trumps", &tarot.ecart_trumps).map_err(in_tarot)?;
    if ecart_trumps.iter().any(|c| !c.is_trump()) {
        return Err(WireError::new(
            "game.tarot.ecart_trumps",
            Reason::Invalid("trumps only"),
        ));
    }
    let table = PublicView {
        version: view.version,
        phase: phase_of("phase", &game.phase).map_err(in_game)?,
        options: view
            .options
            .as_ref()
            .map(|o| options_of("options", Some(o)))
            .transpose()?,
        scores: game.scores.clone(),
        deal: game.hand,
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
        card_counts: game.card_counts.iter().map(|n| *n as usize).collect(),
        auction: each("game.tarot.auction", &tarot.auction, call_of)?,
        highest_bid: tarot
            .highest_bid
            .as_ref()
            .map(call_of)
            .transpose()
            .map_err(|e| e.within("game.tarot.highest_bid"))?,
        taker: tarot
            .taker
            .map(|s| seat_of("taker", s))
            .transpose()
            .map_err(in_tarot)?,
        contract: tarot
            .contract
            .map(|c| contract_of("contract", c))
            .transpose()
            .map_err(in_tarot)?,
        called: tarot
            .called
            .as_ref()
            .map(|c| card_of("called", c))
            .transpose()
            .map_err(in_tarot)?,
        called_played_by: tarot
            .called_played_by
            .map(|s| seat_of("called_played_by", s))
            .transpose()
            .map_err(in_tarot)?,
        chien: cards_of("chien", &tarot.chien).map_err(in_tarot)?,
        ecart_len: tarot.ecart_len as usize,
        ecart_trumps,
        chelem_announced: tarot.chelem_announced,
        poignees: each("game.tarot.poignees", &tarot.poignees, shown_of)?,
        trick: each("game.trick", &game.trick, played_card_of)?,
        tricks: each("game.tricks", &game.tricks, trick_of)?,
        last_score: tarot
            .last_score
            .as_ref()
            .map(score_of)
            .transpose()
            .map_err(|e| e.within("game.tarot.last_score"))?,
    };
    Ok(Some(SeatView {
        seat: seat_of("my_seat", me).map_err(in_game)?,
        hand: cards_of("my_hand", &game.my_hand).map_err(in_game)?,
        ecart: cards_of("my_ecart", &tarot.my_ecart).map_err(in_tarot)?,
        legal: each("game.legal", &game.legal, legal_command)?,
        table,
    }))
}
