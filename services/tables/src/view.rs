//! A table as one caller sees it (`GetTable`): the engine's seat view for a seated player
//! (its own hand and legal moves), its public view for anyone else. Never another seat's
//! hand: the engine's views hold none. The game's part is the engine's view through the one
//! wire mapping (`fairdeal_games_wire::jeu_du_10`, which the client reads it back with);
//! the table's (status, seats, seeds) is added here.

use fairdeal_games::Seat;
use fairdeal_games_wire::jeu_du_10::{game_view, options_message, seat_game_view, seat_number};
use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::domain::{Table, Viewer};

/// The view of `table` for `viewer`, who `spectating` or not.
pub fn table_view(table: &Table, viewer: Viewer, spectating: bool) -> pb::TableView {
    let game = match viewer {
        Viewer::Seat(seat) => seat_game_view(&table.game.seat_view(seat)),
        Viewer::Spectator => game_view(&table.game.public_view()),
    };
    let status = if table.finished.is_some() {
        pb::TableStatus::Finished
    } else if table.started() {
        pb::TableStatus::Playing
    } else {
        pb::TableStatus::Open
    };
    pb::TableView {
        table_id: table.id().to_string(),
        version: table.version,
        status: status.into(),
        options: Some(options_message(&table.created.options)),
        move_seconds: table.created.move_seconds,
        seats: Seat::ALL
            .into_iter()
            .map(|s| pb::SeatInfo {
                seat: seat_number(s),
                player_id: table.players[s.index()]
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                bot: table.created.bots[s.index()],
                contributed: table.contributed[s.index()],
                timeouts: table.timeouts[s.index()],
                abandoned: table.abandoned[s.index()],
            })
            .collect(),
        commitment: table.created.commitment.clone(),
        short_code: table.created.short_code.clone(),
        client_seed: table.client_seed.clone().unwrap_or_default(),
        server_seed: table.server_seed.clone().unwrap_or_default(),
        game: Some(game),
        turn_deadline_ms: table.deadline.map(|(_, deadline)| deadline),
        spectators: u32::try_from(table.spectators.len()).unwrap_or(u32::MAX),
        spectating,
    }
}
