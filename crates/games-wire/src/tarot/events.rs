//! The engine's events <-> the `fairdeal.tables.v1` messages that record them
//! (`tarot_events.proto`), with the deal scores and command references they carry.

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::Seat;
use fairdeal_tarot::{Card, DealScore, Event, Tarot};
use pb::table_event::Event as W;

use super::{
    camp_message, camp_of, card_code, card_codes, card_of, cards_of, chelem_message, chelem_of,
    contract_message, contract_of, half_points_of, out_of_range, per_seat, poignee_message,
    poignee_of, small, tarot_options_message, tarot_options_of,
};
use crate::error::{Reason, WireError};
use crate::game::ReadEvent;
use crate::table::{seat_number, seat_of};

/// `event` of table `table_id` as the `TableEvent` variant that records it. `command`
/// refers to the command that caused it: the messages of a seat's moves carry it (bid,
/// pass, king called, discard, chelem declared, poignée shown, card played), the others
/// have no such field.
///
/// The deal (`DealStarted`) gives its public part only, a `HandStarted` without commitment
/// and client seed: a table records the hands as one private `CardsDealt` per seat and the
/// chien as a hidden `TalonDealt`, and writes `HandStarted` itself with the seeds the deal
/// used. A discard is `TarotTrumpDiscarded` (public) for a trump and `TarotCardDiscarded`
/// (private to the taker) for any other card.
pub fn event_message(table_id: &str, event: &Event, command: Option<pb::CommandRef>) -> W {
    let id = || table_id.to_owned();
    match event {
        Event::MatchStarted {
            options,
            first_dealer,
        } => W::TarotMatchStarted(pb::TarotMatchStarted {
            table_id: id(),
            options: Some(tarot_options_message(options)),
            first_dealer: seat_number(*first_dealer),
        }),
        Event::DealStarted { deal, dealer, .. } => {
            W::HandStarted(crate::table::hand_started_message(
                table_id,
                *deal,
                *dealer,
                String::new(),
                String::new(),
            ))
        }
        Event::DealAnnulled { deal, seat } => W::TarotDealAnnulled(pb::TarotDealAnnulled {
            table_id: id(),
            deal: *deal,
            seat: seat_number(*seat),
        }),
        Event::BidPlaced { seat, contract } => W::TarotBidPlaced(pb::TarotBidPlaced {
            table_id: id(),
            seat: seat_number(*seat),
            contract: contract_message(*contract).into(),
            command,
        }),
        Event::PlayerPassed { seat } => W::TarotPlayerPassed(pb::TarotPlayerPassed {
            table_id: id(),
            seat: seat_number(*seat),
            command,
        }),
        Event::AuctionWon { seat, contract } => W::TarotAuctionWon(pb::TarotAuctionWon {
            table_id: id(),
            seat: seat_number(*seat),
            contract: contract_message(*contract).into(),
        }),
        Event::AllPassed { deal } => W::TarotAllPassed(pb::TarotAllPassed {
            table_id: id(),
            deal: *deal,
        }),
        Event::KingCalled { seat, card } => W::TarotKingCalled(pb::TarotKingCalled {
            table_id: id(),
            seat: seat_number(*seat),
            card: card_code(*card),
            command,
        }),
        Event::ChienShown { cards } => W::TarotChienShown(pb::TarotChienShown {
            table_id: id(),
            cards: card_codes(cards),
        }),
        Event::CardDiscarded { seat, card } if card.is_trump() => {
            W::TarotTrumpDiscarded(pb::TarotTrumpDiscarded {
                table_id: id(),
                seat: seat_number(*seat),
                card: card_code(*card),
                command,
            })
        }
        Event::CardDiscarded { seat, card } => W::TarotCardDiscarded(pb::TarotCardDiscarded {
            table_id: id(),
            seat: seat_number(*seat),
            card: card_code(*card),
            command,
        }),
        Event::ChelemDeclared { seat, announced } => {
            W::TarotChelemDeclared(pb::TarotChelemDeclared {
                table_id: id(),
                seat: seat_number(*seat),
                announced: *announced,
                command,
            })
        }
        Event::PoigneeShown {
            seat,
            poignee,
            trumps,
        } => W::TarotPoigneeShown(pb::TarotPoigneeShown {
            table_id: id(),
            seat: seat_number(*seat),
            poignee: poignee_message(*poignee).into(),
            trumps: card_codes(trumps),
            command,
        }),
        Event::CardPlayed { seat, card } => W::TarotCardPlayed(pb::TarotCardPlayed {
            table_id: id(),
            seat: seat_number(*seat),
            card: card_code(*card),
            command,
        }),
        Event::TrickWon { seat, trick } => W::TarotTrickWon(pb::TarotTrickWon {
            table_id: id(),
            seat: seat_number(*seat),
            trick: u32::from(*trick),
        }),
        Event::DealScored(score) => W::TarotDealScored(pb::TarotDealScored {
            table_id: id(),
            score: Some(score_message(score)),
        }),
        Event::MatchEnded { scores } => W::TarotMatchEnded(pb::TarotMatchEnded {
            table_id: id(),
            scores: scores.clone(),
        }),
    }
}

/// A deal's scoring as its message.
pub fn score_message(score: &DealScore) -> pb::TarotScore {
    pb::TarotScore {
        deal: score.deal,
        taker: seat_number(score.taker),
        contract: contract_message(score.contract).into(),
        // 1, 2, 4 or 6.
        multiplier: score.contract.multiplier().unsigned_abs(),
        called: score.called.map(card_code),
        partner: score.partner.map(seat_number),
        half_points: u32::from(score.half_points),
        oudlers: u32::from(score.oudlers),
        target: u32::from(score.target),
        made: score.made,
        difference: u32::from(score.difference),
        petit_au_bout: score.petit_au_bout.map(|c| camp_message(c).into()),
        poignees: score
            .poignees
            .iter()
            .map(|p| poignee_message(*p).into())
            .collect(),
        chelem: chelem_message(score.chelem).into(),
        value: score.value,
        deltas: score.deltas.clone(),
        scores: score.scores.clone(),
    }
}

/// A deal's scoring from its message (fields named relative to it). The multiplier must be
/// the contract's; `deltas` and `scores` one entry per seat each.
pub fn score_of(m: &pb::TarotScore) -> Result<DealScore, WireError> {
    let contract = contract_of("contract", m.contract)?;
    if i64::from(m.multiplier) != i64::from(contract.multiplier()) {
        return Err(WireError::new(
            "multiplier",
            Reason::Invalid("must be the contract's (1, 2, 4 or 6)"),
        ));
    }
    let scores = per_seat("scores", &m.scores)?;
    if m.deltas.len() != scores.len() {
        return Err(WireError::new(
            "deltas",
            Reason::Length {
                expected: scores.len(),
                actual: m.deltas.len(),
            },
        ));
    }
    Ok(DealScore {
        deal: m.deal,
        taker: seat_of("taker", m.taker)?,
        contract,
        called: m
            .called
            .as_ref()
            .map(|c| card_of("called", c))
            .transpose()?,
        partner: m.partner.map(|s| seat_of("partner", s)).transpose()?,
        half_points: half_points_of("half_points", m.half_points)?,
        oudlers: small("oudlers", m.oudlers, "0..=3")
            .ok()
            .filter(|n| *n <= 3)
            .ok_or_else(|| out_of_range("oudlers", m.oudlers, "0..=3"))?,
        target: small("target", m.target, "0..=255")?,
        made: m.made,
        difference: u16::try_from(m.difference)
            .map_err(|_| out_of_range("difference", m.difference, "0..=65535"))?,
        petit_au_bout: m
            .petit_au_bout
            .map(|c| camp_of("petit_au_bout", c))
            .transpose()?,
        poignees: m
            .poignees
            .iter()
            .map(|p| poignee_of("poignees", *p))
            .collect::<Result<_, _>>()?,
        chelem: chelem_of("chelem", m.chelem)?,
        value: m.value,
        deltas: m.deltas.clone(),
        scores,
    })
}

/// A discard's card in `field`: a trump in the public message, any other card in the
/// private one (`trump` says which is read), so neither can carry the other's card.
fn discarded_of(field: &str, code: &str, trump: bool) -> Result<Card, WireError> {
    let card = card_of(field, code)?;
    match (card.is_trump(), trump) {
        (true, true) | (false, false) => Ok(card),
        (false, true) => Err(WireError::new(
            field,
            Reason::Invalid("a public discard shows a trump only"),
        )),
        (true, false) => Err(WireError::new(
            field,
            Reason::Invalid("a trump discarded is shown in public (TarotTrumpDiscarded)"),
        )),
    }
}

/// The event `event` reads, with the command its message carries.
fn read(
    command: Option<&pb::CommandRef>,
    event: impl FnOnce() -> Result<Event, WireError>,
) -> ReadEvent<Tarot> {
    Ok((event()?, command.cloned()))
}

/// A `TableEvent` variant back as the engine's event and the command it carries, every
/// field checked (an error names the field relative to the message: `seat`,
/// `score.contract`); `None` when the variant is none of Tarot's events (the table's own,
/// the deal's parts, Jeu du 10's).
pub fn event_of(message: &W) -> Option<ReadEvent<Tarot>> {
    Some(match message {
        W::TarotMatchStarted(m) => read(None, || {
            Ok(Event::MatchStarted {
                options: tarot_options_of("options", m.options.as_ref())?,
                first_dealer: seat_of("first_dealer", m.first_dealer)?,
            })
        }),
        W::TarotDealAnnulled(m) => read(None, || {
            Ok(Event::DealAnnulled {
                deal: m.deal,
                seat: seat_of("seat", m.seat)?,
            })
        }),
        W::TarotBidPlaced(m) => read(m.command.as_ref(), || {
            Ok(Event::BidPlaced {
                seat: seat_of("seat", m.seat)?,
                contract: contract_of("contract", m.contract)?,
            })
        }),
        W::TarotPlayerPassed(m) => read(m.command.as_ref(), || {
            Ok(Event::PlayerPassed {
                seat: seat_of("seat", m.seat)?,
            })
        }),
        W::TarotAuctionWon(m) => read(None, || {
            Ok(Event::AuctionWon {
                seat: seat_of("seat", m.seat)?,
                contract: contract_of("contract", m.contract)?,
            })
        }),
        W::TarotAllPassed(m) => read(None, || Ok(Event::AllPassed { deal: m.deal })),
        W::TarotKingCalled(m) => read(m.command.as_ref(), || {
            Ok(Event::KingCalled {
                seat: seat_of("seat", m.seat)?,
                card: card_of("card", &m.card)?,
            })
        }),
        W::TarotChienShown(m) => read(None, || {
            Ok(Event::ChienShown {
                cards: cards_of("cards", &m.cards)?,
            })
        }),
        W::TarotTrumpDiscarded(m) => read(m.command.as_ref(), || {
            Ok(Event::CardDiscarded {
                seat: seat_of("seat", m.seat)?,
                card: discarded_of("card", &m.card, true)?,
            })
        }),
        W::TarotCardDiscarded(m) => read(m.command.as_ref(), || {
            Ok(Event::CardDiscarded {
                seat: seat_of("seat", m.seat)?,
                card: discarded_of("card", &m.card, false)?,
            })
        }),
        W::TarotChelemDeclared(m) => read(m.command.as_ref(), || {
            Ok(Event::ChelemDeclared {
                seat: seat_of("seat", m.seat)?,
                announced: m.announced,
            })
        }),
        W::TarotPoigneeShown(m) => read(m.command.as_ref(), || {
            Ok(Event::PoigneeShown {
                seat: seat_of("seat", m.seat)?,
                poignee: poignee_of("poignee", m.poignee)?,
                trumps: cards_of("trumps", &m.trumps)?,
            })
        }),
        W::TarotCardPlayed(m) => read(m.command.as_ref(), || {
            Ok(Event::CardPlayed {
                seat: seat_of("seat", m.seat)?,
                card: card_of("card", &m.card)?,
            })
        }),
        W::TarotTrickWon(m) => read(None, || {
            Ok(Event::TrickWon {
                seat: seat_of("seat", m.seat)?,
                trick: small("trick", m.trick, "0..=255")?,
            })
        }),
        W::TarotDealScored(m) => read(None, || {
            let score = m
                .score
                .as_ref()
                .ok_or_else(|| WireError::missing("score"))?;
            Ok(Event::DealScored(
                score_of(score).map_err(|e| e.within("score"))?,
            ))
        }),
        W::TarotMatchEnded(m) => read(None, || {
            Ok(Event::MatchEnded {
                scores: per_seat("scores", &m.scores)?,
            })
        }),
        _ => return None,
    })
}

/// The one seat that may see `message` before the game finishes: the taker for a
/// `TarotCardDiscarded` (a plain card in the écart), as a `CardsDealt` is its seat's;
/// `None` for every other Tarot event (public). A seat out of range is an error, never a
/// public event. The deal's own parts (`CardsDealt`, `TalonDealt`) are the table's to
/// classify.
pub fn private_to(message: &W) -> Result<Option<Seat>, WireError> {
    match message {
        W::TarotCardDiscarded(m) => seat_of("seat", m.seat).map(Some),
        _ => Ok(None),
    }
}
