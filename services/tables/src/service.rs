//! The tables use cases: every change runs through `Streams<Table>` (queue per table,
//! decide on the folded state, append with the expected version), and the fairness flow
//! goes through the commitment and dealing services with this service's own token.
//!
//! After a command, the table is *advanced*: whatever it needs that no player gives (the
//! next hand from the dealing service, a bot's move, the seed reveal at the end) is done
//! step by step, each step its own decision on the current state, so two callers (or two
//! replicas) advancing the same table at once only ever append a step once. A table left
//! mid-step (a crash, a dependency down) resumes at its next request.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use fairdeal_authn::{TokenProvider, TokenUnavailable, attach_bearer};
use fairdeal_bus::AppendSignal;
use fairdeal_db::Db;
use fairdeal_eventstore::{EventStore, RecordedEvent};
use fairdeal_games::{Card, Command};
use fairdeal_kit::propagation::{TraceContextInterceptor, traced as traced_channel};
use fairdeal_kit::{ServiceError, Shutdown};
use fairdeal_platform::{Decision, RunError, Snapshot, Streams, stream_of};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_client::DealingServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use uuid::Uuid;

use crate::clock::TableClock;
use crate::domain::{
    self, Created, DealtHand, Decided, FIRST_DEALER, Next, Table, TableError, TableEvent,
};
use crate::events::{placeholder, to_message};
use crate::lobby::{self, LobbyQuery};
use crate::view;

/// Most steps one advance takes (a whole match is a few thousand events; this only stops a
/// runaway loop).
const MAX_STEPS: usize = 20_000;
/// The first pause before a failed step is taken again.
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest pause between retries of a failed step.
const RETRY_LONGEST: std::time::Duration = std::time::Duration::from_secs(1);
/// Events read per page by a watcher.
const WATCH_PAGE: usize = 256;
/// How often a timer re-reads the projected deadlines (a safety net: deadlines this replica
/// recorded are waited for at once).
const DEADLINES_RELOAD: std::time::Duration = std::time::Duration::from_secs(5);
/// Messages buffered per watcher before it waits for the client.
const WATCH_BUFFER: usize = 64;

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
fn table(snapshot: &Snapshot<Table>) -> Result<&Table, TablesError> {
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
    streams: Streams<Table>,
    /// The event store (for watchers' reads).
    store: Arc<dyn EventStore>,
    /// Fired after every append (this process's, and others' through the PostgreSQL
    /// listener): wakes each table's watchers.
    signal: AppendSignal,
    /// The database (the lobby).
    db: Db,
    /// The commitment service.
    commitment: CommitmentClient,
    /// The dealing service.
    dealing: DealingClient,
    /// This service's access token (role service, name `tables`).
    tokens: Arc<dyn TokenProvider>,
    /// Ends watchers when the server drains.
    shutdown: Shutdown,
    /// The time turn deadlines are recorded in.
    clock: Arc<dyn TableClock>,
    /// The turn deadlines this replica waits for.
    timers: Arc<Timers>,
    /// Tables whose step failed and is being retried here (one retry loop per table).
    retrying: Arc<Mutex<HashSet<Uuid>>>,
}

/// The deadlines of the tables this replica advanced last, and a wake-up for the timer task
/// when one changes.
#[derive(Debug)]
struct Timers {
    /// Table -> deadline (Unix ms) of the player to act.
    deadlines: Mutex<HashMap<Uuid, i64>>,
    /// Bumped whenever `deadlines` changes.
    changed: watch::Sender<u64>,
}

impl Timers {
    fn deadlines(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, i64>> {
        // The map stays consistent whatever panicked while holding it.
        self.deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for `deadline` of `table_id` (`None`: nothing to wait for).
    fn set(&self, table_id: Uuid, deadline: Option<i64>) {
        let changed = match deadline {
            Some(d) => self.deadlines().insert(table_id, d) != Some(d),
            None => self.deadlines().remove(&table_id).is_some(),
        };
        if changed {
            self.changed.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// The earliest deadline.
    fn earliest(&self) -> Option<(i64, Uuid)> {
        self.deadlines().iter().map(|(id, d)| (*d, *id)).min()
    }
}

/// A way into this replica's timers for the deadlines projection: a step the service owes,
/// recorded by the projection, is taken at once rather than at the timer's next reload of the
/// projection (up to [`DEADLINES_RELOAD`] later), which matters when the replica that owed it
/// stopped before the projection caught up.
#[derive(Clone, Debug)]
pub struct OwedSteps(Arc<Timers>);

impl OwedSteps {
    /// The service owes `table_id` a step, recorded as `deadline` (the table's version
    /// negated, so due at once): the timer takes it now. A hint: the step is decided on the
    /// table's state, so one owed no longer does nothing.
    pub fn owe(&self, table_id: Uuid, deadline: i64) {
        self.0.set(table_id, Some(deadline));
    }
}

impl Tables {
    /// The handle the deadlines projection wakes this replica's timers with.
    pub fn owed_steps(&self) -> OwedSteps {
        OwedSteps(Arc::clone(&self.timers))
    }

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
            retrying: Arc::new(Mutex::new(HashSet::new())),
            timers: Arc::new(Timers {
                deadlines: Mutex::new(HashMap::new()),
                changed: watch::Sender::new(0),
            }),
        }
    }

    /// The timer task: waits for the earliest deadline this replica knows of, then advances
    /// that table (the step plays for the seat if its player has not acted by then); until
    /// `stop`. Another replica firing the same deadline appends nothing more: the step is
    /// decided on the table's current state. At start, and then every
    /// [`DEADLINES_RELOAD`] as a safety net, it also takes the deadlines the projection holds,
    /// so a restarted replica waits for the tables nobody has touched since.
    ///
    /// Each reload also samples `fairdeal.tables.active`: the tables started and not
    /// finished (the projection's deadlines), the same figure on every replica.
    pub async fn run_timers(self, stop: CancellationToken) {
        let active = fairdeal_kit::metrics::gauge(
            "fairdeal.tables.active",
            "Tables started and not finished (every replica reports the whole platform's)",
            "{table}",
        );
        let mut changed = self.timers.changed.subscribe();
        // Deadlines fired here, so a projected row that is stale is not fired again.
        let mut fired: HashMap<Uuid, i64> = HashMap::new();
        let mut reload = tokio::time::interval(DEADLINES_RELOAD);
        loop {
            changed.borrow_and_update();
            let wait = async {
                match self.timers.earliest() {
                    Some((deadline, table_id)) => {
                        self.clock.sleep_until(deadline).await;
                        (deadline, table_id)
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = stop.cancelled() => return,
                result = changed.changed() => if result.is_err() { return },
                _ = reload.tick() => match lobby::deadlines(&self.db).await {
                    Ok(rows) => {
                        active.record(u64::try_from(rows.len()).unwrap_or(u64::MAX), &[]);
                        // A finished table's row is gone: forget that it fired.
                        fired.retain(|id, _| rows.iter().any(|(row, _)| row == id));
                        for (table_id, deadline) in rows {
                            if fired.get(&table_id) != Some(&deadline) {
                                self.timers.deadlines().entry(table_id).or_insert(deadline);
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "turn deadlines unreadable"),
                },
                (deadline, table_id) = wait => {
                    self.timers.deadlines().remove(&table_id);
                    fired.insert(table_id, deadline);
                    // Off the timer loop: playing out an abandoned seat's match takes a while,
                    // and other tables' deadlines must not wait for it.
                    let this = self.clone();
                    self.shutdown
                        .tracker()
                        .spawn(async move { this.advance(table_id).await });
                }
            }
        }
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

    /// Creates a table: the commitment first, then the stream.
    #[tracing::instrument(skip(self, options), fields(creator = %creator))]
    pub async fn create(
        &self,
        creator: Uuid,
        options: fairdeal_games::TableOptions,
        bot_seats: &[u32],
        move_seconds: u32,
    ) -> Result<NewTable, Failure> {
        let (options, bots, move_seconds) =
            domain::parse_setup(options, bot_seats, move_seconds).map_err(refused)?;
        let table_id = Uuid::now_v7();
        let message = cpb::CreateTableCommitmentRequest {
            table_id: table_id.to_string(),
            delayed_source: String::new(),
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
        let created = Created {
            table_id,
            creator,
            options,
            bots,
            move_seconds,
            commitment: committed.commitment.clone(),
            short_code: committed.short_code.clone(),
            first_dealer: FIRST_DEALER,
        };
        let executed = self
            .streams
            .execute(&table_id, |snapshot| match snapshot.state {
                Some(_) => Err(TablesError::Table(TableError::Exists)),
                None => Ok(Decision::new(domain::create(created.clone()), 1)),
            })
            .await?;
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
        seat: fairdeal_games::Seat,
    ) -> Result<(u64, String, String), Failure> {
        let executed = self
            .streams
            .execute(&table_id, |snapshot| {
                let t = table(snapshot)?;
                let decided = t.sit(player, seat)?;
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
                |snapshot| table(snapshot).and_then(|t| Ok(t.may_contribute(player)?)),
                |seat| async move {
                    let seat = seat?;
                    let message = cpb::ContributeSeedRequest {
                        table_id: table_id.to_string(),
                        seat: u32::from(seat.number()),
                        player_id: player.to_string(),
                        contribution: contribution.clone(),
                    };
                    self.call("commitment", message, |r| {
                        let mut c = self.commitment.clone();
                        async move { c.contribute_seed(r).await }
                    })
                    .await?;
                    Ok(())
                },
                |snapshot, ()| {
                    Ok(decision(
                        table(snapshot)?.contribute(player, contribution.clone())?,
                    ))
                },
            )
            .await?;
        Ok(executed.reply)
    }

    /// A player's move (see the retry contract in tables.proto).
    #[tracing::instrument(skip(self, command), fields(table_id = %table_id, player = %player, command = command.name()))]
    pub async fn act(
        &self,
        player: Uuid,
        table_id: Uuid,
        expected_version: u64,
        command_id: &str,
        command: &Command,
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

    /// `player`'s view at `version` when the table stands there with `player`'s seat to act
    /// (no later version, nothing due from the service: a deal, a bot's move, a timeout);
    /// `None` otherwise. A later version is a later message, which is asked again.
    async fn turn_view(
        &self,
        player: Uuid,
        table_id: Uuid,
        version: u64,
    ) -> Result<Option<pb::TableView>, Status> {
        self.streams
            .inspect(&table_id, |snapshot| {
                let t = snapshot.state.as_ref()?;
                let viewer = t.viewer(player);
                let domain::Viewer::Seat(seat) = viewer else {
                    return None;
                };
                let stands = snapshot.version == version
                    && t.finished.is_none()
                    && t.game.turn() == Some(seat)
                    && !self.needs_step(snapshot);
                stands.then(|| view::table_view(t, viewer, false))
            })
            .await
            .map_err(|e| Status::from(ServiceError::from(infallible(e))))
    }

    /// Whether the table in `snapshot` needs a step before a player can act (a deal, a bot's
    /// move, a timeout, the reveal).
    fn needs_step(&self, snapshot: &Snapshot<Table>) -> bool {
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
            self.timers.set(table_id, t.deadline.map(|(_, d)| d));
        }
    }

    /// Does what the table needs until a player must act (see the module docs). A failure
    /// (a peer or the database down) is retried here until a step succeeds
    /// ([`Tables::retry_later`]): the command that triggered the advance has succeeded
    /// regardless, and nobody may ever ask again.
    pub async fn advance(&self, table_id: Uuid) {
        if let Err(error) = self.try_advance(table_id).await {
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
    /// table; a step that fails while one runs leaves the retry to it (and should the loop be
    /// ending just then, the deadlines projection records the owed step, which the timer's
    /// reload takes within [`DEADLINES_RELOAD`]). Real time, not the table's clock: this is
    /// not game time.
    fn retry_later(&self, table_id: Uuid) {
        if !self
            .retrying
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(table_id)
        {
            return;
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
                match this.try_advance(table_id).await {
                    Ok(()) => break,
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

    /// One step; whether it appended anything, and the deadline of the player to act after
    /// it.
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
                        .map(|t| (t.next(now), t.created.options.deck))
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
                            _ => return Ok(Decision::nothing(t.version)),
                        },
                    };
                    Ok::<_, TablesError>(decision(decided))
                },
            )
            .await?;
        let deadline = executed
            .after
            .state
            .as_ref()
            .and_then(|t| t.deadline)
            .map(|(_, d)| d);
        Ok((!executed.recorded.is_empty(), deadline))
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
        let hands = deal
            .hands
            .iter()
            .map(|h| {
                h.cards
                    .iter()
                    .map(|c| c.parse::<Card>().map_err(|_| bad("card code")))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DealtHand {
            hand,
            hands,
            commitment: r.commitment,
            client_seed: r.client_seed,
        })
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
                let message = cpb::GetTableCommitmentRequest {
                    table_id: table_id.to_string(),
                };
                self.call("commitment", message, |r| {
                    let mut c = self.commitment.clone();
                    async move { c.get_table_commitment(r).await }
                })
                .await?
                .table
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

    /// `player`'s view of the table's events after `after_version`, then live, into a
    /// channel; ends when the client goes, the server drains, or the store fails.
    pub async fn watch(
        &self,
        player: Uuid,
        table_id: Uuid,
        after_version: u64,
        turn_views: bool,
    ) -> Result<mpsc::Receiver<Result<pb::WatchResponse, Status>>, Failure> {
        let seen = self
            .streams
            .inspect(&table_id, |snapshot| {
                table(snapshot).map(|t| (t.viewer(player), t.finished.is_some()))
            })
            .await
            .map_err(infallible)?
            .map_err(RunError::Rejected)?;
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let this = self.clone();
        let feed = Feed {
            player,
            table_id,
            after_version,
            turn_views,
        };
        tokio::spawn(async move {
            if let Err(status) = this.feed(feed, seen, &tx).await {
                // The client may be gone already; nothing else to tell.
                let _ = tx.send(Err(status)).await;
            }
        });
        Ok(rx)
    }

    /// The watcher's loop: subscribe to the table stream's wake-ups, read what is there,
    /// wait, read again. Subscribing before the first read means no append is missed;
    /// reading from the next version means none is sent twice. Only appends to this table
    /// wake it (see `fairdeal_bus::signal`).
    /// `(viewer, finished)` is the player's place at the table when the watch began, kept
    /// up to date from the events sent (seats are fixed once cards are dealt; from
    /// `GameFinished` on, everything is public).
    /// With `turn_views`, the last message of each batch carries the player's view when the
    /// table stands there with the player's seat to act ([`Self::turn_view`]).
    async fn feed(
        &self,
        Feed {
            player,
            table_id,
            after_version,
            turn_views,
        }: Feed,
        (mut viewer, mut finished): (domain::Viewer, bool),
        tx: &mpsc::Sender<Result<pb::WatchResponse, Status>>,
    ) -> Result<(), Status> {
        let stream = stream_of::<Table>(&table_id).map_err(|e| internal(e.into()))?;
        let table_text = table_id.to_string();
        let mut waiter = self.signal.subscribe_stream(&stream);
        let mut next = after_version.saturating_add(1);
        // What was appended before the subscription is read from the store.
        let mut woken = false;
        loop {
            // Woken by this process's appends after what was sent: their events as stored,
            // without reading them back; otherwise a read.
            let handed = if woken {
                waiter.appended_from(next)
            } else {
                None
            };
            let from_store = handed.is_none();
            let pages: Vec<Arc<[RecordedEvent]>> = match handed {
                Some(slices) => slices,
                None => {
                    // Woken by another replica's commit: one watcher of the table in this
                    // process reads it, and the others take what it read.
                    let turn = if woken {
                        match waiter.claim_read() {
                            Some(turn) => Some(turn),
                            None => {
                                tokio::select! {
                                    () = waiter.changed() => {}
                                    () = tx.closed() => return Ok(()),
                                    () = self.shutdown.draining() => return Ok(()),
                                }
                                continue;
                            }
                        }
                    } else {
                        None
                    };
                    let page = self
                        .store
                        .read_stream(&stream, next, WATCH_PAGE)
                        .await
                        .map_err(|e| Status::from(fairdeal_platform::store_error(e)))?;
                    if let Some(turn) = turn {
                        turn.read(&page);
                    }
                    vec![page.into()]
                }
            };
            let read = pages.first().map_or(0, |page| page.len());
            let from = next;
            // Held back until the next one is ready: the batch's last message may get a view.
            let mut last: Option<pb::WatchResponse> = None;
            let events = pages.iter().flat_map(|page| page.iter());
            for recorded in events.filter(|e| e.version >= from) {
                let event =
                    crate::events::from_recorded(recorded).map_err(|e| internal(e.into()))?;
                match &event {
                    TableEvent::SeatTaken { seat, player: p } if *p == player => {
                        viewer = domain::Viewer::Seat(*seat);
                    }
                    TableEvent::SeatLeft { player: p, .. } if *p == player => {
                        viewer = domain::Viewer::Spectator;
                    }
                    TableEvent::GameFinished(_) => finished = true,
                    _ => {}
                }
                let shown = if event.visible_to(viewer, finished) {
                    to_message(&table_text, &event).into_wire()
                } else {
                    placeholder()
                };
                let message = pb::WatchResponse {
                    version: recorded.version,
                    event: Some(shown),
                    view: None,
                };
                if let Some(ready) = last.replace(message)
                    && tx.send(Ok(ready)).await.is_err()
                {
                    return Ok(());
                }
                next = recorded.version + 1;
            }
            if let Some(mut message) = last {
                if turn_views {
                    message.view = self.turn_view(player, table_id, message.version).await?;
                }
                if tx.send(Ok(message)).await.is_err() {
                    return Ok(());
                }
            }
            // A full page from the store may have more behind it: read on at once.
            woken = false;
            if from_store && read == WATCH_PAGE {
                continue;
            }
            tokio::select! {
                () = waiter.changed() => woken = true,
                () = tx.closed() => return Ok(()),
                () = self.shutdown.draining() => return Ok(()),
            }
        }
    }
}

/// What a watcher sends: whose view, of which table, from where, with turn views or not.
#[derive(Debug, Clone, Copy)]
struct Feed {
    player: Uuid,
    table_id: Uuid,
    after_version: u64,
    turn_views: bool,
}

/// A watcher's internal failure, logged; the client gets the fixed text.
fn internal(cause: fairdeal_kit::status::Cause) -> Status {
    Status::from(ServiceError::Internal(cause))
}

/// A load's failure as a use case's.
fn infallible(error: RunError<std::convert::Infallible>) -> Failure {
    error.map_rejected(|never| match never {})
}
