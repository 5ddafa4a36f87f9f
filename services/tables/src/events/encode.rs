//! Domain events -> protobuf: each [`TableEvent`] as the message it is stored as
//! ([`to_message`]), and that message as the wire's `TableEvent` ([`TableMessage::into_wire`]).

use fairdeal_games::Seat;
use fairdeal_games_wire::jeu_du_10::{self as wire, EngineMessage};
use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::domain::{CommandRef, FinishReason, TableEvent};

/// One table event as its protobuf message.
#[derive(Debug, Clone, PartialEq)]
pub enum TableMessage {
    /// `TableCreated`.
    Created(pb::TableCreated),
    /// `SeatTaken`.
    SeatTaken(pb::SeatTaken),
    /// `SeatLeft`.
    SeatLeft(pb::SeatLeft),
    /// `SeedContributed`.
    SeedContributed(pb::SeedContributed),
    /// `MatchStarted`.
    MatchStarted(pb::MatchStarted),
    /// `HandStarted`.
    HandStarted(pb::HandStarted),
    /// `CardsDealt`.
    CardsDealt(pb::CardsDealt),
    /// `BidPlaced`.
    BidPlaced(pb::BidPlaced),
    /// `PlayerPassed`.
    PlayerPassed(pb::PlayerPassed),
    /// `AuctionWon`.
    AuctionWon(pb::AuctionWon),
    /// `TrumpNamed`.
    TrumpNamed(pb::TrumpNamed),
    /// `CardPlayed`.
    CardPlayed(pb::CardPlayed),
    /// `TrickWon`.
    TrickWon(pb::TrickWon),
    /// `HandScored`.
    HandScored(pb::HandScored),
    /// `MatchWon`.
    MatchWon(pb::MatchWon),
    /// `GameFinished`.
    GameFinished(pb::GameFinished),
    /// `TableSeedRevealed`.
    SeedRevealed(pb::TableSeedRevealed),
    /// `TurnClock`.
    TurnClock(pb::TurnClock),
    /// `TurnTimedOut`.
    TurnTimedOut(pb::TurnTimedOut),
    /// `SeatAbandoned`.
    SeatAbandoned(pb::SeatAbandoned),
    /// `SpectatorJoined`.
    SpectatorJoined(pb::SpectatorJoined),
    /// `SpectatorLeft`.
    SpectatorLeft(pb::SpectatorLeft),
}

impl TableMessage {
    /// The message as the `TableEvent` of the wire.
    pub fn into_wire(self) -> pb::TableEvent {
        use pb::table_event::Event as W;
        let event = match self {
            TableMessage::Created(m) => W::TableCreated(m),
            TableMessage::SeatTaken(m) => W::SeatTaken(m),
            TableMessage::SeatLeft(m) => W::SeatLeft(m),
            TableMessage::SeedContributed(m) => W::SeedContributed(m),
            TableMessage::MatchStarted(m) => W::MatchStarted(m),
            TableMessage::HandStarted(m) => W::HandStarted(m),
            TableMessage::CardsDealt(m) => W::CardsDealt(m),
            TableMessage::BidPlaced(m) => W::BidPlaced(m),
            TableMessage::PlayerPassed(m) => W::PlayerPassed(m),
            TableMessage::AuctionWon(m) => W::AuctionWon(m),
            TableMessage::TrumpNamed(m) => W::TrumpNamed(m),
            TableMessage::CardPlayed(m) => W::CardPlayed(m),
            TableMessage::TrickWon(m) => W::TrickWon(m),
            TableMessage::HandScored(m) => W::HandScored(m),
            TableMessage::MatchWon(m) => W::MatchWon(m),
            TableMessage::GameFinished(m) => W::GameFinished(m),
            TableMessage::SeedRevealed(m) => W::TableSeedRevealed(m),
            TableMessage::TurnClock(m) => W::TurnClock(m),
            TableMessage::TurnTimedOut(m) => W::TurnTimedOut(m),
            TableMessage::SeatAbandoned(m) => W::SeatAbandoned(m),
            TableMessage::SpectatorJoined(m) => W::SpectatorJoined(m),
            TableMessage::SpectatorLeft(m) => W::SpectatorLeft(m),
        };
        pb::TableEvent { event: Some(event) }
    }
}

/// A placeholder: an event the viewer may not see, shown by its version only.
pub fn placeholder() -> pb::TableEvent {
    pb::TableEvent {
        event: Some(pb::table_event::Event::Placeholder(pb::Placeholder {})),
    }
}

impl From<EngineMessage> for TableMessage {
    fn from(message: EngineMessage) -> Self {
        match message {
            EngineMessage::MatchStarted(m) => TableMessage::MatchStarted(m),
            EngineMessage::HandStarted(m) => TableMessage::HandStarted(m),
            EngineMessage::BidPlaced(m) => TableMessage::BidPlaced(m),
            EngineMessage::PlayerPassed(m) => TableMessage::PlayerPassed(m),
            EngineMessage::AuctionWon(m) => TableMessage::AuctionWon(m),
            EngineMessage::TrumpNamed(m) => TableMessage::TrumpNamed(m),
            EngineMessage::CardPlayed(m) => TableMessage::CardPlayed(m),
            EngineMessage::TrickWon(m) => TableMessage::TrickWon(m),
            EngineMessage::HandScored(m) => TableMessage::HandScored(m),
            EngineMessage::MatchWon(m) => TableMessage::MatchWon(m),
        }
    }
}

fn command_message(command: &CommandRef) -> pb::CommandRef {
    wire::command_message(
        command.command_id.clone(),
        command.version_after,
        command.next_turn,
    )
}

/// `event` of table `table_id` as its protobuf message.
pub fn to_message(table_id: &str, event: &TableEvent) -> TableMessage {
    let id = || table_id.to_owned();
    let seat_number = wire::seat_number;
    match event {
        TableEvent::Created(c) => TableMessage::Created(pb::TableCreated {
            table_id: id(),
            creator_id: c.creator.to_string(),
            options: Some(wire::options_message(&c.options)),
            bot_seats: Seat::ALL
                .into_iter()
                .filter(|s| c.bots[s.index()])
                .map(seat_number)
                .collect(),
            move_seconds: c.move_seconds,
            commitment: c.commitment.clone(),
            short_code: c.short_code.clone(),
            first_dealer: seat_number(c.first_dealer),
        }),
        TableEvent::SeatTaken { seat, player } => TableMessage::SeatTaken(pb::SeatTaken {
            table_id: id(),
            seat: seat_number(*seat),
            player_id: player.to_string(),
        }),
        TableEvent::SeatLeft { seat, player } => TableMessage::SeatLeft(pb::SeatLeft {
            table_id: id(),
            seat: seat_number(*seat),
            player_id: player.to_string(),
        }),
        TableEvent::SeedContributed {
            seat,
            player,
            contribution,
        } => TableMessage::SeedContributed(pb::SeedContributed {
            table_id: id(),
            seat: seat_number(*seat),
            player_id: player.to_string(),
            contribution: contribution.clone(),
        }),
        TableEvent::HandStarted {
            hand,
            dealer,
            commitment,
            client_seed,
        } => TableMessage::HandStarted(wire::hand_started_message(
            table_id,
            *hand,
            *dealer,
            commitment.clone(),
            client_seed.clone(),
        )),
        TableEvent::CardsDealt {
            hand,
            seat,
            position,
            cards,
        } => TableMessage::CardsDealt(pb::CardsDealt {
            table_id: id(),
            hand: *hand,
            seat: seat_number(*seat),
            position: u32::from(*position),
            cards: wire::card_codes(cards),
        }),
        TableEvent::GameFinished(f) => TableMessage::GameFinished(pb::GameFinished {
            table_id: id(),
            players: Seat::ALL
                .into_iter()
                .map(|s| pb::SeatPlayer {
                    seat: seat_number(s),
                    player_id: f.players[s.index()]
                        .map(|p| p.to_string())
                        .unwrap_or_default(),
                    bot: f.players[s.index()].is_none(),
                    abandoned: f.abandoned[s.index()],
                })
                .collect(),
            teams: wire::team_seats(),
            final_scores: f.scores.to_vec(),
            winner: wire::team_number(f.winner),
            variant: Some(wire::options_message(&f.options)),
            hands_played: f.hands_played,
            reason: match f.reason {
                FinishReason::Completed => pb::FinishReason::Completed,
                FinishReason::Abandoned => pb::FinishReason::Abandoned,
            } as i32,
        }),
        TableEvent::SeedRevealed {
            commitment,
            server_seed,
            client_seed,
        } => TableMessage::SeedRevealed(pb::TableSeedRevealed {
            table_id: id(),
            commitment: commitment.clone(),
            server_seed: server_seed.clone(),
            client_seed: client_seed.clone(),
        }),
        TableEvent::TurnClock { seat, deadline_ms } => TableMessage::TurnClock(pb::TurnClock {
            table_id: id(),
            seat: seat_number(*seat),
            deadline_ms: *deadline_ms,
        }),
        TableEvent::TurnTimedOut { seat, consecutive } => {
            TableMessage::TurnTimedOut(pb::TurnTimedOut {
                table_id: id(),
                seat: seat_number(*seat),
                consecutive: *consecutive,
            })
        }
        TableEvent::SeatAbandoned { seat, player } => {
            TableMessage::SeatAbandoned(pb::SeatAbandoned {
                table_id: id(),
                seat: seat_number(*seat),
                player_id: player.to_string(),
            })
        }
        TableEvent::SpectatorJoined { user } => {
            TableMessage::SpectatorJoined(pb::SpectatorJoined {
                table_id: id(),
                user_id: user.to_string(),
            })
        }
        TableEvent::SpectatorLeft { user } => TableMessage::SpectatorLeft(pb::SpectatorLeft {
            table_id: id(),
            user_id: user.to_string(),
        }),
        TableEvent::Engine { event, command } => {
            wire::engine_message(table_id, event, command.as_ref().map(command_message)).into()
        }
    }
}
