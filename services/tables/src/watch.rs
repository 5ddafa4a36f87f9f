//! Watchers: one caller's view of a table's events after a version, then live
//! ([`Tables::watch`]).
//!
//! The store holds each event as the protobuf message the wire sends ([`crate::events`]),
//! so a watcher sends each event as it is stored: one decode of its payload into the wire's
//! `TableEvent` ([`wire_of`]), no trip through the domain and back. What it decides, it
//! decides from the message's own fields (`Watching`): whose the private cards are
//! (`CardsDealt.seat`), the caller's seat (their `SeatTaken` and `SeatLeft`), the end of the
//! game (`GameFinished`), by the domain's one visibility rule ([`domain::visible`]). A stored
//! event whose type is no table event's, whose payload does not decode, or whose fields
//! decided on do not map (a seat out of range, a player id that is no UUID) ends the watch
//! with an internal error, as the domain's decoding did.

use std::sync::Arc;

use fairdeal_eventstore::RecordedEvent;
use fairdeal_games_wire::table::seat_of;
use fairdeal_games_wire::{WireError, WireGame};
use fairdeal_kit::ServiceError;
use fairdeal_platform::{RunError, stream_of};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::TableGame;
use tokio::sync::mpsc;
use tonic::Status;
use uuid::Uuid;

use crate::domain::{self, Privacy, Viewer};
use crate::events::{StoredEventError, placeholder, uuid_of, wire_of};
use crate::service::{Failure, Tables, infallible, table};
use crate::view;
use crate::{Game, Table};

/// Events read per page by a watcher.
const WATCH_PAGE: usize = 256;
/// Messages buffered per watcher before it waits for the client.
const WATCH_BUFFER: usize = 64;

impl Tables {
    /// `player`'s view of the table's events after `after_version`, then live, into a
    /// channel; ends when the client goes, the server drains, the store fails, or the table
    /// is served by another replica from now on (ownership: the API's relay then opens the
    /// watch again there, from the last version sent).
    pub async fn watch(
        &self,
        player: Uuid,
        table_id: Uuid,
        after_version: u64,
        turn_views: bool,
    ) -> Result<mpsc::Receiver<Result<pb::WatchResponse, Status>>, Failure> {
        let watching = self
            .streams
            .inspect(&table_id, |snapshot| {
                table(snapshot).map(|t| Watching {
                    player,
                    viewer: t.viewer(player),
                    finished: t.over(),
                })
            })
            .await
            .map_err(infallible)?
            .map_err(RunError::Rejected)?;
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let this = self.clone();
        let feed = Feed {
            player,
            table_id,
            after_version,
            turn_views,
        };
        tokio::spawn(async move {
            if let Err(status) = this.feed(feed, watching, &tx).await {
                // The client may be gone already; nothing else to tell.
                let _ = tx.send(Err(status)).await;
            }
        });
        Ok(rx)
    }

    /// The watcher's loop: subscribe to the table stream's wake-ups, read what is there,
    /// wait, read again. Subscribing before the first read means no append is missed;
    /// reading from the next version means none is sent twice. Only appends to this table
    /// wake it (see `fairdeal_bus::signal`).
    /// Each event is sent as stored, or as a placeholder, as `watching` decides ([`Watching`]:
    /// the player's place at the table when the watch began, kept up to date from the events
    /// sent).
    /// With `turn_views`, the last message of each batch carries the player's view when the
    /// table stands there with the player's seat to act ([`Self::turn_view`]).
    async fn feed(
        &self,
        Feed {
            player,
            table_id,
            after_version,
            turn_views,
        }: Feed,
        mut watching: Watching,
        tx: &mpsc::Sender<Result<pb::WatchResponse, Status>>,
    ) -> Result<(), Status> {
        let stream = stream_of::<Table>(&table_id).map_err(|e| internal(e.into()))?;
        let mut waiter = self.signal.subscribe_stream(&stream);
        let moved_away = self.timers.moved_away(&table_id);
        tokio::pin!(moved_away);
        let mut next = after_version.saturating_add(1);
        // What was appended before the subscription is read from the store.
        let mut woken = false;
        loop {
            // Woken by this process's appends after what was sent: their events as stored,
            // without reading them back; otherwise a read.
            let handed = if woken {
                waiter.appended_from(next)
            } else {
                None
            };
            let from_store = handed.is_none();
            let pages: Vec<Arc<[RecordedEvent]>> = match handed {
                Some(slices) => slices,
                None => {
                    // Woken by another replica's commit: one watcher of the table in this
                    // process reads it, and the others take what it read.
                    let turn = if woken {
                        match waiter.claim_read() {
                            Some(turn) => Some(turn),
                            None => {
                                tokio::select! {
                                    () = waiter.changed() => {}
                                    () = tx.closed() => return Ok(()),
                                    () = self.shutdown.draining() => return Ok(()),
                                }
                                continue;
                            }
                        }
                    } else {
                        None
                    };
                    let page = self
                        .store
                        .read_stream(&stream, next, WATCH_PAGE)
                        .await
                        .map_err(|e| Status::from(fairdeal_kit::status::store_error(e)))?;
                    if let Some(turn) = turn {
                        turn.read(&page);
                    }
                    vec![page.into()]
                }
            };
            let read = pages.first().map_or(0, |page| page.len());
            let from = next;
            // Held back until the next one is ready: the batch's last message may get a view.
            let mut last: Option<pb::WatchResponse> = None;
            let events = pages.iter().flat_map(|page| page.iter());
            for recorded in events.filter(|e| e.version >= from) {
                let shown = wire_of::<Game>(recorded)
                    .and_then(|event| watching.show(event))
                    .map_err(|e| internal(e.into()))?;
                let message = pb::WatchResponse {
                    version: recorded.version,
                    event: Some(shown),
                    view: None,
                };
                if let Some(ready) = last.replace(message)
                    && tx.send(Ok(ready)).await.is_err()
                {
                    return Ok(());
                }
                next = recorded.version + 1;
            }
            if let Some(mut message) = last {
                if turn_views {
                    message.view = self.turn_view(player, table_id, message.version).await?;
                }
                if tx.send(Ok(message)).await.is_err() {
                    return Ok(());
                }
            }
            // A full page from the store may have more behind it: read on at once.
            woken = false;
            if from_store && read == WATCH_PAGE {
                continue;
            }
            tokio::select! {
                () = waiter.changed() => woken = true,
                () = tx.closed() => return Ok(()),
                () = self.shutdown.draining() => return Ok(()),
                () = &mut moved_away => return Ok(()),
            }
        }
    }

    /// `player`'s view at `version` when the table stands there with `player`'s seat to act
    /// (no later version, nothing due from the service: a deal, a bot's move, a timeout);
    /// `None` otherwise. A later version is a later message, which is asked again.
    async fn turn_view(
        &self,
        player: Uuid,
        table_id: Uuid,
        version: u64,
    ) -> Result<Option<pb::TableView>, Status> {
        self.streams
            .inspect(&table_id, |snapshot| {
                let t = snapshot.state.as_ref()?;
                let viewer = t.viewer(player);
                let Viewer::Seat(seat) = viewer else {
                    return None;
                };
                let stands = snapshot.version == version
                    && !t.over()
                    && TableGame::turn(&t.game) == Some(seat)
                    && !self.needs_step(snapshot);
                stands.then(|| view::table_view(t, viewer, false))
            })
            .await
            .map_err(|e| Status::from(ServiceError::from(infallible(e))))
    }
}

/// What a watcher sends: whose view, of which table, from where, with turn views or not.
#[derive(Debug, Clone, Copy)]
struct Feed {
    player: Uuid,
    table_id: Uuid,
    after_version: u64,
    turn_views: bool,
}

/// Whose view a watcher sends, and what decides what it shows them: their place at the
/// table and whether the game is over. Begins as the table stands when the watch begins,
/// then follows the events sent ([`Watching::show`]): the player's own `SeatTaken` and
/// `SeatLeft` (seats are fixed once cards are dealt), and `GameFinished` or `TableExpired`
/// (from then on, everything is public).
#[derive(Debug, Clone, Copy)]
struct Watching {
    /// The watching user.
    player: Uuid,
    /// How they see the table: from their seat, or as anyone else.
    viewer: Viewer,
    /// Whether the stream holds `GameFinished` or `TableExpired` (play is over).
    finished: bool,
}

impl Watching {
    /// `event`, a stored event as the wire's message ([`wire_of`]), as the player is shown
    /// it: itself, or a placeholder when the domain's rule ([`domain::visible`]) hides it
    /// from them. What it changes of the player's place or of the game counts from this
    /// event on, as in the domain's fold.
    fn show(&mut self, event: pb::TableEvent) -> Result<pb::TableEvent, StoredEventError> {
        use pb::table_event::Event as W;
        match &event.event {
            Some(W::SeatTaken(m)) => {
                let seat = seat_of("seat", m.seat)?;
                if uuid_of("player_id", &m.player_id)? == self.player {
                    self.viewer = Viewer::Seat(seat);
                }
            }
            Some(W::SeatLeft(m)) if uuid_of("player_id", &m.player_id)? == self.player => {
                self.viewer = Viewer::Spectator;
            }
            Some(W::GameFinished(_) | W::TableExpired(_)) => self.finished = true,
            _ => {}
        }
        Ok(
            if domain::visible(privacy(&event)?, self.viewer, self.finished) {
                event
            } else {
                placeholder()
            },
        )
    }
}

/// Who may see a stored event, as the wire's message, before the game is over: a
/// `CardsDealt`'s seat, nobody for a `TalonDealt`, the one seat a game's own private message
/// names (French Tarot's écart: [`WireGame::private_to`]), as
/// [`domain::TableEvent::privacy`] says of the domain's event. A seat out of range is an
/// error, never a public event.
fn privacy(event: &pb::TableEvent) -> Result<Privacy, WireError> {
    use pb::table_event::Event as W;
    Ok(match &event.event {
        Some(W::CardsDealt(m)) => Privacy::Seat(seat_of("seat", m.seat)?),
        Some(W::TalonDealt(_)) => Privacy::Hidden,
        Some(message) => Game::private_to(message)?.map_or(Privacy::Public, Privacy::Seat),
        None => Privacy::Public,
    })
}

/// A watcher's internal failure, logged; the client gets the fixed text.
fn internal(cause: fairdeal_kit::status::Cause) -> Status {
    Status::from(ServiceError::Internal(cause))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use fairdeal_eventstore::NewEvent;
    use fairdeal_platform::Aggregate;
    use prost::Message;

    use super::*;
    use crate::TableEvent;
    use crate::domain::testing::played;
    use crate::events::tests::stored;
    use crate::events::{from_recorded, to_message};

    /// What a watcher sent before it sent events as stored: each stored event decoded into
    /// the domain, the player's place followed there, and the event encoded again when
    /// visible.
    fn through_the_domain(
        watching: &mut Watching,
        table_id: &str,
        recorded: &RecordedEvent,
    ) -> pb::TableEvent {
        let event: TableEvent = from_recorded::<Game>(recorded).unwrap();
        match &event {
            TableEvent::SeatTaken { seat, player } if *player == watching.player => {
                watching.viewer = Viewer::Seat(*seat);
            }
            TableEvent::SeatLeft { player, .. } if *player == watching.player => {
                watching.viewer = Viewer::Spectator;
            }
            TableEvent::GameFinished(_) | TableEvent::Expired { .. } => watching.finished = true,
            _ => {}
        }
        if event.visible_to(watching.viewer, watching.finished) {
            pb::TableEvent {
                event: Some(to_message(table_id, &event)),
            }
        } else {
            placeholder()
        }
    }

    /// For a whole table, every event, every kind of viewer (each participant and a
    /// stranger, watching from any seat or none, before or after the end): the message sent
    /// as stored is the very message the trip through the domain sent, to the byte,
    /// placeholders included.
    #[test]
    fn a_watcher_sends_each_event_as_the_trip_through_the_domain_did() {
        let played = played();
        let TableEvent::Created(created) = &played.events[0] else {
            unreachable!()
        };
        let id = created.table_id;
        let table_id = id.to_string();
        let recorded: Vec<RecordedEvent> = played
            .versioned()
            .map(|(version, event)| stored(id, version, &<Table as Aggregate>::encode(&id, event)))
            .collect();
        let kinds: std::collections::BTreeSet<&str> =
            recorded.iter().map(|r| r.event_type.as_str()).collect();
        assert_eq!(kinds.len(), 22, "every kind of table event: {kinds:?}");
        let viewers = [Viewer::Spectator]
            .into_iter()
            .chain(fairdeal_table_game::Seat::all(4).map(Viewer::Seat));
        let players = [
            played.abandoning,
            played.playing,
            played.left,
            played.spectator,
            Uuid::now_v7(),
        ];
        let (mut hidden, mut private_shown) = (0, 0);
        for player in players {
            for viewer in viewers.clone() {
                for finished in [false, true] {
                    let start = Watching {
                        player,
                        viewer,
                        finished,
                    };
                    let (mut now, mut before) = (start, start);
                    for r in &recorded {
                        let sent = wire_of::<Game>(r).and_then(|e| now.show(e)).unwrap();
                        let expected = through_the_domain(&mut before, &table_id, r);
                        assert_eq!(sent, expected, "version {}, {start:?}", r.version);
                        assert_eq!(sent.encode_to_vec(), expected.encode_to_vec());
                        match sent.event {
                            Some(pb::table_event::Event::Placeholder(_)) => hidden += 1,
                            Some(pb::table_event::Event::CardsDealt(_)) => private_shown += 1,
                            _ => {}
                        }
                    }
                    assert_eq!((now.viewer, now.finished), (before.viewer, before.finished));
                }
            }
        }
        assert!(hidden > 0 && private_shown > 0, "both kinds of CardsDealt");
    }

    #[test]
    fn a_seat_out_of_range_never_shows_private_cards_and_ends_the_watch() {
        let id = Uuid::now_v7();
        let player = Uuid::now_v7();
        let record = |message: &dyn Fn() -> NewEvent| stored(id, 1, &message());
        let cards = record(&|| {
            NewEvent::from_message(&pb::CardsDealt {
                table_id: id.to_string(),
                hand: 0,
                seat: 5,
                position: 0,
                cards: vec!["AS".into()],
            })
        });
        let sat = record(&|| {
            NewEvent::from_message(&pb::SeatTaken {
                table_id: id.to_string(),
                seat: 7,
                player_id: player.to_string(),
            })
        });
        for viewer in [
            Viewer::Spectator,
            Viewer::Seat(fairdeal_table_game::Seat::FIRST),
        ] {
            for finished in [false, true] {
                let mut watching = Watching {
                    player,
                    viewer,
                    finished,
                };
                for recorded in [&cards, &sat] {
                    let error = wire_of::<Game>(recorded)
                        .and_then(|e| watching.show(e))
                        .unwrap_err();
                    assert!(
                        error.to_string().ends_with("is out of range (0..=4)"),
                        "{error}"
                    );
                }
            }
        }
    }
}
