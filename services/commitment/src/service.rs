//! The service's use cases, independent of gRPC. Every command runs through the platform's
//! aggregate runner ([`fairdeal_platform::Streams`]): commands to one stream queue in this
//! process, the domain decides on the current state, the events are appended with the
//! expected version, and a race lost to another replica is re-read and re-decided a few
//! times before it is reported as ABORTED with the stream's version.
//!
//! Seeds: a new seed is generated (OS CSPRNG), sealed and stored before the event that
//! commits to it is appended; a seed is opened only for the commands that need it (reveal,
//! dealing, bets, rotation, board generation) and never logged.

use std::sync::Arc;

use fairdeal_drand_client::FetchError;
use fairdeal_eventstore::{EventError, EventStore, StoreError, StreamId};
use fairdeal_fairness::commitment::{EntropyError, ServerSeed};
use fairdeal_fairness::deck::Deck;
use fairdeal_kit::ServiceError;
use fairdeal_kit::Shutdown;
use uuid::Uuid;

use crate::domain::client_seed::{Contribution, DelayedSource, DelayedValue};
use crate::domain::drand::{DrandBeacon, DrandSubject};
use crate::domain::pair::{BetRequest, BetSeeds, ClientSeed, PairEvent, Reservation, SeedPairs};
use crate::domain::table::TableCommitment;
use crate::domain::tournament::{Board, TournamentEvent, TournamentSet};
use crate::domain::{DomainError, ErrorClass, RevealReason};
use crate::drand::{Drand, unix_now, unix_now_ceil};
use crate::pending::PendingStore;
use crate::seeds::SeedStore;
use crate::vault::{KeyRing, VaultError};
use fairdeal_platform::{Aggregate, CorruptStream, Decision, RunError, Snapshot, Streams};

/// Everything a use case can fail with.
#[derive(Debug, thiserror::Error)]
pub enum CommitmentError {
    /// The domain refused the command.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// A request field is malformed (named in the message).
    #[error("{0}")]
    Invalid(String),
    /// The event store failed.
    #[error("event store: {0}")]
    Store(#[from] StoreError),
    /// A stream id could not be formed.
    #[error("stream id: {0}")]
    Stream(#[from] EventError),
    /// A stored stream does not decode or fold.
    #[error(transparent)]
    Corrupt(#[from] CorruptStream),
    /// The sealed-seed table failed.
    #[error("sealed seed store: {0}")]
    Seeds(#[from] sqlx::Error),
    /// Sealing or opening failed.
    #[error(transparent)]
    Vault(#[from] VaultError),
    /// A stream references a sealed seed that is not stored.
    #[error("sealed seed {0} is missing")]
    MissingSeed(Uuid),
    /// The OS random source failed.
    #[error(transparent)]
    Entropy(#[from] EntropyError),
    /// No relay gave the drand round (down, slow, not published yet, or lying).
    #[error("drand: {0}")]
    Beacon(#[from] FetchError),
    /// The drand round is published later than the call (a table's first deal, a
    /// tournament's board generation) may wait.
    #[error(
        "the {subject}'s drand round {round} is published in {in_seconds} s and is not bound yet; this call waits at most {wait_seconds} s for it: try again later"
    )]
    DrandNotDue {
        /// `table` or `tournament`.
        subject: &'static str,
        /// The round.
        round: u64,
        /// Seconds until it is published.
        in_seconds: u64,
        /// The longest wait of a deal.
        wait_seconds: u64,
    },
    /// Writers in other processes kept winning.
    #[error("too many concurrent changes to {stream}, now at version {version}; re-read and retry")]
    Contended {
        /// The stream.
        stream: StreamId,
        /// Its version when the runner gave up.
        version: u64,
    },
}

impl From<CommitmentError> for ServiceError {
    fn from(error: CommitmentError) -> Self {
        match error {
            CommitmentError::Domain(e) => match e.class() {
                ErrorClass::InvalidArgument => ServiceError::InvalidArgument(e.to_string()),
                ErrorClass::NotFound => ServiceError::NotFound(e.to_string()),
                ErrorClass::AlreadyExists => ServiceError::AlreadyExists(e.to_string()),
                ErrorClass::FailedPrecondition => ServiceError::FailedPrecondition(e.to_string()),
                ErrorClass::Internal => ServiceError::internal(e),
            },
            CommitmentError::Invalid(message) => ServiceError::InvalidArgument(message),
            CommitmentError::Beacon(e) => ServiceError::unavailable(
                "the drand round could not be fetched and verified from any relay; retry later",
                e,
            ),
            not_due @ CommitmentError::DrandNotDue { .. } => {
                ServiceError::FailedPrecondition(not_due.to_string())
            }
            // A server fault (the key ring lacks a key another replica sealed with, or an
            // operator removed one), but a lasting one: retrying cannot help until the key is
            // back, so FAILED_PRECONDITION naming the key id, and an ERROR for the operator.
            CommitmentError::Vault(VaultError::UnknownKey { seed_id, key_id }) => {
                let key_id = fairdeal_kit::status::shown(&key_id);
                tracing::error!(%seed_id, key_id = %key_id, "a sealed seed's key is not in the seed key ring");
                ServiceError::FailedPrecondition(format!(
                    "the server seed is sealed under key id \"{key_id}\", which is not in this service's seed key ring (seed_keys); the operator must restore that key"
                ))
            }
            CommitmentError::Store(e) if e.is_conflict() => ServiceError::Conflict(e.to_string()),
            contended @ CommitmentError::Contended { .. } => {
                ServiceError::Conflict(contended.to_string())
            }
            CommitmentError::Store(StoreError::Database(e)) | CommitmentError::Seeds(e) => {
                ServiceError::unavailable("database unavailable", e)
            }
            other => ServiceError::internal(other),
        }
    }
}

impl From<RunError<CommitmentError>> for CommitmentError {
    fn from(error: RunError<CommitmentError>) -> Self {
        match error {
            RunError::Rejected(e) => e,
            RunError::Contended { stream, version } => {
                CommitmentError::Contended { stream, version }
            }
            RunError::Corrupt(e) => CommitmentError::Corrupt(e),
            RunError::Stream(e) => CommitmentError::Stream(e),
            RunError::Store(e) => CommitmentError::Store(e),
        }
    }
}

impl From<RunError<std::convert::Infallible>> for CommitmentError {
    fn from(error: RunError<std::convert::Infallible>) -> Self {
        match error {
            RunError::Rejected(never) => match never {},
            RunError::Contended { stream, version } => {
                CommitmentError::Contended { stream, version }
            }
            RunError::Corrupt(e) => CommitmentError::Corrupt(e),
            RunError::Stream(e) => CommitmentError::Stream(e),
            RunError::Store(e) => CommitmentError::Store(e),
        }
    }
}

/// The use cases of the commitment service.
#[derive(Clone, Debug)]
pub struct Commitments {
    /// Tables' commitments.
    tables: Streams<TableCommitment>,
    /// Users' seed pairs.
    pairs: Streams<SeedPairs>,
    /// Tournament sets.
    tournaments: Streams<TournamentSet>,
    /// Sealed seeds.
    seeds: SeedStore,
    /// Keys sealing the seeds.
    keys: Arc<KeyRing>,
    /// drand rounds as tables' and tournaments' delayed values (none: they name their own,
    /// bound by hand).
    drand: Option<Arc<Drand>>,
    /// The commitments whose drand round may still have to be bound (with `drand`).
    pending: Option<PendingStore>,
    /// Where the background binders of drand rounds run (with `drand`).
    background: Option<Shutdown>,
}

/// What a table command returns: the state after it.
pub type TableState = TableCommitment;

impl Commitments {
    /// Use cases over `store`, `seeds` and `keys`.
    pub fn new(store: Arc<dyn EventStore>, seeds: SeedStore, keys: KeyRing) -> Self {
        Commitments {
            tables: Streams::new(Arc::clone(&store)),
            pairs: Streams::new(Arc::clone(&store)),
            tournaments: Streams::new(store),
            seeds,
            keys: Arc::new(keys),
            drand: None,
            pending: None,
            background: None,
        }
    }

    /// With drand: every table and tournament committed without a delayed source of its own
    /// gets a drand round, bound by binders running on `shutdown`; `pending` keeps which
    /// commitments may still have a round to bind, for [`Commitments::restart_drand_binders`].
    pub fn with_drand(mut self, drand: Drand, pending: PendingStore, shutdown: Shutdown) -> Self {
        self.drand = Some(Arc::new(drand));
        self.pending = Some(pending);
        self.background = Some(shutdown);
        self
    }

    /// Runs `decide` on the current state of `streams`' instance `id` (with the opened seed
    /// of `seed_of(state)`, if any) and appends its events; see [`Streams::execute_with`].
    async fn execute<A, R>(
        &self,
        streams: &Streams<A>,
        id: Uuid,
        seed_of: impl Fn(&A) -> Option<Uuid>,
        mut decide: impl FnMut(
            Option<&A>,
            Option<&ServerSeed>,
        ) -> Result<(Vec<A::Event>, R), CommitmentError>,
    ) -> Result<(R, Option<A>), CommitmentError>
    where
        A: Aggregate<Id = Uuid>,
    {
        let executed = streams
            .execute_with(
                &id,
                |snapshot: &Snapshot<A>| snapshot.state.as_ref().and_then(&seed_of),
                |seed_id| async move {
                    match seed_id {
                        Some(seed_id) => self.open(seed_id).await.map(Some),
                        None => Ok(None),
                    }
                },
                |snapshot, seed: Option<ServerSeed>| {
                    let (events, reply) = decide(snapshot.state.as_ref(), seed.as_ref())?;
                    Ok(Decision::new(events, reply))
                },
            )
            .await?;
        Ok((executed.reply, executed.after.state))
    }

    /// Appends `event` to open a stream that must not exist yet; `exists` when it does.
    async fn open_stream<A>(
        &self,
        streams: &Streams<A>,
        id: Uuid,
        event: A::Event,
        exists: impl Fn() -> DomainError,
    ) -> Result<A, CommitmentError>
    where
        A: Aggregate<Id = Uuid>,
        A::Event: Clone,
    {
        let ((), state) = self
            .execute(
                streams,
                id,
                |_| None,
                |state, _| match state {
                    None => Ok((vec![event.clone()], ())),
                    Some(_) => Err(exists().into()),
                },
            )
            .await?;
        state.ok_or(DomainError::Corrupt("state after opening a stream").into())
    }

    /// Generates, seals and stores a fresh seed.
    async fn new_seed(&self) -> Result<(Uuid, ServerSeed), CommitmentError> {
        let seed = ServerSeed::generate()?;
        let seed_id = Uuid::now_v7();
        let sealed = self.keys.seal(seed_id, &seed)?;
        self.seeds.insert(&sealed).await?;
        Ok((seed_id, seed))
    }

    async fn open(&self, seed_id: Uuid) -> Result<ServerSeed, CommitmentError> {
        let sealed = self
            .seeds
            .get(seed_id)
            .await?
            .ok_or(CommitmentError::MissingSeed(seed_id))?;
        Ok(self.keys.open(&sealed)?)
    }

    // ---- Tables ----

    /// Commits a new table's seed. `AlreadyExists` if the table has one.
    /// With `timelock_seconds` (the table's latest end, seconds from now), the seed is also
    /// encrypted to the drand round due then plus the margin (drand on, no source of its own).
    #[tracing::instrument(skip(self, delayed_source), fields(table_id = %table_id))]
    pub async fn create_table(
        &self,
        table_id: Uuid,
        delayed_source: Option<DelayedSource>,
        timelock_seconds: Option<u32>,
    ) -> Result<TableState, CommitmentError> {
        let exists = || DomainError::AlreadyExists("the table's commitment");
        // Checked first so no seed is sealed for a table that has one.
        if self.tables.load(&table_id).await?.state.is_some() {
            return Err(exists().into());
        }
        // A table naming its own source keeps it (bound by hand); the others get a drand
        // round when drand is on, fixed from now (rounded up): the commitment is made now.
        let now = unix_now_ceil();
        let mut drand = match (&delayed_source, &self.drand) {
            (None, Some(drand)) => Some(drand.fix(now)?),
            _ => None,
        };
        if timelock_seconds.is_some() && drand.is_none() {
            return Err(DomainError::Timelock(if self.drand.is_none() {
                "this service has no drand chain to timelock the seed to".into()
            } else {
                "a table naming its own delayed source cannot have a timelocked seed".into()
            })
            .into());
        }
        let delayed_source = match (&drand, &self.drand) {
            (Some(round), Some(config)) => Some(round.source(config.beacon_id())?),
            _ => delayed_source,
        };
        let (seed_id, seed) = self.new_seed().await?;
        if let (Some(seconds), Some(round), Some(config)) =
            (timelock_seconds, &mut drand, &self.drand)
        {
            round.timelock = Some(config.timelock(now, seconds, &seed)?);
        }
        if drand.is_some() {
            self.record_pending::<TableCommitment>(table_id).await?;
        }
        let event = TableCommitment::publish(table_id, seed_id, &seed, delayed_source, drand);
        let state = self
            .open_stream(&self.tables, table_id, event, exists)
            .await?;
        if state.drand.is_some() {
            self.spawn_drand_binder::<TableCommitment>(table_id);
        }
        Ok(state)
    }

    /// The table's state.
    pub async fn table(&self, table_id: Uuid) -> Result<TableState, CommitmentError> {
        self.tables
            .load(&table_id)
            .await?
            .state
            .ok_or(DomainError::NotFound("the table's commitment").into())
    }

    async fn table_command(
        &self,
        table_id: Uuid,
        needs_seed: bool,
        mut decide: impl FnMut(
            &TableCommitment,
            Option<&ServerSeed>,
        )
            -> Result<Vec<crate::domain::table::TableEvent>, CommitmentError>,
    ) -> Result<TableState, CommitmentError> {
        let ((), state) = self
            .execute(
                &self.tables,
                table_id,
                |s| needs_seed.then_some(s.seed_id),
                |state, seed| {
                    let state = state.ok_or(DomainError::NotFound("the table's commitment"))?;
                    Ok((decide(state, seed)?, ()))
                },
            )
            .await?;
        state.ok_or(DomainError::NotFound("the table's commitment").into())
    }

    /// A seated player's contribution.
    #[tracing::instrument(skip(self, contribution), fields(table_id = %table_id, seat))]
    pub async fn contribute(
        &self,
        table_id: Uuid,
        seat: u32,
        player_id: Uuid,
        contribution: Contribution,
    ) -> Result<TableState, CommitmentError> {
        self.table_command(table_id, false, |s, _| {
            Ok(vec![s.contribute(seat, player_id, contribution.clone())?])
        })
        .await
    }

    /// Binds the table's delayed value.
    #[tracing::instrument(skip(self, value), fields(table_id = %table_id))]
    pub async fn bind_table_value(
        &self,
        table_id: Uuid,
        value: DelayedValue,
    ) -> Result<TableState, CommitmentError> {
        self.table_command(table_id, false, |s, _| {
            Ok(vec![s.bind_delayed_value(value.clone())?])
        })
        .await
    }

    /// The seeds of the table's next deal (fixes the client seed on the first call).
    /// Returns (server seed, client seed, state).
    #[tracing::instrument(skip(self), fields(table_id = %table_id))]
    pub async fn dealing_seeds(
        &self,
        table_id: Uuid,
    ) -> Result<(ServerSeed, String, TableState), CommitmentError> {
        // The first deal binds a drand round not bound yet (waiting a little for it).
        if let Some(drand) = &self.drand
            && self.table(table_id).await?.drand_round_to_bind().is_some()
        {
            self.bind_drand::<TableCommitment>(table_id, Some(drand.deal_wait))
                .await?;
        }
        let ((seed, client), state) = self
            .execute(
                &self.tables,
                table_id,
                |s| Some(s.seed_id),
                |state, seed| {
                    let state = state.ok_or(DomainError::NotFound("the table's commitment"))?;
                    let seed = seed.ok_or(DomainError::Corrupt("seed not opened"))?;
                    if seed.commitment() != state.commitment {
                        return Err(DomainError::SeedMismatch.into());
                    }
                    state.may_deal_at(unix_now())?;
                    let (client, fix) = state.client_seed_for_deal()?;
                    Ok((fix.into_iter().collect(), (seed.clone(), client)))
                },
            )
            .await?;
        let state = state.ok_or(DomainError::NotFound("the table's commitment"))?;
        Ok((seed, client, state))
    }

    /// Reveals the table's seed.
    #[tracing::instrument(skip(self, reason), fields(table_id = %table_id))]
    pub async fn reveal_table(
        &self,
        table_id: Uuid,
        reason: RevealReason,
    ) -> Result<TableState, CommitmentError> {
        self.table_command(table_id, true, |s, seed| {
            let seed = seed.ok_or(DomainError::Corrupt("seed not opened"))?;
            Ok(vec![s.reveal(seed, reason.clone())?])
        })
        .await
    }

    // ---- Seed pairs ----

    /// The user's active pair, opened (with a random client seed) on first use.
    ///
    /// Opening runs in the stream's queue and seals a seed only if the pair is still missing
    /// there, so a burst of first calls (e.g. concurrent first bets) opens one pair and seals
    /// one seed; only a race with another replica leaves an unreferenced sealed row.
    #[tracing::instrument(skip(self), fields(user_id = %user_id))]
    pub async fn pair(&self, user_id: Uuid) -> Result<SeedPairs, CommitmentError> {
        if let Some(state) = self.pairs.load(&user_id).await?.state {
            return Ok(state);
        }
        let executed = self
            .pairs
            .execute_with(
                &user_id,
                |snapshot: &Snapshot<SeedPairs>| snapshot.state.is_none(),
                |missing| async move {
                    if missing {
                        self.new_seed().await.map(Some)
                    } else {
                        Ok(None)
                    }
                },
                |snapshot, fresh: Option<(Uuid, ServerSeed)>| match (&snapshot.state, fresh) {
                    (None, Some((seed_id, seed))) => {
                        // The default client seed is random too; the player may change it.
                        let client =
                            ClientSeed::parse(&ServerSeed::generate()?.expose_secret()[..32])?;
                        let event = SeedPairs::open(user_id, seed_id, &seed, client);
                        Ok(Decision::new(vec![event], ()))
                    }
                    // Opened before us (queued ahead here, or by another replica): it stands.
                    _ => Ok(Decision::nothing(())),
                },
            )
            .await?;
        executed
            .after
            .state
            .ok_or(DomainError::Corrupt("pair state after open").into())
    }

    /// Changes the user's client seed.
    #[tracing::instrument(skip(self, client_seed), fields(user_id = %user_id))]
    pub async fn set_client_seed(
        &self,
        user_id: Uuid,
        client_seed: ClientSeed,
    ) -> Result<SeedPairs, CommitmentError> {
        self.pair(user_id).await?;
        let ((), state) = self
            .execute(
                &self.pairs,
                user_id,
                |_| None,
                |state, _| {
                    let state = state.ok_or(DomainError::NotFound("the seed pair"))?;
                    Ok((vec![state.change_client_seed(client_seed.clone())], ()))
                },
            )
            .await?;
        state.ok_or(DomainError::NotFound("the seed pair").into())
    }

    /// Reveals the active seed and commits a new one. Returns (revealed event, new pair).
    #[tracing::instrument(skip(self), fields(user_id = %user_id))]
    pub async fn rotate(&self, user_id: Uuid) -> Result<(PairEvent, SeedPairs), CommitmentError> {
        self.pair(user_id).await?;
        let (new_id, new_seed) = self.new_seed().await?;
        let (revealed, state) = self
            .execute(
                &self.pairs,
                user_id,
                |s| Some(s.seed_id),
                |state, seed| {
                    let state = state.ok_or(DomainError::NotFound("the seed pair"))?;
                    let seed = seed.ok_or(DomainError::Corrupt("seed not opened"))?;
                    let events = state.rotate(seed, new_id, &new_seed)?;
                    let revealed = events[0].clone();
                    Ok((events.to_vec(), revealed))
                },
            )
            .await?;
        Ok((
            revealed,
            state.ok_or(DomainError::NotFound("the seed pair"))?,
        ))
    }

    /// A rotated pair: (commitment hex, revealed seed, bets).
    pub async fn revealed_pair(
        &self,
        user_id: Uuid,
        index: u64,
    ) -> Result<(ServerSeed, u64), CommitmentError> {
        self.pairs
            .events(&user_id)
            .await?
            .into_iter()
            .find_map(|e| match e {
                PairEvent::Rotated {
                    index: i,
                    server_seed,
                    bets,
                } if i == index => Some((server_seed, bets)),
                _ => None,
            })
            .ok_or(DomainError::NotFound("a revealed seed pair with this index").into())
    }

    /// Reserves the next nonce of the user's pair for `bet` (or, for a bet id reserved
    /// before, returns that reservation). Returns the bet's seeds, the server seed (for the
    /// dealing service only) and the pair.
    #[tracing::instrument(skip(self, bet), fields(user_id = %user_id))]
    pub async fn reserve_bet(
        &self,
        user_id: Uuid,
        bet: BetRequest,
    ) -> Result<(BetSeeds, ServerSeed, SeedPairs), CommitmentError> {
        match self.reserve_on_existing_pair(user_id, &bet).await {
            // The first bet of a user opens their pair (one extra read only then).
            Err(CommitmentError::Domain(DomainError::NotFound(_))) => {
                self.pair(user_id).await?;
                self.reserve_on_existing_pair(user_id, &bet).await
            }
            other => other,
        }
    }

    async fn reserve_on_existing_pair(
        &self,
        user_id: Uuid,
        bet: &BetRequest,
    ) -> Result<(BetSeeds, ServerSeed, SeedPairs), CommitmentError> {
        let ((bet, seed), state) = self
            .execute(
                &self.pairs,
                user_id,
                |s| Some(s.seed_id),
                |state, seed| {
                    let state = state.ok_or(DomainError::NotFound("the seed pair"))?;
                    let seed = seed.ok_or(DomainError::Corrupt("seed not opened"))?;
                    if seed.commitment() != state.commitment {
                        return Err(DomainError::SeedMismatch.into());
                    }
                    Ok(match state.reserve(bet)? {
                        Reservation::New(seeds, event) => (vec![event], (seeds, seed.clone())),
                        Reservation::Earlier(seeds) => (Vec::new(), (seeds, seed.clone())),
                    })
                },
            )
            .await?;
        Ok((
            bet,
            seed,
            state.ok_or(DomainError::NotFound("the seed pair"))?,
        ))
    }

    // ---- Tournaments ----

    /// Commits a new tournament secret. With `delayed_source` the organiser's own source (bound
    /// by hand); without one, a drand round fixed now (drand on), whose name the service writes
    /// as the source, bound by the service once out. No source with drand off is
    /// INVALID_ARGUMENT naming `delayed_source`.
    #[tracing::instrument(skip(self, delayed_source), fields(tournament_id = %tournament_id))]
    pub async fn commit_tournament(
        &self,
        tournament_id: Uuid,
        deck: Deck,
        delayed_source: Option<DelayedSource>,
    ) -> Result<TournamentSet, CommitmentError> {
        let exists = || DomainError::AlreadyExists("the tournament");
        let (delayed_source, drand) = match (delayed_source, &self.drand) {
            (Some(source), _) => (source, None),
            // Fixed from now (rounded up): the commitment is made now.
            (None, Some(drand)) => {
                let round = drand.fix(unix_now_ceil())?;
                (round.source(drand.beacon_id())?, Some(round))
            }
            (None, None) => {
                return Err(DomainError::InvalidText {
                    field: "delayed_source",
                    reason: "is required: this service has no drand chain to fix a round from"
                        .into(),
                }
                .into());
            }
        };
        // Checked first so no seed is sealed for a tournament that has one.
        if self.tournaments.load(&tournament_id).await?.state.is_some() {
            return Err(exists().into());
        }
        let (seed_id, seed) = self.new_seed().await?;
        if drand.is_some() {
            self.record_pending::<TournamentSet>(tournament_id).await?;
        }
        let event =
            TournamentSet::commit(tournament_id, seed_id, &seed, delayed_source, deck, drand);
        let state = self
            .open_stream(&self.tournaments, tournament_id, event, exists)
            .await?;
        if state.drand.is_some() {
            self.spawn_drand_binder::<TournamentSet>(tournament_id);
        }
        Ok(state)
    }

    /// The tournament's state.
    pub async fn tournament(&self, tournament_id: Uuid) -> Result<TournamentSet, CommitmentError> {
        self.tournaments
            .load(&tournament_id)
            .await?
            .state
            .ok_or(DomainError::NotFound("the tournament").into())
    }

    async fn tournament_command<R>(
        &self,
        tournament_id: Uuid,
        needs_seed: bool,
        mut decide: impl FnMut(
            &TournamentSet,
            Option<&ServerSeed>,
        ) -> Result<(Vec<TournamentEvent>, R), CommitmentError>,
    ) -> Result<(R, TournamentSet), CommitmentError> {
        let (result, state) = self
            .execute(
                &self.tournaments,
                tournament_id,
                |s| needs_seed.then_some(s.seed_id),
                |state, seed| decide(state.ok_or(DomainError::NotFound("the tournament"))?, seed),
            )
            .await?;
        Ok((
            result,
            state.ok_or(DomainError::NotFound("the tournament"))?,
        ))
    }

    /// Binds the tournament's delayed value.
    pub async fn bind_tournament_value(
        &self,
        tournament_id: Uuid,
        value: DelayedValue,
    ) -> Result<TournamentSet, CommitmentError> {
        Ok(self
            .tournament_command(tournament_id, false, |s, _| {
                Ok((vec![s.bind_delayed_value(value.clone())?], ()))
            })
            .await?
            .1)
    }

    /// Generates boards of a session. A drand round published but not bound yet (its binder
    /// failed or was lost in a restart) is fetched and bound first, without waiting for a
    /// round still to come.
    #[tracing::instrument(skip(self), fields(tournament_id = %tournament_id))]
    pub async fn generate_boards(
        &self,
        tournament_id: Uuid,
        session: u32,
        first_board: u32,
        count: u32,
    ) -> Result<Vec<Board>, CommitmentError> {
        if self.drand.is_some()
            && self
                .tournament(tournament_id)
                .await?
                .drand_round_to_bind()
                .is_some()
        {
            self.bind_drand::<TournamentSet>(tournament_id, Some(std::time::Duration::ZERO))
                .await?;
        }
        Ok(self
            .tournament_command(tournament_id, true, |s, seed| {
                let seed = seed.ok_or(DomainError::Corrupt("seed not opened"))?;
                let (boards, event) = s.generate(seed, session, first_board, count)?;
                Ok((vec![event], boards))
            })
            .await?
            .0)
    }

    /// Reveals the tournament secret.
    pub async fn reveal_tournament(
        &self,
        tournament_id: Uuid,
    ) -> Result<TournamentSet, CommitmentError> {
        Ok(self
            .tournament_command(tournament_id, true, |s, seed| {
                let seed = seed.ok_or(DomainError::Corrupt("seed not opened"))?;
                Ok((vec![s.reveal(seed)?], ()))
            })
            .await?
            .1)
    }

    // ---- drand rounds (tables and tournaments) ----

    /// Records, before its commitment event, that `id` will have a drand round to bind.
    async fn record_pending<A: DrandStream>(&self, id: Uuid) -> Result<(), CommitmentError> {
        if let Some(pending) = &self.pending {
            pending.insert(A::SUBJECT, id, unix_now()).await?;
        }
        Ok(())
    }

    /// Forgets that `id` may have a drand round to bind (nothing is left to bind). A failure
    /// is only logged: the row is looked at again, and deleted, at the next start.
    async fn forget_pending<A: DrandStream>(&self, id: Uuid) {
        if let Some(pending) = &self.pending
            && let Err(error) = pending.remove(A::SUBJECT, id).await
        {
            tracing::warn!(subject = A::SUBJECT, %id, %error, "could not forget a bound drand round");
        }
    }

    /// At the service's start (drand on): runs a binder for every commitment, table or
    /// tournament, whose drand round is not bound yet (its binder was lost with the process
    /// that committed it), and forgets the others. Runs in the background on the service's
    /// `Shutdown`; every replica may do it, since binding is decided on the stream's current
    /// state and a binder that loses the race to another replica re-reads and stops.
    pub fn restart_drand_binders(&self) {
        let (Some(_), Some(shutdown)) = (&self.drand, &self.background) else {
            return;
        };
        let token = shutdown.token();
        let this = self.clone();
        shutdown.spawn("drand-binders-restart", async move {
            tokio::select! {
                () = token.cancelled() => {}
                () = this.restart_pending() => {}
            }
        });
    }

    async fn restart_pending(&self) {
        let Some(pending) = &self.pending else {
            return;
        };
        let rows = match pending.list().await {
            Ok(rows) => rows,
            Err(error) => {
                tracing::error!(%error, "could not read the commitments awaiting a drand round: their binders are not restarted (a deal or a board generation binds them)");
                return;
            }
        };
        let mut restarted = 0_usize;
        for row in rows {
            let outcome = match row.subject.as_str() {
                TableCommitment::SUBJECT => {
                    self.restart_one::<TableCommitment>(row.id, row.created_at)
                        .await
                }
                TournamentSet::SUBJECT => {
                    self.restart_one::<TournamentSet>(row.id, row.created_at)
                        .await
                }
                other => {
                    tracing::error!(subject = %fairdeal_text::shown(other), id = %row.id, "unknown subject in pending_drand_rounds: ignored");
                    Ok(false)
                }
            };
            match outcome {
                Ok(true) => restarted += 1,
                Ok(false) => {}
                Err(error) => {
                    tracing::error!(subject = %row.subject, id = %row.id, %error, "could not read a commitment awaiting a drand round: its binder is not restarted");
                }
            }
        }
        if restarted > 0 {
            tracing::info!(restarted, "drand binders restarted");
        }
    }

    /// Restarts the binder of `id` if its drand round is still to bind (true), else forgets
    /// it: bound, closed, or never committed (a row written just before a commit that did not
    /// happen: forgotten an hour later, so that a commit in flight elsewhere keeps its row).
    async fn restart_one<A: DrandStream>(
        &self,
        id: Uuid,
        created_at: u64,
    ) -> Result<bool, CommitmentError> {
        match A::streams(self).load(&id).await?.state {
            Some(state) if state.drand_round_to_bind().is_some() => {
                self.spawn_drand_binder::<A>(id);
                Ok(true)
            }
            Some(_) => {
                self.forget_pending::<A>(id).await;
                Ok(false)
            }
            None => {
                if unix_now() > created_at.saturating_add(ORPHAN_PENDING_SECONDS) {
                    self.forget_pending::<A>(id).await;
                }
                Ok(false)
            }
        }
    }

    /// Runs a binder of `id`'s drand round in the background: from the round's time it
    /// fetches, verifies and binds it (declaring it stalled and binding the fallback when it
    /// must), retrying with a growing pause until the fallback round's stall time has passed;
    /// stops with the service.
    fn spawn_drand_binder<A: DrandStream>(&self, id: Uuid) {
        let Some(shutdown) = &self.background else {
            return;
        };
        let token = shutdown.token();
        let this = self.clone();
        shutdown.spawn("drand-binder", async move {
            tokio::select! {
                () = token.cancelled() => {}
                () = this.bind_drand_in_background::<A>(id) => {}
            }
        });
    }

    async fn bind_drand_in_background<A: DrandStream>(&self, id: Uuid) {
        let Some(drand) = self.drand.clone() else {
            return;
        };
        let subject = A::SUBJECT;
        let mut pause = std::time::Duration::from_secs(1);
        loop {
            match self.bind_drand::<A>(id, None).await {
                Ok(_) => return,
                Err(error) => {
                    let give_up = match self.drand_subject::<A>(id).await {
                        Ok(state) => state.drand().is_none_or(|d| {
                            unix_now()
                                > drand
                                    .round_time(d.fallback_round)
                                    .saturating_add(drand.stall_after.as_secs())
                        }),
                        Err(_) => false,
                    };
                    if give_up {
                        tracing::error!(subject, %id, %error, "the drand round and its fallback could not be bound; a table's first deal, a tournament's board generation or the service's next start will try again");
                        return;
                    }
                    tracing::warn!(subject, %id, %error, retry_in = ?pause, "binding the drand round failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(30));
                }
            }
        }
    }

    /// The table's or tournament's state, NOT_FOUND naming it.
    async fn drand_subject<A: DrandStream>(&self, id: Uuid) -> Result<A, CommitmentError> {
        A::streams(self)
            .load(&id)
            .await?
            .state
            .ok_or(DomainError::NotFound(A::NOT_FOUND).into())
    }

    /// Decides one event on the table's or tournament's current state and appends it.
    async fn drand_command<A: DrandStream>(
        &self,
        id: Uuid,
        decide: impl Fn(&A) -> Result<<A as Aggregate>::Event, DomainError>,
    ) -> Result<A, CommitmentError> {
        let ((), state) = self
            .execute(
                A::streams(self),
                id,
                |_| None,
                |state, _| {
                    let state = state.ok_or(DomainError::NotFound(A::NOT_FOUND))?;
                    Ok((vec![decide(state)?], ()))
                },
            )
            .await?;
        state.ok_or(DomainError::NotFound(A::NOT_FOUND).into())
    }

    /// Fetches, verifies and binds the drand round of table or tournament `id` (or its
    /// fallback once stalled), waiting for it to be published (at most `wait`, if given), and
    /// declaring it stalled when it still cannot be fetched `stall_after` past its time. The
    /// state after.
    #[tracing::instrument(skip(self), fields(subject = A::SUBJECT, id = %id))]
    pub(crate) async fn bind_drand<A: DrandStream>(
        &self,
        id: Uuid,
        wait: Option<std::time::Duration>,
    ) -> Result<A, CommitmentError> {
        let Some(drand) = self.drand.clone() else {
            return self.drand_subject::<A>(id).await;
        };
        // Bounded: each pass binds, stalls once (then the fallback), loses a race (then
        // the state shows the bound value), or returns an error.
        for _ in 0..4 {
            let state = self.drand_subject::<A>(id).await?;
            let Some(round) = state.drand_round_to_bind() else {
                if state.drand().is_some() {
                    self.forget_pending::<A>(id).await;
                }
                return Ok(state);
            };
            let due = drand.round_time(round);
            let now = unix_now();
            if due > now {
                let until = due - now;
                if let Some(wait) = wait
                    && until > wait.as_secs()
                {
                    return Err(CommitmentError::DrandNotDue {
                        subject: A::SUBJECT,
                        round,
                        in_seconds: until,
                        wait_seconds: wait.as_secs(),
                    });
                }
                tokio::time::sleep(std::time::Duration::from_secs(until)).await;
            }
            match drand.client.fetch(round).await {
                Ok(verified) => {
                    let beacon = DrandBeacon {
                        round,
                        signature: verified.signature.to_hex(),
                        randomness: verified.randomness.to_hex(),
                    };
                    match self
                        .drand_command::<A>(id, |s| s.bind_drand(beacon.clone()))
                        .await
                    {
                        Ok(state) => {
                            tracing::info!(round, randomness = %beacon.randomness, "drand round bound as the delayed value");
                            self.forget_pending::<A>(id).await;
                            return Ok(state);
                        }
                        // Bound or stalled meanwhile (another replica, the other binder).
                        Err(CommitmentError::Domain(
                            DomainError::DelayedValueBound
                            | DomainError::DrandWrongRound { .. }
                            | DomainError::ClientSeedFixed(_)
                            | DomainError::AlreadyRevealed,
                        )) => continue,
                        Err(error) => return Err(error),
                    }
                }
                Err(error) => {
                    // The fallback never stalls; the round only once its stall time passed.
                    let keep_waiting = state.drand_stalled()
                        || unix_now() < due.saturating_add(drand.stall_after.as_secs());
                    if keep_waiting {
                        return Err(error.into());
                    }
                    let reason = error.to_string();
                    match self
                        .drand_command::<A>(id, |s| s.stall_drand(reason.clone()))
                        .await
                    {
                        Ok(_) => {
                            tracing::warn!(round, reason = %reason, "drand round declared stalled: the fallback round is now the one");
                        }
                        Err(CommitmentError::Domain(
                            DomainError::DrandStall { .. }
                            | DomainError::DelayedValueBound
                            | DomainError::ClientSeedFixed(_)
                            | DomainError::AlreadyRevealed,
                        )) => {}
                        Err(error) => return Err(error),
                    }
                }
            }
        }
        self.drand_subject::<A>(id).await
    }
}

/// A row of `pending_drand_rounds` whose commitment does not exist is deleted at a start once
/// it is this old (seconds): younger, the commit may still be in flight in another replica.
const ORPHAN_PENDING_SECONDS: u64 = 3600;

/// A table or a tournament as the service binds its drand round: an aggregate whose events
/// are its [`DrandSubject`] events, and where its streams are.
pub(crate) trait DrandStream:
    Aggregate<Id = Uuid, Event = <Self as DrandSubject>::Event> + DrandSubject<Event: Send + Sync>
{
    /// The service's streams of this aggregate.
    fn streams(service: &Commitments) -> &Streams<Self>;
}

impl DrandStream for TableCommitment {
    fn streams(service: &Commitments) -> &Streams<Self> {
        &service.tables
    }
}

impl DrandStream for TournamentSet {
    fn streams(service: &Commitments) -> &Streams<Self> {
        &service.tournaments
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn a_seed_under_a_missing_key_is_a_failed_precondition_naming_the_key_id() {
        let error = CommitmentError::Vault(VaultError::UnknownKey {
            seed_id: Uuid::nil(),
            key_id: "k2".into(),
        });
        let status = tonic::Status::from(ServiceError::from(error));
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert!(status.message().contains("\"k2\""), "{status:?}");
        // Other vault failures stay internal (tampering, a bad nonce): never the caller's.
        let opened = ServiceError::from(CommitmentError::Vault(VaultError::Open(Uuid::nil())));
        assert_eq!(opened.code(), Code::Internal);
        // Caller mistakes are INVALID_ARGUMENT, never INTERNAL (which is logged at ERROR).
        let invalid = ServiceError::from(CommitmentError::Domain(DomainError::InvalidText {
            field: "justification",
            reason: "is 501 characters, at most 500 allowed".into(),
        }));
        assert_eq!(invalid.code(), Code::InvalidArgument);
    }
}
