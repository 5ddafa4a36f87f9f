//! The service's use cases, independent of gRPC: load an aggregate's stream, fold it, run
//! the domain command, append the resulting events with the version read (optimistic
//! concurrency; a lost race is re-read and re-decided a few times before giving up).
//!
//! Seeds: a new seed is generated (OS CSPRNG), sealed and stored before the event that
//! commits to it is appended; a seed is opened only for the commands that need it (reveal,
//! dealing, bets, rotation, board generation) and never logged.

use std::sync::Arc;

use fairdeal_eventstore::{
    EventError, EventStore, ExpectedVersion, NewEvent, RecordedEvent, StoreError, StreamId,
};
use fairdeal_fairness::commitment::{EntropyError, ServerSeed};
use fairdeal_fairness::deck::Deck;
use fairdeal_kit::ServiceError;
use uuid::Uuid;

use crate::domain::client_seed::{Contribution, DelayedSource, DelayedValue};
use crate::domain::pair::{BetRequest, BetSeeds, ClientSeed, PairEvent, Reservation, SeedPairs};
use crate::domain::table::TableCommitment;
use crate::domain::tournament::{Board, TournamentEvent, TournamentSet};
use crate::domain::{DomainError, ErrorClass, RevealReason};
use crate::events::{Aggregate, DecodeError, stream_of};
use crate::seeds::SeedStore;
use crate::vault::{KeyRing, VaultError};

/// Attempts at a command that keeps losing optimistic-concurrency races.
const MAX_ATTEMPTS: usize = 5;
/// Events read per call when loading a stream.
const PAGE: usize = 1000;

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
    /// A stored event does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
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
    /// Concurrent writers kept winning.
    #[error("too many concurrent changes to {0}; retry")]
    Contended(String),
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
            CommitmentError::Store(e) if e.is_conflict() => ServiceError::Conflict(e.to_string()),
            CommitmentError::Contended(what) => {
                ServiceError::Conflict(format!("too many concurrent changes to {what}; retry"))
            }
            CommitmentError::Store(StoreError::Database(e)) | CommitmentError::Seeds(e) => {
                ServiceError::unavailable("database unavailable", e)
            }
            other => ServiceError::internal(other),
        }
    }
}

/// A loaded stream: its version, events and folded state.
struct Loaded<A: Aggregate> {
    stream: StreamId,
    version: u64,
    events: Vec<A::Event>,
    state: Option<A>,
}

/// The use cases of the commitment service.
#[derive(Clone, Debug)]
pub struct Commitments {
    /// The event log of record.
    store: Arc<dyn EventStore>,
    /// Sealed seeds.
    seeds: SeedStore,
    /// Keys sealing the seeds.
    keys: Arc<KeyRing>,
}

/// What a table command returns: the state after it.
pub type TableState = TableCommitment;

impl Commitments {
    /// Use cases over `store`, `seeds` and `keys`.
    pub fn new(store: Arc<dyn EventStore>, seeds: SeedStore, keys: KeyRing) -> Self {
        Commitments {
            store,
            seeds,
            keys: Arc::new(keys),
        }
    }

    async fn load<A: Aggregate>(&self, id: Uuid) -> Result<Loaded<A>, CommitmentError> {
        let stream = stream_of::<A>(id)?;
        let mut recorded: Vec<RecordedEvent> = Vec::new();
        loop {
            let from = recorded.last().map_or(1, |e| e.version + 1);
            let page = self.store.read_stream(&stream, from, PAGE).await?;
            let done = page.len() < PAGE;
            recorded.extend(page);
            if done {
                break;
            }
        }
        let version = recorded.last().map_or(0, |e| e.version);
        let events = recorded
            .iter()
            .map(A::decode)
            .collect::<Result<Vec<_>, _>>()?;
        let state = A::replay(&events)?;
        Ok(Loaded {
            stream,
            version,
            events,
            state,
        })
    }

    async fn append<A: Aggregate>(
        &self,
        id: Uuid,
        mut loaded: Loaded<A>,
        new: Vec<A::Event>,
    ) -> Result<Option<A>, CommitmentError> {
        if new.is_empty() {
            return Ok(loaded.state);
        }
        let mut trace = std::collections::BTreeMap::new();
        fairdeal_kit::propagation::inject_current(&mut trace);
        let encoded: Vec<NewEvent> = new
            .iter()
            .map(|e| A::encode(id, e).with_trace_context(trace.clone()))
            .collect();
        let expected = if loaded.version == 0 {
            ExpectedVersion::NoStream
        } else {
            ExpectedVersion::Exact(loaded.version)
        };
        self.store.append(&loaded.stream, expected, encoded).await?;
        loaded.events.extend(new);
        Ok(A::replay(&loaded.events)?)
    }

    /// Runs `decide` on the freshly loaded state (with the opened seed of `seed_of(state)`,
    /// if any) and appends its events, retrying lost races.
    async fn execute<A, R>(
        &self,
        id: Uuid,
        seed_of: impl Fn(&A) -> Option<Uuid>,
        mut decide: impl FnMut(
            Option<&A>,
            Option<&ServerSeed>,
        ) -> Result<(Vec<A::Event>, R), CommitmentError>,
    ) -> Result<(R, Option<A>), CommitmentError>
    where
        A: Aggregate,
    {
        for _ in 0..MAX_ATTEMPTS {
            let loaded = self.load::<A>(id).await?;
            let seed = match loaded.state.as_ref().and_then(&seed_of) {
                Some(seed_id) => Some(self.open(seed_id).await?),
                None => None,
            };
            let (events, result) = decide(loaded.state.as_ref(), seed.as_ref())?;
            match self.append(id, loaded, events).await {
                Err(CommitmentError::Store(e)) if e.is_conflict() => continue,
                Err(e) => return Err(e),
                Ok(state) => return Ok((result, state)),
            }
        }
        Err(CommitmentError::Contended(stream_of::<A>(id)?.to_string()))
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
    #[tracing::instrument(skip(self, delayed_source), fields(table_id = %table_id))]
    pub async fn create_table(
        &self,
        table_id: Uuid,
        delayed_source: Option<DelayedSource>,
    ) -> Result<TableState, CommitmentError> {
        if self
            .load::<TableCommitment>(table_id)
            .await?
            .state
            .is_some()
        {
            return Err(DomainError::AlreadyExists("the table's commitment").into());
        }
        let (seed_id, seed) = self.new_seed().await?;
        let event = TableCommitment::publish(table_id, seed_id, &seed, delayed_source);
        let loaded = self.load::<TableCommitment>(table_id).await?;
        if loaded.state.is_some() {
            return Err(DomainError::AlreadyExists("the table's commitment").into());
        }
        match self.append(table_id, loaded, vec![event]).await {
            Err(CommitmentError::Store(e)) if e.is_conflict() => {
                Err(DomainError::AlreadyExists("the table's commitment").into())
            }
            other => other?.ok_or(DomainError::Corrupt("table state after publish").into()),
        }
    }

    /// The table's state.
    pub async fn table(&self, table_id: Uuid) -> Result<TableState, CommitmentError> {
        self.load::<TableCommitment>(table_id)
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
            .execute::<TableCommitment, ()>(
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
        let ((seed, client), state) = self
            .execute::<TableCommitment, _>(
                table_id,
                |s| Some(s.seed_id),
                |state, seed| {
                    let state = state.ok_or(DomainError::NotFound("the table's commitment"))?;
                    let seed = seed.ok_or(DomainError::Corrupt("seed not opened"))?;
                    if seed.commitment() != state.commitment {
                        return Err(DomainError::SeedMismatch.into());
                    }
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

    /// The user's active pair, opened (with `default_client_seed`) on first use.
    #[tracing::instrument(skip(self), fields(user_id = %user_id))]
    pub async fn pair(&self, user_id: Uuid) -> Result<SeedPairs, CommitmentError> {
        if let Some(state) = self.load::<SeedPairs>(user_id).await?.state {
            return Ok(state);
        }
        let (seed_id, seed) = self.new_seed().await?;
        // The default client seed is random too; the player may change it at any time.
        let client = ClientSeed::parse(&ServerSeed::generate()?.expose_secret()[..32])?;
        let event = SeedPairs::open(user_id, seed_id, &seed, client);
        let loaded = self.load::<SeedPairs>(user_id).await?;
        if let Some(state) = loaded.state {
            return Ok(state);
        }
        match self.append(user_id, loaded, vec![event]).await {
            // Someone opened it concurrently: theirs stands.
            Err(CommitmentError::Store(e)) if e.is_conflict() => self
                .load::<SeedPairs>(user_id)
                .await?
                .state
                .ok_or(DomainError::Corrupt("pair after concurrent open").into()),
            other => other?.ok_or(DomainError::Corrupt("pair state after open").into()),
        }
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
            .execute::<SeedPairs, ()>(
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
            .execute::<SeedPairs, _>(
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
        let loaded = self.load::<SeedPairs>(user_id).await?;
        loaded
            .events
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
            .execute::<SeedPairs, _>(
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

    /// Commits a new tournament secret.
    #[tracing::instrument(skip(self, delayed_source), fields(tournament_id = %tournament_id))]
    pub async fn commit_tournament(
        &self,
        tournament_id: Uuid,
        deck: Deck,
        delayed_source: DelayedSource,
    ) -> Result<TournamentSet, CommitmentError> {
        if self
            .load::<TournamentSet>(tournament_id)
            .await?
            .state
            .is_some()
        {
            return Err(DomainError::AlreadyExists("the tournament").into());
        }
        let (seed_id, seed) = self.new_seed().await?;
        let event = TournamentSet::commit(tournament_id, seed_id, &seed, delayed_source, deck);
        let loaded = self.load::<TournamentSet>(tournament_id).await?;
        match self.append(tournament_id, loaded, vec![event]).await {
            Err(CommitmentError::Store(e)) if e.is_conflict() => {
                Err(DomainError::AlreadyExists("the tournament").into())
            }
            other => other?.ok_or(DomainError::Corrupt("tournament after commit").into()),
        }
    }

    /// The tournament's state.
    pub async fn tournament(&self, tournament_id: Uuid) -> Result<TournamentSet, CommitmentError> {
        self.load::<TournamentSet>(tournament_id)
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
            .execute::<TournamentSet, R>(
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

    /// Generates boards of a session.
    #[tracing::instrument(skip(self), fields(tournament_id = %tournament_id))]
    pub async fn generate_boards(
        &self,
        tournament_id: Uuid,
        session: u32,
        first_board: u32,
        count: u32,
    ) -> Result<Vec<Board>, CommitmentError> {
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
}
