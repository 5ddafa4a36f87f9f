//! fairdeal-client: the platform as a client sees it, for bots, the all-in-one demo and
//! smoke tests against a deployment.
//!
//! - [`view`]: a seat's `GetTable` view as the rules engine's seat view, and the engine's
//!   heuristic bot choosing that seat's move from it (only what the server showed the seat).
//! - [`Player`]: a player's calls to the tables service with their access token.
//! - [`seat_players`] and [`play_to_the_end`]: a table filled by players, each move chosen by
//!   the bot from the mover's own view, played until the game is finished and the seed is
//!   revealed.
#![forbid(unsafe_code)]

pub mod view;

use std::time::Duration;

use fairdeal_authn::{AccessToken, TokenError, attach_bearer};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use pb::act_request::Action;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use uuid::Uuid;

pub use view::{ViewError, choose};

/// Why a client call or a game played through the API failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The service answered with an error.
    #[error("{}: {}", .0.code(), .0.message())]
    Status(#[from] Status),
    /// The token cannot travel as a header.
    #[error("token: {0}")]
    Token(#[from] TokenError),
    /// The server sent a view the engine cannot read.
    #[error(transparent)]
    View(#[from] ViewError),
    /// Nothing happened at the table for too long (no seat to act, no event).
    #[error("table {table_id}: no progress for {seconds} s at version {version}")]
    Stuck {
        /// The table.
        table_id: String,
        /// How long we waited.
        seconds: u64,
        /// The last version seen.
        version: u64,
    },
    /// The watch stream ended while the game was still on.
    #[error("table {0}: the watch stream ended before the game did")]
    WatchEnded(String),
    /// The seat to act has no legal move in its own view.
    #[error("table {table_id}: seat {seat} must act but its view offers no move")]
    NoMove {
        /// The table.
        table_id: String,
        /// The seat.
        seat: u32,
    },
}

/// How long [`play_to_the_end`] waits for the table to move when no seat it plays is to act.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A player (their user id and access token) and a tables service client.
#[derive(Debug, Clone)]
pub struct Player {
    /// The player's user id (the token's subject).
    pub id: Uuid,
    token: AccessToken,
    client: TablesServiceClient<Channel>,
}

impl Player {
    /// The player `id` holding `token`, calling the tables service on `channel`.
    pub fn new(id: Uuid, token: AccessToken, channel: Channel) -> Self {
        Player {
            id,
            token,
            client: TablesServiceClient::new(channel),
        }
    }

    /// `message` with the player's bearer token.
    pub fn request<T>(&self, message: T) -> Result<Request<T>, ClientError> {
        let mut request = Request::new(message);
        attach_bearer(&mut request, &self.token)?;
        Ok(request)
    }

    /// Creates a table.
    pub async fn create_table(
        &self,
        request: pb::CreateTableRequest,
    ) -> Result<pb::CreateTableResponse, ClientError> {
        let request = self.request(request)?;
        Ok(self
            .client
            .clone()
            .create_table(request)
            .await?
            .into_inner())
    }

    /// Sits at `seat`.
    pub async fn sit(&self, table_id: &str, seat: u32) -> Result<pb::SitResponse, ClientError> {
        let request = self.request(pb::SitRequest {
            table_id: table_id.to_owned(),
            seat,
        })?;
        Ok(self.client.clone().sit(request).await?.into_inner())
    }

    /// Contributes `value` to the table's client seed; returns the version after it.
    pub async fn contribute(&self, table_id: &str, value: &str) -> Result<u64, ClientError> {
        let request = self.request(pb::ContributeSeedRequest {
            table_id: table_id.to_owned(),
            contribution: value.to_owned(),
        })?;
        Ok(self
            .client
            .clone()
            .contribute_seed(request)
            .await?
            .into_inner()
            .version)
    }

    /// The player's view of the table.
    pub async fn view(&self, table_id: &str) -> Result<pb::TableView, ClientError> {
        let request = self.request(pb::GetTableRequest {
            table_id: table_id.to_owned(),
        })?;
        self.client
            .clone()
            .get_table(request)
            .await?
            .into_inner()
            .table
            .ok_or_else(|| ViewError { field: "table" }.into())
    }

    /// Sends `action` as a command (a fresh command id) expecting `expected_version`;
    /// returns the version after it.
    pub async fn act(
        &self,
        table_id: &str,
        expected_version: u64,
        action: Action,
    ) -> Result<u64, ClientError> {
        let request = self.request(pb::ActRequest {
            table_id: table_id.to_owned(),
            expected_version,
            command_id: Uuid::now_v7().to_string(),
            action: Some(action),
        })?;
        Ok(self.client.clone().act(request).await?.into_inner().version)
    }

    /// The player's view of the table's events after `after_version`, then live.
    pub async fn watch(
        &self,
        table_id: &str,
        after_version: u64,
        turn_views: bool,
    ) -> Result<tonic::Streaming<pb::WatchResponse>, ClientError> {
        let request = self.request(pb::WatchRequest {
            table_id: table_id.to_owned(),
            after_version,
            turn_views,
        })?;
        Ok(self.client.clone().watch(request).await?.into_inner())
    }
}

/// Whether the table is over for a client: finished, and the server seed revealed.
pub fn is_over(view: &pb::TableView) -> bool {
    view.status == pb::TableStatus::Finished as i32 && !view.server_seed.is_empty()
}

/// Seats `players` at seats 0, 1, 2... of table `table_id` in order; each but the last
/// contributes `"<prefix> <seat>"` to the client seed as soon as seated (the last seat
/// filled starts the match and deals the first hand, which fixes the client seed).
pub async fn seat_players(
    table_id: &str,
    players: &[Player],
    contribution_prefix: &str,
) -> Result<(), ClientError> {
    let last = players.len().saturating_sub(1);
    for (seat, player) in (0u32..).zip(players) {
        player.sit(table_id, seat).await?;
        if (seat as usize) < last {
            player
                .contribute(table_id, &format!("{contribution_prefix} {seat}"))
                .await?;
        }
    }
    Ok(())
}

/// Plays table `table_id` to its end: whenever a seat held by one of `players` is to act,
/// that player's own view is read and the engine's bot (seeded with `seed` and the seat)
/// chooses the move, which `on_move` sees before it is sent. Seats held by the engine's bot
/// or by others are left to them (this waits on `players[0]`'s watch stream). Returns the
/// final view of `players[0]` once the game is finished and the seed revealed.
pub async fn play_to_the_end(
    table_id: &str,
    players: &[Player],
    seed: u64,
    mut on_move: impl FnMut(u32, &Action),
) -> Result<pb::TableView, ClientError> {
    let Some(first) = players.first() else {
        return Err(ViewError { field: "players" }.into());
    };
    let mut watch = first.watch(table_id, 0, false).await?;
    loop {
        let view = first.view(table_id).await?;
        if is_over(&view) {
            return Ok(view);
        }
        let turn = view.game.as_ref().and_then(|g| g.turn);
        let mover = turn.and_then(|turn| {
            let holder = view.seats.iter().find(|s| s.seat == turn)?;
            players
                .iter()
                .find(|p| !holder.bot && holder.player_id == p.id.to_string())
                .map(|p| (turn, p))
        });
        if let Some((seat, player)) = mover {
            let mine = player.view(table_id).await?;
            let Some(action) = choose(&mine, seed ^ u64::from(seat))? else {
                if mine.game.as_ref().and_then(|g| g.turn) == Some(seat) {
                    return Err(ClientError::NoMove {
                        table_id: table_id.to_owned(),
                        seat,
                    });
                }
                continue; // the turn moved on between the two reads
            };
            on_move(seat, &action);
            match player.act(table_id, mine.version, action).await {
                Ok(_) => {}
                // The table moved between our read and our command (a timeout, another
                // replica): read again.
                Err(ClientError::Status(s)) if s.code() == Code::Aborted => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        // Nobody we play is to act: wait for the table's next event.
        match tokio::time::timeout(PATIENCE, watch.message()).await {
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => return Err(ClientError::WatchEnded(table_id.to_owned())),
            Ok(Err(status)) => return Err(status.into()),
            Err(_) => {
                return Err(ClientError::Stuck {
                    table_id: table_id.to_owned(),
                    seconds: PATIENCE.as_secs(),
                    version: view.version,
                });
            }
        }
    }
}
