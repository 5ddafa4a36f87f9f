//! Stored events -> the domain, re-validated ([`from_recorded`]), or as stored -> the wire's
//! `TableEvent` ([`wire_of`]).

use fairdeal_eventstore::{RecordedEvent, is_event_type};
use fairdeal_games_wire::table::{next_turn_of, seat_of};
use fairdeal_games_wire::{Reason, WireError, WireGame};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::{MAX_SEATS, Outcome, Seat};
use prost::Message;
use uuid::Uuid;

use crate::domain::{CommandRef, Created, FinishReason, Finished, TableEvent};

/// Why a stored event is not a table event.
#[derive(Debug, thiserror::Error)]
pub enum StoredEventError {
    /// Its type is none of a table's events.
    #[error("{0} is not a table event")]
    NotATableEvent(String),
    /// Its payload is not a message of its type.
    #[error("{event_type} does not decode: {source}")]
    Payload {
        /// The event's type.
        event_type: String,
        /// Why prost refused it.
        #[source]
        source: prost::DecodeError,
    },
    /// A field does not map to the domain (a seat out of range, a card code unknown, ...).
    #[error(transparent)]
    Field(#[from] WireError),
}

/// The UUID `value` of `field`.
pub(crate) fn uuid_of(field: &str, value: &str) -> Result<Uuid, WireError> {
    Uuid::parse_str(value).map_err(|_| {
        WireError::new(
            field,
            Reason::Unrecognised {
                what: "UUID",
                value: value.to_owned(),
            },
        )
    })
}

fn command_of(command: &pb::CommandRef) -> Result<CommandRef, WireError> {
    Ok(CommandRef {
        command_id: command.command_id.clone(),
        version_after: command.version_after,
        next_turn: next_turn_of(command).map_err(|e| e.within("command"))?,
    })
}

fn decode<M: Message + Default>(event: &RecordedEvent) -> Result<M, StoredEventError> {
    M::decode(event.payload.as_slice()).map_err(|source| StoredEventError::Payload {
        event_type: event.event_type.clone(),
        source,
    })
}

/// A list of `field` that must have `expected` entries.
fn one_each<T>(field: &str, expected: usize, values: Vec<T>) -> Result<Vec<T>, WireError> {
    if values.len() == expected {
        Ok(values)
    } else {
        Err(WireError::new(
            field,
            Reason::Length {
                expected,
                actual: values.len(),
            },
        ))
    }
}

/// A stored event back into the domain, re-validated: its message as stored ([`wire_of`]),
/// then every field mapped (the game's events through its mapping, [`WireGame`]).
pub fn from_recorded<G: WireGame>(
    event: &RecordedEvent,
) -> Result<TableEvent<G>, StoredEventError> {
    use pb::table_event::Event as W;
    let Some(message) = wire_of::<G>(event)?.event else {
        return Err(StoredEventError::NotATableEvent(event.event_type.clone()));
    };
    if let Some(read) = G::event_of(&message) {
        let (event, command) = read?;
        return Ok(TableEvent::Engine {
            event,
            command: command.as_ref().map(command_of).transpose()?,
        });
    }
    let event = match message {
        W::TableCreated(m) => {
            let options = G::options_of("options", m.options.as_ref())?;
            let layout = G::layout(&options).map_err(|_| {
                WireError::new("options", Reason::Invalid("the game refuses these options"))
            })?;
            let mut bots = vec![false; layout.seats];
            for &n in &m.bot_seats {
                let seat = seat_of("bot_seats", n)?;
                *bots.get_mut(seat.index()).ok_or_else(|| {
                    WireError::new(
                        "bot_seats",
                        Reason::Invalid("a seat the table does not have"),
                    )
                })? = true;
            }
            TableEvent::Created(Created {
                table_id: uuid_of("table_id", &m.table_id)?,
                creator: uuid_of("creator_id", &m.creator_id)?,
                options,
                layout,
                bots,
                move_seconds: m.move_seconds,
                commitment: m.commitment,
                short_code: m.short_code,
                first_dealer: seat_of("first_dealer", m.first_dealer)?,
                latest_end_ms: match m.latest_end_ms {
                    0 => None,
                    end if end > 0 => Some(end),
                    end => {
                        return Err(WireError::new(
                            "latest_end_ms",
                            Reason::OutOfRange {
                                value: end,
                                range: "0 (none) or a Unix time in milliseconds",
                            },
                        )
                        .into());
                    }
                },
            })
        }
        W::SeatTaken(m) => TableEvent::SeatTaken {
            seat: seat_of("seat", m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
        },
        W::SeatLeft(m) => TableEvent::SeatLeft {
            seat: seat_of("seat", m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
        },
        W::SeedContributed(m) => TableEvent::SeedContributed {
            seat: seat_of("seat", m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
            contribution: m.contribution,
        },
        W::HandStarted(m) => TableEvent::HandStarted {
            hand: m.hand,
            dealer: seat_of("dealer", m.dealer)?,
            commitment: m.commitment,
            client_seed: m.client_seed,
        },
        W::CardsDealt(m) => TableEvent::CardsDealt {
            hand: m.hand,
            seat: seat_of("seat", m.seat)?,
            position: u8::try_from(m.position)
                .ok()
                .filter(|p| usize::from(*p) < MAX_SEATS)
                .ok_or_else(|| {
                    WireError::new(
                        "position",
                        Reason::OutOfRange {
                            value: m.position.into(),
                            range: "0..=4",
                        },
                    )
                })?,
            cards: G::cards_of("cards", &m.cards)?,
        },
        W::TalonDealt(m) => TableEvent::TalonDealt {
            hand: m.hand,
            cards: G::cards_of("cards", &m.cards)?,
        },
        W::GameFinished(m) => {
            let seats = m.players.len();
            let mut players = vec![None; seats];
            let mut abandoned = vec![false; seats];
            for p in &m.players {
                let seat = Seat::at(p.seat, seats).ok_or_else(|| {
                    WireError::new(
                        "players.seat",
                        Reason::Invalid("each seat once, numbered below the seat count"),
                    )
                })?;
                if !p.bot {
                    players[seat.index()] = Some(uuid_of("players.player_id", &p.player_id)?);
                }
                abandoned[seat.index()] = p.abandoned;
            }
            let sides = m
                .teams
                .iter()
                .map(|t| {
                    t.seats
                        .iter()
                        .map(|&n| seat_of("teams.seats", n))
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()?;
            let scores = one_each("final_scores", sides.len(), m.final_scores)?;
            if usize::try_from(m.winner).map_or(true, |w| w >= sides.len()) {
                return Err(WireError::new(
                    "winner",
                    Reason::OutOfRange {
                        value: m.winner.into(),
                        range: "one of the teams",
                    },
                )
                .into());
            }
            let placings = (0..sides.len())
                .map(|side| if side == m.winner as usize { 1 } else { 2 })
                .collect();
            TableEvent::GameFinished(Finished {
                players,
                abandoned,
                outcome: Outcome {
                    sides,
                    scores,
                    placings,
                },
                options: G::options_of("variant", m.variant.as_ref())?,
                hands_played: m.hands_played,
                reason: match pb::FinishReason::try_from(m.reason) {
                    Ok(pb::FinishReason::Completed) => FinishReason::Completed,
                    Ok(pb::FinishReason::Abandoned) => FinishReason::Abandoned,
                    Ok(pb::FinishReason::Unspecified) | Err(_) => {
                        return Err(WireError::new(
                            "reason",
                            Reason::OutOfRange {
                                value: m.reason.into(),
                                range: "1..=2",
                            },
                        )
                        .into());
                    }
                },
            })
        }
        W::TableExpired(m) => TableEvent::Expired {
            latest_end_ms: m.latest_end_ms,
            hands_dealt: m.hands_dealt,
        },
        W::TableSeedRevealed(m) => TableEvent::SeedRevealed {
            commitment: m.commitment,
            server_seed: m.server_seed,
            client_seed: m.client_seed,
        },
        W::TurnClock(m) => TableEvent::TurnClock {
            seat: seat_of("seat", m.seat)?,
            deadline_ms: m.deadline_ms,
        },
        W::TurnTimedOut(m) => TableEvent::TurnTimedOut {
            seat: seat_of("seat", m.seat)?,
            consecutive: m.consecutive,
        },
        W::SeatAbandoned(m) => TableEvent::SeatAbandoned {
            seat: seat_of("seat", m.seat)?,
            player: uuid_of("player_id", &m.player_id)?,
        },
        W::SpectatorJoined(m) => TableEvent::SpectatorJoined {
            user: uuid_of("user_id", &m.user_id)?,
        },
        W::SpectatorLeft(m) => TableEvent::SpectatorLeft {
            user: uuid_of("user_id", &m.user_id)?,
        },
        // Another game's events, or a placeholder: not this table's.
        _ => {
            return Err(StoredEventError::NotATableEvent(event.event_type.clone()));
        }
    };
    Ok(event)
}

/// A stored event as the wire's `TableEvent`, as it is stored: one decode of its payload,
/// into the message its type names ([`from_recorded`] starts from it). The store holds
/// each event as [`to_message`](super::to_message) wrote it, so this is the message
/// `to_message(from_recorded(event))` gives, without the trip through the domain: what a
/// watcher sends. Its fields are not validated: the caller checks those it decides on.
pub fn wire_of<G: WireGame>(event: &RecordedEvent) -> Result<pb::TableEvent, StoredEventError> {
    use pb::table_event::Event as W;
    let t = event.event_type.as_str();
    if let Some(decoded) = G::stored_event(t, &event.payload) {
        let wire = decoded.map_err(|source| StoredEventError::Payload {
            event_type: event.event_type.clone(),
            source,
        })?;
        return Ok(pb::TableEvent { event: Some(wire) });
    }
    let wire = if is_event_type::<pb::TableCreated>(t) {
        W::TableCreated(decode(event)?)
    } else if is_event_type::<pb::SeatTaken>(t) {
        W::SeatTaken(decode(event)?)
    } else if is_event_type::<pb::SeatLeft>(t) {
        W::SeatLeft(decode(event)?)
    } else if is_event_type::<pb::SeedContributed>(t) {
        W::SeedContributed(decode(event)?)
    } else if is_event_type::<pb::HandStarted>(t) {
        W::HandStarted(decode(event)?)
    } else if is_event_type::<pb::CardsDealt>(t) {
        W::CardsDealt(decode(event)?)
    } else if is_event_type::<pb::TalonDealt>(t) {
        W::TalonDealt(decode(event)?)
    } else if is_event_type::<pb::GameFinished>(t) {
        W::GameFinished(decode(event)?)
    } else if is_event_type::<pb::TableExpired>(t) {
        W::TableExpired(decode(event)?)
    } else if is_event_type::<pb::TableSeedRevealed>(t) {
        W::TableSeedRevealed(decode(event)?)
    } else if is_event_type::<pb::TurnClock>(t) {
        W::TurnClock(decode(event)?)
    } else if is_event_type::<pb::TurnTimedOut>(t) {
        W::TurnTimedOut(decode(event)?)
    } else if is_event_type::<pb::SeatAbandoned>(t) {
        W::SeatAbandoned(decode(event)?)
    } else if is_event_type::<pb::SpectatorJoined>(t) {
        W::SpectatorJoined(decode(event)?)
    } else if is_event_type::<pb::SpectatorLeft>(t) {
        W::SpectatorLeft(decode(event)?)
    } else {
        return Err(StoredEventError::NotATableEvent(t.to_owned()));
    };
    Ok(pb::TableEvent { event: Some(wire) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use fairdeal_eventstore::NewEvent;

    use super::*;
    use crate::Game;
    use crate::events::tests::stored;

    #[test]
    fn a_command_whose_next_turn_names_no_seat_is_refused() {
        let id = Uuid::now_v7();
        let message = pb::CardPlayed {
            table_id: id.to_string(),
            seat: 1,
            card: "AS".into(),
            command: Some(pb::CommandRef {
                command_id: "c-1".into(),
                version_after: 9,
                next_turn: Some(pb::Turn {
                    seat: 5,
                    deadline_ms: 1,
                }),
            }),
        };
        let new = NewEvent::from_message(&message).with_correlation_id(id.to_string());
        let recorded = stored(id, 1, &new);
        assert_eq!(
            from_recorded::<Game>(&recorded).unwrap_err().to_string(),
            "command.next_turn.seat: 5 is out of range (0..=4)"
        );
    }

    #[test]
    fn a_stored_event_of_no_table_type_or_not_of_its_type_is_refused_both_ways() {
        let id = Uuid::now_v7();
        let foreign = NewEvent::new("fairdeal.chat.v1.MessagePosted", vec![1, 2, 3]);
        let recorded = stored(id, 1, &foreign);
        for error in [
            from_recorded::<Game>(&recorded).unwrap_err(),
            wire_of::<Game>(&recorded).unwrap_err(),
        ] {
            assert!(
                matches!(error, StoredEventError::NotATableEvent(_)),
                "{error}"
            );
        }
        let mut corrupt = NewEvent::from_message(&pb::CardsDealt::default());
        // Field 1 (`table_id`, a string) with a length past the payload's end.
        corrupt.payload = vec![0x0a, 0x10, b'x'];
        let recorded = stored(id, 1, &corrupt);
        for error in [
            from_recorded::<Game>(&recorded).unwrap_err(),
            wire_of::<Game>(&recorded).unwrap_err(),
        ] {
            assert!(matches!(error, StoredEventError::Payload { .. }), "{error}");
        }
    }
}
