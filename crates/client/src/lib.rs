//! fairdeal-client: the platform as a client sees it, for bots, the all-in-one demo and
//! smoke tests against a deployment.
//!
//! - [`view`]: a seat's `GetTable` view as the rules engine's seat view, and the engine's
//!   heuristic bot choosing that seat's move from it (only what the server showed the seat).
//! - [`Player`]: a player's calls to the tables service with their access token, sent to
//!   each table's owner once an answer has named it when the player follows the owners
//!   ([`owners`]).
//! - [`seat_players`] and [`play_to_the_end`]: a table filled by players, each move chosen by
//!   the bot from the mover's own view (the turn view its watch stream brings), played until
//!   the game is finished and the seed is revealed.
#![forbid(unsafe_code)]

pub mod owners;
pub mod view;

use std::time::Duration;

use fairdeal_authn::{AccessToken, TokenError, attach_bearer};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use pb::act_request::Action;
use tokio_stream::{StreamExt, StreamMap};
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use uuid::Uuid;

pub use owners::Owners;
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

/// How long [`play_to_the_end`] waits for the next message on any of its players' streams.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How long [`while_unavailable`] (and so [`Player::act`]) keeps sending a call refused
/// UNAVAILABLE: a table whose replica
/// died moves to another within 5 s (docs/decisions.md, "Who owns a table").
pub const UNAVAILABLE_PATIENCE: Duration = Duration::from_secs(15);

/// A failed call that may say "unavailable: send it again" ([`while_unavailable`]).
pub trait Refusal {
    /// Whether the service answered UNAVAILABLE.
    fn unavailable(&self) -> bool;
}

impl Refusal for Status {
    fn unavailable(&self) -> bool {
        self.code() == Code::Unavailable
    }
}

impl Refusal for ClientError {
    fn unavailable(&self) -> bool {
        matches!(self, ClientError::Status(status) if status.unavailable())
    }
}

/// `send`'s answer, sent again while it is refused UNAVAILABLE (the table is changing
/// replicas, or its replica is restarting), pausing 50 ms doubling to 1 s, for up to
/// [`UNAVAILABLE_PATIENCE`]; any other answer, or the last refusal, is returned. `send`
/// must send the same message each time: a move keeps its command id, so it is applied
/// once.
pub async fn while_unavailable<T, E, F, Fut>(mut send: F) -> Result<T, E>
where
    E: Refusal,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let until = tokio::time::Instant::now() + UNAVAILABLE_PATIENCE;
    let mut pause = Duration::from_millis(50);
    loop {
        match send().await {
            Err(refused)
                if refused.unavailable() && tokio::time::Instant::now() + pause < until =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            answer => return answer,
        }
    }
}

/// A player (their user id and access token) and a tables service client.
#[derive(Debug, Clone)]
pub struct Player {
    /// The player's user id (the token's subject).
    pub id: Uuid,
    token: AccessToken,
    client: TablesServiceClient<Channel>,
    /// The tables' owners, when the player follows them ([`Player::following`]).
    owners: Option<Owners>,
}

/// A client of the tables service.
type Client = TablesServiceClient<Channel>;

impl Player {
    /// The player `id` holding `token`, calling the tables service on `channel`.
    pub fn new(id: Uuid, token: AccessToken, channel: Channel) -> Self {
        Player {
            id,
            token,
            client: TablesServiceClient::new(channel),
            owners: None,
        }
    }

    /// The same player, sending its calls for a table to the table's owner once an answer
    /// has named it (`fairdeal-table-owner`), and through its own channel while none has,
    /// or when that owner cannot be reached ([`owners`]). For a client that can reach the
    /// replicas' own addresses (a backend in the cluster); `owners` is shared by the
    /// players of a process.
    #[must_use]
    pub fn following(mut self, owners: Owners) -> Self {
        self.owners = Some(owners);
        self
    }

    /// `message` with the player's bearer token.
    pub fn request<T>(&self, message: T) -> Result<Request<T>, ClientError> {
        let mut request = Request::new(message);
        attach_bearer(&mut request, &self.token)?;
        Ok(request)
    }

    /// `message` for `table_id`, sent with `send` to the table's owner when the player
    /// follows a known one, else (or when that owner cannot be reached) through the
    /// player's own channel; the answer's owner is learnt.
    async fn call<T, R, F, Fut>(
        &self,
        table_id: &str,
        message: T,
        send: F,
    ) -> Result<R, ClientError>
    where
        T: Clone,
        F: Fn(Client, Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        if let Some(owners) = &self.owners
            && let Some((address, owner)) = owners.client(table_id)
        {
            match send(owner, self.request(message.clone())?).await {
                // It died or drained: the player's own replica serves the table, or knows
                // where it went.
                Err(status) if owners::unreachable(&status) => owners.forget(table_id, &address),
                answer => return Ok(self.answered(table_id, answer?)),
            }
        }
        let answer = send(self.client.clone(), self.request(message)?).await?;
        Ok(self.answered(table_id, answer))
    }

    /// `response`'s message, its owner learnt when the player follows the owners.
    fn answered<R>(&self, table_id: &str, response: tonic::Response<R>) -> R {
        if let Some(owners) = &self.owners {
            owners.learn(table_id, response.metadata());
        }
        response.into_inner()
    }

    /// Creates a table.
    pub async fn create_table(
        &self,
        request: pb::CreateTableRequest,
    ) -> Result<pb::CreateTableResponse, ClientError> {
        let request = self.request(request)?;
        let response = self.client.clone().create_table(request).await?;
        let table_id = response.get_ref().table_id.clone();
        Ok(self.answered(&table_id, response))
    }

    /// Sits at `seat`.
    pub async fn sit(&self, table_id: &str, seat: u32) -> Result<pb::SitResponse, ClientError> {
        let message = pb::SitRequest {
            table_id: table_id.to_owned(),
            seat,
        };
        self.call(table_id, message, |mut c, r| async move { c.sit(r).await })
            .await
    }

    /// Contributes `value` to the table's client seed; returns the version after it.
    pub async fn contribute(&self, table_id: &str, value: &str) -> Result<u64, ClientError> {
        let message = pb::ContributeSeedRequest {
            table_id: table_id.to_owned(),
            contribution: value.to_owned(),
        };
        let answer = self
            .call(table_id, message, |mut c, r| async move {
                c.contribute_seed(r).await
            })
            .await?;
        Ok(answer.version)
    }

    /// The player's view of the table.
    pub async fn view(&self, table_id: &str) -> Result<pb::TableView, ClientError> {
        let message = pb::GetTableRequest {
            table_id: table_id.to_owned(),
        };
        self.call(
            table_id,
            message,
            |mut c, r| async move { c.get_table(r).await },
        )
        .await?
        .table
        .ok_or_else(|| ViewError::missing("table").into())
    }

    /// Sends `action` as a command (a fresh command id) expecting `expected_version`;
    /// returns the version after it. A call refused UNAVAILABLE (the table is changing
    /// replicas, or its replica is restarting) is sent again with the same command id, so
    /// it is applied once, for up to [`UNAVAILABLE_PATIENCE`].
    pub async fn act(
        &self,
        table_id: &str,
        expected_version: u64,
        action: Action,
    ) -> Result<u64, ClientError> {
        let message = pb::ActRequest {
            table_id: table_id.to_owned(),
            expected_version,
            command_id: Uuid::now_v7().to_string(),
            action: Some(action),
        };
        while_unavailable(|| async {
            let answer = self
                .call(table_id, message.clone(), |mut c, r| async move {
                    c.act(r).await
                })
                .await?;
            Ok(answer.version)
        })
        .await
    }

    /// The player's view of the table's events after `after_version`, then live.
    pub async fn watch(
        &self,
        table_id: &str,
        after_version: u64,
        turn_views: bool,
    ) -> Result<tonic::Streaming<pb::WatchResponse>, ClientError> {
        let message = pb::WatchRequest {
            table_id: table_id.to_owned(),
            after_version,
            turn_views,
        };
        self.call(
            table_id,
            message,
            |mut c, r| async move { c.watch(r).await },
        )
        .await
    }
}

/// The request's action that makes `legal`, one of a view's legal moves, as it is (every
/// game's moves: a legal move is sent back as the same value).
pub fn action_of(legal: &pb::LegalAction) -> Option<Action> {
    use pb::act_request::Action;
    use pb::legal_action::Action as Legal;
    Some(match legal.action.clone()? {
        Legal::Bid(bid) => Action::Bid(bid),
        Legal::Pass(pass) => Action::Pass(pass),
        Legal::NameTrump(suit) => Action::NameTrump(suit),
        Legal::PlayCard(card) => Action::PlayCard(card),
        Legal::TarotBid(bid) => Action::TarotBid(bid),
        Legal::TarotCallKing(card) => Action::TarotCallKing(card),
        Legal::TarotDiscard(card) => Action::TarotDiscard(card),
        Legal::TarotDeclareChelem(chelem) => Action::TarotDeclareChelem(chelem),
        Legal::TarotShowPoignee(poignee) => Action::TarotShowPoignee(poignee),
        Legal::TarotPlayCard(card) => Action::TarotPlayCard(card),
    })
}

/// Whether the table is over for a client: finished (or expired at its latest end), and
/// the server seed revealed.
pub fn is_over(view: &pb::TableView) -> bool {
    (view.status == pb::TableStatus::Finished as i32
        || view.status == pb::TableStatus::Expired as i32)
        && !view.server_seed.is_empty()
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

/// Plays table `table_id` to its end from the players' own watch streams: each of `players`
/// watches with turn views, and whenever one's stream brings its view (its seat is to act),
/// the engine's bot (seeded with `seed` and the seat) chooses the move from that view,
/// `on_move` sees it, and it is sent. Seats held by the engine's bot or by others are left to
/// them. Returns the final view of `players[0]` once the game is finished and the seed
/// revealed.
pub async fn play_to_the_end(
    table_id: &str,
    players: &[Player],
    seed: u64,
    mut on_move: impl FnMut(u32, &Action),
) -> Result<pb::TableView, ClientError> {
    play(table_id, players, |view, seat| {
        let Some(action) = choose(view, seed ^ u64::from(seat))? else {
            return Err(ClientError::NoMove {
                table_id: table_id.to_owned(),
                seat,
            });
        };
        on_move(seat, &action);
        Ok(Some(action))
    })
    .await
}

/// Plays table `table_id` from the players' own watch streams: each of `players` watches
/// with turn views, and whenever one's stream brings its view (its seat, the second
/// argument, is to act), `decide` answers the move to send, or `None` to stop there. Seats
/// held by the engine's bot or by others are left to them. Returns the view `decide`
/// stopped at, or the final view of `players[0]` once the game is finished and the seed
/// revealed.
pub async fn play(
    table_id: &str,
    players: &[Player],
    mut decide: impl FnMut(&pb::TableView, u32) -> Result<Option<Action>, ClientError>,
) -> Result<pb::TableView, ClientError> {
    let Some(first) = players.first() else {
        return Err(ViewError::missing("players").into());
    };
    // Each feed ends with `None`, so a stream that ends is told apart from a quiet one.
    let mut feeds = StreamMap::new();
    for (index, player) in players.iter().enumerate() {
        let stream = player.watch(table_id, 0, true).await?;
        feeds.insert(index, stream.map(Some).chain(tokio_stream::once(None)));
    }
    let mut version = 0;
    loop {
        let next = tokio::time::timeout(PATIENCE, feeds.next())
            .await
            .map_err(|_| ClientError::Stuck {
                table_id: table_id.to_owned(),
                seconds: PATIENCE.as_secs(),
                version,
            })?;
        let Some((index, Some(message))) = next else {
            return Err(ClientError::WatchEnded(table_id.to_owned()));
        };
        let message = message?;
        version = version.max(message.version);
        if matches!(
            message.event.as_ref().and_then(|e| e.event.as_ref()),
            Some(pb::table_event::Event::TableSeedRevealed(_))
        ) {
            let view = first.view(table_id).await?;
            if is_over(&view) {
                return Ok(view);
            }
            continue;
        }
        // A view comes only with the message after which this player's seat is to act.
        let (Some(view), Some(player)) = (message.view, players.get(index)) else {
            continue;
        };
        let Some(seat) = view.game.as_ref().and_then(|g| g.my_seat) else {
            continue;
        };
        let Some(action) = decide(&view, seat)? else {
            return Ok(view);
        };
        match player.act(table_id, view.version, action).await {
            Ok(_) => {}
            // The table moved past the view (a timeout, another replica): the stream brings
            // what happened, and a new view when the seat is to act again.
            Err(ClientError::Status(s)) if s.code() == Code::Aborted => {}
            Err(e) => return Err(e),
        }
    }
}
