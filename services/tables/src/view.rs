//! A table as one caller sees it (`GetTable`): the game's seat view for a seated player
//! (its own hand and legal moves), its public view for anyone else. Never another seat's
//! hand: the game's views hold none. The game's part is its view through its wire mapping
//! (`fairdeal_games_wire::WireGame`, which the client reads it back with); the table's
//! (status, seats, seeds) is added here.

use fairdeal_games_wire::WireGame;
use fairdeal_games_wire::table::seat_number;
use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::domain::{Table, Viewer};

/// The view of `table` for `viewer`, who `spectating` or not.
pub fn table_view<G: WireGame>(
    table: &Table<G>,
    viewer: Viewer,
    spectating: bool,
) -> pb::TableView {
    let seat_view = match viewer {
        Viewer::Seat(seat) => table.game.seat_view(seat),
        Viewer::Spectator => None,
    };
    let game = match seat_view {
        Some(seen) => G::seat_game_view(&seen),
        None => G::game_view(&table.game.public_view()),
    };
    let status = if table.finished.is_some() {
        pb::TableStatus::Finished
    } else if table.expired {
        pb::TableStatus::Expired
    } else if table.started() {
        pb::TableStatus::Playing
    } else {
        pb::TableStatus::Open
    };
    pb::TableView {
        table_id: table.id().to_string(),
        version: table.version,
        status: status.into(),
        options: Some(G::options_message(&table.created.options)),
        move_seconds: table.created.move_seconds,
        seats: table
            .seats()
            .map(|s| pb::SeatInfo {
                seat: seat_number(s),
                player_id: table
                    .player_at(s)
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                bot: table.is_bot(s),
                contributed: table.contributed.get(s.index()).copied().unwrap_or(false),
                timeouts: table.timeouts.get(s.index()).copied().unwrap_or(0),
                abandoned: table.abandoned.get(s.index()).copied().unwrap_or(false),
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
        latest_end_ms: table.created.latest_end_ms,
    }
}
