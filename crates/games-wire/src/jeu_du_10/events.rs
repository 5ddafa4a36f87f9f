//! The engine's events <-> the `fairdeal.tables.v1` messages that record them, with the
//! hand scores and command references they carry.

use fairdeal_games::{Event, HandScore};
use fairdeal_proto::fairdeal::tables::v1 as pb;

use super::{
    bid_message, bid_of, card_code, card_of, match_end_message, match_end_of, options_message,
    options_of, out_of_range, per_team, seat_number, seat_of, suit_message, suit_of, team_number,
    team_of,
};
use crate::error::WireError;

/// An engine event as the message that records it.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineMessage {
    /// [`Event::MatchStarted`].
    MatchStarted(pb::MatchStarted),
    /// [`Event::HandStarted`], its public part (see [`engine_message`]).
    HandStarted(pb::HandStarted),
    /// [`Event::BidPlaced`].
    BidPlaced(pb::BidPlaced),
    /// [`Event::PlayerPassed`].
    PlayerPassed(pb::PlayerPassed),
    /// [`Event::AuctionWon`].
    AuctionWon(pb::AuctionWon),
    /// [`Event::TrumpNamed`].
    TrumpNamed(pb::TrumpNamed),
    /// [`Event::CardPlayed`].
    CardPlayed(pb::CardPlayed),
    /// [`Event::TrickWon`].
    TrickWon(pb::TrickWon),
    /// [`Event::HandScored`].
    HandScored(pb::HandScored),
    /// [`Event::MatchWon`].
    MatchWon(pb::MatchWon),
}

impl EngineMessage {
    /// The message as the variant of the wire's `TableEvent` that carries it.
    pub fn into_wire(self) -> pb::table_event::Event {
        use pb::table_event::Event as W;
        match self {
            EngineMessage::MatchStarted(m) => W::MatchStarted(m),
            EngineMessage::HandStarted(m) => W::HandStarted(m),
            EngineMessage::BidPlaced(m) => W::BidPlaced(m),
            EngineMessage::PlayerPassed(m) => W::PlayerPassed(m),
            EngineMessage::AuctionWon(m) => W::AuctionWon(m),
            EngineMessage::TrumpNamed(m) => W::TrumpNamed(m),
            EngineMessage::CardPlayed(m) => W::CardPlayed(m),
            EngineMessage::TrickWon(m) => W::TrickWon(m),
            EngineMessage::HandScored(m) => W::HandScored(m),
            EngineMessage::MatchWon(m) => W::MatchWon(m),
        }
    }
}

/// `event` of table `table_id` as its message. `command` refers to the command that caused
/// it: the messages of a seat's moves carry it (`BidPlaced`, `PlayerPassed`, `TrumpNamed`,
/// `CardPlayed`), the others have no such field.
///
/// `Event::HandStarted` gives its public part only, without commitment and client seed: a
/// table records the hands as one `CardsDealt` per seat, each private to its seat, and
/// writes `HandStarted` itself ([`hand_started_message`]) with the seeds the deal used.
pub fn engine_message(
    table_id: &str,
    event: &Event,
    command: Option<pb::CommandRef>,
) -> EngineMessage {
    let id = || table_id.to_owned();
    match event {
        Event::MatchStarted {
            options,
            first_dealer,
        } => EngineMessage::MatchStarted(pb::MatchStarted {
            table_id: id(),
            options: Some(options_message(options)),
            first_dealer: seat_number(*first_dealer),
        }),
        Event::HandStarted { hand, dealer, .. } => {
            EngineMessage::HandStarted(crate::table::hand_started_message(
                table_id,
                *hand,
                (*dealer).into(),
                String::new(),
                String::new(),
            ))
        }
        Event::BidPlaced { seat, bid } => EngineMessage::BidPlaced(pb::BidPlaced {
            table_id: id(),
            seat: seat_number(*seat),
            bid: Some(bid_message(*bid)),
            command,
        }),
        Event::PlayerPassed { seat } => EngineMessage::PlayerPassed(pb::PlayerPassed {
            table_id: id(),
            seat: seat_number(*seat),
            command,
        }),
        Event::AuctionWon { seat, bid } => EngineMessage::AuctionWon(pb::AuctionWon {
            table_id: id(),
            seat: seat_number(*seat),
            bid: Some(bid_message(*bid)),
        }),
        Event::TrumpNamed { seat, suit } => EngineMessage::TrumpNamed(pb::TrumpNamed {
            table_id: id(),
            seat: seat_number(*seat),
            suit: suit_message(*suit) as i32,
            command,
        }),
        Event::CardPlayed { seat, card } => EngineMessage::CardPlayed(pb::CardPlayed {
            table_id: id(),
            seat: seat_number(*seat),
            card: card_code(*card),
            command,
        }),
        Event::TrickWon {
            seat,
            trick,
            points,
        } => EngineMessage::TrickWon(pb::TrickWon {
            table_id: id(),
            seat: seat_number(*seat),
            trick: u32::from(*trick),
            points: u32::from(*points),
        }),
        Event::HandScored(score) => EngineMessage::HandScored(hand_score_message(table_id, score)),
        Event::MatchWon {
            team,
            reason,
            scores,
        } => EngineMessage::MatchWon(pb::MatchWon {
            table_id: id(),
            team: team_number(*team),
            reason: match_end_message(*reason) as i32,
            scores: scores.to_vec(),
        }),
    }
}

/// A hand's scoring in table `table_id` (empty in a view) as its message.
pub fn hand_score_message(table_id: &str, score: &HandScore) -> pb::HandScored {
    pb::HandScored {
        table_id: table_id.to_owned(),
        hand: score.hand,
        declarer: seat_number(score.declarer),
        bid: Some(bid_message(score.bid)),
        card_points: score.card_points.to_vec(),
        ace_transfers: score.ace_transfers.to_vec(),
        contract_made: score.contract_made,
        deltas: score.deltas.to_vec(),
        scores: score.scores.to_vec(),
    }
}

/// A hand's scoring from its message (fields named relative to it).
pub fn hand_score_of(m: &pb::HandScored) -> Result<HandScore, WireError> {
    Ok(HandScore {
        hand: m.hand,
        declarer: seat_of("declarer", m.declarer)?,
        bid: bid_of("bid", m.bid.as_ref())?,
        card_points: per_team("card_points", &m.card_points)?,
        ace_transfers: per_team("ace_transfers", &m.ace_transfers)?,
        contract_made: m.contract_made,
        deltas: per_team("deltas", &m.deltas)?,
        scores: per_team("scores", &m.scores)?,
    })
}

/// A message that records one engine event, read back as that event.
pub trait EventMessage {
    /// The engine's event, every field checked (an error names the field relative to the
    /// message: `seat`, `bid.points`).
    fn event(&self) -> Result<Event, WireError>;

    /// The reference to the command the event answers, on the messages that carry one.
    fn command(&self) -> Option<&pb::CommandRef> {
        None
    }
}

impl EventMessage for pb::MatchStarted {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::MatchStarted {
            options: options_of("options", self.options.as_ref())?,
            first_dealer: seat_of("first_dealer", self.first_dealer)?,
        })
    }
}

impl EventMessage for pb::BidPlaced {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::BidPlaced {
            seat: seat_of("seat", self.seat)?,
            bid: bid_of("bid", self.bid.as_ref())?,
        })
    }

    fn command(&self) -> Option<&pb::CommandRef> {
        self.command.as_ref()
    }
}

impl EventMessage for pb::PlayerPassed {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::PlayerPassed {
            seat: seat_of("seat", self.seat)?,
        })
    }

    fn command(&self) -> Option<&pb::CommandRef> {
        self.command.as_ref()
    }
}

impl EventMessage for pb::AuctionWon {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::AuctionWon {
            seat: seat_of("seat", self.seat)?,
            bid: bid_of("bid", self.bid.as_ref())?,
        })
    }
}

impl EventMessage for pb::TrumpNamed {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::TrumpNamed {
            seat: seat_of("seat", self.seat)?,
            suit: suit_of("suit", self.suit)?,
        })
    }

    fn command(&self) -> Option<&pb::CommandRef> {
        self.command.as_ref()
    }
}

impl EventMessage for pb::CardPlayed {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::CardPlayed {
            seat: seat_of("seat", self.seat)?,
            card: card_of("card", &self.card)?,
        })
    }

    fn command(&self) -> Option<&pb::CommandRef> {
        self.command.as_ref()
    }
}

impl EventMessage for pb::TrickWon {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::TrickWon {
            seat: seat_of("seat", self.seat)?,
            trick: u8::try_from(self.trick)
                .map_err(|_| out_of_range("trick", self.trick, "0..=255"))?,
            points: u8::try_from(self.points)
                .map_err(|_| out_of_range("points", self.points, "0..=255"))?,
        })
    }
}

impl EventMessage for pb::HandScored {
    fn event(&self) -> Result<Event, WireError> {
        hand_score_of(self).map(Event::HandScored)
    }
}

impl EventMessage for pb::MatchWon {
    fn event(&self) -> Result<Event, WireError> {
        Ok(Event::MatchWon {
            team: team_of("team", self.team)?,
            reason: match_end_of("reason", self.reason)?,
            scores: per_team("scores", &self.scores)?,
        })
    }
}

impl EngineMessage {
    /// The engine's event the message records; `None` for `HandStarted`, whose hands are
    /// not in it (a table records them apart, in `CardsDealt`).
    pub fn event(&self) -> Option<Result<Event, WireError>> {
        Some(match self {
            EngineMessage::HandStarted(_) => return None,
            EngineMessage::MatchStarted(m) => m.event(),
            EngineMessage::BidPlaced(m) => m.event(),
            EngineMessage::PlayerPassed(m) => m.event(),
            EngineMessage::AuctionWon(m) => m.event(),
            EngineMessage::TrumpNamed(m) => m.event(),
            EngineMessage::CardPlayed(m) => m.event(),
            EngineMessage::TrickWon(m) => m.event(),
            EngineMessage::HandScored(m) => m.event(),
            EngineMessage::MatchWon(m) => m.event(),
        })
    }
}
