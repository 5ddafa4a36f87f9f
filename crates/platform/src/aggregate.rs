//! Running an aggregate: one generic loop for every event-sourced command of every service.
//!
//! An [`Aggregate`] is a state folded from one stream's events (`<CATEGORY>-<id>`). A
//! command runs through [`Streams::execute`]:
//!
//! 1. **Queue.** Commands to the same stream in this process wait their turn behind one
//!    in-memory owner per stream (a lock holding the stream's cached state), so ordinary
//!    concurrency in one process never conflicts. Only writers in *other* processes can.
//! 2. **Catch up.** The owner holds the state at some version; it is brought up to date by
//!    reading the events after that version (all of them the first time, after a conflict,
//!    or when a later version was notified). On the hot path nothing is read: the append
//!    below decides.
//! 3. **Prepare** (async, optional): whatever the decision needs from outside, given the
//!    state (e.g. an opened seed, another service's answer): [`Streams::execute_with`].
//! 4. **Decide** (pure): command + state + prepared input -> events and a reply, or a domain
//!    error. A rejection is re-checked against the store's current version before it is
//!    returned, so a stale cache never refuses a valid command.
//! 5. **Append** with the expected version (the store decides, never the cache), with the
//!    current trace context in every event. On a version conflict (another process wrote),
//!    catch up and go again from 3, at most [`RunnerSettings::max_attempts`] times; then
//!    [`RunError::Contended`] with the stream's current version (gRPC ABORTED: re-read and
//!    retry).
//!
//! The owners live in a bounded map: past [`RunnerSettings::cache_capacity`] streams, owners
//! nobody is using are dropped (their state is re-read on next use).
//!
//! **Notified streams** ([`Streams::notified`]). Without more, a decision that appends
//! nothing and a [`Streams::load`] ask the store for the stream's version or its new events
//! (another process may have written). Given the storage's [`AppendSignal`], each owner
//! follows its stream's notifications (this process's appends; on PostgreSQL every
//! replica's commits): while no later version was notified, the cached state is the
//! stream's, and nothing is read. The price is a read-side lag behind *other* replicas of
//! one notification's delivery (milliseconds), never behind this process; appends are still
//! decided by the store's expected version, and refusals are still re-checked. When a
//! later version was notified, the new events come from memory if the stream's watchers in
//! this process already have them (see `fairdeal_bus::signal`), else from the store, and
//! what was read is left for those watchers. After a conflict or a refusal on cached state
//! the store is always read: it has just said the state is behind. Only for streams
//! appended to through the notifying store (not `append_in_tx`).
//!
//! **Fenced streams** ([`Streams::fenced`]). When a service's replicas share its instances
//! by partition (`crate::ownership`), only the holder of an instance's partition decides
//! for it. A fenced runner refuses a command for an instance whose partition this process
//! does not hold before reading or deciding anything ([`StoreError::Fenced`], gRPC
//! UNAVAILABLE: the owner serves it), and appends behind the lease it holds
//! ([`EventStore::append_fenced`]), so a decision made just before the lease was lost is
//! not written either: the store checks the lease in the append's own statement.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;

use fairdeal_bus::{AppendSignal, StreamWaiter};
use fairdeal_event::{EventError, NewEvent, RecordedEvent, StreamId};
use fairdeal_eventstore::{EventStore, ExpectedVersion, Fence, StoreError};

/// Events read per call when catching up.
const PAGE: usize = 1000;

/// An event-sourced state: one stream's events folded.
pub trait Aggregate: Sized + Clone + Send + Sync + 'static {
    /// Stream category: the stream of id `id` is `<CATEGORY>-<id>`.
    const CATEGORY: &'static str;
    /// What identifies one instance (a table id, a user id).
    type Id: fmt::Display + Send + Sync;
    /// The aggregate's events.
    type Event: Send + Sync;
    /// Why a stored event does not decode (a foreign type, a payload that does not parse, a
    /// field that does not map to the domain). Separate from [`Aggregate::FoldError`]: every
    /// aggregate decodes bytes and folds domain events with different failures (the
    /// decoding ones name a field, the folding ones an order of events), and one type for
    /// both would be an enum of the two in every implementation.
    type DecodeError: std::error::Error + Send + Sync + 'static;
    /// Why a decoded event cannot follow the state (a corrupt or foreign stream).
    type FoldError: std::error::Error + Send + Sync + 'static;

    /// Encodes `event` of instance `id` for the store (payload, type, correlation id).
    fn encode(id: &Self::Id, event: &Self::Event) -> NewEvent;

    /// Decodes a stored event of this aggregate; the error says what does not parse.
    fn decode(event: &RecordedEvent) -> Result<Self::Event, Self::DecodeError>;

    /// Folds one event into the state (`None`: the stream had no event yet); the error says
    /// why the event cannot follow.
    fn apply(state: Option<Self>, event: &Self::Event) -> Result<Self, Self::FoldError>;
}

/// The stream of instance `id` of `A`.
pub fn stream_of<A: Aggregate>(id: &A::Id) -> Result<StreamId, EventError> {
    StreamId::of(A::CATEGORY, id)
}

/// A stored stream that does not fold: decoding or applying an event failed.
#[derive(Debug, thiserror::Error)]
#[error("stream {stream} does not fold at version {version} ({event_type}): {cause}")]
pub struct CorruptStream {
    /// The stream.
    pub stream: StreamId,
    /// The offending event's version.
    pub version: u64,
    /// Its type.
    pub event_type: String,
    /// What is wrong: the aggregate's [`Aggregate::DecodeError`] or
    /// [`Aggregate::FoldError`], boxed so `RunError` stays one type for every aggregate.
    /// The message shows it, so it is not also the error's `source` (a log of the error's
    /// chain would print it twice).
    pub cause: Box<dyn std::error::Error + Send + Sync>,
}

impl CorruptStream {
    /// `cause` found at `recorded` of `stream`.
    fn at(
        stream: &StreamId,
        recorded: &RecordedEvent,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            stream: stream.clone(),
            version: recorded.version,
            event_type: recorded.event_type.clone(),
            cause: Box::new(cause),
        }
    }
}

/// How a command run fails.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E> {
    /// The command was refused (by `prepare` or `decide`): the caller's error.
    #[error(transparent)]
    Rejected(E),
    /// Other processes kept winning the race for the stream.
    #[error("too many concurrent changes to {stream}, now at version {version}; re-read and retry")]
    Contended {
        /// The stream.
        stream: StreamId,
        /// Its version when the runner gave up.
        version: u64,
    },
    /// The stored stream does not fold.
    #[error(transparent)]
    Corrupt(#[from] CorruptStream),
    /// The stream id could not be formed.
    #[error("stream id: {0}")]
    Stream(#[from] EventError),
    /// The event store failed.
    #[error("event store: {0}")]
    Store(#[from] StoreError),
}

impl<E> RunError<E> {
    /// Maps the caller's error.
    pub fn map_rejected<F>(self, f: impl FnOnce(E) -> F) -> RunError<F> {
        match self {
            RunError::Rejected(e) => RunError::Rejected(f(e)),
            RunError::Contended { stream, version } => RunError::Contended { stream, version },
            RunError::Corrupt(e) => RunError::Corrupt(e),
            RunError::Stream(e) => RunError::Stream(e),
            RunError::Store(e) => RunError::Store(e),
        }
    }
}

/// A stream's state at a version.
#[derive(Debug, Clone)]
pub struct Snapshot<A> {
    /// The stream's last version (0: no stream).
    pub version: u64,
    /// The folded state (`None`: no stream).
    pub state: Option<A>,
}

/// What `decide` returns: the events to append and the reply.
#[derive(Debug)]
pub struct Decision<Ev, R> {
    /// Events to append (none: nothing changes, e.g. an idempotent repeat).
    pub events: Vec<Ev>,
    /// What the command answers.
    pub reply: R,
}

impl<Ev, R> Decision<Ev, R> {
    /// A decision appending `events` and answering `reply`.
    pub fn new(events: Vec<Ev>, reply: R) -> Self {
        Self { events, reply }
    }

    /// A decision that changes nothing.
    pub fn nothing(reply: R) -> Self {
        Self {
            events: Vec::new(),
            reply,
        }
    }
}

/// A command that ran.
#[derive(Debug)]
pub struct Executed<A, R> {
    /// The reply of `decide`.
    pub reply: R,
    /// The state after the command.
    pub after: Snapshot<A>,
    /// The events appended, as stored (with versions and positions); empty when nothing
    /// changed.
    pub recorded: Vec<RecordedEvent>,
}

/// Tuning of [`Streams`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerSettings {
    /// Tries of a command whose append keeps losing to other processes.
    pub max_attempts: usize,
    /// Streams whose state is kept in memory.
    pub cache_capacity: usize,
}

impl Default for RunnerSettings {
    /// 5 attempts, 10,000 cached streams.
    fn default() -> Self {
        Self {
            max_attempts: 5,
            cache_capacity: 10_000,
        }
    }
}

/// One stream's owner: its state as far as this process knows.
struct Owned<A> {
    /// Whether `snapshot` was ever read from the store.
    loaded: bool,
    /// The state at the last version this process saw.
    snapshot: Snapshot<A>,
    /// The stream's notifications (notified streams only).
    waiter: Option<StreamWaiter>,
}

impl<A> Owned<A> {
    /// Whether the state is known to be the stream's latest: read, and no later version
    /// notified. Always `false` without notifications (unknown).
    fn known_current(&mut self) -> bool {
        let version = self.snapshot.version;
        self.loaded
            && self
                .waiter
                .as_mut()
                .is_some_and(|waiter| waiter.is_current(version))
    }

    /// Whether the state must be read before deciding: never read, or a later version was
    /// notified.
    fn known_behind(&mut self) -> bool {
        let version = self.snapshot.version;
        !self.loaded
            || self
                .waiter
                .as_mut()
                .is_some_and(|waiter| !waiter.is_current(version))
    }
}

type Owner<A> = Arc<tokio::sync::Mutex<Owned<A>>>;

/// Runs commands against the streams of aggregate `A` (see the module docs). Cheap to
/// clone; clones share the owners.
pub struct Streams<A: Aggregate> {
    /// The event store (the storage's notifying one).
    store: Arc<dyn EventStore>,
    /// One owner per recently used stream.
    owners: Arc<parking_lot::Mutex<HashMap<StreamId, Owner<A>>>>,
    /// Tuning.
    settings: RunnerSettings,
    /// The storage's notifications (see "Notified streams" in the module docs).
    signal: Option<AppendSignal>,
    /// Which lease an append to an instance's stream must hold (see "Fenced streams").
    fencing: Option<Fencing<A::Id>>,
}

/// The fence an append to an instance's stream passes: the lease this process holds for
/// it, or `Err(partition)` when it holds none for it (see "Fenced streams" in the module
/// docs).
pub type Fencing<Id> = Arc<dyn Fn(&Id) -> Result<Fence, u32> + Send + Sync>;

impl<A: Aggregate> Clone for Streams<A> {
    fn clone(&self) -> Self {
        Self {
            store: Arc::clone(&self.store),
            owners: Arc::clone(&self.owners),
            settings: self.settings,
            signal: self.signal.clone(),
            fencing: self.fencing.clone(),
        }
    }
}

impl<A: Aggregate> fmt::Debug for Streams<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streams")
            .field("category", &A::CATEGORY)
            .field("settings", &self.settings)
            .field("notified", &self.signal.is_some())
            .field("fenced", &self.fencing.is_some())
            .finish_non_exhaustive()
    }
}

impl<A: Aggregate> Streams<A> {
    /// A runner over `store` with the default settings.
    pub fn new(store: Arc<dyn EventStore>) -> Self {
        Self::with_settings(store, RunnerSettings::default())
    }

    /// A runner over `store` with `settings`.
    pub fn with_settings(store: Arc<dyn EventStore>, settings: RunnerSettings) -> Self {
        Self {
            store,
            owners: Arc::new(parking_lot::Mutex::new(HashMap::new())),
            settings,
            signal: None,
            fencing: None,
        }
    }

    /// A runner over `store` (which fires `signal`) that trusts a cached state while no
    /// later version of its stream was notified: see "Notified streams" in the module docs.
    pub fn notified(store: Arc<dyn EventStore>, signal: AppendSignal) -> Self {
        Self {
            signal: Some(signal),
            ..Self::new(store)
        }
    }

    /// The same runner appending only behind the fence `fencing` gives for each instance:
    /// see "Fenced streams" in the module docs.
    #[must_use]
    pub fn fenced(mut self, fencing: Fencing<A::Id>) -> Self {
        self.fencing = Some(fencing);
        self
    }

    /// The fence an append to `id`'s stream must pass (`None`: unfenced), or the error when
    /// this process may not append to it.
    fn fence(&self, id: &A::Id, stream: &StreamId) -> Result<Option<Fence>, StoreError> {
        match &self.fencing {
            None => Ok(None),
            Some(fencing) => fencing(id)
                .map(Some)
                .map_err(|partition| StoreError::Fenced {
                    stream_id: stream.clone(),
                    partition,
                }),
        }
    }

    /// The event store the runner appends to.
    pub fn store(&self) -> &Arc<dyn EventStore> {
        &self.store
    }

    /// The owner of `stream`, created on first use; idle owners are dropped when the map is
    /// full.
    fn owner(&self, stream: &StreamId) -> Owner<A> {
        let mut owners = self.owners.lock();
        if owners.len() >= self.settings.cache_capacity && !owners.contains_key(stream) {
            // Only the map holds an idle owner; everyone else is waiting or running.
            owners.retain(|_, owner| Arc::strong_count(owner) > 1);
        }
        match owners.entry(stream.clone()) {
            Entry::Occupied(entry) => Arc::clone(entry.get()),
            Entry::Vacant(entry) => {
                // Subscribed before the first read: nothing appended after it goes unnoticed.
                let waiter = self.signal.as_ref().map(|s| s.follow_stream(stream));
                Arc::clone(entry.insert(Arc::new(tokio::sync::Mutex::new(Owned {
                    loaded: false,
                    snapshot: Snapshot {
                        version: 0,
                        state: None,
                    },
                    waiter,
                }))))
            }
        }
    }

    /// Folds the events up to the last version notified in: from memory when the stream's
    /// notifications kept them all (this process's appends, or a watcher's read of another
    /// process's), else as [`Self::read_up`]. For a state known to be behind by a
    /// notification; after the store itself said the state is behind (a conflict), read.
    async fn catch_up(&self, stream: &StreamId, owned: &mut Owned<A>) -> Result<(), CatchUpError> {
        let next = owned.snapshot.version + 1;
        let kept = match owned.waiter.as_mut() {
            Some(waiter) if owned.loaded => waiter.appended_from(next),
            _ => None,
        };
        if let Some(slices) = kept {
            for recorded in slices.iter().flat_map(|s| s.iter()) {
                if recorded.version >= next {
                    Self::fold(stream, owned, recorded)?;
                }
            }
            return Ok(());
        }
        self.read_up(stream, owned).await
    }

    /// Reads the events after `owned`'s version from the store and folds them in; the last
    /// page is left for the stream's other readers ([`AppendSignal::read_from_store`]).
    async fn read_up(&self, stream: &StreamId, owned: &mut Owned<A>) -> Result<(), CatchUpError> {
        loop {
            let page = self
                .store
                .read_stream(stream, owned.snapshot.version + 1, PAGE)
                .await
                .map_err(CatchUpError::Store)?;
            let done = page.len() < PAGE;
            for recorded in &page {
                Self::fold(stream, owned, recorded)?;
            }
            if done {
                owned.loaded = true;
                if let Some(signal) = &self.signal {
                    signal.read_from_store(stream.as_str(), &page);
                }
                return Ok(());
            }
        }
    }

    /// Applies `recorded`, the event after `owned`'s version, to its state.
    fn fold(
        stream: &StreamId,
        owned: &mut Owned<A>,
        recorded: &RecordedEvent,
    ) -> Result<(), CatchUpError> {
        let event = A::decode(recorded)
            .map_err(|e| CatchUpError::Corrupt(CorruptStream::at(stream, recorded, e)))?;
        let state = A::apply(owned.snapshot.state.take(), &event)
            .map_err(|e| CatchUpError::Corrupt(CorruptStream::at(stream, recorded, e)))?;
        owned.snapshot = Snapshot {
            version: recorded.version,
            state: Some(state),
        };
        Ok(())
    }

    /// The current state of `id`: read from the store, so it includes other processes'
    /// appends, unless the stream is notified and no later version was.
    pub async fn load(&self, id: &A::Id) -> Result<Snapshot<A>, RunError<Infallible>> {
        self.inspect(id, Snapshot::clone).await
    }

    /// What `read` finds in the current state of `id` (the state [`Streams::load`] would
    /// return), without copying the state: for a reader that wants a few facts or a view of
    /// it. `read` runs while the stream's commands wait, so it should be quick.
    pub async fn inspect<R>(
        &self,
        id: &A::Id,
        read: impl FnOnce(&Snapshot<A>) -> R,
    ) -> Result<R, RunError<Infallible>> {
        let stream = stream_of::<A>(id)?;
        let owner = self.owner(&stream);
        let mut owned = owner.lock().await;
        if !owned.known_current() {
            self.catch_up(&stream, &mut owned).await?;
        }
        Ok(read(&owned.snapshot))
    }

    /// Every event of instance `id`, decoded, read from the store (for history queries; the
    /// state is [`Streams::load`]'s).
    pub async fn events(&self, id: &A::Id) -> Result<Vec<A::Event>, RunError<Infallible>> {
        let stream = stream_of::<A>(id)?;
        let mut events = Vec::new();
        let mut next = 1;
        loop {
            let page = self.store.read_stream(&stream, next, PAGE).await?;
            let done = page.len() < PAGE;
            for recorded in &page {
                let event =
                    A::decode(recorded).map_err(|e| CorruptStream::at(&stream, recorded, e))?;
                events.push(event);
                next = recorded.version + 1;
            }
            if done {
                return Ok(events);
            }
        }
    }

    /// Runs a command with no preparation: see [`Streams::execute_with`].
    pub async fn execute<R, E>(
        &self,
        id: &A::Id,
        mut decide: impl FnMut(&Snapshot<A>) -> Result<Decision<A::Event, R>, E>,
    ) -> Result<Executed<A, R>, RunError<E>> {
        self.execute_with(
            id,
            |_| (),
            |()| std::future::ready(Ok(())),
            |snapshot, ()| decide(snapshot),
        )
        .await
    }

    /// Runs a command on instance `id` (see the module docs). The preparation is split in
    /// two so nothing borrowed from the state is held across an await: `needs` says, from
    /// the state, what to fetch (e.g. a seed id), `fetch` fetches it, and `decide` returns
    /// the events and the reply from the state and what was fetched.
    pub async fn execute_with<K, F, C, R, E>(
        &self,
        id: &A::Id,
        mut needs: impl FnMut(&Snapshot<A>) -> K,
        mut fetch: impl FnMut(K) -> F,
        mut decide: impl FnMut(&Snapshot<A>, C) -> Result<Decision<A::Event, R>, E>,
    ) -> Result<Executed<A, R>, RunError<E>>
    where
        F: Future<Output = Result<C, E>>,
    {
        let stream = stream_of::<A>(id)?;
        // Not this process's to decide: refused before anything is read or fetched.
        self.fence(id, &stream)?;
        let owner = self.owner(&stream);
        let mut owned = owner.lock().await;
        if owned.known_behind() {
            self.catch_up(&stream, &mut owned).await?;
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let prepared = fetch(needs(&owned.snapshot))
                .await
                .map_err(RunError::Rejected);
            let decision =
                prepared.and_then(|c| decide(&owned.snapshot, c).map_err(RunError::Rejected));
            let decision = match decision {
                Ok(decision) if !decision.events.is_empty() => decision,
                // A no-op decided on a state known to be current.
                Ok(decision) if owned.known_current() => {
                    return Ok(Executed {
                        reply: decision.reply,
                        after: owned.snapshot.clone(),
                        recorded: Vec::new(),
                    });
                }
                // A refusal or a no-op decided on cached state: valid only if no other
                // process has written since.
                other => {
                    let current = self.store.stream_version(&stream).await?;
                    if current == owned.snapshot.version || attempt >= self.settings.max_attempts {
                        return other.map(|decision| Executed {
                            reply: decision.reply,
                            after: owned.snapshot.clone(),
                            recorded: Vec::new(),
                        });
                    }
                    self.read_up(&stream, &mut owned).await?;
                    continue;
                }
            };
            let mut trace = std::collections::BTreeMap::new();
            fairdeal_telemetry::propagation::inject_current(&mut trace);
            let encoded: Vec<NewEvent> = decision
                .events
                .iter()
                .map(|event| A::encode(id, event).with_trace_context(trace.clone()))
                .collect();
            let expected = match owned.snapshot.version {
                0 => ExpectedVersion::NoStream,
                version => ExpectedVersion::Exact(version),
            };
            let appended = match self.fence(id, &stream)? {
                None => self.store.append(&stream, expected, encoded).await,
                Some(fence) => {
                    self.store
                        .append_fenced(&stream, expected, encoded, &fence)
                        .await
                }
            };
            match appended {
                Ok(appended) => {
                    let mut state = owned.snapshot.state.take();
                    for (event, recorded) in decision.events.iter().zip(&appended.events) {
                        match A::apply(state.take(), event) {
                            Ok(next) => state = Some(next),
                            Err(cause) => {
                                // The decision produced an event its own fold refuses: the
                                // stream is now unreadable. Forget the cache; report.
                                owned.loaded = false;
                                owned.snapshot = Snapshot {
                                    version: 0,
                                    state: None,
                                };
                                return Err(RunError::Corrupt(CorruptStream::at(
                                    &stream, recorded, cause,
                                )));
                            }
                        }
                    }
                    owned.snapshot = Snapshot {
                        version: appended.version,
                        state,
                    };
                    return Ok(Executed {
                        reply: decision.reply,
                        after: owned.snapshot.clone(),
                        recorded: appended.events,
                    });
                }
                Err(StoreError::Conflict { .. }) => {
                    self.read_up(&stream, &mut owned).await?;
                    if attempt >= self.settings.max_attempts {
                        return Err(RunError::Contended {
                            stream,
                            version: owned.snapshot.version,
                        });
                    }
                }
                Err(other) => return Err(RunError::Store(other)),
            }
        }
    }
}

/// Why a stream could not be brought up to date.
#[derive(Debug)]
enum CatchUpError {
    /// It does not fold.
    Corrupt(CorruptStream),
    /// The store failed.
    Store(StoreError),
}

impl<E> From<CatchUpError> for RunError<E> {
    fn from(error: CatchUpError) -> Self {
        match error {
            CatchUpError::Corrupt(e) => RunError::Corrupt(e),
            CatchUpError::Store(e) => RunError::Store(e),
        }
    }
}
