//! The gRPC adapter: the caller (a player token; services are refused), request parsing
//! into domain types (INVALID_ARGUMENT naming the field, values quoted through
//! `fairdeal_kit::status::shown`), and the wire mapping of answers and errors.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use fairdeal_authn::Caller;
use fairdeal_kit::ServiceError;
use fairdeal_kit::status::shown;
use fairdeal_platform::RunError;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::tables_service_server::TablesService;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::domain;
use crate::lobby::LobbyQuery;
use crate::route::{
    AfterFence, FORWARDED_BY, Forward, HANDOVER_WAIT, Peer, Relay, Router, SharedRouter, Source,
};
use crate::service::{Failure, Tables, TablesError, fenced_partition, moved_away};
use crate::{Game, TableError};
use fairdeal_games_wire::WireGame;
use fairdeal_table_game::MAX_SEATS;

/// How many times a `CreateTable` is tried when the new table's partition leaves the
/// replica before the table is written (each try draws a new id; a drain moves partitions
/// once, so a second try lands unless the replicas are changing constantly).
const CREATE_ATTEMPTS: u32 = 3;

/// Metadata key of the table's current version on an ABORTED (stale version) answer.
pub const VERSION_METADATA: &str = "fairdeal-table-version";

/// The tonic service.
#[derive(Clone, Debug)]
pub struct TablesApi {
    /// The use cases.
    tables: Tables,
    /// Where other replicas' tables are served (`None`: every table is served here).
    router: Option<SharedRouter>,
}

impl TablesApi {
    /// An API over `tables`, serving every table here.
    pub fn new(tables: Tables) -> Self {
        TablesApi {
            tables,
            router: None,
        }
    }

    /// The same API forwarding calls for tables other replicas own to them (`route.rs`).
    #[must_use]
    pub fn routing(mut self, router: Router) -> Self {
        self.router = Some(Arc::new(router));
        self
    }

    /// A relay of `player`'s watch of `table_id` asked by `request` (`route.rs`).
    fn relay(&self, request: &Request<pb::WatchRequest>, player: Uuid, table_id: Uuid) -> Relay {
        Relay {
            tables: self.tables.clone(),
            router: self.router.clone(),
            player,
            table_id,
            metadata: request.metadata().clone(),
            watch: request.get_ref().clone(),
        }
    }

    /// `response` for `table_id`, naming this replica as its owner when it is
    /// ([`crate::route::OWNER`]).
    fn hinted<R>(&self, table_id: &Uuid, response: Response<R>) -> Response<R> {
        match &self.router {
            Some(router) => router.hint(table_id, response),
            None => response,
        }
    }

    /// A command for `table_id`: sent to the table's owner with `send` when another replica
    /// owns it, decided here with `decide` otherwise. When this replica turns out not to hold
    /// the table's partition as it writes (nothing was written: the table is moving, its
    /// lease lapsed and is being taken again, or its owner could not be reached), it is
    /// decided here again once the partition is held under a new lease, or sent to the owner
    /// the routes name then, one that was not just found unreachable
    /// ([`Router::after_fence`]), for [`HANDOVER_WAIT`] at most: so a command in flight
    /// during a drain, or sent while its table's owner has just died, is answered.
    async fn decided<T, R, S, SF, D, DF>(
        &self,
        request: &Request<T>,
        table_id: &Uuid,
        send: S,
        decide: D,
    ) -> Result<Response<R>, Status>
    where
        T: Clone,
        S: FnOnce(Peer, Request<T>) -> SF + Copy,
        SF: Future<Output = Result<Response<R>, Status>>,
        D: Fn() -> DF,
        DF: Future<Output = Result<Response<R>, Failure>>,
    {
        let mut unreached = None;
        if let Some(forward) = self.forward(request, table_id)
            && let Some(answer) = forward.send_noting(send, &mut unreached).await
        {
            return answer;
        }
        let deadline = tokio::time::Instant::now() + HANDOVER_WAIT;
        loop {
            let decided_under = self.router.as_ref().and_then(|r| r.held(table_id));
            let failure = match decide().await {
                Ok(response) => return Ok(self.hinted(table_id, response)),
                Err(failure) => failure,
            };
            let Some(router) = self.router.as_ref().filter(|_| moved_away(&failure)) else {
                return Err(status(failure));
            };
            // Until the partition is held here again (decided again) or the wait runs out.
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                let next = router
                    .after_fence(request, table_id, decided_under, unreached.as_deref(), left)
                    .await;
                match next {
                    AfterFence::Here => break,
                    AfterFence::There(forward) => {
                        if let Some(answer) = forward.send_noting(send, &mut unreached).await {
                            return answer;
                        }
                    }
                    AfterFence::Refused => return Err(status(failure)),
                }
            }
        }
    }

    /// The call `request` for `table_id` on its way to the table's owner; `None`: served
    /// here.
    fn forward<T: Clone>(&self, request: &Request<T>, table_id: &Uuid) -> Option<Forward<T>> {
        self.router.as_ref()?.forward(request, table_id)
    }
}

/// The calling player (service tokens are refused: every method acts for a player).
fn player<T>(request: &Request<T>) -> Result<Uuid, Status> {
    Caller::from_request(request)?.player_id()
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Status {
    Status::from(ServiceError::InvalidArgument(format!(
        "{field}: {}",
        reason.into()
    )))
}

/// A request field the game's wire mapping refuses (it names the field).
fn wire_invalid(error: fairdeal_games_wire::WireError) -> Status {
    Status::from(ServiceError::InvalidArgument(error.to_string()))
}

fn table_id(value: &str) -> Result<Uuid, Status> {
    Uuid::parse_str(value)
        .map_err(|_| invalid("table_id", format!("\"{}\" is not a UUID", shown(value))))
}

/// A failure on the wire; a stale version carries the current one in the metadata too.
pub fn status(failure: Failure) -> Status {
    let current = match &failure {
        RunError::Rejected(TablesError::Table(TableError::Stale { current, .. })) => Some(*current),
        RunError::Contended { version, .. } => Some(*version),
        _ => None,
    };
    let mut status = Status::from(ServiceError::from(failure));
    if let Some(version) = current {
        status
            .metadata_mut()
            .insert(VERSION_METADATA, MetadataValue::from(version));
    }
    status
}

fn domain_invalid(error: TableError) -> Status {
    Status::from(ServiceError::from(TablesError::Table(error)))
}

fn lobby_query(r: &pb::ListTablesRequest) -> Result<LobbyQuery, Status> {
    let min_open_seats = match r.min_open_seats {
        0 => 1,
        n @ 1..=4 => n,
        n => {
            return Err(invalid(
                "min_open_seats",
                format!("{n} is out of range (1..=4)"),
            ));
        }
    };
    let limit = match r.limit {
        0 => 50,
        n @ 1..=100 => n,
        n => return Err(invalid("limit", format!("{n} is out of range (1..=100)"))),
    };
    let mut query = LobbyQuery {
        min_open_seats,
        limit,
        ..LobbyQuery::default()
    };
    if let Some(v) = &r.variant {
        if let Some(deck) = v.deck {
            query.deck = Some(match pb::Deck::try_from(deck) {
                Ok(pb::Deck::Unspecified | pb::Deck::Dix) => "dix".to_owned(),
                Ok(pb::Deck::Ruff) => "ruff".to_owned(),
                Err(_) => return Err(invalid("variant.deck", format!("unknown value {deck}"))),
            });
        }
        query.penalised_aces = v.penalised_aces;
        query.made_or_nothing = v.made_or_nothing;
        if let Some(purchase) = v.purchase {
            query.purchase = Some(match pb::Purchase::try_from(purchase) {
                Ok(pb::Purchase::Unspecified) => "",
                Ok(pb::Purchase::Points) => "points",
                Ok(pb::Purchase::Budget) => "budget",
                Err(_) => {
                    return Err(invalid(
                        "variant.purchase",
                        format!("unknown value {purchase}"),
                    ));
                }
            });
        }
    }
    Ok(query)
}

/// A seed contribution, checked here by the one rule the commitment service applies too
/// (`fairdeal_fairness::client_seed::check_contribution`: 1 to 128 characters, nothing
/// invisible), so a player is never told more or less than tables.proto promises.
fn contribution(value: &str) -> Result<String, Status> {
    fairdeal_fairness::client_seed::check_contribution(value)
        .map_err(|e| invalid("contribution", e.to_string()))?;
    Ok(value.to_owned())
}

/// The stream of `Watch`.
type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchResponse, Status>> + Send>>;

#[tonic::async_trait]
impl TablesService for TablesApi {
    async fn create_table(
        &self,
        request: Request<pb::CreateTableRequest>,
    ) -> Result<Response<pb::CreateTableResponse>, Status> {
        let creator = player(&request)?;
        let options = Game::options_of("options", request.get_ref().options.as_ref())
            .map_err(wire_invalid)?;
        let send = |mut p: Peer, r| async move { p.create_table(r).await };
        let mut attempt = 1;
        let created = loop {
            // A replica holding no partition (yet, or any more) has the table created where
            // it can be written.
            if let Some(forward) = self
                .router
                .as_ref()
                .and_then(|router| router.forward_creation(&request))
                && let Some(answer) = forward.send(send).await
            {
                return answer;
            }
            let r = request.get_ref();
            let held = self.router.as_ref().map(|router| router.epochs());
            match self
                .tables
                .create(
                    creator,
                    options.clone(),
                    &r.bot_seats,
                    r.move_seconds,
                    r.timelock_seconds,
                )
                .await
            {
                Ok(created) => break created,
                // The new table's partition left this replica between the draw of its id
                // and its first append (a drain): nothing of the table was written. It is
                // created again under an id drawn in a partition held now; the first id's
                // commitment stays unused, as an abandoned table's does.
                Err(failure) if moved_away(&failure) && attempt < CREATE_ATTEMPTS => {
                    attempt += 1;
                    tracing::info!(
                        attempt,
                        "the new table's partition changed hands before it was written; creating it again"
                    );
                    // Its lease lapsed rather than left (a renewal that came too late):
                    // tried again once the keeper has taken the partitions again.
                    if let (Some(router), Some(partition), Some(held)) =
                        (&self.router, fenced_partition(&failure), &held)
                    {
                        let epoch = held.get(&partition).copied();
                        router.lease_changed(partition, epoch, HANDOVER_WAIT).await;
                    }
                }
                Err(failure) => return Err(status(failure)),
            }
        };
        Ok(self.hinted(
            &created.table_id,
            Response::new(pb::CreateTableResponse {
                table_id: created.table_id.to_string(),
                version: created.version,
                commitment: created.commitment,
                short_code: created.short_code,
            }),
        ))
    }

    async fn list_tables(
        &self,
        request: Request<pb::ListTablesRequest>,
    ) -> Result<Response<pb::ListTablesResponse>, Status> {
        player(&request)?;
        let query = lobby_query(request.get_ref())?;
        let tables = self.tables.list(&query).await.map_err(status)?;
        Ok(Response::new(pb::ListTablesResponse { tables }))
    }

    async fn sit(
        &self,
        request: Request<pb::SitRequest>,
    ) -> Result<Response<pb::SitResponse>, Status> {
        let me = player(&request)?;
        let id = table_id(&request.get_ref().table_id)?;
        let seat = domain::seat_number("seat", request.get_ref().seat, MAX_SEATS)
            .map_err(domain_invalid)?;
        let tables = &self.tables;
        self.decided(
            &request,
            &id,
            |mut p: Peer, r| async move { p.sit(r).await },
            move || async move {
                let (version, commitment, short_code) = tables.sit(me, id, seat).await?;
                Ok(Response::new(pb::SitResponse {
                    version,
                    seat: u32::from(seat.number()),
                    commitment,
                    short_code,
                }))
            },
        )
        .await
    }

    async fn leave(
        &self,
        request: Request<pb::LeaveRequest>,
    ) -> Result<Response<pb::LeaveResponse>, Status> {
        let me = player(&request)?;
        let id = table_id(&request.get_ref().table_id)?;
        let tables = &self.tables;
        self.decided(
            &request,
            &id,
            |mut p: Peer, r| async move { p.leave(r).await },
            move || async move {
                let version = tables.leave(me, id).await?;
                Ok(Response::new(pb::LeaveResponse { version }))
            },
        )
        .await
    }

    async fn contribute_seed(
        &self,
        request: Request<pb::ContributeSeedRequest>,
    ) -> Result<Response<pb::ContributeSeedResponse>, Status> {
        let me = player(&request)?;
        let id = table_id(&request.get_ref().table_id)?;
        let value = contribution(&request.get_ref().contribution)?;
        let (tables, value) = (&self.tables, &value);
        self.decided(
            &request,
            &id,
            |mut p: Peer, r| async move { p.contribute_seed(r).await },
            move || async move {
                let version = tables.contribute(me, id, value.clone()).await?;
                Ok(Response::new(pb::ContributeSeedResponse { version }))
            },
        )
        .await
    }

    async fn get_table(
        &self,
        request: Request<pb::GetTableRequest>,
    ) -> Result<Response<pb::GetTableResponse>, Status> {
        let me = player(&request)?;
        let id = table_id(&request.get_ref().table_id)?;
        if let Some(forward) = self.forward(&request, &id)
            && let Some(answer) = forward
                .send(|mut p, r| async move { p.get_table(r).await })
                .await
        {
            return answer;
        }
        let table = self.tables.view(me, id).await.map_err(status)?;
        Ok(self.hinted(
            &id,
            Response::new(pb::GetTableResponse { table: Some(table) }),
        ))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let me = player(&request)?;
        let id = table_id(&request.get_ref().table_id)?;
        if let Some(forward) = self.forward(&request, &id) {
            let address = forward.address.clone();
            match forward
                .send(|mut p, r| async move { p.watch(r).await })
                .await
            {
                Some(Ok(stream)) => {
                    // The owner's headers (its name among them) go back with the stream.
                    let (metadata, stream, _) = stream.into_parts();
                    let relayed = self
                        .relay(&request, me, id)
                        .stream(address, Source::Owner(Box::new(stream)));
                    return Ok(Response::from_parts(
                        metadata,
                        Box::pin(relayed) as WatchStream,
                        tonic::Extensions::default(),
                    ));
                }
                Some(Err(status)) => return Err(status),
                None => {}
            }
        }
        let r = request.get_ref();
        let rx = self
            .tables
            .watch(me, id, r.after_version, r.turn_views)
            .await
            .map_err(status)?;
        // With several replicas a client's own watch is relayed, so that when the table
        // moves to another replica the watch goes on there. A watch forwarded by another
        // replica just ends: that replica's relay opens it again at the new owner.
        if self.router.is_some() && !request.metadata().contains_key(FORWARDED_BY) {
            let relayed = self
                .relay(&request, me, id)
                .stream(String::new(), Source::Here(rx));
            return Ok(self.hinted(&id, Response::new(Box::pin(relayed))));
        }
        Ok(self.hinted(&id, Response::new(Box::pin(ReceiverStream::new(rx)))))
    }

    async fn act(
        &self,
        request: Request<pb::ActRequest>,
    ) -> Result<Response<pb::ActResponse>, Status> {
        let me = player(&request)?;
        let r = request.get_ref();
        let id = table_id(&r.table_id)?;
        let command_id = domain::parse_command_id(&r.command_id).map_err(domain_invalid)?;
        let command = Game::act_command(r).map_err(wire_invalid)?;
        let (tables, expected, command_id, command) =
            (&self.tables, r.expected_version, &command_id, &command);
        self.decided(
            &request,
            &id,
            |mut p: Peer, r| async move { p.act(r).await },
            move || async move {
                let version = tables.act(me, id, expected, command_id, command).await?;
                Ok(Response::new(pb::ActResponse { version }))
            },
        )
        .await
    }

    async fn spectate(
        &self,
        request: Request<pb::SpectateRequest>,
    ) -> Result<Response<pb::SpectateResponse>, Status> {
        let me = player(&request)?;
        let id = table_id(&request.get_ref().table_id)?;
        let tables = &self.tables;
        self.decided(
            &request,
            &id,
            |mut p: Peer, r| async move { p.spectate(r).await },
            move || async move {
                let version = tables.spectate(me, id).await?;
                Ok(Response::new(pb::SpectateResponse { version }))
            },
        )
        .await
    }

    async fn stop_spectating(
        &self,
        request: Request<pb::StopSpectatingRequest>,
    ) -> Result<Response<pb::StopSpectatingResponse>, Status> {
        let me = player(&request)?;
        let id = table_id(&request.get_ref().table_id)?;
        let tables = &self.tables;
        self.decided(
            &request,
            &id,
            |mut p: Peer, r| async move { p.stop_spectating(r).await },
            move || async move {
                let version = tables.stop_spectating(me, id).await?;
                Ok(Response::new(pb::StopSpectatingResponse { version }))
            },
        )
        .await
    }
}
