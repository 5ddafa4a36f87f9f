//! Domain events <-> protobuf events (`proto/fairdeal/tables/v1/events.proto`), and the
//! [`Aggregate`] that stores a table in stream `table-<uuid>`.
//!
//! Each [`TableEvent`] is stored as its own protobuf message, typed by its full name and
//! correlated to the table. Decoding re-validates everything (seats, cards, suits, bids,
//! UUIDs), so a foreign or corrupt event stops the fold instead of entering the state.
//!
//! The game's values and the engine's events map through `fairdeal_games_wire::jeu_du_10`,
//! the one mapping the auditor and the client read them with; this module adds the table's
//! own events (creation, seats, seeds, clocks, spectators, the end of the game) and the
//! envelope: which message each event is stored as.
//!
//! Layout: `encode` maps a [`TableEvent`] to its message ([`to_message`]) and a message to the
//! wire's `TableEvent` variant ([`to_message`]); `decode` maps a stored event back, into
//! the domain ([`from_recorded`], re-validated) or as it is stored into the wire's
//! `TableEvent` ([`wire_of`], what watchers send).

use fairdeal_eventstore::{NewEvent, RecordedEvent};
use fairdeal_platform::Aggregate;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use uuid::Uuid;

use crate::domain::{FoldError, Table, TableEvent};

mod decode;
mod encode;

pub(crate) use decode::uuid_of;
pub use decode::{StoredEventError, from_recorded, wire_of};
pub use encode::{placeholder, to_message};

impl Aggregate for Table {
    const CATEGORY: &'static str = "table";
    type Id = Uuid;
    type Event = TableEvent;
    type DecodeError = StoredEventError;
    type FoldError = FoldError;

    fn encode(id: &Uuid, event: &TableEvent) -> NewEvent {
        let table_id = id.to_string();
        use pb::table_event::Event as W;
        let new = match to_message(&table_id, event) {
            W::TableCreated(m) => NewEvent::from_message(&m),
            W::SeatTaken(m) => NewEvent::from_message(&m),
            W::SeatLeft(m) => NewEvent::from_message(&m),
            W::SeedContributed(m) => NewEvent::from_message(&m),
            W::MatchStarted(m) => NewEvent::from_message(&m),
            W::HandStarted(m) => NewEvent::from_message(&m),
            W::CardsDealt(m) => NewEvent::from_message(&m),
            W::BidPlaced(m) => NewEvent::from_message(&m),
            W::PlayerPassed(m) => NewEvent::from_message(&m),
            W::AuctionWon(m) => NewEvent::from_message(&m),
            W::TrumpNamed(m) => NewEvent::from_message(&m),
            W::CardPlayed(m) => NewEvent::from_message(&m),
            W::TrickWon(m) => NewEvent::from_message(&m),
            W::HandScored(m) => NewEvent::from_message(&m),
            W::MatchWon(m) => NewEvent::from_message(&m),
            W::GameFinished(m) => NewEvent::from_message(&m),
            W::TableSeedRevealed(m) => NewEvent::from_message(&m),
            W::TurnClock(m) => NewEvent::from_message(&m),
            W::TurnTimedOut(m) => NewEvent::from_message(&m),
            W::SeatAbandoned(m) => NewEvent::from_message(&m),
            W::SpectatorJoined(m) => NewEvent::from_message(&m),
            W::SpectatorLeft(m) => NewEvent::from_message(&m),
            // Only what a viewer may not see is sent as a placeholder; nothing is one.
            W::Placeholder(m) => NewEvent::from_message(&m),
        };
        new.with_correlation_id(table_id)
    }

    fn decode(event: &RecordedEvent) -> Result<TableEvent, StoredEventError> {
        from_recorded(event)
    }

    fn apply(state: Option<Self>, event: &TableEvent) -> Result<Self, FoldError> {
        Table::apply(state, event)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use fairdeal_eventstore::{GENESIS_PREV_HASH, StreamId, seal};
    use fairdeal_fairness::Deck;
    use fairdeal_games::{Bid, Event, MatchEnd, Purchase, Seat, TableOptions, Team};

    use super::*;
    use crate::domain::{CommandRef, Created, FinishReason, Finished};

    fn engine(event: Event, command: Option<CommandRef>) -> TableEvent {
        TableEvent::Engine { event, command }
    }

    /// Every kind of event survives encode -> decode unchanged.
    #[test]
    fn events_round_trip() {
        let id = Uuid::now_v7();
        let s = |n| Seat::new(n).unwrap();
        let events = [
            TableEvent::Created(Created {
                table_id: id,
                creator: Uuid::now_v7(),
                options: TableOptions {
                    deck: Deck::Ruff,
                    purchase: Some(Purchase::Budget),
                    budget: Some(10),
                    ..TableOptions::default()
                },
                bots: [false, true, false, true],
                move_seconds: 30,
                commitment: "ab".repeat(32),
                short_code: "ababa".into(),
                first_dealer: s(0),
            }),
            TableEvent::SeatTaken {
                seat: s(2),
                player: Uuid::now_v7(),
            },
            TableEvent::CardsDealt {
                hand: 3,
                seat: s(1),
                position: 0,
                cards: vec!["TH".parse().unwrap(), "5C".parse().unwrap()],
            },
            engine(
                Event::CardPlayed {
                    seat: s(1),
                    card: "AS".parse().unwrap(),
                },
                Some(CommandRef {
                    command_id: "c-1".into(),
                    version_after: 40,
                    next_turn: Some((s(2), 1_700_000_030_000)),
                }),
            ),
            engine(
                Event::AuctionWon {
                    seat: s(3),
                    bid: Bid::Points(0),
                },
                None,
            ),
            engine(
                Event::BidPlaced {
                    seat: s(3),
                    bid: Bid::Game,
                },
                None,
            ),
            engine(
                Event::MatchWon {
                    team: Team::new(1).unwrap(),
                    reason: MatchEnd::GameBidMade,
                    scores: [10, -20],
                },
                None,
            ),
            TableEvent::TurnClock {
                seat: s(2),
                deadline_ms: 1_764_000_000_000,
            },
            TableEvent::TurnTimedOut {
                seat: s(2),
                consecutive: 3,
            },
            TableEvent::SeatAbandoned {
                seat: s(2),
                player: Uuid::now_v7(),
            },
            TableEvent::SpectatorJoined {
                user: Uuid::now_v7(),
            },
            TableEvent::SpectatorLeft {
                user: Uuid::now_v7(),
            },
            TableEvent::GameFinished(Finished {
                players: [Some(Uuid::now_v7()), None, Some(Uuid::now_v7()), None],
                abandoned: [false, false, true, false],
                scores: [510, 230],
                winner: Team::new(0).unwrap(),
                options: TableOptions::default(),
                hands_played: 7,
                reason: FinishReason::Completed,
            }),
        ];
        for (i, event) in events.iter().enumerate() {
            let new = <Table as Aggregate>::encode(&id, event);
            let recorded = stored(id, i as u64 + 1, &new);
            assert_eq!(&from_recorded(&recorded).unwrap(), event);
            assert_eq!(new.correlation_id, id.to_string());
        }
    }

    /// `new` sealed as version `version` of table `id`'s stream (linked to the genesis hash
    /// whatever the version: decoding does not look at the chain).
    pub(crate) fn stored(id: Uuid, version: u64, new: &NewEvent) -> RecordedEvent {
        let stream = StreamId::of("table", id).unwrap();
        seal(&stream, version, &GENESIS_PREV_HASH, new.clone()).unwrap()
    }
}
