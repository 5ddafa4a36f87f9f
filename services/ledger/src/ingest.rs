//! Ingest: the durable consumers' handler. Each event becomes the next leaf of the archive in
//! the bus's own transaction (the leaf, the consumer's processed id and its position commit
//! together, so a kill -9 at any point loses and duplicates nothing), after its stream's hash
//! chain is checked against the last leaf of the same stream.
//!
//! Leaf indexes are dense and in commit order: every ingest transaction takes one lock
//! before it reads the next index (PostgreSQL: a transaction-scoped advisory lock; SQLite:
//! the bus's write transactions are `BEGIN IMMEDIATE`, one writer at a time), so a committed
//! leaf `i` means leaves `0..i` are committed too, and the tree follower
//! ([`crate::log`]) can read them in order.
//!
//! A gap, a broken link, a wrong version or a different event at an ingested position stops
//! the stream: the event is recorded in `ledger_refused` (never in the tree) with an
//! `ERROR` line carrying `alert = "ledger_stream_halted"`, counted by the metrics
//! `fairdeal.ledger.refused` and (the first refusal of a stream) `fairdeal.ledger.halted`,
//! and every later event of that stream is refused too, until an operator repairs it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use fairdeal_bus::{Handler, HandlerError};
use fairdeal_db::{Backend, BackendKind};
use fairdeal_eventstore::{ChainVerifier, Hash, RecordedEvent};
use fairdeal_kit::metrics::Counter;
use sqlx::Transaction;
use tokio::sync::Notify;

/// The consumers' durable name prefix (`ledger-<source service>`).
pub const CONSUMER: &str = "ledger";

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
        }
    }
}

/// The handler every ledger consumer runs.
#[derive(Debug, Clone)]
pub struct Ingest {
    /// Woken after a leaf is written (the tree follower reads once the batch commits).
    appended: Arc<Notify>,
    /// Counters.
    counters: Arc<IngestCounters>,
    /// The exported metrics.
    metrics: Metrics,
}

impl Ingest {
    /// A handler waking `appended` after each new leaf. Its metrics are bound to the meter
    /// provider installed when it is created.
    pub fn new(appended: Arc<Notify>, counters: Arc<IngestCounters>) -> Self {
        Self {
            appended,
            counters,
            metrics: Metrics::new(),
        }
    }
}

/// What the archive says about an incoming event.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The next link of its stream: append it as leaf `index`.
    Append,
    /// Already a leaf (a redelivery): nothing to do.
    Duplicate,
    /// Refused, with the reason; the stream halts.
    Refuse(String),
}

/// The decision for `event`, given the stream's last ingested leaf (`None`: none yet),
/// whether the stream is halted, and the leaf already holding this event id, if any.
pub fn judge(
    event: &RecordedEvent,
    head: Option<(u64, Hash)>,
    halted: bool,
    same_id: Option<(String, u64, Hash)>,
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
    let mut chain = match head {
        None => ChainVerifier::new(event.stream_id.clone()),
        Some((version, hash)) => ChainVerifier::resume(event.stream_id.clone(), version, hash),
    };
    match chain.check(event) {
        Ok(()) => Verdict::Append,
        Err(e) => Verdict::Refuse(e.to_string()),
    }
}

fn transient(error: sqlx::Error) -> HandlerError {
    HandlerError::Transient(error.into())
}

fn i64_of(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn hash_of(bytes: &[u8]) -> Hash {
    Hash::try_from(bytes).unwrap_or([0; 32])
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fairdeal_db::for_each_backend! { DB =>
    impl Handler<DB> for Ingest {
        async fn handle(
            &self,
            event: &RecordedEvent,
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            if <DB as Backend>::KIND == BackendKind::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(LEAF_LOCK)
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
            }
            let event_id = event.event_id.to_string();
            let same_id: Option<(String, i64, Vec<u8>)> = sqlx::query_as(
                "SELECT stream_id, stream_version, hash FROM ledger_leaves WHERE event_id = $1",
            )
            .bind(&event_id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(transient)?;
            let halted: Option<i64> =
                sqlx::query_scalar("SELECT 1 FROM ledger_refused WHERE stream_id = $1 LIMIT 1")
                    .bind(event.stream_id.as_str())
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(transient)?;
            let head: Option<(i64, Vec<u8>)> = sqlx::query_as(
                "SELECT stream_version, hash FROM ledger_leaves WHERE stream_id = $1 \
                 ORDER BY stream_version DESC LIMIT 1",
            )
            .bind(event.stream_id.as_str())
            .fetch_optional(&mut **tx)
            .await
            .map_err(transient)?;
            let verdict = judge(
                event,
                head.map(|(v, h)| (u64::try_from(v).unwrap_or(0), hash_of(&h))),
                halted.is_some(),
                same_id.map(|(s, v, h)| (s, u64::try_from(v).unwrap_or(0), hash_of(&h))),
            );
            match verdict {
                Verdict::Duplicate => {
                    self.counters.duplicates.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Verdict::Refuse(reason) => {
                    tracing::error!(
                        alert = "ledger_stream_halted",
                        metric = "ledger_refused_events",
                        stream_id = %event.stream_id,
                        version = event.version,
                        event_id = %event.event_id,
                        %reason,
                        "ledger refused an event: its stream's ingest is stopped"
                    );
                    sqlx::query(
                        "INSERT INTO ledger_refused (event_id, stream_id, stream_version, reason, \
                         envelope, refused_at_ms) VALUES ($1, $2, $3, $4, $5, $6) \
                         ON CONFLICT (event_id) DO NOTHING",
                    )
                    .bind(&event_id)
                    .bind(event.stream_id.as_str())
                    .bind(i64_of(event.version))
                    .bind(&reason)
                    .bind(event.encode_envelope())
                    .bind(now_ms())
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
                    self.counters.refused.fetch_add(1, Ordering::Relaxed);
                    self.metrics.refused.add(1, &[]);
                    if halted.is_none() {
                        self.metrics.halted.add(1, &[]);
                    }
                    Ok(())
                }
                Verdict::Append => {
                    let next: i64 = sqlx::query_scalar(
                        "SELECT COALESCE(MAX(leaf_index) + 1, 0) FROM ledger_leaves",
                    )
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(transient)?;
                    sqlx::query(
                        "INSERT INTO ledger_leaves (leaf_index, event_id, stream_id, \
                         stream_version, event_type, correlation_id, hash, envelope) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(next)
                    .bind(&event_id)
                    .bind(event.stream_id.as_str())
                    .bind(i64_of(event.version))
                    .bind(&event.event_type)
                    .bind(&event.correlation_id)
                    .bind(event.hash.to_vec())
                    .bind(event.encode_envelope())
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
                    self.counters.leaves.fetch_add(1, Ordering::Relaxed);
                    self.metrics.leaves.add(1, &[]);
                    self.appended.notify_one();
                    Ok(())
                }
            }
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
    fn links_append_and_gaps_forks_and_halts_refuse() {
        let events = chain(3);
        assert_eq!(judge(&events[0], None, false, None), Verdict::Append);
        assert_eq!(
            judge(&events[1], Some((1, events[0].hash)), false, None),
            Verdict::Append
        );
        // A gap: version 3 after version 1.
        assert!(
            matches!(judge(&events[2], Some((1, events[0].hash)), false, None), Verdict::Refuse(r) if r.contains("expected version 2"))
        );
        // A broken link: version 2 after another version 1.
        assert!(matches!(
            judge(&events[1], Some((1, [9; 32])), false, None),
            Verdict::Refuse(_)
        ));
        // A version the stream has already.
        assert!(matches!(
            judge(&events[1], Some((2, events[1].hash)), false, None),
            Verdict::Refuse(_)
        ));
        // A halted stream refuses even a good link.
        assert!(matches!(
            judge(&events[1], Some((1, events[0].hash)), true, None),
            Verdict::Refuse(_)
        ));
        // A redelivery is a duplicate; the same id with other content is refused.
        let same = Some(("table-1".to_owned(), 2, events[1].hash));
        assert_eq!(
            judge(&events[1], Some((2, events[1].hash)), false, same),
            Verdict::Duplicate
        );
        let other = Some(("table-1".to_owned(), 2, [1; 32]));
        assert!(matches!(
            judge(&events[1], None, false, other),
            Verdict::Refuse(_)
        ));
        // The first event of a stream must be version 1.
        assert!(matches!(
            judge(&events[1], None, false, None),
            Verdict::Refuse(_)
        ));
    }
}
