//! Ingest: the durable consumers' handler. Events are archived a batch at a time in the
//! bus's own transaction (the leaves, the consumer's position and, for the embedded tail, its
//! processed ids commit together, so a kill -9 at any point loses and duplicates nothing).
//! Each event becomes the next leaf, format 2 (`fairdeal_tlog::entry`): 65 bytes of salted
//! commitments to its body and its chain link, the envelope and both salts kept beside it
//! for the visibility rule ([`crate::visibility`]) to disclose.
//!
//! A batch costs a handful of statements whatever its size: one lock, one read of the
//! batch's event ids already archived, one of its streams' heads (`ledger_heads`), one of the
//! erasures that reach it, one of the next leaf index, one insert of all its leaves and one
//! upsert of its heads. The chain checks run in memory, stream by stream, through the batch.
//!
//! Leaf indexes are dense and in commit order: every ingest transaction takes one lock
//! before it reads the next index (PostgreSQL: a transaction-scoped advisory lock; SQLite:
//! the bus's write transactions are `BEGIN IMMEDIATE`, one writer at a time), so a committed
//! leaf `i` means leaves `0..i` are committed too, and the tree follower ([`crate::log`]) can
//! read them in order.
//!
//! A gap, a broken link, a wrong version or a different event at an ingested position stops
//! the stream: the event is recorded in `ledger_refused` (never in the tree) with an `ERROR`
//! line carrying `alert = "ledger_stream_halted"`, counted by the metrics
//! `fairdeal.ledger.refused` and (the first refusal of a stream) `fairdeal.ledger.halted`,
//! and every later event of that stream is refused too, until an operator repairs it.
//!
//! Events that change what may be seen take effect in the same transaction: a table's
//! `GameFinished` records the game as finished; a chat line's removal and an account's
//! deletion erase the content of the events they reach (already archived, in this batch, or
//! arriving later), leaving their leaves as they are.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use fairdeal_bus::{Handler, HandlerError};
use fairdeal_db::{Backend, BackendKind};
use fairdeal_eventstore::{GENESIS_PREV_HASH, Hash, RecordedEvent};
use fairdeal_kit::metrics::Counter;
use fairdeal_tlog::entry::{Entry, SALT_LEN, Salt};
use hashlink::LruCache;
use parking_lot::Mutex;
use sqlx::Transaction;
use tokio::sync::Notify;

use crate::archive::{Content, Head, IngestSql, LeafRow, Reach};
use crate::visibility::{self, Class, Effect};

/// The consumers' durable name prefix (`ledger-<source service>`).
pub const CONSUMER: &str = "ledger";

/// Events per ingest transaction at most: a batch costs a handful of statements whatever
/// its size, so a backlog drains in large ones (docs/performance.md, "Ledger ingest").
pub const INGEST_BATCH: usize = 2_048;

/// The advisory lock key that serialises leaf numbering on PostgreSQL ("ledger" in ASCII).
const LEAF_LOCK: i64 = 0x0000_6c65_6467_6572;

/// Counters of the ingest since start (the archive holds the durable truth).
#[derive(Debug, Default)]
pub struct IngestCounters {
    /// Events appended as leaves.
    pub leaves: AtomicU64,
    /// Events refused (breaking a chain, or of a halted stream).
    pub refused: AtomicU64,
    /// Duplicate deliveries acknowledged without a new leaf.
    pub duplicates: AtomicU64,
    /// Leaves whose content was erased (by a removal or an account deletion).
    pub erased: AtomicU64,
}

/// The ingest's OpenTelemetry instruments (docs/operations.md).
#[derive(Debug, Clone)]
struct Metrics {
    /// `fairdeal.ledger.leaves`: events appended as leaves.
    leaves: Counter<u64>,
    /// `fairdeal.ledger.refused`: events refused (alert on any).
    refused: Counter<u64>,
    /// `fairdeal.ledger.halted`: streams whose ingest stopped (alert on any).
    halted: Counter<u64>,
    /// `fairdeal.ledger.erased`: leaves whose content was erased.
    erased: Counter<u64>,
}

impl Metrics {
    fn new() -> Self {
        use fairdeal_kit::metrics::counter;
        Self {
            leaves: counter(
                "fairdeal.ledger.leaves",
                "Events appended to the ledger's tree",
                "{event}",
            ),
            refused: counter(
                "fairdeal.ledger.refused",
                "Events the ledger refused (a gap, a broken hash chain, a halted stream)",
                "{event}",
            ),
            halted: counter(
                "fairdeal.ledger.halted",
                "Streams whose ingest the ledger stopped at a refused event",
                "{stream}",
            ),
            erased: counter(
                "fairdeal.ledger.erased",
                "Leaves whose content the ledger erased (a removed chat line, a deleted account)",
                "{event}",
            ),
        }
    }
}

/// The handler every ledger consumer runs.
#[derive(Debug, Clone)]
pub struct Ingest {
    /// Woken after a batch commits (the tree follower reads the new leaves).
    appended: Arc<Notify>,
    /// Counters.
    counters: Arc<IngestCounters>,
    /// The exported metrics.
    metrics: Metrics,
    /// The event types an erasure reaches.
    erasable: Arc<[String]>,
    /// Set when a batch erased content: the follower then scrubs the database's files
    /// ([`fairdeal_db::Db::scrub`]) once the batch committed.
    scrub: Arc<AtomicBool>,
    /// Events sealed as they arrived (`Handler::prepare`), by id, until handled.
    prepared: Arc<Mutex<LruCache<uuid::Uuid, Sealed>>>,
}

impl Ingest {
    /// A handler waking `appended` after each committed batch. Its metrics are bound to the
    /// meter provider installed when it is created.
    pub fn new(appended: Arc<Notify>, counters: Arc<IngestCounters>) -> Self {
        Self {
            appended,
            counters,
            metrics: Metrics::new(),
            erasable: visibility::erasable_types().into(),
            scrub: Arc::new(AtomicBool::new(false)),
            prepared: Arc::new(Mutex::new(LruCache::new(PREPARED))),
        }
    }

    /// The flag a batch that erased content sets (see [`crate::log::follow`]).
    pub fn scrub_flag(&self) -> Arc<AtomicBool> {
        self.scrub.clone()
    }
}

/// What the archive says about an incoming event.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The next link of its stream: append it as the next leaf.
    Append,
    /// Already a leaf (a redelivery): nothing to do.
    Duplicate,
    /// Refused, with the reason; the stream halts.
    Refuse(String),
}

/// The decision for `event`, given the stream's last ingested leaf (`None`: none yet),
/// whether the stream is halted, the leaf already holding this event id, if any, and whether
/// the event's own hash is right (SHA-256 of its `prev_hash` and canonical bytes, computed
/// where its bytes are: [`own_hash_ok`]).
pub fn judge(
    event: &RecordedEvent,
    head: Option<(u64, Hash)>,
    halted: bool,
    same_id: Option<(String, u64, Hash)>,
    own_hash_ok: bool,
) -> Verdict {
    if let Some((stream, version, hash)) = same_id {
        if stream == event.stream_id.as_str() && version == event.version && hash == event.hash {
            return Verdict::Duplicate;
        }
        return Verdict::Refuse(format!(
            "event id already ingested as {stream} version {version} with other content"
        ));
    }
    if halted {
        return Verdict::Refuse("the stream is halted by an earlier refused event".into());
    }
    let (expected, prev) = head.map_or((1, GENESIS_PREV_HASH), |(v, h)| (v.saturating_add(1), h));
    if event.version != expected {
        return Verdict::Refuse(format!(
            "broken chain at {} version {}: expected version {expected}",
            event.stream_id, event.version
        ));
    }
    if event.prev_hash != prev {
        return Verdict::Refuse(format!(
            "broken chain at {} version {}: prev_hash does not match the previous hash",
            event.stream_id, event.version
        ));
    }
    if !own_hash_ok {
        return Verdict::Refuse(format!(
            "{} version {}: its hash is not SHA-256(prev_hash || its canonical bytes)",
            event.stream_id, event.version
        ));
    }
    Verdict::Append
}

/// Whether `event`'s hash is SHA-256(prev_hash || canonical bytes), given its `body` (the
/// canonical bytes without `prev_hash`). The canonical bytes are the body followed by field
/// 10, `prev_hash` (tag 0x52, length 32, the 32 bytes): prost writes fields in number order
/// and leaves `hash` (11) out, so the body need not be encoded twice.
pub fn own_hash_ok(event: &RecordedEvent, body: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(event.prev_hash);
    hasher.update(body);
    hasher.update([0x52, 0x20]);
    hasher.update(event.prev_hash);
    let hash: Hash = hasher.finalize().into();
    hash == event.hash
}

fn transient(error: sqlx::Error) -> HandlerError {
    HandlerError::Transient(error.into())
}

fn i64_of(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn u64_of(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn hash_of(bytes: &[u8]) -> Hash {
    Hash::try_from(bytes).unwrap_or([0; 32])
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The erasure target of one event.
fn event_target(event_id: &str) -> String {
    format!("event:{event_id}")
}

/// Prepared events kept for their handling at most (a few batches: the consumer pulls two
/// ahead); past it the oldest are dropped and computed again if ever handled.
const PREPARED: usize = 4 * INGEST_BATCH;

/// What the ingest computes from an event alone: its row as archived, leaf and content
/// included (salted afresh), but for its leaf index; and whether its own hash is right. Done
/// as the event arrives when the consumer offers it (`Handler::prepare`), else when it is
/// handled.
#[derive(Debug, Clone)]
struct Sealed {
    row: LeafRow,
    own_hash_ok: bool,
}

fn seal(event: &RecordedEvent) -> Result<Sealed, HandlerError> {
    let mut salts = [0u8; 2 * SALT_LEN];
    getrandom::fill(&mut salts)
        .map_err(|e| HandlerError::transient(format!("the OS random source failed: {e}")))?;
    let mut body_salt: Salt = [0u8; SALT_LEN];
    let mut chain_salt: Salt = [0u8; SALT_LEN];
    body_salt.copy_from_slice(&salts[..SALT_LEN]);
    chain_salt.copy_from_slice(&salts[SALT_LEN..]);
    // The whole envelope as archived, then its body (the same without its chain link), from
    // one copy of the event.
    let mut envelope = event.to_envelope();
    let whole = prost::Message::encode_to_vec(&envelope);
    envelope.prev_hash = Vec::new();
    envelope.hash = Vec::new();
    let body = prost::Message::encode_to_vec(&envelope);
    let leaf = Entry::commit(
        &body_salt,
        &body,
        &chain_salt,
        &event.prev_hash,
        &event.hash,
    );
    let own_hash_ok = own_hash_ok(event, &body);
    let row = LeafRow {
        leaf_index: 0,
        event_id: event.event_id.to_string(),
        stream_id: envelope.stream_id,
        stream_version: i64_of(event.version),
        event_type: envelope.event_type,
        correlation_id: envelope.correlation_id,
        hash: event.hash.to_vec(),
        leaf: leaf.to_bytes().to_vec(),
        subject: visibility::subject(event),
        content: Some(Content {
            envelope: whole,
            body_salt: body_salt.to_vec(),
            chain_salt: chain_salt.to_vec(),
        }),
        erased_at_ms: None,
    };
    Ok(Sealed { row, own_hash_ok })
}

/// A refused event, to record.
struct Refusal<'a> {
    event: &'a RecordedEvent,
    reason: String,
    /// Whether it halted its stream (the stream's first refusal).
    halts: bool,
}

/// What one batch writes.
#[derive(Default)]
struct Plan<'a> {
    leaves: Vec<LeafRow>,
    heads: HashMap<String, Head>,
    refusals: Vec<Refusal<'a>>,
    finished: Vec<(String, i64)>,
    erasures: Vec<(String, i64)>,
    duplicates: u64,
    /// Leaves of this batch erased before the batch committed.
    erased_in_batch: u64,
}

impl Ingest {
    /// Decides every event of the batch against the archive's state read before, in order.
    fn plan<'a>(
        &self,
        events: &[&'a RecordedEvent],
        mut next: i64,
        same_ids: HashMap<String, (String, u64, Hash)>,
        mut heads: HashMap<String, Head>,
        mut erased: HashSet<String>,
    ) -> Result<Plan<'a>, HandlerError> {
        let mut plan = Plan::default();
        // Ids archived by this batch so far, as `judge` sees earlier leaves.
        let mut batch_ids: HashMap<uuid::Uuid, (String, u64, Hash)> = HashMap::new();
        let now = now_ms();
        for &event in events {
            let event_id = event.event_id.to_string();
            let stream = event.stream_id.as_str();
            let same = batch_ids
                .get(&event.event_id)
                .or_else(|| same_ids.get(&event_id))
                .cloned();
            let head = heads.get(stream);
            let prepared = self.prepared.lock().remove(&event.event_id);
            let sealed = match prepared {
                Some(sealed) => sealed,
                None => seal(event)?,
            };
            let verdict = judge(
                event,
                head.filter(|h| h.version > 0)
                    .map(|h| (u64_of(h.version), hash_of(&h.hash))),
                head.is_some_and(|h| h.halted),
                same,
                sealed.own_hash_ok,
            );
            match verdict {
                Verdict::Duplicate => plan.duplicates += 1,
                Verdict::Refuse(reason) => {
                    let entry = heads.entry(stream.to_owned()).or_insert_with(|| Head {
                        stream_id: stream.to_owned(),
                        version: 0,
                        hash: GENESIS_PREV_HASH.to_vec(),
                        halted: false,
                    });
                    let halts = !entry.halted;
                    entry.halted = true;
                    plan.refusals.push(Refusal {
                        event,
                        reason,
                        halts,
                    });
                }
                Verdict::Append => {
                    let mut row = sealed.row;
                    row.leaf_index = next;
                    let erasable = matches!(
                        visibility::rule(&event.event_type).class,
                        Class::Personal { erasable: true }
                    );
                    let gone = erasable
                        && (erased.contains(&event_target(&event_id))
                            || row.subject.as_ref().is_some_and(|s| erased.contains(s)));
                    if gone {
                        row.content = None;
                        row.erased_at_ms = Some(now);
                        plan.erased_in_batch += 1;
                    }
                    plan.leaves.push(row);
                    match heads.get_mut(stream) {
                        Some(head) => {
                            head.version = i64_of(event.version);
                            head.hash.clear();
                            head.hash.extend_from_slice(&event.hash);
                        }
                        None => {
                            heads.insert(
                                stream.to_owned(),
                                Head {
                                    stream_id: stream.to_owned(),
                                    version: i64_of(event.version),
                                    hash: event.hash.to_vec(),
                                    halted: false,
                                },
                            );
                        }
                    }
                    batch_ids.insert(
                        event.event_id,
                        (stream.to_owned(), event.version, event.hash),
                    );
                    match visibility::effect(event) {
                        Some(Effect::Finish(game)) => plan.finished.push((game, next)),
                        Some(Effect::EraseEvent(id)) => {
                            let target = event_target(&id);
                            plan.erased_in_batch += erase_in_batch(
                                &mut plan.leaves,
                                |row| row.event_id == id,
                                &self.erasable,
                                now,
                            );
                            erased.insert(target.clone());
                            plan.erasures.push((target, next));
                        }
                        Some(Effect::EraseSubject(person)) => {
                            plan.erased_in_batch += erase_in_batch(
                                &mut plan.leaves,
                                |row| row.subject.as_deref() == Some(person.as_str()),
                                &self.erasable,
                                now,
                            );
                            erased.insert(person.clone());
                            plan.erasures.push((person, next));
                        }
                        None => {}
                    }
                    next += 1;
                }
            }
        }
        plan.heads = heads;
        Ok(plan)
    }
}

/// Erases, in this batch's rows not yet written, the content of erasable events `reached`
/// selects; returns how many.
fn erase_in_batch(
    rows: &mut [LeafRow],
    reached: impl Fn(&LeafRow) -> bool,
    erasable: &[String],
    now: i64,
) -> u64 {
    let mut erased = 0;
    for row in rows.iter_mut() {
        if row.content.is_some() && reached(row) && erasable.contains(&row.event_type) {
            row.content = None;
            row.erased_at_ms = Some(now);
            erased += 1;
        }
    }
    erased
}

fairdeal_db::for_each_backend! { DB =>
    impl Handler<DB> for Ingest {
        async fn handle(
            &self,
            event: &RecordedEvent,
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            Handler::<DB>::handle_batch(self, &[event], tx).await
        }

        async fn handle_batch(
            &self,
            events: &[&RecordedEvent],
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            if events.is_empty() {
                return Ok(());
            }
            if <DB as Backend>::KIND == BackendKind::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(LEAF_LOCK)
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
            }
            let mut streams: Vec<String> =
                events.iter().map(|e| e.stream_id.as_str().to_owned()).collect();
            streams.sort_unstable();
            streams.dedup();
            let heads: HashMap<String, Head> = <DB as IngestSql>::heads(&mut **tx, &streams)
                .await
                .map_err(transient)?
                .into_iter()
                .map(|h| (h.stream_id.clone(), h))
                .collect();
            // An event whose id is already a leaf is a redelivery (or a reused id): only an
            // event at or below its stream's head can be one of its stream, so only those are
            // looked up (none, as a rule). Alone (the bus retrying one event, e.g. after a
            // batch failed on a reused id), an event is always looked up.
            let suspects: Vec<String> = events
                .iter()
                .filter(|e| {
                    events.len() == 1
                        || heads
                            .get(e.stream_id.as_str())
                            .is_some_and(|h| i64_of(e.version) <= h.version)
                })
                .map(|e| e.event_id.to_string())
                .collect();
            let same_ids = if suspects.is_empty() {
                HashMap::new()
            } else {
                <DB as IngestSql>::same_ids(&mut **tx, &suspects)
                    .await
                    .map_err(transient)?
                    .into_iter()
                    .map(|(id, stream, version, hash)| {
                        (id, (stream, u64_of(version), hash_of(&hash)))
                    })
                    .collect()
            };
            // Erasures matter only to erasable events: the line itself, or its person.
            let mut targets: Vec<String> = Vec::new();
            for event in events {
                if matches!(
                    visibility::rule(&event.event_type).class,
                    Class::Personal { erasable: true }
                ) {
                    targets.push(event_target(&event.event_id.to_string()));
                    targets.extend(visibility::subject(event));
                }
            }
            targets.sort_unstable();
            targets.dedup();
            let erased = if targets.is_empty() {
                HashSet::new()
            } else {
                <DB as IngestSql>::erased(&mut **tx, &targets)
                    .await
                    .map_err(transient)?
                    .into_iter()
                    .collect()
            };
            let next: i64 =
                sqlx::query_scalar("SELECT COALESCE(MAX(leaf_index) + 1, 0) FROM ledger_leaves")
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(transient)?;
            let plan = self.plan(events, next, same_ids, heads, erased)?;
            let now = now_ms();
            // Erasures reach the leaves archived by earlier batches (this batch's rows are
            // already written without their content).
            let mut erased_before = 0;
            for (target, _) in &plan.erasures {
                let reach = match target.strip_prefix("event:") {
                    Some(id) => Reach::Event(id),
                    None => Reach::Subject(target),
                };
                erased_before += <DB as IngestSql>::erase(&mut **tx, reach, &self.erasable, now)
                    .await
                    .map_err(transient)?;
            }
            if !plan.leaves.is_empty() {
                <DB as IngestSql>::insert_leaves(&mut **tx, &plan.leaves)
                    .await
                    .map_err(transient)?;
            }
            if !plan.erasures.is_empty() || plan.erased_in_batch > 0 {
                self.scrub.store(true, Ordering::Release);
            }
            let heads: Vec<Head> = plan.heads.into_values().collect();
            if !heads.is_empty() {
                <DB as IngestSql>::save_heads(&mut **tx, &heads)
                    .await
                    .map_err(transient)?;
            }
            for (subject, leaf) in &plan.finished {
                sqlx::query(
                    "INSERT INTO ledger_finished (subject, leaf_index) VALUES ($1, $2)                      ON CONFLICT (subject) DO NOTHING",
                )
                .bind(subject)
                .bind(leaf)
                .execute(&mut **tx)
                .await
                .map_err(transient)?;
            }
            for (target, leaf) in &plan.erasures {
                sqlx::query(
                    "INSERT INTO ledger_erasures (target, leaf_index) VALUES ($1, $2)                      ON CONFLICT (target) DO NOTHING",
                )
                .bind(target)
                .bind(leaf)
                .execute(&mut **tx)
                .await
                .map_err(transient)?;
            }
            for refusal in &plan.refusals {
                let event = refusal.event;
                tracing::error!(
                    alert = "ledger_stream_halted",
                    metric = "ledger_refused_events",
                    stream_id = %event.stream_id,
                    version = event.version,
                    event_id = %event.event_id,
                    reason = %refusal.reason,
                    "ledger refused an event: its stream's ingest is stopped"
                );
                sqlx::query(
                    "INSERT INTO ledger_refused (event_id, stream_id, stream_version, reason,                      envelope, refused_at_ms) VALUES ($1, $2, $3, $4, $5, $6)                      ON CONFLICT (event_id) DO NOTHING",
                )
                .bind(event.event_id.to_string())
                .bind(event.stream_id.as_str())
                .bind(i64_of(event.version))
                .bind(&refusal.reason)
                .bind(event.encode_envelope())
                .bind(now)
                .execute(&mut **tx)
                .await
                .map_err(transient)?;
            }
            // Counted when the batch is decided; a rolled-back batch is decided again, so
            // these counters (not the archive) may count an event twice after a failure.
            let appended = plan.leaves.len() as u64;
            let erased = erased_before + plan.erased_in_batch;
            self.counters.leaves.fetch_add(appended, Ordering::Relaxed);
            self.counters.duplicates.fetch_add(plan.duplicates, Ordering::Relaxed);
            self.counters.erased.fetch_add(erased, Ordering::Relaxed);
            self.metrics.leaves.add(appended, &[]);
            self.metrics.erased.add(erased, &[]);
            let refused = plan.refusals.len() as u64;
            self.counters.refused.fetch_add(refused, Ordering::Relaxed);
            self.metrics.refused.add(refused, &[]);
            let halted = plan.refusals.iter().filter(|r| r.halts).count() as u64;
            self.metrics.halted.add(halted, &[]);
            Ok(())
        }

        fn batches(&self) -> bool {
            true
        }

        fn batch_size(&self) -> Option<usize> {
            Some(INGEST_BATCH)
        }

        /// Seals the event's leaf (salts, commitments, the envelope's bytes) as it arrives,
        /// while earlier batches are written: a third of the work of a batch, off its path.
        fn prepare(&self, event: &RecordedEvent) {
            if let Ok(sealed) = seal(event) {
                self.prepared.lock().insert(event.event_id, sealed);
            }
        }

        /// A redelivered event finds its own leaf (`judge`: a duplicate), so the consumer
        /// need not record processed ids: one write per event fewer.
        fn deduplicates(&self) -> bool {
            true
        }

        fn committed(&self) {
            self.appended.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use fairdeal_eventstore::{GENESIS_PREV_HASH, NewEvent, StreamId};

    fn chain(n: u64) -> Vec<RecordedEvent> {
        let stream = StreamId::parse("table-1").unwrap();
        let mut prev = GENESIS_PREV_HASH;
        (1..=n)
            .map(|v| {
                let e =
                    fairdeal_event::seal(&stream, v, &prev, NewEvent::new("t.v1.X", vec![v as u8]))
                        .unwrap();
                prev = e.hash;
                e
            })
            .collect()
    }

    #[test]
    fn the_own_hash_from_the_body_is_the_hash_rule() {
        for event in chain(3) {
            let mut envelope = event.to_envelope();
            envelope.prev_hash = Vec::new();
            envelope.hash = Vec::new();
            let body = prost::Message::encode_to_vec(&envelope);
            assert!(own_hash_ok(&event, &body));
            assert_eq!(body, fairdeal_event::body_bytes(&event.to_envelope()));
            let mut forged = event.clone();
            forged.hash[0] ^= 1;
            assert!(!own_hash_ok(&forged, &body));
            let mut other = body.clone();
            *other.last_mut().unwrap() ^= 1;
            assert!(!own_hash_ok(&event, &other));
        }
    }

    #[test]
    fn links_append_and_gaps_forks_and_halts_refuse() {
        let events = chain(3);
        assert_eq!(
            judge(
                &events[0],
                None,
                false,
                None,
                events[0].verify_hash().is_ok()
            ),
            Verdict::Append
        );
        assert_eq!(
            judge(
                &events[1],
                Some((1, events[0].hash)),
                false,
                None,
                events[1].verify_hash().is_ok()
            ),
            Verdict::Append
        );
        // A gap: version 3 after version 1.
        assert!(
            matches!(judge(&events[2], Some((1, events[0].hash)), false, None, events[2].verify_hash().is_ok()), Verdict::Refuse(r) if r.contains("expected version 2"))
        );
        // A broken link: version 2 after another version 1.
        assert!(matches!(
            judge(&events[1], Some((1, [9; 32])), false, None, true),
            Verdict::Refuse(_)
        ));
        // A version the stream has already.
        assert!(matches!(
            judge(
                &events[1],
                Some((2, events[1].hash)),
                false,
                None,
                events[1].verify_hash().is_ok()
            ),
            Verdict::Refuse(_)
        ));
        // A halted stream refuses even a good link.
        assert!(matches!(
            judge(
                &events[1],
                Some((1, events[0].hash)),
                true,
                None,
                events[1].verify_hash().is_ok()
            ),
            Verdict::Refuse(_)
        ));
        // A redelivery is a duplicate; the same id with other content is refused.
        let same = Some(("table-1".to_owned(), 2, events[1].hash));
        assert_eq!(
            judge(
                &events[1],
                Some((2, events[1].hash)),
                false,
                same,
                events[1].verify_hash().is_ok()
            ),
            Verdict::Duplicate
        );
        let other = Some(("table-1".to_owned(), 2, [1; 32]));
        assert!(matches!(
            judge(
                &events[1],
                None,
                false,
                other,
                events[1].verify_hash().is_ok()
            ),
            Verdict::Refuse(_)
        ));
        // A wrong own hash, the link right.
        assert!(matches!(
            judge(&events[1], Some((1, events[0].hash)), false, None, false),
            Verdict::Refuse(r) if r.contains("its hash")
        ));
        // The first event of a stream must be version 1.
        assert!(matches!(
            judge(
                &events[1],
                None,
                false,
                None,
                events[1].verify_hash().is_ok()
            ),
            Verdict::Refuse(_)
        ));
    }
}
