//! The PostgreSQL backend: the store of record.
//!
//! One `events` table per service schema (`PgEventStore::new(pool, "auth")` uses
//! `"auth".events`), created by the store's own migrations (tracked in
//! `<schema>._fairdeal_eventstore_migrations`, so other migrators in the same database never
//! clash with it). The database itself enforces the log's rules: unique `(stream_id, version)`,
//! unique `event_id`, and triggers rejecting `UPDATE`, `DELETE` and `TRUNCATE`.
//!
//! # Gap-safe global positions
//!
//! A bigserial position is allocated before commit, so positions become visible out of order
//! and a reader that has returned position 7 may later see 6 commit: a tailing consumer would
//! skip it. Here a row's position is `(xid << 20) + i`, where `xid` is the inserting
//! transaction's 64-bit id (`pg_current_xact_id()`, the column's default, and tied to the
//! position by a CHECK constraint) and `i` its index among that transaction's events. Readers
//! return only positions below `pg_snapshot_xmin(pg_current_snapshot()) << 20`:
//!
//! - every transaction with an xid below the snapshot's xmin has committed or aborted, so
//!   those rows are final and visible;
//! - every transaction still open, or not yet started, has an xid >= xmin, so all of its rows,
//!   whenever they commit, have positions >= `xmin << 20`, above everything returned so far.
//!
//! Hence positions come out strictly increasing and no committed event is ever skipped. Gaps
//! are normal (positions are sparse). The price: an open writing transaction anywhere in the
//! cluster (xids are cluster-wide) holds back `read_all` until it ends, so keep transactions
//! short; a slow transaction delays consumers, it never loses events. 20 bits allow 1,048,576
//! events per transaction; 43 bits of xid last for 8.8e12 transactions.
//!
//! After a logical dump/restore into a new cluster the xid counter starts below the stored
//! positions; `append` detects it and refuses (`StoreError::InvalidArgument`) instead of
//! writing positions that sort before existing events. Use `pg_upgrade` (which keeps the
//! counter) or advance the counter (`pg_resetwal -x`) above the largest stored `tx_id`.

use crate::batch::{
    AppendRequest, BatchWriter, GroupCommit, Head, HeadCache, Plan, Sealed, all_failed, appended,
    breaks_connection, plan, seal_rows,
};
use crate::codec::{
    Row, check_distinct_ids, limit_i64, stored_u64, to_i64, trace_context_json, verify_stream_rows,
};
use crate::error::StoreError;
use crate::fence::Fence;
use crate::store::{Appended, EventStore};
use crate::version::ExpectedVersion;
use async_trait::async_trait;
use fairdeal_db::{Db, Schema};
use fairdeal_event::{NewEvent, RecordedEvent, StreamId};
use sqlx::postgres::{PgPool, PgRow};
use sqlx::{
    AssertSqlSafe, Connection, PgConnection, Postgres, Row as _, SqlSafeStr, SqlStr, Transaction,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use uuid::Uuid;

/// Bits of a position below the transaction id.
const TX_SHIFT: u32 = 20;
/// Events one transaction can append.
const MAX_EVENTS_PER_TX: i64 = 1 << TX_SHIFT;
/// Largest xid whose positions fit a signed 64-bit column.
const MAX_XID: i64 = (1 << (63 - TX_SHIFT)) - 1;
// The largest position, (MAX_XID << 20) + MAX_EVENTS_PER_TX - 1, is exactly i64::MAX.
const _: () = assert!((MAX_XID << TX_SHIFT) + (MAX_EVENTS_PER_TX - 1) == i64::MAX);
/// Attempts of an `ExpectedVersion::Any` append that loses a race to another writer.
const ANY_ATTEMPTS: usize = 16;
/// Group commit writer tasks per store: each commits one batch at a time, so this many
/// batches are in flight (and as many pool connections busy writing) at most.
const GROUP_COMMIT_WRITERS: usize = 2;
/// Connections of a store's readers' pool (`read_all`: the relay's and in-process
/// consumers' tailing reads; `read_stream`: live watchers and cached aggregates catching up
/// with another process's commits), opened on first use.
const READERS: u32 = 8;

/// Event store on PostgreSQL. Cheap to clone (the pool, the prepared SQL and the group
/// commit writers are shared).
#[derive(Debug, Clone)]
pub struct PgEventStore {
    /// Everything a writer task needs (it holds a clone, never the store itself, so the
    /// writers end when the last store handle is dropped).
    core: PgCore,
    /// The group commit writers `append` queues on.
    group: Arc<GroupCommit>,
}

/// The pool, schema and SQL of a store.
#[derive(Debug, Clone)]
struct PgCore {
    /// Connections, from [`fairdeal_db::postgres_pool_options`] (see [`PgEventStore::new`]).
    pool: PgPool,
    /// Connections for `read_all` and `read_stream` only, at most [`READERS`], with
    /// `pool`'s settings (server, database, `search_path`). Nothing but one autocommit
    /// `SELECT` at a time ever runs on them, so no connection can come back inside a
    /// transaction and they skip the shared pool's stale-transaction check (a round trip on
    /// every release: on the tables load bench 40 % of PostgreSQL's statements, most of them
    /// after the relay's and the projection's reads of each new batch, and with two replicas
    /// half of them after the watchers' reads of the other replica's moves).
    reads: PgPool,
    /// The schema holding `events`.
    schema: Schema,
    /// SQL with the schema name spliced in once, at construction.
    sql: Arc<PgSql>,
}

/// The statements, qualified with the store's schema.
#[derive(Debug)]
struct PgSql {
    head: SqlStr,
    head_in_tx: SqlStr,
    stream_version: SqlStr,
    existing_ids: SqlStr,
    read_stream: SqlStr,
    read_all: SqlStr,
    head_position: SqlStr,
    committed_position: SqlStr,
    batch_heads: SqlStr,
    insert: SqlStr,
    /// `insert` behind fences (see [`crate::fence`]): written only if every fence bound
    /// ($13 partitions, $14 owners, $15 epochs) holds; otherwise nothing, and no position.
    insert_fenced: SqlStr,
}

impl PgSql {
    fn new(schema: &str) -> Self {
        let t = format!("\"{schema}\".events");
        let safe = |s: String| AssertSqlSafe(s).into_sql_str();
        // Every appending statement ends the same way: the first position it wrote, and the
        // streams it appended to with their new last versions, announced on
        // `NOTIFY_CHANNEL` at commit (never for a rollback; see `fairdeal_bus::signal`):
        // payload `<schema> <stream> <version> [<stream> <version>]...`, at most
        // `NOTIFY_STREAMS` streams a notification (stream ids are at most 128 bytes, so a
        // payload stays below PostgreSQL's 8,000). Sent by the statement rather than a
        // trigger (a trigger's transition table and PL/pgSQL calls cost a fifth of the
        // server's time per event), one notification per batch rather than per stream.
        let notify = format!(
            ", heads AS ( \
                 SELECT stream_id, max(version) AS version, \
                        (row_number() OVER (ORDER BY stream_id) - 1) / {NOTIFY_STREAMS} AS part \
                 FROM inserted GROUP BY stream_id), \
             notified AS ( \
                 SELECT pg_notify('{NOTIFY_CHANNEL}', '{schema}' || \
                        string_agg(' ' || stream_id || ' ' || version, '' ORDER BY stream_id)) \
                 FROM heads GROUP BY part) \
             SELECT (SELECT min(position) FROM inserted), (SELECT count(*) FROM notified)"
        );
        Self {
            // For a standalone append (autocommit, no xid yet): the stream head, the largest
            // stored position and the snapshot's xmax (for the restore guard).
            head: safe(format!(
                "SELECT head.version, head.hash, top.max_position, \
                        pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax \
                 FROM (SELECT 1) AS one \
                 LEFT JOIN LATERAL (SELECT version, hash FROM {t} WHERE stream_id = $1 \
                     ORDER BY version DESC LIMIT 1) AS head ON true \
                 LEFT JOIN LATERAL (SELECT max(position) AS max_position FROM {t}) AS top ON true"
            )),
            // Inside a caller's transaction, also: its xid (assigning one) and the last
            // position it already wrote (several appends in one transaction).
            head_in_tx: safe(format!(
                "SELECT x.xid, own.last_position, head.version, head.hash, top.max_position, \
                        pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax \
                 FROM (SELECT pg_current_xact_id()::text::bigint AS xid) AS x \
                 LEFT JOIN LATERAL (SELECT max(position) AS last_position FROM {t} \
                     WHERE position >= (x.xid << {TX_SHIFT}) \
                       AND position < ((x.xid + 1) << {TX_SHIFT})) AS own ON true \
                 LEFT JOIN LATERAL (SELECT version, hash FROM {t} WHERE stream_id = $1 \
                     ORDER BY version DESC LIMIT 1) AS head ON true \
                 LEFT JOIN LATERAL (SELECT max(position) AS max_position FROM {t}) AS top ON true"
            )),
            // A group commit's reads, one round trip (autocommit): the head of each stream
            // ($1), which of the batch's event ids ($2) are stored, and as `head` above the
            // restore guard's figures, repeated on each row.
            batch_heads: safe(format!(
                "SELECT s.stream_id, head.version, head.hash, g.max_position, g.xmax, \
                        g.stored_ids \
                 FROM (SELECT (SELECT max(position) FROM {t}) AS max_position, \
                         pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax, \
                         ARRAY(SELECT event_id FROM {t} WHERE event_id = ANY($2::uuid[])) \
                             AS stored_ids) AS g \
                 CROSS JOIN UNNEST($1::text[]) AS s(stream_id) \
                 LEFT JOIN LATERAL (SELECT version, hash FROM {t} \
                     WHERE stream_id = s.stream_id ORDER BY version DESC LIMIT 1) AS head ON true"
            )),
            // Every append of a batch (or the one append alone, or inside a caller's
            // transaction) in one statement: one round trip whatever its size, and in
            // autocommit one transaction. Positions are computed here from the inserting
            // transaction's xid, in row order from $12 (the index of the first event within
            // the transaction: 0, unless it already appended); the statement returns the
            // first one.
            insert: safe(insert_sql(&t, &notify, None)),
            // The same behind fences: the lease rows of the batch's distinct fences, each at
            // its owner and epoch and unexpired by the clock at the check, locked for share
            // until the commit (a takeover's UPDATE waits for it); the rows are inserted
            // only if every fence is found.
            insert_fenced: safe(insert_sql(
                &t,
                &notify,
                Some(&format!(
                    "fence AS ( \
                     SELECT l.partition FROM \"{schema}\".partition_leases AS l \
                     JOIN UNNEST($13::int[], $14::text[], $15::bigint[]) \
                         AS f(partition, owner, epoch) \
                       ON l.partition = f.partition AND l.owner = f.owner \
                          AND l.epoch = f.epoch \
                     WHERE l.expires_at > clock_timestamp() \
                     FOR SHARE OF l), "
                )),
            )),
            stream_version: safe(format!(
                "SELECT coalesce(max(version), 0) FROM {t} WHERE stream_id = $1"
            )),
            existing_ids: safe(format!(
                "SELECT event_id FROM {t} WHERE event_id = ANY($1) LIMIT 1"
            )),
            read_stream: safe(format!(
                "SELECT {COLUMNS_PG} FROM {t} WHERE stream_id = $1 AND version >= $2 \
                 ORDER BY version LIMIT $3"
            )),
            read_all: safe(format!(
                "SELECT {COLUMNS_PG} FROM {t} WHERE position >= $1 \
                   AND position < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint \
                                   << {TX_SHIFT}) \
                 ORDER BY position LIMIT $2"
            )),
            committed_position: safe(format!("SELECT coalesce(max(position), 0) FROM {t}")),
            head_position: safe(format!(
                "SELECT coalesce(max(position), 0) FROM {t} \
                 WHERE position < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint \
                                   << {TX_SHIFT})"
            )),
        }
    }
}

/// The fences of the appends `plan` writes (`requests` are its requests, in order).
fn fences_of<'a>(plan: &Plan, requests: &'a [AppendRequest]) -> Vec<&'a Fence> {
    plan.spans
        .iter()
        .filter_map(|(index, _)| requests.get(*index).and_then(|r| r.fence.as_ref()))
        .collect()
}

/// The appending statement into `t` (see `PgSql::new`), ending with `notify`; behind
/// `fence`, a `WITH` query named `fence` whose rows must number the bound fences ($13), when
/// given.
fn insert_sql(t: &str, notify: &str, fence: Option<&str>) -> String {
    let (fence, fenced) = match fence {
        Some(fence) => (
            fence,
            "WHERE (SELECT count(*) FROM fence) = cardinality($13::int[]) ",
        ),
        None => ("", ""),
    };
    format!(
        "WITH {fence}inserted AS ( \
         INSERT INTO {t} (position, event_id, stream_id, version, event_type, \
             occurred_at_us, correlation_id, causation_id, trace_context, payload, \
             prev_hash, hash) \
         SELECT (pg_current_xact_id()::text::bigint << {TX_SHIFT}) + $12 + u.ord - 1, \
             u.event_id, u.stream_id, u.version, u.event_type, u.occurred_at_us, \
             u.correlation_id, u.causation_id, u.trace_context::jsonb, u.payload, \
             u.prev_hash, u.hash \
         FROM UNNEST($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], \
             $6::text[], $7::text[], $8::text[], $9::bytea[], $10::bytea[], \
             $11::bytea[]) WITH ORDINALITY AS u(event_id, stream_id, version, \
             event_type, occurred_at_us, correlation_id, causation_id, trace_context, \
             payload, prev_hash, hash, ord) \
         {fenced}RETURNING position, stream_id, version){notify}"
    )
}

/// The channel appends are announced on (see `PgSql::new`).
pub const NOTIFY_CHANNEL: &str = "fairdeal_events";
/// Streams one notification names at most: 48 x (128 bytes of stream id + a version) stays
/// below PostgreSQL's 8,000-byte payload limit.
const NOTIFY_STREAMS: usize = 48;

/// The columns of `crate::codec::Row`, with `trace_context` read back as text.
const COLUMNS_PG: &str = "position, event_id, stream_id, version, event_type, occurred_at_us, \
     correlation_id, causation_id, trace_context::text AS trace_context, payload, prev_hash, hash";

impl PgEventStore {
    /// A store over `pool` for the `events` table in `schema` (a lowercase SQL identifier:
    /// `[a-z_][a-z0-9_]*`, at most 63 bytes). Does not touch the database; call
    /// [`Self::migrate`] once at start.
    ///
    /// Build `pool` with [`fairdeal_db::postgres_pool_options`]: standalone appends
    /// autocommit, and its release guard is what keeps a connection left inside a
    /// transaction (sqlx 0.9, a future cancelled in `begin()`) from being handed to one,
    /// where the append would answer success and never commit.
    pub fn new(pool: PgPool, schema: &str) -> Result<Self, StoreError> {
        let schema = validate_schema(schema)?;
        let reads = fairdeal_db::postgres_reader_pool_options()
            .max_connections(READERS)
            .acquire_timeout(pool.options().get_acquire_timeout())
            .connect_lazy_with((*pool.connect_options()).clone());
        Ok(Self {
            core: PgCore {
                pool,
                reads,
                sql: Arc::new(PgSql::new(schema.as_str())),
                schema,
            },
            group: Arc::new(GroupCommit::new(GROUP_COMMIT_WRITERS)),
        })
    }

    /// The same store with a readers' pool of at most `readers` connections (default
    /// [`READERS`], at least 1). Call before the first read.
    #[must_use]
    pub fn with_readers(mut self, readers: u32) -> Self {
        self.core.reads = fairdeal_db::postgres_reader_pool_options()
            .max_connections(readers.max(1))
            .acquire_timeout(self.core.pool.options().get_acquire_timeout())
            .connect_lazy_with((*self.core.pool.connect_options()).clone());
        self
    }

    /// The same store with `writers` group commit writer tasks (default 2, at least 1): at
    /// most this many batches are written at once, each on its own pool connection. Appends
    /// are routed to a writer by stream. Call before the first append.
    #[must_use]
    pub fn with_group_commit_writers(mut self, writers: usize) -> Self {
        self.group = Arc::new(GroupCommit::new(writers));
        self
    }

    /// Creates the schema if needed and applies the store's pending migrations. Idempotent
    /// and safe to run from several processes at once (sqlx takes an advisory lock).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let db = Db::Postgres {
            pool: self.core.pool.clone(),
            schema: self.core.schema.clone(),
        };
        db.migrate(&crate::MIGRATIONS).await?;
        Ok(())
    }

    /// The connection pool (shared with the service for its own tables).
    pub fn pool(&self) -> &PgPool {
        &self.core.pool
    }

    /// The schema holding the `events` table.
    pub fn schema(&self) -> &str {
        self.core.schema.as_str()
    }

    /// Begins a transaction on the store's pool, for [`Self::append_in_tx`].
    pub async fn begin(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        Ok(self.core.pool.begin().await?)
    }

    /// Writes `requests` as one group commit, now, on the calling task: one transaction for
    /// all of them, each request getting its own result in order (a conflict, duplicate id
    /// or invalid event fails that request alone; two requests for one stream chain, the
    /// second seeing the first). `append` gathers concurrent callers into such batches by
    /// itself; this is for callers that already hold many appends. `ExpectedVersion::Any` is
    /// not retried here: a race lost to another process is a `Conflict`.
    pub async fn append_batch(
        &self,
        requests: Vec<AppendRequest>,
    ) -> Vec<Result<Appended, StoreError>> {
        if requests.is_empty() {
            return Vec::new();
        }
        let mut conn = match self.core.pool.acquire().await {
            Ok(conn) => conn,
            Err(e) => return all_failed(requests.len(), e.into()),
        };
        // A pooled connection: its release guard sees to its state, and nothing is cached.
        self.core
            .write_batch_on(&mut conn, requests, &mut HeadCache::default(), &mut false)
            .await
            .results
    }

    /// Appends inside the caller's transaction, so events and the service's own table
    /// changes commit (or roll back) together. Nothing is visible to readers before the
    /// caller commits.
    ///
    /// The work runs in a savepoint: on any error (including a version conflict lost to a
    /// concurrent writer) the transaction is left as it was and stays usable. Several appends
    /// in one transaction are fine (up to 1,048,576 events in total). `ExpectedVersion::Any`
    /// is not retried here: a lost race is a `Conflict`, and the caller retries the whole
    /// transaction.
    pub async fn append_in_tx(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        let mut savepoint = (**tx).begin().await?;
        match self
            .core
            .append_on(&mut savepoint, stream_id, expected, events, true, None)
            .await
        {
            Ok(appended) => {
                savepoint.commit().await?;
                Ok(appended)
            }
            Err(Failure::Store(e)) => {
                savepoint.rollback().await?;
                Err(e)
            }
            Err(Failure::Unique { constraint, ids }) => {
                savepoint.rollback().await?;
                Err(self
                    .core
                    .explain_unique(tx, &constraint, stream_id, expected, &ids)
                    .await)
            }
        }
    }
}

impl PgCore {
    /// The append itself. `in_tx`: the connection is inside a transaction or savepoint
    /// (which may already hold events of this transaction); otherwise every statement
    /// autocommits and the INSERT alone is the append's transaction (two round trips in all).
    async fn append_on(
        &self,
        conn: &mut PgConnection,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        in_tx: bool,
        fence: Option<&Fence>,
    ) -> Result<Appended, Failure> {
        check_distinct_ids(&events)?;
        let sql = if in_tx {
            &self.sql.head_in_tx
        } else {
            &self.sql.head
        };
        let head = sqlx::query(sql.clone())
            .bind(stream_id.as_str())
            .fetch_one(&mut *conn)
            .await
            .map_err(StoreError::from)?;
        let current: Option<i64> = head.try_get("version").map_err(StoreError::from)?;
        let current_hash: Option<Vec<u8>> = head.try_get("hash").map_err(StoreError::from)?;
        let max_position: Option<i64> = head.try_get("max_position").map_err(StoreError::from)?;
        let xmax: i64 = head.try_get("xmax").map_err(StoreError::from)?;
        // This transaction's xid and the last position it wrote, when it may have one.
        let (xid, own_last): (Option<i64>, Option<i64>) = if in_tx {
            (
                Some(head.try_get("xid").map_err(StoreError::from)?),
                head.try_get("last_position").map_err(StoreError::from)?,
            )
        } else {
            (None, None)
        };

        if let Some(xid) = xid
            && !(0..=MAX_XID).contains(&xid)
        {
            return Err(StoreError::InvalidArgument(format!(
                "transaction id {xid} exceeds the position range (2^43)"
            ))
            .into());
        }
        if let Some(max) = max_position {
            let owner = max >> TX_SHIFT;
            if Some(owner) != xid && owner >= xmax {
                return Err(StoreError::InvalidArgument(format!(
                    "stored position {max} belongs to transaction {owner}, which this cluster \
                     has not reached (next xid {xmax}): the database was restored into a new \
                     cluster; advance the xid counter before appending"
                ))
                .into());
            }
        }

        let current = match current {
            Some(version) => stored_u64(version, "events.version")?,
            None => 0,
        };
        if !expected.matches(current) {
            return Err(StoreError::Conflict {
                stream_id: stream_id.clone(),
                expected,
                actual: current,
            }
            .into());
        }
        if events.is_empty() {
            return Ok(Appended {
                version: current,
                events: Vec::new(),
            });
        }

        let first_index = match (xid, own_last) {
            (Some(xid), Some(last)) => last - (xid << TX_SHIFT) + 1,
            _ => 0,
        };
        let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
        if first_index.saturating_add(count) > MAX_EVENTS_PER_TX {
            return Err(StoreError::InvalidArgument(format!(
                "more than {MAX_EVENTS_PER_TX} events in one transaction"
            ))
            .into());
        }

        let sealed = seal_rows(stream_id, current, current_hash.as_deref(), events)?;
        match self
            .insert_rows(conn, first_index, &sealed, fence.as_slice())
            .await
        {
            // Rows got first, first + 1, ... in order (UNNEST WITH ORDINALITY).
            Ok(Inserted::At(first)) => Ok(appended(sealed, first, current)),
            Ok(Inserted::Fenced) => Err(StoreError::Fenced {
                stream_id: stream_id.clone(),
                partition: fence.map_or(0, |f| f.partition),
            }
            .into()),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Err(Failure::Unique {
                constraint: db.constraint().unwrap_or_default().to_owned(),
                ids: sealed.iter().map(|row| row.event.event_id).collect(),
            }),
            Err(e) => Err(StoreError::from(e).into()),
        }
    }

    /// Turns a unique violation (a race lost to another writer) into the typed error, reading
    /// the state that won.
    async fn explain_unique(
        &self,
        conn: &mut PgConnection,
        constraint: &str,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        ids: &[Uuid],
    ) -> StoreError {
        if constraint == "events_event_id_key" {
            let existing: Result<Option<Uuid>, _> =
                sqlx::query_scalar(self.sql.existing_ids.clone())
                    .bind(ids.to_vec())
                    .fetch_optional(&mut *conn)
                    .await;
            return match existing {
                Ok(Some(event_id)) => StoreError::DuplicateEventId { event_id },
                Ok(None) => StoreError::InvalidArgument(
                    "an event id was stored concurrently and then rolled back; retry".into(),
                ),
                Err(e) => e.into(),
            };
        }
        match self.stream_version_on(conn, stream_id).await {
            Ok(actual) => StoreError::Conflict {
                stream_id: stream_id.clone(),
                expected,
                actual,
            },
            Err(e) => e,
        }
    }

    async fn stream_version_on(
        &self,
        conn: &mut PgConnection,
        stream_id: &StreamId,
    ) -> Result<u64, StoreError> {
        let version: i64 = sqlx::query_scalar(self.sql.stream_version.clone())
            .bind(stream_id.as_str())
            .fetch_one(conn)
            .await?;
        stored_u64(version, "events.version")
    }

    /// One append alone on `conn` (autocommit): the head read, then the INSERT, which is the
    /// append's whole transaction. A writer that got in between makes the INSERT hit the
    /// unique `(stream_id, version)` index: a conflict, and nothing written.
    async fn append_alone(
        &self,
        conn: &mut PgConnection,
        request: AppendRequest,
    ) -> Result<Appended, StoreError> {
        let AppendRequest {
            stream_id,
            expected,
            events,
            fence,
        } = request;
        match self
            .append_on(conn, &stream_id, expected, events, false, fence.as_ref())
            .await
        {
            Ok(appended) => Ok(appended),
            Err(Failure::Store(e)) => Err(e),
            Err(Failure::Unique { constraint, ids }) => Err(self
                .explain_unique(conn, &constraint, &stream_id, expected, &ids)
                .await),
        }
    }

    /// Writes a batch on `conn`, in autocommit: one INSERT statement holds every accepted
    /// append, so it is one transaction (all of the batch's rows or none) and one commit.
    ///
    /// - Streams whose heads `cache` holds are not read first (see `HeadCache`): a batch to
    ///   streams this writer wrote before is one round trip. Once a connection has been
    ///   through a full read (`guarded`: the restore guard of `read_heads` passed on it),
    ///   only the uncached streams are read, and stored event ids are left to the unique
    ///   index.
    /// - When the server refuses the INSERT (a stale head, an event id already stored, a
    ///   write by another process since the read), nothing of the batch was stored: its
    ///   heads are forgotten and the batch is decided again from a full read of heads and
    ///   stored ids. Refused again, each append is written on its own, which gives each its
    ///   own result (a conflict for the one that lost, success for the others).
    /// - When the connection fails, whether the batch committed is unknown, as for any write
    ///   whose answer is lost: every caller hears of it, and `Written::broken` says to drop
    ///   the connection.
    async fn write_batch_on(
        &self,
        conn: &mut PgConnection,
        mut requests: Vec<AppendRequest>,
        cache: &mut HeadCache,
        guarded: &mut bool,
    ) -> Written {
        let n = requests.len();
        if *guarded {
            let (mut heads, to_read) = cache.lookup(&requests);
            if n == 1
                && to_read.len() == 1
                && let Some(request) = requests.pop()
            {
                // Alone and not cached: the single-append statements, as lean as they come.
                let result = self.append_alone(conn, request).await;
                if let Ok(appended) = &result {
                    cache.remember_appended(appended);
                }
                return Written::from_one(result);
            }
            if !to_read.is_empty() {
                match self.read_heads(conn, to_read, Vec::new()).await {
                    Ok((read, _)) => heads.extend(read),
                    Err(e) => return Written::failed(n, e),
                }
            }
            let retry = requests.clone();
            let plan = plan(requests, heads, &HashSet::new());
            if plan.is_empty() {
                return Written::ok(plan.finish(0));
            }
            match self
                .insert_rows(conn, 0, &plan.rows, &fences_of(&plan, &retry))
                .await
            {
                Ok(Inserted::At(first)) => {
                    cache.remember(&plan);
                    return Written::ok(plan.finish(first));
                }
                Ok(Inserted::Fenced) => {
                    cache.forget(&retry);
                    return self.one_by_one(conn, retry).await;
                }
                Err(sqlx::Error::Database(db)) => {
                    tracing::debug!(error = %db, appends = n, "group commit refused; reading the heads again");
                    cache.forget(&retry);
                    requests = retry;
                }
                Err(e) => {
                    cache.forget(&retry);
                    return Written::failed(n, e.into());
                }
            }
        }
        let (heads, stored) = match self.read_batch_heads(conn, &requests).await {
            Ok(read) => read,
            Err(e) => return Written::failed(n, e),
        };
        *guarded = true;
        let retry = requests.clone();
        let plan = plan(requests, heads, &stored);
        if plan.is_empty() {
            return Written::ok(plan.finish(0));
        }
        match self
            .insert_rows(conn, 0, &plan.rows, &fences_of(&plan, &retry))
            .await
        {
            Ok(Inserted::At(first)) => {
                cache.remember(&plan);
                Written::ok(plan.finish(first))
            }
            // A fence did not hold (nothing of the batch is stored), or the server refused
            // the statement (it rolled back). Each append on its own gets its own answer.
            Ok(Inserted::Fenced) => {
                cache.forget(&retry);
                self.one_by_one(conn, retry).await
            }
            Err(sqlx::Error::Database(db)) => {
                tracing::debug!(error = %db, appends = n, "group commit refused; appending one by one");
                cache.forget(&retry);
                self.one_by_one(conn, retry).await
            }
            Err(e) => {
                cache.forget(&retry);
                Written::failed(n, e.into())
            }
        }
    }

    /// Each of `requests` appended on its own (each under its own fence), with its own
    /// answer.
    async fn one_by_one(&self, conn: &mut PgConnection, requests: Vec<AppendRequest>) -> Written {
        let mut written = Written::ok(Vec::with_capacity(requests.len()));
        for request in requests {
            let result = self.append_alone(conn, request).await;
            written.broken |= result.as_ref().is_err_and(breaks_connection);
            written.results.push(result);
        }
        written
    }

    /// Inserts `rows` in one statement (in autocommit, one transaction), positions from
    /// `first_index` within the transaction on; the first row's position (rows get `first,
    /// first + 1, ...` in order).
    async fn insert_rows(
        &self,
        conn: &mut PgConnection,
        first_index: i64,
        rows: &[Sealed],
        fences: &[&Fence],
    ) -> Result<Inserted, sqlx::Error> {
        let n = rows.len();
        let mut ids = Vec::with_capacity(n);
        let mut streams = Vec::with_capacity(n);
        let mut versions = Vec::with_capacity(n);
        let mut types = Vec::with_capacity(n);
        let mut times = Vec::with_capacity(n);
        let mut correlations = Vec::with_capacity(n);
        let mut causations = Vec::with_capacity(n);
        let mut traces = Vec::with_capacity(n);
        let mut payloads = Vec::with_capacity(n);
        let mut prev_hashes = Vec::with_capacity(n);
        let mut hashes = Vec::with_capacity(n);
        for row in rows {
            let e = &row.event;
            ids.push(e.event_id);
            streams.push(e.stream_id.as_str());
            versions.push(row.version);
            types.push(e.event_type.as_str());
            times.push(row.occurred_at_us);
            correlations.push(e.correlation_id.as_str());
            causations.push(e.causation_id.as_str());
            traces.push(trace_context_json(&e.trace_context));
            payloads.push(e.payload.as_slice());
            prev_hashes.push(e.prev_hash.as_slice());
            hashes.push(e.hash.as_slice());
        }
        let sql = if fences.is_empty() {
            &self.sql.insert
        } else {
            &self.sql.insert_fenced
        };
        let mut query = sqlx::query_scalar(sql.clone())
            .bind(ids)
            .bind(streams)
            .bind(versions)
            .bind(types)
            .bind(times)
            .bind(correlations)
            .bind(causations)
            .bind(traces)
            .bind(payloads)
            .bind(prev_hashes)
            .bind(hashes)
            .bind(first_index);
        if !fences.is_empty() {
            let (partitions, owners, epochs) = Fence::columns(fences.iter().copied());
            query = query.bind(partitions).bind(owners).bind(epochs);
        }
        let first: Option<i64> = query.fetch_one(&mut *conn).await?;
        let Some(first) = first else {
            // Rows were given, none went in: a fence did not hold.
            if fences.is_empty() {
                return Err(sqlx::Error::Protocol(
                    "the insert returned no position".into(),
                ));
            }
            return Ok(Inserted::Fenced);
        };
        u64::try_from(first)
            .map(Inserted::At)
            .map_err(|_| sqlx::Error::Protocol(format!("the insert returned position {first}")))
    }

    /// The heads of a batch's streams and which of its event ids are already stored, after
    /// the restore guard (see `append_on`).
    async fn read_batch_heads(
        &self,
        conn: &mut PgConnection,
        requests: &[AppendRequest],
    ) -> Result<(HashMap<String, Head>, HashSet<Uuid>), StoreError> {
        let mut streams: Vec<String> = requests
            .iter()
            .map(|r| r.stream_id.as_str().to_owned())
            .collect();
        streams.sort_unstable();
        streams.dedup();
        let ids: Vec<Uuid> = requests
            .iter()
            .flat_map(|r| r.events.iter().map(|e| e.event_id))
            .collect();
        self.read_heads(conn, streams, ids).await
    }

    /// The heads of `streams` and which of `ids` are already stored, after the restore
    /// guard (see `append_on`).
    async fn read_heads(
        &self,
        conn: &mut PgConnection,
        streams: Vec<String>,
        ids: Vec<Uuid>,
    ) -> Result<(HashMap<String, Head>, HashSet<Uuid>), StoreError> {
        let rows = sqlx::query(self.sql.batch_heads.clone())
            .bind(streams)
            .bind(ids)
            .fetch_all(&mut *conn)
            .await?;
        let mut heads = HashMap::with_capacity(rows.len());
        let mut stored = HashSet::new();
        for (i, row) in rows.iter().enumerate() {
            if i == 0 {
                let max_position: Option<i64> = row.try_get("max_position")?;
                let xmax: i64 = row.try_get("xmax")?;
                if let Some(max) = max_position {
                    let owner = max >> TX_SHIFT;
                    if owner >= xmax {
                        return Err(StoreError::InvalidArgument(format!(
                            "stored position {max} belongs to transaction {owner}, which this \
                             cluster has not reached (next xid {xmax}): the database was \
                             restored into a new cluster; advance the xid counter before \
                             appending"
                        )));
                    }
                }
                let ids: Vec<Uuid> = row.try_get("stored_ids")?;
                stored.extend(ids);
            }
            let version: Option<i64> = row.try_get("version")?;
            if let Some(version) = version {
                let stream: String = row.try_get("stream_id")?;
                let hash: Option<Vec<u8>> = row.try_get("hash")?;
                heads.insert(stream, (stored_u64(version, "events.version")?, hash));
            }
        }
        Ok((heads, stored))
    }
}

/// A group commit writer task's way to the database: a connection of its own, reopened after
/// a failure, and the heads of the streams it wrote. The connection is outside the pool: the
/// writer only ever runs autocommit statements on it, so it needs neither the pool's checkout
/// nor its release guard (two round trips a batch saved).
struct PgWriter {
    core: PgCore,
    /// The writer's connection, opened on first use and dropped when it fails.
    conn: Option<PgConnection>,
    /// Heads this writer committed (see `HeadCache`).
    heads: HeadCache,
    /// Whether a full read (with the restore guard) passed on `conn`.
    guarded: bool,
}

impl BatchWriter for PgWriter {
    async fn write(&mut self, requests: Vec<AppendRequest>) -> Vec<Result<Appended, StoreError>> {
        if self.conn.is_none() {
            match PgConnection::connect_with(&self.core.pool.connect_options()).await {
                Ok(conn) => {
                    self.conn = Some(conn);
                    self.guarded = false;
                }
                Err(e) => return all_failed(requests.len(), e.into()),
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return all_failed(
                requests.len(),
                StoreError::Database(sqlx::Error::PoolClosed),
            );
        };
        let written = self
            .core
            .write_batch_on(conn, requests, &mut self.heads, &mut self.guarded)
            .await;
        if written.broken {
            self.conn = None;
        }
        written.results
    }
}

/// A batch's results, and whether its connection must be dropped.
struct Written {
    results: Vec<Result<Appended, StoreError>>,
    /// A statement failed in a way that leaves the connection's state unknown.
    broken: bool,
}

impl Written {
    fn ok(results: Vec<Result<Appended, StoreError>>) -> Self {
        Self {
            results,
            broken: false,
        }
    }

    fn failed(n: usize, error: StoreError) -> Self {
        let broken = breaks_connection(&error);
        Self {
            results: all_failed(n, error),
            broken,
        }
    }

    fn from_one(result: Result<Appended, StoreError>) -> Self {
        Self {
            broken: result.as_ref().is_err_and(breaks_connection),
            results: vec![result],
        }
    }
}

/// What an appending statement did.
enum Inserted {
    /// Its rows went in, from this position on.
    At(u64),
    /// A fence did not hold: nothing went in.
    Fenced,
}

/// How `append_on` fails: a typed error, or a unique violation still to be explained (which
/// needs a statement outside the failed one).
enum Failure {
    Store(StoreError),
    Unique { constraint: String, ids: Vec<Uuid> },
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// `schema` as a [`Schema`], or the store's argument error.
fn validate_schema(schema: &str) -> Result<Schema, StoreError> {
    Schema::new(schema).map_err(|e| StoreError::InvalidArgument(e.to_string()))
}

fn row_from_pg(row: &PgRow) -> Result<Row, sqlx::Error> {
    Ok(Row {
        position: row.try_get("position")?,
        event_id: row.try_get("event_id")?,
        stream_id: row.try_get("stream_id")?,
        version: row.try_get("version")?,
        event_type: row.try_get("event_type")?,
        occurred_at_us: row.try_get("occurred_at_us")?,
        correlation_id: row.try_get("correlation_id")?,
        causation_id: row.try_get("causation_id")?,
        trace_context: row.try_get("trace_context")?,
        payload: row.try_get("payload")?,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

impl PgEventStore {
    /// An append through the group commit, behind `fence` when given.
    async fn append_queued(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        fence: Option<&Fence>,
    ) -> Result<Appended, StoreError> {
        let request = |events| AppendRequest {
            stream_id: stream_id.clone(),
            expected,
            events,
            fence: fence.cloned(),
        };
        let writer = || PgWriter {
            core: self.core.clone(),
            conn: None,
            heads: HeadCache::default(),
            guarded: false,
        };
        if expected != ExpectedVersion::Any {
            return self.group.append(request(events), writer).await;
        }
        let mut attempt = 1;
        loop {
            match self.group.append(request(events.clone()), writer).await {
                // `Any` lost a race for the next version: the winner is committed, so a fresh
                // attempt reads its head and links after it.
                Err(StoreError::Conflict { .. }) if attempt < ANY_ATTEMPTS => {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

#[async_trait]
impl EventStore for PgEventStore {
    #[tracing::instrument(skip(self, events), fields(stream_id = %stream_id, count = events.len()))]
    async fn append(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        self.append_queued(stream_id, expected, events, None).await
    }

    /// Traced as an `append`, with the fence's partition.
    #[tracing::instrument(name = "append", skip(self, events, fence), fields(stream_id = %stream_id, count = events.len(), partition = fence.partition))]
    async fn append_fenced(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        fence: &Fence,
    ) -> Result<Appended, StoreError> {
        self.append_queued(stream_id, expected, events, Some(fence))
            .await
    }

    async fn read_stream(
        &self,
        stream_id: &StreamId,
        from_version: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let from = from_version.max(1);
        // Fetch the predecessor too, to check the link into the first returned event.
        let (query_from, extra) = if from > 1 { (from - 1, 1) } else { (from, 0) };
        let rows = sqlx::query(self.core.sql.read_stream.clone())
            .bind(stream_id.as_str())
            .bind(to_i64(query_from, "version")?)
            .bind(limit_i64(limit).saturating_add(extra))
            .fetch_all(&self.core.reads)
            .await?;
        let rows = rows
            .iter()
            .map(row_from_pg)
            .collect::<Result<Vec<_>, _>>()?;
        verify_stream_rows(stream_id, from, rows, limit)
    }

    async fn read_all(
        &self,
        from_position: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let rows = sqlx::query(self.core.sql.read_all.clone())
            .bind(to_i64(from_position, "position")?)
            .bind(limit_i64(limit))
            .fetch_all(&self.core.reads)
            .await?;
        rows.iter()
            .map(|row| row_from_pg(row).map_err(StoreError::from)?.into_event())
            .collect()
    }

    async fn head_position(&self) -> Result<u64, StoreError> {
        let head: i64 = sqlx::query_scalar(self.core.sql.head_position.clone())
            .fetch_one(&self.core.pool)
            .await?;
        stored_u64(head, "events.position")
    }

    async fn committed_position(&self) -> Result<u64, StoreError> {
        let last: i64 = sqlx::query_scalar(self.core.sql.committed_position.clone())
            .fetch_one(&self.core.pool)
            .await?;
        stored_u64(last, "events.position")
    }

    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError> {
        let mut conn = self.core.pool.acquire().await?;
        self.core.stream_version_on(&mut conn, stream_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names() {
        for ok in ["public", "auth", "_x", "tables_v2"] {
            assert!(validate_schema(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Auth", "1x", "a-b", "a\"b", &"a".repeat(64)] {
            assert!(validate_schema(bad).is_err(), "{bad}");
        }
    }
}
