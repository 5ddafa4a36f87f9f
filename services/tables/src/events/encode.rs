//! Domain events -> protobuf: each [`TableEvent`] as the message it is stored as, which is
//! also the wire's `TableEvent` variant for it ([`to_message`]).

use fairdeal_games_wire::WireGame;
use fairdeal_games_wire::table::{
    command_message as command_ref, hand_started_message, seat_number,
};
use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::domain::{CommandRef, FinishReason, TableEvent};

/// A placeholder: an event the viewer may not see, shown by its version only.
pub fn placeholder() -> pb::TableEvent {
    pb::TableEvent {
        event: Some(pb::table_event::Event::Placeholder(pb::Placeholder {})),
    }
}

fn command_message(command: &CommandRef) -> pb::CommandRef {
    command_ref(
        command.command_id.clone(),
        command.version_after,
        command.next_turn,
    )
}

/// `event` of table `table_id` as its protobuf message, the variant of the wire's
/// `TableEvent` that carries it.
pub fn to_message<G: WireGame>(table_id: &str, event: &TableEvent<G>) -> pb::table_event::Event {
    use pb::table_event::Event as W;
    let id = || table_id.to_owned();
    match event {
        TableEvent::Created(c) => W::TableCreated(pb::TableCreated {
            table_id: id(),
            creator_id: c.creator.to_string(),
            options: Some(G::options_message(&c.options)),
            bot_seats: (0u32..)
                .zip(&c.bots)
                .filter(|(_, bot)| **bot)
                .map(|(n, _)| n)
                .collect(),
            move_seconds: c.move_seconds,
            commitment: c.commitment.clone(),
            short_code: c.short_code.clone(),
            first_dealer: seat_number(c.first_dealer),
            latest_end_ms: c.latest_end_ms.unwrap_or(0),
        }),
        TableEvent::SeatTaken { seat, player } => W::SeatTaken(pb::SeatTaken {
            table_id: id(),
            seat: seat_number(*seat),
            player_id: player.to_string(),
        }),
        TableEvent::SeatLeft { seat, player } => W::SeatLeft(pb::SeatLeft {
            table_id: id(),
            seat: seat_number(*seat),
            player_id: player.to_string(),
        }),
        TableEvent::SeedContributed {
            seat,
            player,
            contribution,
        } => W::SeedContributed(pb::SeedContributed {
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
        } => W::HandStarted(hand_started_message(
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
        } => W::CardsDealt(pb::CardsDealt {
            table_id: id(),
            hand: *hand,
            seat: seat_number(*seat),
            position: u32::from(*position),
            cards: G::card_codes(cards),
        }),
        TableEvent::TalonDealt { hand, cards } => W::TalonDealt(pb::TalonDealt {
            table_id: id(),
            hand: *hand,
            cards: G::card_codes(cards),
        }),
        TableEvent::GameFinished(f) => W::GameFinished(pb::GameFinished {
            table_id: id(),
            players: (0u32..)
                .zip(f.players.iter().zip(&f.abandoned))
                .map(|(seat, (player, abandoned))| pb::SeatPlayer {
                    seat,
                    player_id: player.map(|p| p.to_string()).unwrap_or_default(),
                    bot: player.is_none(),
                    abandoned: *abandoned,
                })
                .collect(),
            teams: (0u32..)
                .zip(&f.outcome.sides)
                .map(|(team, seats)| pb::TeamSeats {
                    team,
                    seats: seats.iter().copied().map(seat_number).collect(),
                })
                .collect(),
            final_scores: f.outcome.scores.clone(),
            // The first side placed first (a Jeu du 10 match has one winning team).
            winner: f.outcome.winners().next().map_or(0, |side| side as u32),
            variant: Some(G::options_message(&f.options)),
            hands_played: f.hands_played,
            reason: match f.reason {
                FinishReason::Completed => pb::FinishReason::Completed,
                FinishReason::Abandoned => pb::FinishReason::Abandoned,
            } as i32,
        }),
        TableEvent::Expired {
            latest_end_ms,
            hands_dealt,
        } => W::TableExpired(pb::TableExpired {
            table_id: id(),
            latest_end_ms: *latest_end_ms,
            hands_dealt: *hands_dealt,
        }),
        TableEvent::SeedRevealed {
            commitment,
            server_seed,
            client_seed,
        } => W::TableSeedRevealed(pb::TableSeedRevealed {
            table_id: id(),
            commitment: commitment.clone(),
            server_seed: server_seed.clone(),
            client_seed: client_seed.clone(),
        }),
        TableEvent::TurnClock { seat, deadline_ms } => W::TurnClock(pb::TurnClock {
            table_id: id(),
            seat: seat_number(*seat),
            deadline_ms: *deadline_ms,
        }),
        TableEvent::TurnTimedOut { seat, consecutive } => W::TurnTimedOut(pb::TurnTimedOut {
            table_id: id(),
            seat: seat_number(*seat),
            consecutive: *consecutive,
        }),
        TableEvent::SeatAbandoned { seat, player } => W::SeatAbandoned(pb::SeatAbandoned {
            table_id: id(),
            seat: seat_number(*seat),
            player_id: player.to_string(),
        }),
        TableEvent::SpectatorJoined { user } => W::SpectatorJoined(pb::SpectatorJoined {
            table_id: id(),
            user_id: user.to_string(),
        }),
        TableEvent::SpectatorLeft { user } => W::SpectatorLeft(pb::SpectatorLeft {
            table_id: id(),
            user_id: user.to_string(),
        }),
        TableEvent::Engine { event, command } => {
            G::event_message(table_id, event, command.as_ref().map(command_message))
        }
    }
}
