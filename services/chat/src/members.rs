//! Table-channel membership, projected from the tables service's events by the
//! `chat-members` consumer inside the bus's transaction (exactly once): `SeatTaken` /
//! `SeatLeft` and `SpectatorJoined` / `SpectatorLeft` keep `chat_members`; `GameFinished`
//! (or `TableExpired`, a table that reached its latest end) makes the table's channel
//! read-only. The events are read from their protobuf messages
//! (`fairdeal.tables.v1`), not through the tables service's code.

use fairdeal_bus::{Handler, HandlerError};
use fairdeal_eventstore::{RecordedEvent, is_event_type};
use fairdeal_proto::fairdeal::tables::v1 as tables;
use sqlx::Transaction;
use uuid::Uuid;

use crate::domain::Channel;
use crate::events::{StoredEventError, uuid_of};

/// The consumer's durable name.
pub const CONSUMER: &str = "chat-members";

/// The source service of the events.
pub const SOURCE: &str = "tables";

/// Seat number of a spectator in `chat_members`.
const SPECTATOR: i64 = -1;

/// Keeps `chat_members` and the read-only flag of table channels.
#[derive(Debug, Default)]
pub struct MembershipProjection;

/// A membership change read from a tables event.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// `user` holds `seat` (or watches: [`SPECTATOR`]).
    Joined { table: Uuid, user: Uuid, seat: i64 },
    /// `user` no longer holds `seat`.
    Left { table: Uuid, user: Uuid, seat: i64 },
    /// The game finished (or the table expired): the channel is read-only.
    Finished { table: Uuid },
}

fn seat(value: u32) -> Result<i64, StoredEventError> {
    if value < 4 {
        Ok(i64::from(value))
    } else {
        Err(StoredEventError::SeatOutOfRange(value))
    }
}

/// The change `event` makes, if any (`Err`: it does not decode).
fn change(event: &RecordedEvent) -> Result<Option<Change>, StoredEventError> {
    let t = event.event_type.as_str();
    if is_event_type::<tables::SeatTaken>(t) {
        let m: tables::SeatTaken = event.decode_payload()?;
        Ok(Some(Change::Joined {
            table: uuid_of("table_id", &m.table_id)?,
            user: uuid_of("player_id", &m.player_id)?,
            seat: seat(m.seat)?,
        }))
    } else if is_event_type::<tables::SeatLeft>(t) {
        let m: tables::SeatLeft = event.decode_payload()?;
        Ok(Some(Change::Left {
            table: uuid_of("table_id", &m.table_id)?,
            user: uuid_of("player_id", &m.player_id)?,
            seat: seat(m.seat)?,
        }))
    } else if is_event_type::<tables::SpectatorJoined>(t) {
        let m: tables::SpectatorJoined = event.decode_payload()?;
        Ok(Some(Change::Joined {
            table: uuid_of("table_id", &m.table_id)?,
            user: uuid_of("user_id", &m.user_id)?,
            seat: SPECTATOR,
        }))
    } else if is_event_type::<tables::SpectatorLeft>(t) {
        let m: tables::SpectatorLeft = event.decode_payload()?;
        Ok(Some(Change::Left {
            table: uuid_of("table_id", &m.table_id)?,
            user: uuid_of("user_id", &m.user_id)?,
            seat: SPECTATOR,
        }))
    } else if is_event_type::<tables::GameFinished>(t) {
        let m: tables::GameFinished = event.decode_payload()?;
        Ok(Some(Change::Finished {
            table: uuid_of("table_id", &m.table_id)?,
        }))
    } else if is_event_type::<tables::TableExpired>(t) {
        let m: tables::TableExpired = event.decode_payload()?;
        Ok(Some(Change::Finished {
            table: uuid_of("table_id", &m.table_id)?,
        }))
    } else {
        Ok(None)
    }
}

/// The event types the projection reads.
fn wanted(event_type: &str) -> bool {
    is_event_type::<tables::SeatTaken>(event_type)
        || is_event_type::<tables::SeatLeft>(event_type)
        || is_event_type::<tables::SpectatorJoined>(event_type)
        || is_event_type::<tables::SpectatorLeft>(event_type)
        || is_event_type::<tables::GameFinished>(event_type)
        || is_event_type::<tables::TableExpired>(event_type)
}

fn transient(error: sqlx::Error) -> HandlerError {
    HandlerError::Transient(error.into())
}

fairdeal_db::for_each_backend! { DB =>
    impl Handler<DB> for MembershipProjection {
        async fn handle(
            &self,
            event: &RecordedEvent,
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            let change = change(event).map_err(|e| HandlerError::Permanent(e.into()))?;
            match change {
                Some(Change::Joined { table, user, seat }) => {
                    sqlx::query(
                        "INSERT INTO chat_members (table_id, user_id, seat) VALUES ($1, $2, $3) \
                         ON CONFLICT (table_id, user_id, seat) DO NOTHING",
                    )
                    .bind(table.to_string())
                    .bind(user.to_string())
                    .bind(seat)
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
                }
                Some(Change::Left { table, user, seat }) => {
                    sqlx::query(
                        "DELETE FROM chat_members WHERE table_id = $1 AND user_id = $2 \
                         AND seat = $3",
                    )
                    .bind(table.to_string())
                    .bind(user.to_string())
                    .bind(seat)
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
                }
                Some(Change::Finished { table }) => {
                    sqlx::query(
                        "INSERT INTO chat_channels (channel, read_only) VALUES ($1, 1) \
                         ON CONFLICT (channel) DO UPDATE SET read_only = 1",
                    )
                    .bind(Channel::Table(table).to_string())
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
                }
                None => {}
            }
            Ok(())
        }

        fn accepts(&self, event: &RecordedEvent) -> bool {
            wanted(&event.event_type)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairdeal_eventstore::NewEvent;

    fn recorded(new: NewEvent) -> RecordedEvent {
        crate::events::recorded(new, "table-x")
    }

    #[test]
    fn table_events_become_changes() {
        let (table, user) = (Uuid::now_v7(), Uuid::now_v7());
        let sat = recorded(NewEvent::from_message(&tables::SeatTaken {
            table_id: table.to_string(),
            seat: 2,
            player_id: user.to_string(),
        }));
        assert!(wanted(&sat.event_type));
        assert_eq!(
            change(&sat),
            Ok(Some(Change::Joined {
                table,
                user,
                seat: 2
            }))
        );
        let watching = recorded(NewEvent::from_message(&tables::SpectatorLeft {
            table_id: table.to_string(),
            user_id: user.to_string(),
        }));
        assert_eq!(
            change(&watching),
            Ok(Some(Change::Left {
                table,
                user,
                seat: SPECTATOR
            }))
        );
        let bad = recorded(NewEvent::from_message(&tables::SeatTaken {
            table_id: table.to_string(),
            seat: 9,
            player_id: user.to_string(),
        }));
        assert!(change(&bad).is_err());
        let other = recorded(NewEvent::from_message(&tables::TableCreated::default()));
        assert!(!wanted(&other.event_type));
    }
}
