//! The tables use cases: every change runs through `Streams<Table>` (queue per table,
//! decide on the folded state, append with the expected version), and the fairness flow
//! goes through the commitment and dealing services with this service's own token.
//!
//! After a command, the table is *advanced*: whatever it needs that no player gives (the
//! next hand from the dealing service, a bot's move, the seed reveal at the end) is done
//! step by step, each step its own decision on the current state, so two callers (or two
//! replicas) advancing the same table at once only ever append a step once. A table left
//! mid-step (a crash, a dependency down) resumes at its next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use fairdeal_authn::{TokenProvider, TokenUnavailable, attach_bearer};
use fairdeal_bus::AppendSignal;
use fairdeal_db::Db;
use fairdeal_eventstore::{EventStore, StoreError};
use fairdeal_kit::propagation::{TraceContextInterceptor, traced as traced_channel};
use fairdeal_kit::{ServiceError, Shutdown};
use fairdeal_platform::{Decision, RunError, Snapshot, Streams};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_client::DealingServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::{Deal, Seat, TableGame};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use uuid::Uuid;

use crate::clock::TableClock;
use crate::domain::{self, DealtHand, FIRST_DEALER, Next, Setup};
use crate::lobby::{self, LobbyQuery};
use crate::timers::Timers;
pub use crate::timers::{OwedSteps, Ownership};
use crate::view;
use crate::{Decided, Game, Table, TableError, TableEvent};

/// Most steps one advance takes (a whole match is a few thousand events; this only stops a
/// runaway loop).
const MAX_STEPS: usize = 20_000;
/// Most ids drawn for a new table looking for one in a partition this replica holds.
const NEW_ID_DRAWS: usize = 256;
/// The first pause before a failed step is taken again.
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest pause between retries of a failed step.
const RETRY_LONGEST: std::time::Duration = std::time::Duration::from_secs(1);

/// Everything a use case can fail with.
#[derive(Debug, thiserror::Error)]
pub enum TablesError {
    /// The table refused (a rule, a seat, a version).
    #[error(transparent)]
    Table(#[from] TableError),
    /// Another service refused or failed.
    #[error("{service} service: {}", status.message())]
    Upstream {
        /// `commitment` or `dealing`.
        service: &'static str,
        /// Its answer.
        status: Status,
    },
    /// Another service answered something this one cannot use.
    #[error("{service} service answered an unusable {what}")]
    BadAnswer {
        /// `commitment` or `dealing`.
        service: &'static str,
        /// What was wrong.
        what: String,
    },
    /// This service's token could not be attached.
    #[error("service token unusable")]
    Token,
    /// No token could be obtained from the auth service.
    #[error(transparent)]
    NoToken(#[from] TokenUnavailable),
    /// The lobby could not be read.
    #[error("lobby: {0}")]
    Lobby(#[from] sqlx::Error),
}

impl From<TablesError> for ServiceError {
    fn from(error: TablesError) -> Self {
        match error {
            TablesError::Table(e) => match e {
                TableError::Invalid { .. } => ServiceError::InvalidArgument(e.to_string()),
                TableError::NotFound => ServiceError::NotFound(e.to_string()),
                TableError::Exists | TableError::SeatTaken(_) | TableError::BotSeat(_) => {
                    ServiceError::AlreadyExists(e.to_string())
                }
                TableError::NotSeated => ServiceError::PermissionDenied(e.to_string()),
                TableError::SpectatorsFull => ServiceError::ResourceExhausted(e.to_string()),
                TableError::Stale { .. } => ServiceError::Conflict(e.to_string()),
                TableError::AlreadySeated(_)
                | TableError::Started
                | TableError::SeedFixed
                | TableError::AlreadyContributed(_)
                | TableError::SeatedSpectator(_)
                | TableError::Expired
                | TableError::Rule(_) => ServiceError::FailedPrecondition(e.to_string()),
            },
            TablesError::Upstream { service, status } => {
                let message = format!("{service} service: {}", status.message());
                match status.code() {
                    // The other service's verdict on the caller's input passes through.
                    Code::InvalidArgument => ServiceError::InvalidArgument(message),
                    Code::FailedPrecondition => ServiceError::FailedPrecondition(message),
                    Code::Aborted => ServiceError::Conflict(message),
                    _ => ServiceError::Unavailable {
                        message: format!("{service} service unavailable"),
                        cause: Some(Box::new(TablesError::Upstream { service, status })),
                    },
                }
            }
            TablesError::NoToken(e) => ServiceError::unavailable("auth service unavailable", e),
            TablesError::Lobby(e) => ServiceError::unavailable("database unavailable", e),
            other => ServiceError::internal(other),
        }
    }
}

/// A use case's failure: the table's or a dependency's, or the runner's.
pub type Failure = RunError<TablesError>;

fn refused(error: TableError) -> Failure {
    RunError::Rejected(TablesError::Table(error))
}

/// The table of a snapshot, or NOT_FOUND.
pub(crate) fn table(snapshot: &Snapshot<Table>) -> Result<&Table, TablesError> {
    snapshot
        .state
        .as_ref()
        .ok_or(TablesError::Table(TableError::NotFound))
}

fn decision(decided: Decided) -> Decision<TableEvent, u64> {
    Decision::new(decided.events, decided.version)
}

type CommitmentClient =
    CommitmentServiceClient<InterceptedService<Channel, TraceContextInterceptor>>;
type DealingClient = DealingServiceClient<InterceptedService<Channel, TraceContextInterceptor>>;

/// A new table as created.
#[derive(Debug, Clone)]
pub struct NewTable {
    /// Its id.
    pub table_id: Uuid,
    /// The version after creation.
    pub version: u64,
    /// The commitment and its short code.
    pub commitment: String,
    /// The short code.
    pub short_code: String,
}

/// What the service needs from outside before a step of the table.
enum Fetched {
    /// A hand from the dealing service.
    Dealt(DealtHand),
    /// The revealed server seed.
    Revealed(String),
    /// Nothing (a bot's move, or nothing to do).
    Nothing,
}

/// The tables use cases. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Tables {
    /// The tables' streams.
    pub(crate) streams: Streams<Table>,
    /// The event store (for watchers' reads).
    pub(crate) store: Arc<dyn EventStore>,
    /// Fired after every append (this process's, and others' through the PostgreSQL
    /// listener): wakes each table's watchers.
    pub(crate) signal: AppendSignal,
    /// The database (the lobby).
    pub(crate) db: Db,
    /// The commitment service.
    commitment: CommitmentClient,
    /// The dealing service.
    dealing: DealingClient,
    /// This service's access token (role service, name `tables`).
    tokens: Arc<dyn TokenProvider>,
    /// Ends watchers when the server drains.
    pub(crate) shutdown: Shutdown,
    /// The time turn deadlines are recorded in.
    pub(crate) clock: Arc<dyn TableClock>,
    /// The turn deadlines this replica waits for.
    pub(crate) timers: Arc<Timers>,
    /// Tables whose step failed and is being retried here (one retry loop per table), each
    /// with whether a step failed again meanwhile (the loop then goes on after a success).
    retrying: Arc<Mutex<HashMap<Uuid, bool>>>,
}

impl Tables {
    /// Use cases over `storage`, calling the commitment and dealing services with the
    /// tokens of `tokens`.
    pub fn new(
        storage: &fairdeal_platform::Storage,
        commitment: Channel,
        dealing: Channel,
        tokens: Arc<dyn TokenProvider>,
        clock: Arc<dyn TableClock>,
        shutdown: Shutdown,
    ) -> Self {
        Tables {
            streams: Streams::notified(storage.events(), storage.signal().clone()),
            store: storage.events(),
            signal: storage.signal().clone(),
            db: storage.db().clone(),
            commitment: CommitmentServiceClient::new(traced_channel(commitment)),
            dealing: DealingServiceClient::new(traced_channel(dealing)),
            tokens,
            shutdown,
            clock,
            retrying: Arc::new(Mutex::new(HashMap::new())),
            timers: Arc::new(Timers::new(None)),
        }
    }

    /// The same use cases deciding only for the tables `ownership` says are this replica's
    /// (before the timers and the projection's wake-ups are started): a command for another
    /// replica's table is refused (UNAVAILABLE, nothing read or written), every append is
    /// fenced by the lease of its table's partition (a lease lost meanwhile fails it), and
    /// only these tables' turn clocks are kept.
    #[must_use]
    pub fn with_ownership(mut self, ownership: Ownership) -> Self {
        let fences = ownership.clone();
        self.streams = self
            .streams
            .fenced(Arc::new(move |table_id: &Uuid| fences.fence(table_id)));
        self.timers = Arc::new(Timers::new(Some(ownership)));
        self
    }

    /// Calls another service with this service's token; a call refused as unauthenticated
    /// is repeated once with a renewed token (the refused call changed nothing).
    async fn call<T, R, F, Fut>(
        &self,
        service: &'static str,
        message: T,
        call: F,
    ) -> Result<R, TablesError>
    where
        T: Clone,
        F: Fn(Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let mut retried = false;
        loop {
            let token = self.tokens.token().await?;
            let mut request = Request::new(message.clone());
            attach_bearer(&mut request, &token).map_err(|_| TablesError::Token)?;
            match call(request).await {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) if status.code() == Code::Unauthenticated && !retried => {
                    tracing::warn!(service, "service token refused; renewing it");
                    self.tokens.refused(&token);
                    retried = true;
                }
                Err(status) => return Err(TablesError::Upstream { service, status }),
            }
        }
    }

    /// A new table's id (a UUIDv7), drawn again until it falls in a partition this replica
    /// holds, so the table is born where it is created and its first calls need no
    /// forwarding. With N replicas one draw in N lands; after [`NEW_ID_DRAWS`] (a replica
    /// holding nothing yet) the id is kept wherever it falls, and its owner serves it.
    fn new_table_id(&self) -> Uuid {
        let mut id = Uuid::now_v7();
        for _ in 1..NEW_ID_DRAWS {
            if self.timers.keeps(&id) {
                break;
            }
            id = Uuid::now_v7();
        }
        id
    }

    /// Creates a table: the commitment first, then the stream.
    #[tracing::instrument(skip(self, options), fields(creator = %creator))]
    pub async fn create(
        &self,
        creator: Uuid,
        options: <Game as TableGame>::Options,
        bot_seats: &[u32],
        move_seconds: u32,
        timelock_seconds: u32,
    ) -> Result<NewTable, Failure> {
        let Setup {
            options,
            layout,
            bots,
            move_seconds,
        } = domain::parse_setup::<Game>(options, bot_seats, move_seconds).map_err(refused)?;
        let table_id = self.new_table_id();
        let message = cpb::CreateTableCommitmentRequest {
            table_id: table_id.to_string(),
            delayed_source: String::new(),
            // Checked by the commitment service, whose verdict passes through (it holds the
            // drand chain the seed is encrypted to).
            timelock_seconds,
        };
        let committed = self
            .call("commitment", message, |r| {
                let mut c = self.commitment.clone();
                async move { c.create_table_commitment(r).await }
            })
            .await
            .map_err(RunError::Rejected)?
            .table
            .ok_or_else(|| {
                RunError::Rejected(TablesError::BadAnswer {
                    service: "commitment",
                    what: "commitment (none)".into(),
                })
            })?;
        let created = domain::Created {
            table_id,
            creator,
            options,
            layout,
            bots,
            move_seconds,
            commitment: committed.commitment.clone(),
            short_code: committed.short_code.clone(),
            first_dealer: FIRST_DEALER,
            // The commitment's latest end is in Unix seconds (0: none).
            latest_end_ms: (committed.timelock_latest_end > 0).then(|| {
                i64::try_from(committed.timelock_latest_end)
                    .unwrap_or(i64::MAX / 1000)
                    .saturating_mul(1000)
            }),
        };
        let executed = self
            .streams
            .execute(&table_id, |snapshot| match snapshot.state {
                Some(_) => Err(TablesError::Table(TableError::Exists)),
                None => Ok(Decision::new(domain::create(created.clone()), 1)),
            })
            .await?;
        // A table nobody sits at still ends at its latest end: its clock starts now.
        self.timers.set(table_id, created.latest_end_ms);
        tracing::info!(%table_id, "table created");
        Ok(NewTable {
            table_id,
            version: executed.reply,
            commitment: committed.commitment,
            short_code: committed.short_code,
        })
    }

    /// The lobby.
    pub async fn list(&self, query: &LobbyQuery) -> Result<Vec<pb::LobbyTable>, Failure> {
        lobby::list(&self.db, query)
            .await
            .map_err(|e| RunError::Rejected(e.into()))
    }

    /// `player` sits at `seat`; returns the version and the commitment.
    #[tracing::instrument(skip(self), fields(table_id = %table_id, player = %player))]
    pub async fn sit(
        &self,
        player: Uuid,
        table_id: Uuid,
        seat: Seat,
    ) -> Result<(u64, String, String), Failure> {
        let executed = self
            .streams
            .execute(&table_id, |snapshot| {
                let t = table(snapshot)?;
                let decided = t.sit(player, seat, self.clock.now_ms())?;
                Ok::<_, TablesError>(Decision::new(
                    decided.events,
                    (
                        decided.version,
                        t.created.commitment.clone(),
                        t.created.short_code.clone(),
                    ),
                ))
            })
            .await?;
        self.advance(table_id).await;
        Ok(executed.reply)
    }

    /// `player` leaves before the start.
    #[tracing::instrument(skip(self), fields(table_id = %table_id, player = %player))]
    pub async fn leave(&self, player: Uuid, table_id: Uuid) -> Result<u64, Failure> {
        let executed = self
            .streams
            .execute(&table_id, |snapshot| {
                Ok::<_, TablesError>(decision(table(snapshot)?.leave(player)?))
            })
            .await?;
        Ok(executed.reply)
    }

    /// `user` spectates the table (idempotent; refused for a seated player).
    #[tracing::instrument(skip(self), fields(table_id = %table_id, user = %user))]
    pub async fn spectate(&self, user: Uuid, table_id: Uuid) -> Result<u64, Failure> {
        let executed = self
            .streams
            .execute(&table_id, |snapshot| {
                Ok::<_, TablesError>(decision(table(snapshot)?.spectate(user)?))
            })
            .await?;
        Ok(executed.reply)
    }

    /// `user` stops spectating (idempotent).
    #[tracing::instrument(skip(self), fields(table_id = %table_id, user = %user))]
    pub async fn stop_spectating(&self, user: Uuid, table_id: Uuid) -> Result<u64, Failure> {
        let executed = self
            .streams
            .execute(&table_id, |snapshot| {
                Ok::<_, TablesError>(decision(table(snapshot)?.stop_spectating(user)))
            })
            .await?;
        Ok(executed.reply)
    }

    /// A seated player's seed contribution: checked here, recorded by the commitment
    /// service, then in the table's stream.
    #[tracing::instrument(skip(self, contribution), fields(table_id = %table_id, player = %player))]
    pub async fn contribute(
        &self,
        player: Uuid,
        table_id: Uuid,
        contribution: String,
    ) -> Result<u64, Failure> {
        let contribution = &contribution;
        let executed = self
            .streams
            .execute_with(
                &table_id,
                |snapshot| {
                    table(snapshot).and_then(|t| Ok(t.may_contribute(player, self.clock.now_ms())?))
                },
                |seat| async move {
                    let seat = seat?;
                    self.record_contribution(table_id, seat, player, contribution)
                        .await
                },
                |snapshot, ()| {
                    Ok(decision(table(snapshot)?.contribute(
                        player,
                        contribution.clone(),
                        self.clock.now_ms(),
                    )?))
                },
            )
            .await?;
        Ok(executed.reply)
    }

    /// Records `player`'s contribution at `seat` in the commitment service. The commitment
    /// service refuses a second contribution for a seat (FAILED_PRECONDITION, "already
    /// contributed"); when the one recorded there is this very one (an earlier try of this
    /// command went in there, and its append to the table's stream did not: it was fenced as
    /// the table moved, or the replica stopped), it is the same contribution, and the table's
    /// stream is given it now, as commitment.proto tells a caller to check.
    async fn record_contribution(
        &self,
        table_id: Uuid,
        seat: Seat,
        player: Uuid,
        contribution: &str,
    ) -> Result<(), TablesError> {
        let message = cpb::ContributeSeedRequest {
            table_id: table_id.to_string(),
            seat: u32::from(seat.number()),
            player_id: player.to_string(),
            contribution: contribution.to_owned(),
        };
        let refused = match self
            .call("commitment", message, |r| {
                let mut c = self.commitment.clone();
                async move { c.contribute_seed(r).await }
            })
            .await
        {
            Ok(_) => return Ok(()),
            Err(TablesError::Upstream { service, status })
                if status.code() == Code::FailedPrecondition =>
            {
                TablesError::Upstream { service, status }
            }
            Err(other) => return Err(other),
        };
        let recorded = self.table_commitment(table_id).await?.is_some_and(|table| {
            table.contributions.iter().any(|c| {
                c.seat == u32::from(seat.number())
                    && c.player_id == player.to_string()
                    && c.contribution == contribution
            })
        });
        if recorded { Ok(()) } else { Err(refused) }
    }

    /// A player's move (see the retry contract in tables.proto).
    #[tracing::instrument(skip(self, command), fields(table_id = %table_id, player = %player))]
    pub async fn act(
        &self,
        player: Uuid,
        table_id: Uuid,
        expected_version: u64,
        command_id: &str,
        command: &<Game as TableGame>::Command,
    ) -> Result<u64, Failure> {
        let executed = self
            .streams
            .execute(&table_id, |snapshot| {
                Ok::<_, TablesError>(decision(table(snapshot)?.act(
                    player,
                    expected_version,
                    command_id,
                    command,
                    self.clock.now_ms(),
                )?))
            })
            .await?;
        self.advance_from(table_id, &executed.after).await;
        Ok(executed.reply)
    }

    /// `player`'s view of the table, at its version. Advances the table first when it needs
    /// a step, so a table left mid-step resumes.
    pub async fn view(&self, player: Uuid, table_id: Uuid) -> Result<pb::TableView, Failure> {
        let read = |snapshot: &Snapshot<Table>| {
            table(snapshot)
                .map(|t| view::table_view(t, t.viewer(player), t.spectators.contains(&player)))
        };
        // Read at once unless a step is due; then advance, and read after it.
        let ready = self
            .streams
            .inspect(&table_id, |snapshot| {
                (!self.needs_step(snapshot)).then(|| read(snapshot))
            })
            .await
            .map_err(infallible)?;
        let view = match ready {
            Some(view) => view,
            None => {
                self.advance(table_id).await;
                self.streams
                    .inspect(&table_id, read)
                    .await
                    .map_err(infallible)?
            }
        };
        view.map_err(RunError::Rejected)
    }

    /// Whether the table in `snapshot` needs a step before a player can act (a deal, a bot's
    /// move, a timeout, the reveal).
    pub(crate) fn needs_step(&self, snapshot: &Snapshot<Table>) -> bool {
        snapshot
            .state
            .as_ref()
            .is_some_and(|t| t.next(self.clock.now_ms()) != Next::Wait)
    }

    /// [`Self::advance`] after a change that left the table at `after`: when a player must
    /// act next, only its clock is armed (no step to take, so no second decision).
    async fn advance_from(&self, table_id: Uuid, after: &Snapshot<Table>) {
        if self.needs_step(after) {
            self.advance(table_id).await;
        } else if let Some(t) = after.state.as_ref() {
            self.timers.set(table_id, t.wakes_at());
        }
    }

    /// Does what the table needs until a player must act (see the module docs). A failure
    /// (a peer or the database down) is retried here until a step succeeds
    /// (`Tables::retry_later`): the command that triggered the advance has succeeded
    /// regardless, and nobody may ever ask again.
    pub async fn advance(&self, table_id: Uuid) {
        let under = self.timers.held(&table_id);
        if let Err(error) = self.try_advance(table_id).await {
            if moved_away(&error) {
                tracing::debug!(%table_id, "the table moved to another replica; its owner steps it");
                // Or its lease lapsed, and this replica takes it again: then it steps it.
                self.timers.fenced(table_id, under);
                return;
            }
            let error = ServiceError::from(error);
            tracing::warn!(%table_id, %error, "table step failed; retrying");
            self.retry_later(table_id);
        }
    }

    /// [`Tables::advance`], its failure returned.
    async fn try_advance(&self, table_id: Uuid) -> Result<(), Failure> {
        for _ in 0..MAX_STEPS {
            match self.step(table_id).await? {
                (true, _) => {}
                (false, deadline) => {
                    self.timers.set(table_id, deadline);
                    return Ok(());
                }
            }
        }
        tracing::error!(%table_id, "table still advancing after {MAX_STEPS} steps");
        Ok(())
    }

    /// Takes a table's failed step again after a pause, [`RETRY_FIRST`] doubling to
    /// [`RETRY_LONGEST`], until it succeeds or the server drains: a seat waits on `Watch`
    /// for the hand it is owed, and after the game nobody asks for the reveal at all. The
    /// longest pause bounds how long a peer that is healthy again goes unused. One loop per
    /// table; a step that fails while one runs leaves the retry to it, and the loop steps
    /// the table once more after its own success, so no failure is left behind. Real time,
    /// not the table's clock: this is not game time.
    fn retry_later(&self, table_id: Uuid) {
        {
            let mut retrying = self.retrying.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(again) = retrying.get_mut(&table_id) {
                *again = true;
                return;
            }
            retrying.insert(table_id, false);
        }
        let this = self.clone();
        let stop = self.shutdown.token();
        self.shutdown.tracker().spawn(async move {
            let mut pause = RETRY_FIRST;
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(pause) => {}
                }
                let under = this.timers.held(&table_id);
                match this.try_advance(table_id).await {
                    Ok(()) => {
                        let mut retrying =
                            this.retrying.lock().unwrap_or_else(PoisonError::into_inner);
                        match retrying.get_mut(&table_id) {
                            // Another step failed while this one ran: step again.
                            Some(again) if *again => {
                                *again = false;
                                pause = RETRY_FIRST;
                            }
                            _ => {
                                retrying.remove(&table_id);
                                return;
                            }
                        }
                    }
                    Err(error) if moved_away(&error) => {
                        // As in `advance`: taken again here if the lease comes back.
                        this.timers.fenced(table_id, under);
                        break;
                    }
                    Err(error) => {
                        let error = ServiceError::from(error);
                        tracing::warn!(%table_id, %error, ?pause, "table step failed again; retrying");
                        pause = (pause * 2).min(RETRY_LONGEST);
                    }
                }
            }
            this.retrying
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&table_id);
        });
    }

    /// One step; whether it appended anything, and when the table next needs the service
    /// on its own after it ([`Table::wakes_at`]).
    async fn step(&self, table_id: Uuid) -> Result<(bool, Option<i64>), Failure> {
        let now = self.clock.now_ms();
        let executed = self
            .streams
            .execute_with(
                &table_id,
                |snapshot| {
                    snapshot
                        .state
                        .as_ref()
                        .map(|t| (t.next(now), t.created.layout.deck))
                },
                |needs| async move {
                    match needs {
                        Some((Next::Deal { hand }, deck)) => {
                            Ok(Fetched::Dealt(self.deal_hand(table_id, deck, hand).await?))
                        }
                        Some((Next::Reveal, _)) => {
                            Ok(Fetched::Revealed(self.reveal(table_id).await?))
                        }
                        _ => Ok(Fetched::Nothing),
                    }
                },
                |snapshot, fetched| {
                    let Some(t) = snapshot.state.as_ref() else {
                        return Ok(Decision::nothing(0));
                    };
                    let decided = match fetched {
                        Fetched::Dealt(dealt) => t.deal(&dealt, now)?,
                        Fetched::Revealed(seed) => t.reveal(seed),
                        Fetched::Nothing => match t.next(now) {
                            Next::Bot(seat) => t.bot_move(seat, now)?,
                            Next::Timeout(seat) => t.time_out(seat, now)?,
                            Next::Expire => t.expire(now),
                            Next::Finish => t.end_match(now),
                            _ => return Ok(Decision::nothing(t.version)),
                        },
                    };
                    Ok::<_, TablesError>(decision(decided))
                },
            )
            .await?;
        let wakes_at = executed.after.state.as_ref().and_then(Table::wakes_at);
        Ok((!executed.recorded.is_empty(), wakes_at))
    }

    /// Hand `hand` from the dealing service.
    async fn deal_hand(
        &self,
        table_id: Uuid,
        deck: fairdeal_fairness::Deck,
        hand: u32,
    ) -> Result<DealtHand, TablesError> {
        let message = dpb::DealHandRequest {
            table_id: table_id.to_string(),
            deck: deck.name().to_owned(),
            hand: u64::from(hand),
        };
        let r = self
            .call("dealing", message, |r| {
                let mut c = self.dealing.clone();
                async move { c.deal_hand(r).await }
            })
            .await?;
        let bad = |what: &str| TablesError::BadAnswer {
            service: "dealing",
            what: what.to_owned(),
        };
        let deal = r.deal.ok_or_else(|| bad("deal (none)"))?;
        if deal.deck != deck.name() || r.hand != u64::from(hand) {
            return Err(bad("deal (another deck or hand)"));
        }
        // The order is the deal; its hands and talon must be those the answer lists.
        let parsed = Deal::from_codes(deck, deal.order.iter().map(String::as_str))
            .map_err(|e| bad(&format!("deal order ({e})")))?;
        let codes = |cards: &[u8]| -> Vec<String> {
            parsed.codes(cards).into_iter().map(str::to_owned).collect()
        };
        let hands_match = parsed.hands.len() == deal.hands.len()
            && parsed
                .hands
                .iter()
                .zip(&deal.hands)
                .all(|(cards, listed)| codes(cards) == listed.cards);
        if !hands_match || codes(&parsed.chien) != deal.chien {
            return Err(bad("deal (hands or chien not those of its order)"));
        }
        Ok(DealtHand {
            hand,
            deal: parsed,
            commitment: r.commitment,
            client_seed: r.client_seed,
        })
    }

    /// The table's commitment as the commitment service holds it now (what a refusal of a
    /// repeated call tells the caller to read).
    async fn table_commitment(
        &self,
        table_id: Uuid,
    ) -> Result<Option<cpb::TableCommitment>, TablesError> {
        let message = cpb::GetTableCommitmentRequest {
            table_id: table_id.to_string(),
        };
        Ok(self
            .call("commitment", message, |r| {
                let mut c = self.commitment.clone();
                async move { c.get_table_commitment(r).await }
            })
            .await?
            .table)
    }

    /// Reveals the table's server seed (or reads it, when it was revealed already).
    async fn reveal(&self, table_id: Uuid) -> Result<String, TablesError> {
        let message = cpb::RevealTableSeedRequest {
            table_id: table_id.to_string(),
            operator: String::new(),
            justification: String::new(),
        };
        let revealed = self
            .call("commitment", message, |r| {
                let mut c = self.commitment.clone();
                async move { c.reveal_table_seed(r).await }
            })
            .await;
        let table = match revealed {
            Ok(r) => r.table,
            // Revealed before (a step that crashed after the call): read it back.
            Err(TablesError::Upstream { status, .. })
                if status.code() == Code::FailedPrecondition =>
            {
                self.table_commitment(table_id).await?
            }
            Err(e) => return Err(e),
        };
        match table {
            Some(t) if !t.server_seed.is_empty() => {
                tracing::info!(%table_id, "server seed revealed");
                Ok(t.server_seed)
            }
            _ => Err(TablesError::BadAnswer {
                service: "commitment",
                what: "reveal (no seed)".into(),
            }),
        }
    }
}

/// Whether `error` says the table is not this replica's (any more): its partition's lease
/// is another's, so its owner takes the step (the owner's clocks and the deadlines
/// projection see to it), and retrying here would never succeed.
pub(crate) fn moved_away(error: &Failure) -> bool {
    fenced_partition(error).is_some()
}

/// The partition whose lease `error` found this replica not holding ([`moved_away`]).
pub(crate) fn fenced_partition(error: &Failure) -> Option<u32> {
    match error {
        RunError::Store(StoreError::Fenced { partition, .. }) => Some(*partition),
        _ => None,
    }
}

/// A load's failure as a use case's.
pub(crate) fn infallible(error: RunError<std::convert::Infallible>) -> Failure {
    error.map_rejected(|never| match never {})
}
