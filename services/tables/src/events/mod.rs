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

use fairdeal_games_wire::WireGame;

use crate::domain::{FoldError, Table, TableEvent};

mod decode;
mod encode;

pub(crate) use decode::uuid_of;
pub use decode::{StoredEventError, from_recorded, wire_of};
pub use encode::{placeholder, to_message};

impl<G: WireGame> Aggregate for Table<G> {
    const CATEGORY: &'static str = "table";
    type Id = Uuid;
    type Event = TableEvent<G>;
    type DecodeError = StoredEventError;
    type FoldError = FoldError;

    fn encode(id: &Uuid, event: &TableEvent<G>) -> NewEvent {
        let table_id = id.to_string();
        let message = to_message(&table_id, event);
        let new = match G::stored_message(&message) {
            Some((event_type, payload)) => NewEvent::new(event_type, payload),
            None => stored(message),
        };
        new.with_correlation_id(table_id)
    }

    fn decode(event: &RecordedEvent) -> Result<TableEvent<G>, StoredEventError> {
        from_recorded(event)
    }

    fn apply(state: Option<Self>, event: &TableEvent<G>) -> Result<Self, FoldError> {
        Table::apply(state, event)
    }
}

/// A table's own message as it is stored (a game's events are the game's to store).
fn stored(message: pb::table_event::Event) -> NewEvent {
    use pb::table_event::Event as W;
    match message {
        W::TableCreated(m) => NewEvent::from_message(&m),
        W::SeatTaken(m) => NewEvent::from_message(&m),
        W::SeatLeft(m) => NewEvent::from_message(&m),
        W::SeedContributed(m) => NewEvent::from_message(&m),
        W::HandStarted(m) => NewEvent::from_message(&m),
        W::CardsDealt(m) => NewEvent::from_message(&m),
        W::TalonDealt(m) => NewEvent::from_message(&m),
        W::GameFinished(m) => NewEvent::from_message(&m),
        W::TableExpired(m) => NewEvent::from_message(&m),
        W::TableSeedRevealed(m) => NewEvent::from_message(&m),
        W::TurnClock(m) => NewEvent::from_message(&m),
        W::TurnTimedOut(m) => NewEvent::from_message(&m),
        W::SeatAbandoned(m) => NewEvent::from_message(&m),
        W::SpectatorJoined(m) => NewEvent::from_message(&m),
        W::SpectatorLeft(m) => NewEvent::from_message(&m),
        // Only what a viewer may not see is sent as a placeholder; nothing is one.
        W::Placeholder(m) => NewEvent::from_message(&m),
        // Jeu du 10's events, stored by its mapping (`G::stored_message`) before this.
        W::MatchStarted(m) => NewEvent::from_message(&m),
        W::BidPlaced(m) => NewEvent::from_message(&m),
        W::PlayerPassed(m) => NewEvent::from_message(&m),
        W::AuctionWon(m) => NewEvent::from_message(&m),
        W::TrumpNamed(m) => NewEvent::from_message(&m),
        W::CardPlayed(m) => NewEvent::from_message(&m),
        W::TrickWon(m) => NewEvent::from_message(&m),
        W::HandScored(m) => NewEvent::from_message(&m),
        W::MatchWon(m) => NewEvent::from_message(&m),
        // French Tarot's events, stored by its mapping (`G::stored_message`) at a Tarot
        // table; a Jeu du 10 table never writes one (its `to_message` gives Jeu du 10's
        // variants only), and reading one back there is `NotATableEvent` (`wire_of`).
        W::TarotMatchStarted(m) => NewEvent::from_message(&m),
        W::TarotDealAnnulled(m) => NewEvent::from_message(&m),
        W::TarotBidPlaced(m) => NewEvent::from_message(&m),
        W::TarotPlayerPassed(m) => NewEvent::from_message(&m),
        W::TarotAuctionWon(m) => NewEvent::from_message(&m),
        W::TarotAllPassed(m) => NewEvent::from_message(&m),
        W::TarotKingCalled(m) => NewEvent::from_message(&m),
        W::TarotChienShown(m) => NewEvent::from_message(&m),
        W::TarotTrumpDiscarded(m) => NewEvent::from_message(&m),
        W::TarotCardDiscarded(m) => NewEvent::from_message(&m),
        W::TarotChelemDeclared(m) => NewEvent::from_message(&m),
        W::TarotPoigneeShown(m) => NewEvent::from_message(&m),
        W::TarotCardPlayed(m) => NewEvent::from_message(&m),
        W::TarotTrickWon(m) => NewEvent::from_message(&m),
        W::TarotDealScored(m) => NewEvent::from_message(&m),
        W::TarotMatchEnded(m) => NewEvent::from_message(&m),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use fairdeal_eventstore::{GENESIS_PREV_HASH, StreamId, seal};
    use fairdeal_fairness::Deck;
    use fairdeal_games::{Bid, Event, MatchEnd, Purchase, TableOptions, Team};
    use fairdeal_table_game::{Outcome, TableGame};

    use super::*;
    use crate::Game;
    use crate::domain::testing::seat;
    use crate::domain::{CommandRef, Created, FinishReason, Finished};
    use fairdeal_games_wire::any::{AnyCard, AnyEvent, AnyOptions};

    fn engine(event: Event, command: Option<CommandRef>) -> TableEvent<Game> {
        TableEvent::Engine {
            event: AnyEvent::JeuDu10(event),
            command,
        }
    }

    fn card(code: &str) -> AnyCard {
        AnyCard::of(code).unwrap()
    }

    fn engine_seat(n: u8) -> fairdeal_games::Seat {
        fairdeal_games::Seat::new(n).unwrap()
    }

    /// Every kind of event survives encode -> decode unchanged.
    #[test]
    fn events_round_trip() {
        let id = Uuid::now_v7();
        let s = seat;
        let e = engine_seat;
        let options = AnyOptions::JeuDu10(TableOptions {
            deck: Deck::Ruff,
            purchase: Some(Purchase::Budget),
            budget: Some(10),
            ..TableOptions::default()
        });
        let events = [
            TableEvent::Created(Created {
                table_id: id,
                creator: Uuid::now_v7(),
                layout: Game::layout(&options).unwrap(),
                options,
                bots: vec![false, true, false, true],
                move_seconds: 30,
                commitment: "ab".repeat(32),
                short_code: "ababa".into(),
                first_dealer: s(0),
                latest_end_ms: Some(1_900_000_000_000),
            }),
            TableEvent::SeatTaken {
                seat: s(2),
                player: Uuid::now_v7(),
            },
            TableEvent::CardsDealt {
                hand: 3,
                seat: s(1),
                position: 0,
                cards: vec![card("TH"), card("5C")],
            },
            TableEvent::TalonDealt {
                hand: 3,
                cards: vec![card("AS")],
            },
            engine(
                Event::CardPlayed {
                    seat: e(1),
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
                    seat: e(3),
                    bid: Bid::Points(0),
                },
                None,
            ),
            engine(
                Event::BidPlaced {
                    seat: e(3),
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
                players: vec![Some(Uuid::now_v7()), None, Some(Uuid::now_v7()), None],
                abandoned: vec![false, false, true, false],
                outcome: Outcome {
                    sides: vec![vec![s(0), s(2)], vec![s(1), s(3)]],
                    scores: vec![510, 230],
                    placings: vec![1, 2],
                },
                options: AnyOptions::JeuDu10(TableOptions::default()),
                hands_played: 7,
                reason: FinishReason::Completed,
            }),
            TableEvent::Expired {
                latest_end_ms: 1_900_000_000_000,
                hands_dealt: 4,
            },
        ];
        for (i, event) in events.iter().enumerate() {
            let new = <Table<Game> as Aggregate>::encode(&id, event);
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
