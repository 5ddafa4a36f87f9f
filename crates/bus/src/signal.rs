//! Waking relays, embedded consumers and live readers when events are appended, instead of
//! polling only.
//!
//! [`AppendSignal`] is a counter in a `tokio::sync::watch` channel: every append bumps it and
//! every [`AppendWaiter`] remembers the last value it saw, so a wake-up that fires while the
//! waiter is busy reading is never lost (unlike `Notify::notify_waiters`). Readers of the
//! whole log (relays, consumers) wait on it.
//!
//! Readers of one stream (a table's watchers) wait on a [`StreamWaiter`] instead, which wakes
//! only when *its* stream moves past the version it last saw: with many tables live at once,
//! an append wakes the four or five watchers of its table, not every watcher of the process.
//! When what moved the stream was this process's own append, the waiter is handed the
//! events as stored ([`StreamWaiter::appended_from`]) and need not read them back. When it
//! was another process's commit, one reader of the stream reads it from the store
//! ([`StreamWaiter::claim_read`]) and leaves what it read for the others
//! ([`AppendSignal::read_from_store`]), who wait for it instead of reading the same events.
//! Stream wake-ups come from [`NotifyingEventStore`] (this process's appends) and, on
//! PostgreSQL, from the other processes' commits (the notification names the stream and its
//! new version, see `fairdeal-platform`'s `wake`); [`AppendSignal::notify_all_streams`] wakes
//! every stream waiter when what happened is unknown (a listening connection re-established).
//! Appends made inside a service's own transaction (`append_in_tx`) fire only the log-wide
//! counter; on the embedded default they reach no stream waiter, so a stream read live must
//! be appended through the store.
//!
//! [`NotifyingEventStore`] wraps any [`EventStore`] and fires the signal after each successful
//! append, so services keep appending through a plain `Arc<dyn EventStore>`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use fairdeal_eventstore::{
    Appended, EventStore, ExpectedVersion, Fence, NewEvent, RecordedEvent, StoreError, StreamId,
};
use fairdeal_telemetry::metrics::{Counter, Histogram, KeyValue};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Events of its latest appends a watched stream keeps in memory, at most (beyond one
/// append), for waiters that fell behind by a few appends.
const TAIL_EVENTS: usize = 256;

/// What a stream's waiters were last told.
#[derive(Debug, Clone, Default)]
struct Notified {
    /// The stream's last version notified.
    version: u64,
    /// The events, as stored, of this process's latest appends to the stream, one slice per
    /// append, contiguous and ending at `version` (empty when another process's commit
    /// took the stream there, or nobody knows).
    tail: std::collections::VecDeque<Arc<[RecordedEvent]>>,
    /// Wake-ups for every stream so far ([`AppendSignal::notify_all_streams`]): each one
    /// means "anything may have been appended here".
    unknown: u64,
    /// This process's appends to the stream under way ([`AppendSignal::appending`]).
    in_flight: usize,
    /// A notification from the database arrived while one was under way: its wake-up waits
    /// for the append to finish, which most likely is what it was about.
    deferred: bool,
    /// Waiters that take the events ([`AppendSignal::subscribe_stream`]); without any,
    /// nothing is kept (a [`AppendSignal::follow_stream`] follower needs only versions).
    readers: usize,
    /// A waiter is reading the stream from the store for the others
    /// ([`StreamWaiter::claim_read`]).
    reading: bool,
}

impl Notified {
    /// See [`AppendSignal::read_from_store`]; whether the version moved.
    fn read_from_store(&mut self, events: &[RecordedEvent]) -> bool {
        let Some(last) = events.last() else {
            return false;
        };
        if self.readers == 0 || last.version < self.version {
            return false;
        }
        if self.last_kept() == Some(last.version) {
            return false;
        }
        let moved = last.version > self.version;
        self.version = last.version;
        // What is kept ends before the read's end, so the read replaces it unless it
        // carries on from it.
        self.keep(events);
        moved
    }

    /// The last version kept, if any.
    fn last_kept(&self) -> Option<u64> {
        self.tail.back().and_then(|t| t.last()).map(|e| e.version)
    }

    /// Keeps `events` (this process's append ending at `self.version`) after the tail if
    /// they follow it, instead of it otherwise; drops the oldest appends past
    /// [`TAIL_EVENTS`].
    fn keep(&mut self, events: &[RecordedEvent]) {
        if self.readers == 0 {
            self.tail.clear();
            return;
        }
        let events: Arc<[RecordedEvent]> = events.into();
        let follows = match (self.last_kept(), events.first()) {
            (Some(last), Some(first)) => last + 1 == first.version,
            _ => false,
        };
        if !follows {
            self.tail.clear();
        }
        self.tail.push_back(events);
        let mut kept: usize = self.tail.iter().map(|t| t.len()).sum();
        while kept > TAIL_EVENTS && self.tail.len() > 1 {
            kept -= self.tail.pop_front().map_or(0, |t| t.len());
        }
    }
}

/// Stream id -> what was last notified, for the streams someone waits on.
type StreamSenders = Arc<Mutex<HashMap<String, watch::Sender<Notified>>>>;

/// Fired after events are appended; cheap to clone and share.
#[derive(Debug, Clone)]
pub struct AppendSignal {
    /// Counts appends; waiters only compare it with what they saw last.
    sender: Arc<watch::Sender<u64>>,
    /// One channel per stream with a [`StreamWaiter`], dropped with its last waiter.
    streams: StreamSenders,
}

impl Default for AppendSignal {
    fn default() -> Self {
        Self::new()
    }
}

/// The map, whatever panicked while holding it (every entry stays valid on its own).
fn lock(streams: &StreamSenders) -> MutexGuard<'_, HashMap<String, watch::Sender<Notified>>> {
    streams.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppendSignal {
    /// A signal nobody waits on yet.
    pub fn new() -> Self {
        Self {
            sender: Arc::new(watch::Sender::new(0)),
            streams: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Wakes every log-wide waiter (call after the appending transaction committed).
    pub fn notify(&self) {
        self.sender
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// A waiter that wakes on appends notified from now on.
    pub fn subscribe(&self) -> AppendWaiter {
        AppendWaiter {
            receiver: self.sender.subscribe(),
        }
    }

    /// Records that `stream` reached `version` (committed), as the database notifies it:
    /// wakes its waiters unless they were told of this version already. While this
    /// process's own append to the stream is under way, the wake-up waits for it to finish:
    /// the notification is most likely that very append's, coming back first, and waking
    /// at once would have the waiters read back what the append hands them a moment later.
    pub fn notify_stream(&self, stream: &str, version: u64) {
        if let Some(sender) = lock(&self.streams).get(stream) {
            sender.send_if_modified(|seen| {
                if version <= seen.version {
                    return false;
                }
                seen.version = version;
                if seen.in_flight > 0 {
                    seen.deferred = true;
                    return false;
                }
                // Another process's commit: what is kept no longer reaches the end.
                seen.tail.clear();
                true
            });
        }
    }

    /// Marks an append of this process to `stream` under way until the returned guard is
    /// finished with [`Appending::appended`] or dropped (failed, or cancelled).
    pub fn appending(&self, stream: &str) -> Appending {
        let counted = lock(&self.streams).get(stream).is_some_and(|sender| {
            sender.send_if_modified(|seen| {
                seen.in_flight += 1;
                false
            });
            true
        });
        Appending {
            signal: self.clone(),
            stream: counted.then(|| stream.to_owned()),
        }
    }

    /// Records this process's committed append of `events` (in version order) to `stream`:
    /// its waiters wake, and the stream keeps the events for them (the last [`TAIL_EVENTS`]
    /// or so, while contiguous). They are copied only when someone waits.
    pub fn notify_appended(&self, stream: &str, events: &[RecordedEvent]) {
        self.finish(stream, false, events);
    }

    /// The end of an append to `stream` (`counted`: announced by [`AppendSignal::appending`]):
    /// its `events` (none when it failed) are kept and its waiters woken, with any wake-up
    /// deferred meanwhile.
    fn finish(&self, stream: &str, counted: bool, events: &[RecordedEvent]) {
        let Some(sender) = lock(&self.streams).get(stream).cloned() else {
            return;
        };
        sender.send_if_modified(|seen| {
            if counted {
                seen.in_flight = seen.in_flight.saturating_sub(1);
            }
            let mut wake = false;
            if let Some(last) = events.last() {
                if last.version > seen.version {
                    seen.version = last.version;
                    seen.keep(events);
                    wake = true;
                } else if last.version == seen.version && seen.last_kept() != Some(last.version) {
                    // The database's notification of this very append came first.
                    seen.keep(events);
                }
            }
            if seen.deferred && seen.in_flight == 0 {
                seen.deferred = false;
                if seen.last_kept() != Some(seen.version) {
                    // What was notified was not (only) ours: the kept events no longer
                    // reach the end.
                    seen.tail.clear();
                }
                wake = true;
            }
            wake
        });
    }

    /// Records `events` of `stream` just read from the store (in version order, contiguous,
    /// up to the stream's end as read). When they reach the last version notified, or go
    /// past it (a commit whose notification is still on its way), they become what the
    /// stream keeps, so this process's other readers of it take them from memory
    /// ([`StreamWaiter::appended_from`]) instead of reading them too. Wakes the waiters when
    /// the read went past what was notified. Nothing is kept without a reader.
    pub fn read_from_store(&self, stream: &str, events: &[RecordedEvent]) {
        if let Some(sender) = lock(&self.streams).get(stream) {
            sender.send_if_modified(|seen| seen.read_from_store(events));
        }
    }

    /// Wakes every stream waiter (something was appended, nobody knows where).
    pub fn notify_all_streams(&self) {
        for sender in lock(&self.streams).values() {
            sender.send_modify(|seen| {
                seen.tail.clear();
                seen.unknown = seen.unknown.wrapping_add(1);
            });
        }
    }

    /// A waiter that wakes when `stream` is notified past the last version notified so far
    /// (or on [`AppendSignal::notify_all_streams`]), and takes the events of this process's
    /// appends ([`StreamWaiter::appended_from`]): while one exists, the stream keeps them.
    pub fn subscribe_stream(&self, stream: &StreamId) -> StreamWaiter {
        self.waiter(stream, true)
    }

    /// A waiter for `stream`'s versions only ([`StreamWaiter::is_current`],
    /// [`StreamWaiter::changed`]); [`StreamWaiter::appended_from`] on it finds nothing kept
    /// unless a [`AppendSignal::subscribe_stream`] waiter exists too.
    pub fn follow_stream(&self, stream: &StreamId) -> StreamWaiter {
        self.waiter(stream, false)
    }

    fn waiter(&self, stream: &StreamId, reads: bool) -> StreamWaiter {
        let receiver = {
            let mut streams = lock(&self.streams);
            let sender = streams
                .entry(stream.as_str().to_owned())
                .or_insert_with(|| watch::Sender::new(Notified::default()));
            if reads {
                sender.send_if_modified(|seen| {
                    seen.readers += 1;
                    false
                });
            }
            sender.subscribe()
        };
        let unknown = receiver.borrow().unknown;
        StreamWaiter {
            receiver,
            unknown,
            reads,
            stream: stream.as_str().to_owned(),
            streams: Arc::clone(&self.streams),
        }
    }

    /// Streams with at least one waiter (for tests and diagnostics).
    pub fn watched_streams(&self) -> usize {
        lock(&self.streams).len()
    }
}

/// An append of this process under way (see [`AppendSignal::appending`]).
#[derive(Debug)]
#[must_use = "dropping it at once ends the append's mark"]
pub struct Appending {
    /// The signal.
    signal: AppendSignal,
    /// The stream, when it was counted (someone watches it).
    stream: Option<String>,
}

impl Appending {
    /// The append committed `events` (in version order): as
    /// [`AppendSignal::notify_appended`].
    pub fn appended(mut self, events: &[RecordedEvent]) {
        if let Some(stream) = self.stream.take() {
            self.signal.finish(&stream, true, events);
        } else if let Some(first) = events.first() {
            self.signal
                .notify_appended(first.stream_id.as_str(), events);
        }
    }
}

impl Drop for Appending {
    fn drop(&mut self) {
        // Failed or cancelled: nothing appended; a deferred wake-up is due now.
        if let Some(stream) = self.stream.take() {
            self.signal.finish(&stream, true, &[]);
        }
    }
}

/// A stream waiter's turn to read the stream from the store (see
/// [`StreamWaiter::claim_read`]).
#[derive(Debug)]
#[must_use = "dropping it at once ends the turn"]
pub struct StoreRead {
    /// The stream's channel, until the turn ends.
    sender: Option<watch::Sender<Notified>>,
}

impl StoreRead {
    /// The turn's read returned `events` (as [`AppendSignal::read_from_store`]).
    pub fn read(mut self, events: &[RecordedEvent]) {
        if let Some(sender) = self.sender.take() {
            sender.send_modify(|seen| {
                seen.reading = false;
                seen.read_from_store(events);
            });
        }
    }
}

impl Drop for StoreRead {
    fn drop(&mut self) {
        // Failed or cancelled: the readers waiting for it look again (and one reads).
        if let Some(sender) = self.sender.take() {
            sender.send_modify(|seen| seen.reading = false);
        }
    }
}

/// Waits for the next append notified on an [`AppendSignal`].
#[derive(Debug)]
pub struct AppendWaiter {
    /// Holds the last count this waiter saw.
    receiver: watch::Receiver<u64>,
}

impl AppendWaiter {
    /// Waits for the next append notified after this waiter was created or last woke (an
    /// append notified meanwhile wakes it at once). `false` once every [`AppendSignal`] is
    /// gone and nothing can wake it any more.
    pub async fn changed(&mut self) -> bool {
        self.receiver.changed().await.is_ok()
    }
}

/// Waits for appends to one stream (see [`AppendSignal::subscribe_stream`]). For live
/// readers: subscribe, read, then wait, and no append is missed.
#[derive(Debug)]
pub struct StreamWaiter {
    /// What this waiter was last told.
    receiver: watch::Receiver<Notified>,
    /// The count of wake-ups for every stream this waiter last looked at.
    unknown: u64,
    /// Whether it counts among the stream's readers (see [`AppendSignal::subscribe_stream`]).
    reads: bool,
    /// The stream.
    stream: String,
    /// The signal's map, to drop the stream's channel with its last waiter.
    streams: StreamSenders,
}

impl StreamWaiter {
    /// Waits until the stream is notified past what this waiter last looked at (creation,
    /// the last wake-up or [`StreamWaiter::appended_from`]); a notification meanwhile wakes
    /// it at once.
    pub async fn changed(&mut self) {
        // The sender lives in the map while this receiver exists (see Drop): never closed.
        if self.receiver.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Marks the latest notification seen and returns the stream's events from version
    /// `next` up to the last version notified, from this process's latest appends, when it
    /// kept them all: exactly what reading the stream from `next` returns, without reading
    /// it (in slices, one per append; the first may start before `next`). `None`: read the
    /// store (another process appended, or `next` is older than what is kept). Anything
    /// notified after this call wakes [`StreamWaiter::changed`].
    pub fn appended_from(&mut self, next: u64) -> Option<Vec<Arc<[RecordedEvent]>>> {
        let seen = self.receiver.borrow_and_update();
        let first = seen.tail.front().and_then(|t| t.first())?.version;
        let last = seen.last_kept()?;
        if last != seen.version || next < first || next > last.saturating_add(1) {
            return None;
        }
        Some(
            seen.tail
                .iter()
                .filter(|t| t.last().is_some_and(|e| e.version >= next))
                .cloned()
                .collect(),
        )
    }

    /// Takes the turn to read the stream from the store for this process's other readers of
    /// it, unless one of them is reading it already (`None`: wait for
    /// [`StreamWaiter::changed`], which fires when that read ends, then look again with
    /// [`StreamWaiter::appended_from`]). The turn ends with [`StoreRead::read`] or when it
    /// is dropped, and wakes the waiters either way.
    pub fn claim_read(&self) -> Option<StoreRead> {
        let sender = lock(&self.streams).get(&self.stream).cloned()?;
        let mut claimed = false;
        sender.send_if_modified(|seen| {
            claimed = !seen.reading;
            seen.reading = true;
            false
        });
        // Built only when claimed: dropping a turn ends it.
        if claimed {
            Some(StoreRead {
                sender: Some(sender),
            })
        } else {
            None
        }
    }

    /// Whether no version past `version` was notified for the stream, nor a wake-up for
    /// every stream since the last call (or the waiter's creation). Marks the latest
    /// notification seen: after a `false` the caller reads the stream, and the next call
    /// answers for what came after.
    ///
    /// "Notified" is as good as the notifications: another process's commit is known once
    /// its notification arrived (milliseconds), so a reader trusting this may be that much
    /// behind another replica, never behind this process.
    pub fn is_current(&mut self, version: u64) -> bool {
        let seen = self.receiver.borrow_and_update();
        let unknown = std::mem::replace(&mut self.unknown, seen.unknown);
        unknown == seen.unknown && seen.version <= version
    }
}

impl Drop for StreamWaiter {
    fn drop(&mut self) {
        let mut streams = lock(&self.streams);
        let Some(sender) = streams.get(&self.stream) else {
            return;
        };
        // This waiter's receiver still counts: it is the last one when the count is 1.
        if sender.receiver_count() <= 1 {
            streams.remove(&self.stream);
        } else if self.reads {
            sender.send_if_modified(|seen| {
                seen.readers = seen.readers.saturating_sub(1);
                if seen.readers == 0 {
                    seen.tail.clear();
                }
                false
            });
        }
    }
}

/// Why [`wait_for_events`] (or [`Recheck::wait`]) returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// New events may be there (signal, or poll interval elapsed).
    Check,
    /// Shutdown was requested.
    Shutdown,
}

/// How soon a reader tailing the log looks again after a read that found nothing.
///
/// A wake-up means an append committed. But on PostgreSQL a read of the log is gated below
/// the cluster's oldest running transaction (crates/eventstore), so a commit stays invisible
/// until every transaction that started before it has ended, in any service's schema: a read
/// right after the wake-up can find nothing although the event is there, and the next
/// wake-up may be seconds away (the next append of a quiet service, or the safety poll).
/// Seen as a commitment service's reveal reaching JetStream up to 5 s late under load. So
/// after a wake-up the reader looks again soon (5 ms, doubling to 200 ms) for one second,
/// and only then waits for the next wake-up alone. Every tailer of the log uses it: the
/// relay, the embedded consumers, and services' own tails (the chat's fan-out).
#[derive(Debug)]
pub struct Recheck {
    /// When the last wake-up came, while its window is open.
    since: Option<std::time::Instant>,
    /// The next short wait.
    delay: Duration,
}

impl Default for Recheck {
    fn default() -> Self {
        Self::new()
    }
}

impl Recheck {
    /// The first short wait after an empty read.
    const FIRST: Duration = Duration::from_millis(5);
    /// The longest short wait.
    const LONGEST: Duration = Duration::from_millis(200);
    /// How long after a wake-up the reader keeps looking again soon.
    const WINDOW: Duration = Duration::from_secs(1);

    /// No wake-up seen yet.
    pub fn new() -> Self {
        Self {
            since: None,
            delay: Self::FIRST,
        }
    }

    /// The read found events: the next empty read within the window looks again soon.
    /// The window stays open: one wake-up may stand for several commits (wake-ups
    /// coalesce), some of them visible to this read and some not yet.
    pub fn found(&mut self) {
        self.delay = Self::FIRST;
    }

    /// Waits after a read: a wake-up that came meanwhile returns at once (opening a new
    /// window); within a wake-up's window it waits briefly, without taking the next wake-up
    /// (so that one extends the window); after the window, until `waiter` fires, `poll`
    /// elapses or `shutdown` is cancelled (opening a new window).
    pub async fn wait(
        &mut self,
        mut waiter: Option<&mut AppendWaiter>,
        poll: Duration,
        shutdown: &CancellationToken,
    ) -> Wake {
        if let Some(waiter) = waiter.as_deref_mut()
            && waiter.receiver.has_changed().unwrap_or(false)
        {
            waiter.receiver.borrow_and_update();
            self.opened();
            return Wake::Check;
        }
        if self
            .since
            .is_some_and(|since| since.elapsed() < Self::WINDOW)
        {
            let delay = self.delay;
            self.delay = (delay * 2).min(Self::LONGEST);
            return tokio::select! {
                () = shutdown.cancelled() => Wake::Shutdown,
                () = tokio::time::sleep(delay) => Wake::Check,
            };
        }
        let wake = wait_for_events(waiter, poll, shutdown).await;
        self.opened();
        wake
    }

    /// A wake-up (or the poll) came: look again soon for a second.
    fn opened(&mut self) {
        self.since = Some(std::time::Instant::now());
        self.delay = Self::FIRST;
    }
}

/// Waits until `waiter` fires, `poll` elapses or `shutdown` is cancelled. Without a waiter,
/// only the poll interval wakes.
pub(crate) async fn wait_for_events(
    waiter: Option<&mut AppendWaiter>,
    poll: Duration,
    shutdown: &CancellationToken,
) -> Wake {
    let signalled = async {
        match waiter {
            Some(waiter) => {
                // An error means every AppendSignal is gone: no more wake-ups, poll only.
                if waiter.receiver.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = shutdown.cancelled() => Wake::Shutdown,
        () = signalled => Wake::Check,
        () = tokio::time::sleep(poll) => Wake::Check,
    }
}

/// An [`EventStore`] that fires an [`AppendSignal`] after every successful, non-empty append,
/// and measures appends: `fairdeal.events.appended` (events stored) and
/// `fairdeal.events.append.duration` (seconds, by `outcome`: `ok`, `conflict` for a stale
/// expected version or a duplicate event id, `refused` for an invalid event, `error`).
pub struct NotifyingEventStore {
    /// The store doing the work.
    inner: Arc<dyn EventStore>,
    /// Fired after each committed append.
    signal: AppendSignal,
    /// Events appended.
    appended: Counter<u64>,
    /// Append latency by outcome.
    duration: Histogram<f64>,
}

impl NotifyingEventStore {
    /// Wraps `inner`, firing `signal` after each append.
    pub fn new(inner: Arc<dyn EventStore>, signal: AppendSignal) -> Self {
        Self {
            inner,
            signal,
            appended: fairdeal_telemetry::metrics::counter(
                "fairdeal.events.appended",
                "Events appended to the event store",
                "{event}",
            ),
            duration: fairdeal_telemetry::metrics::latency(
                "fairdeal.events.append.duration",
                "Duration of event store appends, by outcome",
            ),
        }
    }

    /// The signal this store fires.
    pub fn signal(&self) -> &AppendSignal {
        &self.signal
    }
}

/// The `outcome` attribute of an append.
fn append_outcome(result: &Result<Appended, StoreError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(StoreError::Conflict { .. } | StoreError::DuplicateEventId { .. }) => "conflict",
        Err(StoreError::Fenced { .. }) => "fenced",
        Err(StoreError::InvalidEvent(_) | StoreError::InvalidArgument(_)) => "refused",
        Err(_) => "error",
    }
}

impl fmt::Debug for NotifyingEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotifyingEventStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl NotifyingEventStore {
    /// An append's outcome, measured since `started`; announced when events were written.
    fn record(
        &self,
        started: std::time::Instant,
        appending: Appending,
        result: Result<Appended, StoreError>,
    ) -> Result<Appended, StoreError> {
        self.duration.record(
            started.elapsed().as_secs_f64(),
            &[KeyValue::new("outcome", append_outcome(&result))],
        );
        let appended = result?;
        if !appended.events.is_empty() {
            self.appended.add(
                u64::try_from(appended.events.len()).unwrap_or(u64::MAX),
                &[],
            );
            self.signal.notify();
            appending.appended(&appended.events);
        }
        Ok(appended)
    }
}

#[async_trait]
impl EventStore for NotifyingEventStore {
    async fn append(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        let started = std::time::Instant::now();
        let appending = self.signal.appending(stream_id.as_str());
        let result = self.inner.append(stream_id, expected, events).await;
        self.record(started, appending, result)
    }

    async fn append_fenced(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        fence: &Fence,
    ) -> Result<Appended, StoreError> {
        let started = std::time::Instant::now();
        let appending = self.signal.appending(stream_id.as_str());
        let result = self
            .inner
            .append_fenced(stream_id, expected, events, fence)
            .await;
        self.record(started, appending, result)
    }

    async fn read_stream(
        &self,
        stream_id: &StreamId,
        from_version: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        self.inner.read_stream(stream_id, from_version, limit).await
    }

    async fn read_all(
        &self,
        from_position: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        self.inner.read_all(from_position, limit).await
    }

    async fn head_position(&self) -> Result<u64, StoreError> {
        self.inner.head_position().await
    }

    async fn committed_position(&self) -> Result<u64, StoreError> {
        self.inner.committed_position().await
    }

    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError> {
        self.inner.stream_version(stream_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_notification_sent_while_busy_is_not_lost() {
        let signal = AppendSignal::new();
        let mut waiter = signal.subscribe();
        let shutdown = CancellationToken::new();
        // Fired before anyone waits: the next wait must return at once, not after the poll.
        signal.notify();
        let started = tokio::time::Instant::now();
        let wake = wait_for_events(Some(&mut waiter), Duration::from_secs(60), &shutdown).await;
        assert_eq!(wake, Wake::Check);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    /// Events of `stream` at `versions`, as the store returns them (hashes left out).
    fn stored(stream: &str, versions: std::ops::RangeInclusive<u64>) -> Vec<RecordedEvent> {
        let stream_id = StreamId::parse(stream).unwrap();
        versions
            .map(|version| RecordedEvent {
                position: version,
                event_id: uuid::Uuid::now_v7(),
                stream_id: stream_id.clone(),
                version,
                event_type: "t.v1.X".to_owned(),
                occurred_at: std::time::SystemTime::UNIX_EPOCH,
                correlation_id: String::new(),
                causation_id: String::new(),
                trace_context: std::collections::BTreeMap::new(),
                payload: Vec::new(),
                prev_hash: [0; 32],
                hash: [0; 32],
            })
            .collect()
    }

    /// The versions `waiter` is handed from `next` on, as a watcher sends them.
    fn handed(waiter: &mut StreamWaiter, next: u64) -> Option<Vec<u64>> {
        let slices = waiter.appended_from(next)?;
        Some(
            slices
                .iter()
                .flat_map(|slice| slice.iter().map(|e| e.version))
                .filter(|v| *v >= next)
                .collect(),
        )
    }

    /// Whether `waiter` wakes within a (paused-clock) second.
    async fn woke(waiter: &mut StreamWaiter) -> bool {
        tokio::time::timeout(Duration::from_secs(1), waiter.changed())
            .await
            .is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_waiter_wakes_for_its_stream_once_per_new_version() {
        let signal = AppendSignal::new();
        let table = StreamId::parse("table-1").unwrap();
        let mut waiter = signal.subscribe_stream(&table);
        let mut second = signal.subscribe_stream(&table);
        assert_eq!(signal.watched_streams(), 1);
        // Another stream's append wakes nobody here.
        signal.notify_stream("table-2", 5);
        assert!(!woke(&mut waiter).await);
        // Version 3 of ours, notified by the append and again by the database: one wake.
        signal.notify_stream("table-1", 3);
        signal.notify_stream("table-1", 3);
        assert!(woke(&mut waiter).await);
        assert!(!woke(&mut waiter).await);
        signal.notify_stream("table-1", 2);
        assert!(!woke(&mut waiter).await);
        // Every waiter of the stream hears it; a wake for everyone reaches it too.
        assert!(woke(&mut second).await);
        signal.notify_all_streams();
        assert!(woke(&mut waiter).await);
        // This process's append hands its events over once they follow what was read.
        let events = stored("table-1", 4..=5);
        signal.notify_appended("table-1", &events);
        assert!(woke(&mut waiter).await);
        assert!(waiter.appended_from(3).is_none(), "version 3 is unread");
        assert_eq!(handed(&mut waiter, 4), Some(vec![4, 5]));
        // The database's notice of an append can come before the append's own: one wake,
        // and the events are handed over all the same.
        signal.notify_stream("table-1", 6);
        assert!(woke(&mut waiter).await);
        signal.notify_appended("table-1", &stored("table-1", 6..=6));
        assert!(!woke(&mut waiter).await);
        assert_eq!(handed(&mut waiter, 6), Some(vec![6]));
        // A waiter that fell behind by a few appends gets all of them.
        signal.notify_appended("table-1", &stored("table-1", 7..=8));
        signal.notify_appended("table-1", &stored("table-1", 9..=9));
        assert!(woke(&mut waiter).await);
        assert_eq!(handed(&mut waiter, 6), Some(vec![6, 7, 8, 9]));
        assert!(
            waiter.appended_from(5).is_none(),
            "version 5 came from the database"
        );
        assert_eq!(handed(&mut waiter, 10), Some(vec![]));
        // Another process's commit after it: the events no longer reach the end.
        signal.notify_stream("table-1", 10);
        assert!(woke(&mut waiter).await);
        assert!(waiter.appended_from(10).is_none());
        // What is kept starts again with the next append of ours; older versions are read.
        signal.notify_appended("table-1", &stored("table-1", 11..=11));
        assert_eq!(handed(&mut waiter, 11), Some(vec![11]));
        assert!(waiter.appended_from(10).is_none());
        // Only so much is kept.
        for v in 12..=(12 + TAIL_EVENTS as u64) {
            signal.notify_appended("table-1", &stored("table-1", v..=v));
        }
        assert!(waiter.appended_from(11).is_none());
        assert_eq!(handed(&mut waiter, 13).map(|v| v.len()), Some(TAIL_EVENTS));
        // The channel goes with the stream's last waiter.
        drop(waiter);
        assert_eq!(signal.watched_streams(), 1);
        drop(second);
        assert_eq!(signal.watched_streams(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_databases_notice_waits_for_this_process_append_under_way() {
        let signal = AppendSignal::new();
        let table = StreamId::parse("table-1").unwrap();
        let mut waiter = signal.subscribe_stream(&table);
        // Our append of version 1 is under way; the database's notice of it comes first.
        let appending = signal.appending("table-1");
        signal.notify_stream("table-1", 1);
        assert!(
            !woke(&mut waiter).await,
            "deferred while the append is under way"
        );
        appending.appended(&stored("table-1", 1..=1));
        assert!(woke(&mut waiter).await);
        assert_eq!(handed(&mut waiter, 1), Some(vec![1]));
        // Our append fails (another process's commit of version 2 won): the deferred
        // wake-up comes when it ends, and version 2 is read from the store.
        let appending = signal.appending("table-1");
        signal.notify_stream("table-1", 2);
        assert!(!woke(&mut waiter).await);
        drop(appending);
        assert!(woke(&mut waiter).await);
        assert!(waiter.appended_from(2).is_none());
        // Nothing under way: the notice wakes at once.
        signal.notify_stream("table-1", 3);
        assert!(woke(&mut waiter).await);
    }

    #[tokio::test(start_paused = true)]
    async fn another_process_commit_is_read_once_for_every_reader_here() {
        let signal = AppendSignal::new();
        let table = StreamId::parse("table-1").unwrap();
        let mut first = signal.subscribe_stream(&table);
        let mut second = signal.subscribe_stream(&table);
        let mut follower = signal.follow_stream(&table);
        // Another replica's commit of versions 1..=3: both watchers wake; one takes the turn
        // to read, the other is refused it and waits.
        signal.notify_stream("table-1", 3);
        assert!(woke(&mut first).await && woke(&mut second).await);
        assert!(first.appended_from(1).is_none() && second.appended_from(1).is_none());
        let turn = first.claim_read().expect("nobody reads yet");
        assert!(second.claim_read().is_none(), "one read at a time");
        assert!(!woke(&mut second).await);
        // The read ends: the waiting watcher wakes and takes what was read, and so does
        // the cached aggregate; the turn is free again.
        turn.read(&stored("table-1", 1..=3));
        assert!(woke(&mut second).await);
        assert_eq!(handed(&mut second, 1), Some(vec![1, 2, 3]));
        assert_eq!(handed(&mut follower, 2), Some(vec![2, 3]));
        drop(second.claim_read().expect("the turn ended"));
        // A read that stops short of what was notified is not kept (it is not the end).
        signal.notify_stream("table-1", 6);
        assert!(woke(&mut second).await);
        second.claim_read().unwrap().read(&stored("table-1", 4..=5));
        assert!(first.appended_from(4).is_none());
        // A read past what was notified (a notice still on its way) moves the stream there,
        // and this process's next append carries on from it.
        signal.read_from_store("table-1", &stored("table-1", 4..=7));
        assert!(woke(&mut first).await);
        assert_eq!(handed(&mut first, 4), Some(vec![4, 5, 6, 7]));
        signal.notify_stream("table-1", 7);
        assert!(!woke(&mut first).await, "version 7 is known already");
        signal.notify_appended("table-1", &stored("table-1", 8..=8));
        assert_eq!(handed(&mut first, 6), Some(vec![6, 7, 8]));
        // A turn dropped without a read (failed, cancelled) wakes the waiters, who look
        // again, and frees the turn.
        let turn = first.claim_read().unwrap();
        drop(turn);
        assert!(woke(&mut second).await);
        assert!(second.claim_read().is_some());
    }

    #[test]
    fn events_are_kept_only_while_a_waiter_takes_them() {
        let signal = AppendSignal::new();
        let table = StreamId::parse("table-1").unwrap();
        // A cached aggregate follows versions only: nothing is kept for it.
        let mut follower = signal.follow_stream(&table);
        signal.notify_appended("table-1", &stored("table-1", 1..=1));
        assert!(follower.is_current(1));
        assert!(follower.appended_from(1).is_none());
        // A watcher takes the events: from now on they are kept.
        let mut watcher = signal.subscribe_stream(&table);
        signal.notify_appended("table-1", &stored("table-1", 2..=2));
        assert_eq!(handed(&mut watcher, 2), Some(vec![2]));
        // The watcher gone, what was kept goes too (the follower remains).
        drop(watcher);
        assert!(follower.appended_from(2).is_none());
        assert_eq!(signal.watched_streams(), 1);
    }

    #[test]
    fn a_stream_waiter_says_whether_a_version_is_the_latest_notified() {
        let signal = AppendSignal::new();
        let table = StreamId::parse("table-1").unwrap();
        let mut waiter = signal.subscribe_stream(&table);
        assert!(
            waiter.is_current(0),
            "nothing notified since the subscription"
        );
        signal.notify_appended("table-1", &stored("table-1", 1..=2));
        assert!(
            waiter.is_current(2),
            "this process's own append, already folded"
        );
        assert!(!waiter.is_current(1), "version 2 was notified");
        signal.notify_stream("table-2", 9);
        assert!(waiter.is_current(2), "another stream's news");
        signal.notify_stream("table-1", 3);
        assert!(!waiter.is_current(2), "another process committed version 3");
        assert!(waiter.is_current(3));
        // Something may have been appended anywhere: not current once, whatever the version.
        signal.notify_all_streams();
        assert!(!waiter.is_current(3));
        assert!(
            waiter.is_current(3),
            "the caller read the stream after the last answer"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn polls_when_nothing_happens_and_stops_on_shutdown() {
        let signal = AppendSignal::new();
        let mut waiter = signal.subscribe();
        let shutdown = CancellationToken::new();
        let started = tokio::time::Instant::now();
        let wake = wait_for_events(Some(&mut waiter), Duration::from_secs(2), &shutdown).await;
        assert_eq!(wake, Wake::Check);
        assert!(started.elapsed() >= Duration::from_secs(2));
        shutdown.cancel();
        let wake = wait_for_events(None, Duration::from_secs(60), &shutdown).await;
        assert_eq!(wake, Wake::Shutdown);
    }
}
