//! Group commit, shared by both backends: many callers' appends written in one transaction,
//! each caller getting its own result.
//!
//! - [`AppendRequest`]: one caller's append (stream, expected version, events).
//! - [`plan`]: decides, in memory and in batch order, which appends of a batch go in and
//!   seals their events, from the stream heads and the already stored event ids the backend
//!   read at the start of the batch. An append that conflicts (expected version), repeats an
//!   event id (stored, or taken by an earlier append of the same batch), or carries an invalid
//!   event fails alone; the appends after it see the stream as if it had never been tried.
//!   Two appends to one stream in one batch chain: the second sees the first's head.
//! - [`GroupCommit`]: the writer tasks. Each takes whatever is queued right now (up to a
//!   batch's limits), writes it, answers every caller, and repeats: no timer, so a lone
//!   writer's append is written at once, and batches grow while a commit is in flight and,
//!   when the writer is busy, while it yields to the runtime a few times before it gathers
//!   ([`GATHER_YIELDS`]).
//!   Appends are routed to a writer by stream, so one process never races itself for a
//!   stream's next version.
//! - [`HeadCache`]: the heads a writer has itself committed, so a batch of appends to streams
//!   it wrote before needs no read first. The database stays the judge: a stale head (another
//!   process appended since) makes the batch's INSERT hit the unique `(stream_id, version)`
//!   index, nothing of the batch is stored, and the writer forgets those heads and decides the
//!   batch again from a fresh read. A head is never trusted to refuse an append: an
//!   expectation that disagrees with the cached head sends that stream to the read.

use crate::codec::{check_distinct_ids, link_hash, occurred_at_us, to_i64};
use crate::error::StoreError;
use crate::store::Appended;
use crate::version::ExpectedVersion;
use fairdeal_event::{NewEvent, RecordedEvent, StreamId, seal};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::ops::Range;
use std::sync::Mutex;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

/// One caller's append, as [`crate::PgEventStore::append_batch`] and
/// [`crate::SqliteEventStore::append_batch`] take it.
#[derive(Debug, Clone)]
pub struct AppendRequest {
    /// The stream appended to.
    pub stream_id: StreamId,
    /// What the caller believes the stream's version is.
    pub expected: ExpectedVersion,
    /// The events, appended atomically (all or none) as the next versions.
    pub events: Vec<NewEvent>,
    /// The lease the append must hold when it is written (PostgreSQL only; see
    /// [`crate::fence`]); `None`: unfenced.
    pub fence: Option<crate::Fence>,
}

/// Appends a writer gathers into one transaction at most.
pub(crate) const MAX_BATCH_APPENDS: usize = 512;
/// Events a writer gathers into one transaction before it stops taking more (an append
/// larger than this is written in a transaction of its own).
pub(crate) const MAX_BATCH_EVENTS: usize = 8_192;
/// Payload bytes a writer gathers into one transaction before it stops taking more.
pub(crate) const MAX_BATCH_BYTES: usize = 16 << 20;

/// How many times a busy writer (appends were waiting when it came back from its last
/// commit, or that commit held several) yields to the runtime before it takes the rest of
/// its batch. Each yield lets every task that is ready run once, and the runtime poll its
/// sockets, so the appends of commands that arrived with this one (many tables' moves
/// decided at once) join its transaction instead of opening the next: under load, fewer
/// and larger commits (docs/performance.md, "A writer that yields before it gathers"). A
/// writer that waited for its append, its last batch a lone one, writes it at once: a lone
/// caller's appends are not held back.
pub(crate) const GATHER_YIELDS: usize = 8;

/// A stream head as read at the start of a batch: its last version (0: none) and that
/// event's stored hash.
pub(crate) type Head = (u64, Option<Vec<u8>>);

/// One sealed event of a planned batch, with its column values.
#[derive(Debug)]
pub(crate) struct Sealed {
    pub(crate) event: RecordedEvent,
    pub(crate) version: i64,
    pub(crate) occurred_at_us: i64,
}

/// What [`plan`] decided for a batch.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Per request: `Some` when decided without writing (a failure, or an empty append),
    /// `None` when its events are in `rows` (see `spans`).
    pub(crate) decided: Vec<Option<Result<Appended, StoreError>>>,
    /// The events to insert, in batch order.
    pub(crate) rows: Vec<Sealed>,
    /// Per written request: its index and its range in `rows`.
    pub(crate) spans: Vec<(usize, Range<usize>)>,
}

impl Plan {
    /// Whether nothing is to be written.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Each written stream's head once the rows are stored: its last row's version and hash.
    pub(crate) fn new_heads(&self) -> impl Iterator<Item = (&str, Head)> + '_ {
        // Rows of one stream come in version order, so the last one seen is the head; a
        // stream written by two appends of the batch yields twice, the later one last.
        self.rows.iter().map(|row| {
            (
                row.event.stream_id.as_str(),
                (row.event.version, Some(row.event.hash.to_vec())),
            )
        })
    }

    /// The results once the rows are stored with positions `first, first + 1, ...` in
    /// `rows` order.
    pub(crate) fn finish(self, first_position: u64) -> Vec<Result<Appended, StoreError>> {
        let Plan {
            mut decided,
            rows,
            spans,
        } = self;
        let mut events: Vec<Option<RecordedEvent>> =
            positioned(rows, first_position).map(Some).collect();
        for (index, range) in spans {
            let appended: Vec<RecordedEvent> =
                events[range].iter_mut().filter_map(Option::take).collect();
            let version = appended.last().map_or(0, |e| e.version);
            decided[index] = Some(Ok(Appended {
                version,
                events: appended,
            }));
        }
        decided
            .into_iter()
            .map(|d| {
                d.unwrap_or_else(|| {
                    Err(StoreError::InvalidArgument(
                        "group commit lost track of an append".into(),
                    ))
                })
            })
            .collect()
    }
}

/// Decides a batch: see the module documentation. `heads` holds every stream of the batch
/// that has events; `stored_ids` every event id of the batch already in the log.
pub(crate) fn plan(
    requests: Vec<AppendRequest>,
    mut heads: HashMap<String, Head>,
    stored_ids: &HashSet<Uuid>,
) -> Plan {
    let mut plan = Plan {
        decided: Vec::with_capacity(requests.len()),
        rows: Vec::new(),
        spans: Vec::new(),
    };
    let mut taken: HashSet<Uuid> = HashSet::new();
    for (index, request) in requests.into_iter().enumerate() {
        let start = plan.rows.len();
        match plan_one(request, &mut heads, stored_ids, &taken) {
            Ok(Planned::Empty(appended)) => plan.decided.push(Some(Ok(appended))),
            Ok(Planned::Rows(rows)) => {
                taken.extend(rows.iter().map(|r| r.event.event_id));
                plan.rows.extend(rows);
                plan.spans.push((index, start..plan.rows.len()));
                plan.decided.push(None);
            }
            Err(e) => plan.decided.push(Some(Err(e))),
        }
    }
    plan
}

enum Planned {
    Empty(Appended),
    Rows(Vec<Sealed>),
}

fn plan_one(
    request: AppendRequest,
    heads: &mut HashMap<String, Head>,
    stored_ids: &HashSet<Uuid>,
    taken: &HashSet<Uuid>,
) -> Result<Planned, StoreError> {
    let AppendRequest {
        stream_id,
        expected,
        events,
        fence: _,
    } = request;
    check_distinct_ids(&events)?;
    if let Some(e) = events
        .iter()
        .find(|e| stored_ids.contains(&e.event_id) || taken.contains(&e.event_id))
    {
        return Err(StoreError::DuplicateEventId {
            event_id: e.event_id,
        });
    }
    let (current, current_hash) = heads
        .get(stream_id.as_str())
        .map_or((0, None), |(v, h)| (*v, h.as_deref()));
    if !expected.matches(current) {
        return Err(StoreError::Conflict {
            stream_id,
            expected,
            actual: current,
        });
    }
    if events.is_empty() {
        return Ok(Planned::Empty(Appended {
            version: current,
            events: Vec::new(),
        }));
    }
    let rows = seal_rows(&stream_id, current, current_hash, events)?;
    if let Some(last) = rows.last() {
        let head = (last.event.version, Some(last.event.hash.to_vec()));
        heads.insert(stream_id.into_string(), head);
    }
    Ok(Planned::Rows(rows))
}

/// `events` sealed as versions `current + 1, current + 2, ...` of `stream_id`, each linked to
/// the one before and the first to the stream's head (`current_hash`, `None` for a new
/// stream), with their column values.
pub(crate) fn seal_rows(
    stream_id: &StreamId,
    current: u64,
    current_hash: Option<&[u8]>,
    events: Vec<NewEvent>,
) -> Result<Vec<Sealed>, StoreError> {
    let mut prev = link_hash(stream_id, current_hash.map(|bytes| (current, bytes)))?;
    let mut rows = Vec::with_capacity(events.len());
    for (version, event) in (current + 1..).zip(events) {
        let recorded = seal(stream_id, version, &prev, event).map_err(StoreError::InvalidEvent)?;
        prev = recorded.hash;
        rows.push(Sealed {
            version: to_i64(recorded.version, "version")?,
            occurred_at_us: occurred_at_us(&recorded)?,
            event: recorded,
        });
    }
    Ok(rows)
}

/// `rows` as stored with positions `first_position, first_position + 1, ...`.
fn positioned(rows: Vec<Sealed>, first_position: u64) -> impl Iterator<Item = RecordedEvent> {
    rows.into_iter()
        .zip(first_position..)
        .map(|(row, position)| RecordedEvent {
            position,
            ..row.event
        })
}

/// The answer to one append whose `rows` were stored with positions `first_position,
/// first_position + 1, ...`; `current` is the stream's version before it.
pub(crate) fn appended(rows: Vec<Sealed>, first_position: u64, current: u64) -> Appended {
    let events: Vec<RecordedEvent> = positioned(rows, first_position).collect();
    Appended {
        version: events.last().map_or(current, |e| e.version),
        events,
    }
}

/// Whether a database failure leaves the connection it happened on in an unknown state:
/// anything but the server's refusal of a statement, or a decision made without one.
pub(crate) fn breaks_connection(error: &StoreError) -> bool {
    matches!(error, StoreError::Database(e) if !matches!(e, sqlx::Error::Database(_)))
}

/// Streams a [`HeadCache`] holds at most; past it, it starts afresh (a stream not written
/// for a while costs one read when it is written again).
pub(crate) const HEAD_CACHE_STREAMS: usize = 65_536;

/// The heads of the streams one writer task committed (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct HeadCache {
    heads: HashMap<String, Head>,
}

impl HeadCache {
    /// Splits a batch's streams into the heads known here, usable as they are, and the
    /// streams to read. A stream is read when it is not cached, when the first append to it
    /// in the batch expects another version than the cached one (the cache may be behind
    /// another process: it never decides a conflict), or when that append writes nothing
    /// (an empty append answers the stored version, which only a read knows).
    pub(crate) fn lookup(
        &mut self,
        requests: &[AppendRequest],
    ) -> (HashMap<String, Head>, Vec<String>) {
        let mut known = HashMap::new();
        let mut to_read = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for request in requests {
            let stream = request.stream_id.as_str();
            if !seen.insert(stream) {
                continue;
            }
            match self.heads.get(stream) {
                Some(head) if !request.events.is_empty() && request.expected.matches(head.0) => {
                    known.insert(stream.to_owned(), head.clone());
                }
                Some(_) => {
                    self.heads.remove(stream);
                    to_read.push(stream.to_owned());
                }
                None => to_read.push(stream.to_owned()),
            }
        }
        (known, to_read)
    }

    /// Records the heads of a committed batch.
    pub(crate) fn remember(&mut self, plan: &Plan) {
        for (stream, head) in plan.new_heads() {
            self.put(stream, head);
        }
    }

    /// Records the head left by one committed append.
    pub(crate) fn remember_appended(&mut self, appended: &Appended) {
        if let Some(last) = appended.events.last() {
            let head = (last.version, Some(last.hash.to_vec()));
            self.put(last.stream_id.as_str(), head);
        }
    }

    /// Records `stream`'s head, starting afresh when the cache is full.
    fn put(&mut self, stream: &str, head: Head) {
        match self.heads.get_mut(stream) {
            Some(cached) => *cached = head,
            None => {
                if self.heads.len() >= HEAD_CACHE_STREAMS {
                    self.heads.clear();
                }
                self.heads.insert(stream.to_owned(), head);
            }
        }
    }

    /// Forgets the heads of `requests`' streams (their batch failed, or its outcome is
    /// unknown).
    pub(crate) fn forget(&mut self, requests: &[AppendRequest]) {
        for request in requests {
            self.heads.remove(request.stream_id.as_str());
        }
    }
}

/// A backend's batch write: every request's result, in request order.
pub(crate) trait BatchWriter: Send + 'static {
    /// Writes `requests` in one transaction (or, after a failure that leaves nothing
    /// written, by another way that still gives each request its own result).
    fn write(
        &mut self,
        requests: Vec<AppendRequest>,
    ) -> impl Future<Output = Vec<Result<Appended, StoreError>>> + Send;
}

/// A queued append and where its result goes.
struct Queued {
    request: AppendRequest,
    reply: oneshot::Sender<Result<Appended, StoreError>>,
}

impl Queued {
    fn weight(&self) -> (usize, usize) {
        let bytes = self
            .request
            .events
            .iter()
            .map(|e| e.payload.len() + e.event_type.len() + 256)
            .sum();
        (self.request.events.len(), bytes)
    }
}

/// The writer tasks of one store, started on first use (and again if the runtime that ran
/// them has gone), each ending when every handle to the store is dropped.
pub(crate) struct GroupCommit {
    senders: Mutex<Vec<Option<mpsc::UnboundedSender<Queued>>>>,
    route: RandomState,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("writers", &self.writers())
            .finish()
    }
}

impl GroupCommit {
    /// `writers` writer tasks (at least one).
    pub(crate) fn new(writers: usize) -> Self {
        Self {
            senders: Mutex::new(vec![None; writers.max(1)]),
            route: RandomState::new(),
        }
    }

    fn writers(&self) -> usize {
        self.senders.lock().map_or(0, |s| s.len())
    }

    /// Queues `request` on its stream's writer (its partition's when fenced; started with
    /// `writer` if needed) and waits for its result.
    pub(crate) async fn append<W, F>(
        &self,
        request: AppendRequest,
        writer: F,
    ) -> Result<Appended, StoreError>
    where
        W: BatchWriter,
        F: FnOnce() -> W,
    {
        let (reply, result) = oneshot::channel();
        let queued = Queued { request, reply };
        let sender = {
            let mut senders = self
                .senders
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let n = senders.len() as u64;
            // A fenced append goes to its partition's writer: a stream is in one partition,
            // so the process still never races itself for a stream, and a lease row is
            // locked by one writer's transactions at a time (two transactions share-locking
            // one row would make PostgreSQL create a multixact for it).
            let route = match &queued.request.fence {
                Some(fence) => u64::from(fence.partition),
                None => self.route.hash_one(queued.request.stream_id.as_str()),
            };
            let shard = usize::try_from(route % n).unwrap_or(0);
            match &senders[shard] {
                Some(sender) if !sender.is_closed() => sender.clone(),
                _ => {
                    let (sender, receiver) = mpsc::unbounded_channel();
                    tokio::spawn(run_writer(writer(), receiver));
                    senders[shard] = Some(sender.clone());
                    sender
                }
            }
        };
        sender.send(queued).map_err(|_| writer_gone())?;
        result.await.map_err(|_| writer_gone())?
    }
}

fn writer_gone() -> StoreError {
    StoreError::Database(sqlx::Error::WorkerCrashed)
}

/// One writer: takes what is queued, up to the limits, writes it, answers, repeats.
async fn run_writer<W: BatchWriter>(mut writer: W, mut queue: mpsc::UnboundedReceiver<Queued>) {
    let mut held: Option<Queued> = None;
    let mut crowded = false;
    loop {
        // Whether appends were waiting when the writer came back for more (it is busy), or
        // it waited for this one.
        let (first, busy) = match held.take() {
            Some(q) => (q, true),
            None => match queue.try_recv() {
                Ok(q) => (q, true),
                Err(mpsc::error::TryRecvError::Empty) => match queue.recv().await {
                    Some(q) => (q, false),
                    None => return,
                },
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            },
        };
        // Appends made ready by the same wake-ups join this batch rather than open the next,
        // when there are other callers to wait for: appends were waiting, or the last batch
        // held several. A lone caller's append is written at once.
        if busy || crowded {
            for _ in 0..GATHER_YIELDS {
                tokio::task::yield_now().await;
            }
        }
        let (mut events, mut bytes) = first.weight();
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH_APPENDS
            && events < MAX_BATCH_EVENTS
            && bytes < MAX_BATCH_BYTES
        {
            let Ok(next) = queue.try_recv() else { break };
            let (e, b) = next.weight();
            if events + e > MAX_BATCH_EVENTS || bytes + b > MAX_BATCH_BYTES {
                // Too big to join: it opens the next batch.
                held = Some(next);
                break;
            }
            events += e;
            bytes += b;
            batch.push(next);
        }
        crowded = batch.len() > 1;
        let (requests, replies): (Vec<_>, Vec<_>) =
            batch.into_iter().map(|q| (q.request, q.reply)).unzip();
        let results = writer.write(requests).await;
        for (reply, result) in replies.into_iter().zip(results) {
            // A caller that stopped waiting does not care; its append stands.
            let _ = reply.send(result);
        }
    }
}

/// A copy of a batch-wide failure for each caller of the batch (sqlx errors are not
/// `Clone`): the kind is kept where it matters to a caller (I/O, pool), the message always.
pub(crate) fn replicate(error: &StoreError) -> StoreError {
    match error {
        StoreError::Database(sqlx::Error::Io(io)) => StoreError::Database(sqlx::Error::Io(
            std::io::Error::new(io.kind(), io.to_string()),
        )),
        StoreError::Database(sqlx::Error::PoolTimedOut) => {
            StoreError::Database(sqlx::Error::PoolTimedOut)
        }
        StoreError::Database(sqlx::Error::PoolClosed) => {
            StoreError::Database(sqlx::Error::PoolClosed)
        }
        other => StoreError::Database(sqlx::Error::Protocol(format!(
            "the group commit holding this append failed: {other}"
        ))),
    }
}

/// Every request of a batch failed by `error`.
pub(crate) fn all_failed(n: usize, error: StoreError) -> Vec<Result<Appended, StoreError>> {
    let mut out: Vec<_> = (1..n).map(|_| Err(replicate(&error))).collect();
    if n > 0 {
        out.push(Err(error));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(stream: &StreamId, expected: ExpectedVersion, events: usize) -> AppendRequest {
        AppendRequest {
            stream_id: stream.clone(),
            expected,
            events: (0..events)
                .map(|i| NewEvent::new("fairdeal.test.v1.E", vec![u8::try_from(i).unwrap_or(0)]))
                .collect(),
            fence: None,
        }
    }

    fn stream(n: u128) -> StreamId {
        StreamId::of("table", Uuid::from_u128(n)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_cache_answers_only_what_it_committed_and_never_a_conflict() {
        let (a, b, c) = (stream(1), stream(2), stream(3));
        let mut cache = HeadCache::default();
        // Nothing known yet: every stream is read.
        let (known, to_read) = cache.lookup(&[request(&a, ExpectedVersion::NoStream, 1)]);
        assert!(known.is_empty());
        assert_eq!(to_read, [a.as_str()]);
        // After a committed plan, its heads are known.
        let plan = plan(
            vec![
                request(&a, ExpectedVersion::NoStream, 2),
                request(&b, ExpectedVersion::NoStream, 1),
            ],
            HashMap::new(),
            &HashSet::new(),
        );
        cache.remember(&plan);
        let batch = [
            request(&a, ExpectedVersion::Exact(2), 1),
            request(&a, ExpectedVersion::Exact(9), 1),
            request(&b, ExpectedVersion::Exact(5), 1),
            request(&c, ExpectedVersion::Any, 1),
        ];
        let (known, mut to_read) = cache.lookup(&batch);
        // a: its first append agrees with the cache; the second is decided in the plan.
        assert_eq!(known.get(a.as_str()).map(|h| h.0), Some(2));
        // b: the expectation disagrees, so the database must say: read, and forgotten.
        to_read.sort();
        assert_eq!(to_read, [b.as_str(), c.as_str()]);
        assert_eq!(known.len(), 1);
        let (known, _) = cache.lookup(&[request(&b, ExpectedVersion::Exact(1), 1)]);
        assert!(known.is_empty());
        // An empty append answers the stored version: always read.
        let (known, _) = cache.lookup(&[request(&a, ExpectedVersion::Exact(2), 0)]);
        assert!(known.is_empty());
    }

    #[test]
    fn forgotten_heads_are_read_again() {
        let a = stream(1);
        let mut cache = HeadCache::default();
        let batch = vec![request(&a, ExpectedVersion::NoStream, 1)];
        cache.remember(&plan(batch.clone(), HashMap::new(), &HashSet::new()));
        let next = [request(&a, ExpectedVersion::Exact(1), 1)];
        assert_eq!(cache.lookup(&next).0.len(), 1);
        cache.forget(&next);
        assert_eq!(cache.lookup(&next).1, [a.as_str()]);
    }
}
