//! The SQLite backend: the embedded default (one file, no server).
//!
//! WAL journal (readers never block the writer), `synchronous = FULL` (a committed append
//! survives a power cut: the WAL is fsynced at every commit), a busy timeout, and
//! single-writer semantics: every write transaction starts with `BEGIN IMMEDIATE`, so it
//! holds SQLite's write lock from its first statement (a batch the writer task can write
//! as one INSERT is its own transaction, which takes the lock at once). Appends through
//! [`SqliteEventStore::append`] go to one writer task per store (group commit, see
//! `crate::batch`): it takes every append queued at that moment, writes them in one
//! transaction (one fsync) with each append's own result, and repeats. Because writers are
//! serialised, a row's position (its rowid, `max + 1` at insert) is visible only after every
//! lower position, so `read_all` can never skip an event.
//!
//! Migrations are tracked in `_fairdeal_eventstore_migrations`, apart from any other
//! migrator sharing the file.

use crate::batch::{
    AppendRequest, BatchWriter, GroupCommit, Head, HeadCache, Sealed, all_failed, appended,
    breaks_connection, plan, seal_rows,
};
use crate::codec::{
    COLUMNS, Row, check_distinct_ids, limit_i64, stored_u64, to_i64, trace_context_json,
    verify_stream_rows,
};
use crate::error::StoreError;
use crate::store::{Appended, EventStore};
use crate::version::ExpectedVersion;
use async_trait::async_trait;
use fairdeal_event::{NewEvent, RecordedEvent, StreamId};
use sqlx::sqlite::{SqlitePool, SqliteRow};
use sqlx::{Connection, QueryBuilder, Row as _, Sqlite, SqliteConnection, Transaction};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

/// Rows per INSERT statement: 12 parameters a row stays far below SQLite's 32,766.
const INSERT_CHUNK: usize = 500;

/// Event store on SQLite. Cheap to clone (pool and writer task are shared).
#[derive(Debug, Clone)]
pub struct SqliteEventStore {
    /// Connections to the database file.
    pool: SqlitePool,
    /// The one group commit writer `append` queues on, so this process's appends are
    /// serialised and batched instead of polling SQLite's busy handler (which sleeps in
    /// growing steps).
    group: Arc<GroupCommit>,
}

impl SqliteEventStore {
    /// Opens (creating if needed) the database file at `path` with the settings of
    /// [`fairdeal_db::sqlite_connect_options`] and runs the migrations. Services open their
    /// database through `fairdeal_db::Db` instead; this is for tools and tests that want a
    /// bare store.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let pool = fairdeal_db::sqlite_pool_options()
            .connect_with(fairdeal_db::sqlite_connect_options(path))
            .await?;
        let store = Self::new(pool);
        store.migrate().await?;
        Ok(store)
    }

    /// A store over `pool` (which should use [`fairdeal_db::sqlite_connect_options`]). Call
    /// [`Self::migrate`] once at start.
    pub fn new(pool: SqlitePool) -> Self {
        Self {
            pool,
            group: Arc::new(GroupCommit::new(1)),
        }
    }

    /// Applies the store's pending migrations (idempotent).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let db = fairdeal_db::Db::Sqlite {
            pool: self.pool.clone(),
        };
        db.migrate(&crate::MIGRATIONS).await?;
        Ok(())
    }

    /// The connection pool (shared with the service for its own tables).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Begins a write transaction (`BEGIN IMMEDIATE`) for [`Self::append_in_tx`]. Use this
    /// rather than `pool.begin()`: a deferred transaction that reads before it writes can
    /// fail with `SQLITE_BUSY` when another writer got in between.
    pub async fn begin(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// Writes `requests` as one group commit, now, on the calling task: one transaction for
    /// all of them, each request getting its own result in order (a conflict, duplicate id
    /// or invalid event fails that request alone; two requests for one stream chain, the
    /// second seeing the first). `append` gathers concurrent callers into such batches by
    /// itself.
    pub async fn append_batch(
        &self,
        requests: Vec<AppendRequest>,
    ) -> Vec<Result<Appended, StoreError>> {
        if requests.is_empty() {
            return Vec::new();
        }
        if requests.iter().any(|r| r.fence.is_some()) {
            return all_failed(requests.len(), crate::fence::no_leases());
        }
        let mut conn = match self.pool.acquire().await {
            Ok(conn) => conn,
            Err(e) => return all_failed(requests.len(), e.into()),
        };
        write_batch(&mut conn, requests, None).await.0
    }

    /// Appends inside the caller's transaction (from [`Self::begin`]), so events and the
    /// service's own table changes commit or roll back together. Runs in a savepoint: on
    /// error the transaction is left as it was and stays usable.
    pub async fn append_in_tx(
        &self,
        tx: &mut Transaction<'_, Sqlite>,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        let mut savepoint = (**tx).begin().await?;
        match append_on(&mut savepoint, stream_id, expected, events).await {
            Ok(appended) => {
                savepoint.commit().await?;
                Ok(appended)
            }
            Err(e) => {
                savepoint.rollback().await?;
                Err(e)
            }
        }
    }
}

/// The append itself, on a connection holding the write lock (inside a transaction).
async fn append_on(
    conn: &mut SqliteConnection,
    stream_id: &StreamId,
    expected: ExpectedVersion,
    events: Vec<NewEvent>,
) -> Result<Appended, StoreError> {
    check_distinct_ids(&events)?;
    let head: Option<(i64, Vec<u8>)> = sqlx::query_as(
        "SELECT version, hash FROM events WHERE stream_id = ? ORDER BY version DESC LIMIT 1",
    )
    .bind(stream_id.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let current = match &head {
        Some((version, _)) => stored_u64(*version, "events.version")?,
        None => 0,
    };
    if !expected.matches(current) {
        return Err(StoreError::Conflict {
            stream_id: stream_id.clone(),
            expected,
            actual: current,
        });
    }
    if events.is_empty() {
        return Ok(Appended {
            version: current,
            events: Vec::new(),
        });
    }
    let ids: Vec<Uuid> = events.iter().map(|e| e.event_id).collect();
    for chunk in ids.chunks(INSERT_CHUNK) {
        let mut query =
            QueryBuilder::<Sqlite>::new("SELECT event_id FROM events WHERE event_id IN ");
        query.push_tuples(chunk, |mut b, id| {
            b.push_bind(*id);
        });
        query.push(" LIMIT 1");
        let existing: Option<Uuid> = query
            .build_query_scalar()
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(event_id) = existing {
            return Err(StoreError::DuplicateEventId { event_id });
        }
    }
    let last_position: i64 = sqlx::query_scalar("SELECT coalesce(max(position), 0) FROM events")
        .fetch_one(&mut *conn)
        .await?;
    let first = stored_u64(last_position, "events.position")? + 1;
    let sealed = seal_rows(
        stream_id,
        current,
        head.as_ref().map(|(_, bytes)| bytes.as_slice()),
        events,
    )?;
    insert_rows(conn, &sealed, Some(first)).await?;
    Ok(appended(sealed, first, current))
}

/// The group commit writer task's way to the database: a connection of its own (its page
/// cache stays warm with the heads it writes; reopened after a failure) and the heads of
/// the streams it wrote.
struct SqliteWriter {
    pool: SqlitePool,
    /// The writer's connection, opened on first use and dropped when it fails.
    conn: Option<SqliteConnection>,
    /// Heads this writer committed (see `crate::batch::HeadCache`).
    heads: HeadCache,
}

impl BatchWriter for SqliteWriter {
    async fn write(&mut self, requests: Vec<AppendRequest>) -> Vec<Result<Appended, StoreError>> {
        if self.conn.is_none() {
            match SqliteConnection::connect_with(&self.pool.connect_options()).await {
                Ok(conn) => self.conn = Some(conn),
                Err(e) => return all_failed(requests.len(), e.into()),
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return all_failed(
                requests.len(),
                StoreError::Database(sqlx::Error::PoolClosed),
            );
        };
        let (results, broken) = write_cached(conn, requests, &mut self.heads).await;
        if broken {
            self.conn = None;
        }
        results
    }
}

/// A batch whose streams the writer all knows, and small enough for one statement, is one
/// autocommit INSERT (one implicit transaction and one WAL sync): positions are the rowids
/// SQLite assigns, `max + 1` row after row under the write lock, so consecutive and known
/// from the last. A stale head (another connection appended since) or a stored event id
/// makes the INSERT fail whole; the batch then goes the full way, `write_batch`. Returns the
/// results and whether the connection must be dropped.
async fn write_cached(
    conn: &mut SqliteConnection,
    requests: Vec<AppendRequest>,
    cache: &mut HeadCache,
) -> (Vec<Result<Appended, StoreError>>, bool) {
    let (heads, to_read) = cache.lookup(&requests);
    let events: usize = requests.iter().map(|r| r.events.len()).sum();
    if !to_read.is_empty() || events > INSERT_CHUNK {
        return write_batch(conn, requests, Some(cache)).await;
    }
    let n = requests.len();
    let retry = requests.clone();
    let plan = plan(requests, heads, &HashSet::new());
    if plan.is_empty() {
        return (plan.finish(0), false);
    }
    match insert_rows(conn, &plan.rows, None).await {
        Ok(last) => {
            let first = (last + 1).saturating_sub(plan.rows.len() as u64);
            cache.remember(&plan);
            (plan.finish(first), false)
        }
        Err(StoreError::Database(sqlx::Error::Database(db))) => {
            tracing::debug!(error = %db, appends = n, "group commit refused; reading the heads again");
            cache.forget(&retry);
            write_batch(conn, retry, Some(cache)).await
        }
        Err(e) => {
            cache.forget(&retry);
            let broken = breaks_connection(&e);
            (all_failed(n, e), broken)
        }
    }
}

/// Writes a batch in one `BEGIN IMMEDIATE` transaction: the heads and stored ids of the
/// whole batch read at once, the decision in memory ([`plan`]), multi-row INSERTs, one
/// commit. Holding the write lock from the first statement, nothing can change between the
/// reads and the inserts; should an insert still fail, the transaction is rolled back and
/// each append retried on its own, in its own transaction. Returns the results and whether
/// the connection must be dropped (a failure that leaves its state unknown).
async fn write_batch(
    conn: &mut SqliteConnection,
    mut requests: Vec<AppendRequest>,
    mut cache: Option<&mut HeadCache>,
) -> (Vec<Result<Appended, StoreError>>, bool) {
    let n = requests.len();
    if n == 1
        && let Some(request) = requests.pop()
    {
        // Alone: the single-append statements (per-stream queries, no IN lists).
        let result = append_alone(conn, request).await;
        if let (Ok(appended), Some(cache)) = (&result, cache) {
            cache.remember_appended(appended);
        }
        let broken = result.as_ref().is_err_and(breaks_connection);
        return (vec![result], broken);
    }
    let retry = requests.clone();
    let mut tx = match conn.begin_with("BEGIN IMMEDIATE").await {
        Ok(tx) => tx,
        Err(e) => return (all_failed(n, e.into()), true),
    };
    let (heads, stored, last_position) = match read_batch_heads(&mut tx, &requests).await {
        Ok(read) => read,
        Err(e) => {
            let broken = breaks_connection(&e);
            return (all_failed(n, e), broken);
        }
    };
    let plan = plan(requests, heads, &stored);
    if plan.is_empty() {
        // Nothing written: ending the transaction either way is the same.
        let _ = tx.rollback().await;
        return (plan.finish(0), false);
    }
    let first = last_position + 1;
    if let Err(e) = insert_rows(&mut tx, &plan.rows, Some(first)).await {
        tracing::debug!(error = %e, appends = n, "group commit refused; appending one by one");
        if let Err(e) = tx.rollback().await {
            return (all_failed(n, e.into()), true);
        }
        if let Some(cache) = cache.as_deref_mut() {
            cache.forget(&retry);
        }
        let mut out = Vec::with_capacity(n);
        let mut broken = false;
        for request in retry {
            let result = append_alone(conn, request).await;
            broken |= result.as_ref().is_err_and(breaks_connection);
            out.push(result);
        }
        return (out, broken);
    }
    match tx.commit().await {
        Ok(()) => {
            if let Some(cache) = cache {
                cache.remember(&plan);
            }
            (plan.finish(first), false)
        }
        Err(e) => {
            if let Some(cache) = cache {
                cache.forget(&retry);
            }
            (all_failed(n, e.into()), true)
        }
    }
}

/// One append in its own transaction.
async fn append_alone(
    conn: &mut SqliteConnection,
    request: AppendRequest,
) -> Result<Appended, StoreError> {
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    let appended = append_on(
        &mut tx,
        &request.stream_id,
        request.expected,
        request.events,
    )
    .await?;
    tx.commit().await?;
    Ok(appended)
}

/// The heads of a batch's streams, which of its ids are stored, and the last position.
async fn read_batch_heads(
    conn: &mut SqliteConnection,
    requests: &[AppendRequest],
) -> Result<(HashMap<String, Head>, HashSet<Uuid>, u64), StoreError> {
    let mut streams: Vec<&str> = requests.iter().map(|r| r.stream_id.as_str()).collect();
    streams.sort_unstable();
    streams.dedup();
    // One statement whatever the batch (the streams as one JSON array, so the prepared
    // statement is reused), and one index seek per stream: its last version by the
    // `(stream_id, version)` index, then that row. (A `GROUP BY stream_id` with `max(version)`
    // would visit every event of every stream of the batch.)
    let streams = serde_json::to_string(&streams)
        .map_err(|e| StoreError::InvalidArgument(format!("stream ids: {e}")))?;
    let rows: Vec<(String, i64, Vec<u8>)> = sqlx::query_as(
        "SELECT s.value, e.version, e.hash FROM json_each(?1) AS s \
         JOIN events AS e ON e.stream_id = s.value \
          AND e.version = (SELECT max(version) FROM events WHERE stream_id = s.value)",
    )
    .bind(streams)
    .fetch_all(&mut *conn)
    .await?;
    let mut heads = HashMap::with_capacity(rows.len());
    for (stream, version, hash) in rows {
        heads.insert(stream, (stored_u64(version, "events.version")?, Some(hash)));
    }
    let ids: Vec<Uuid> = requests
        .iter()
        .flat_map(|r| r.events.iter().map(|e| e.event_id))
        .collect();
    let mut stored = HashSet::new();
    for chunk in ids.chunks(INSERT_CHUNK) {
        let mut query =
            QueryBuilder::<Sqlite>::new("SELECT event_id FROM events WHERE event_id IN ");
        query.push_tuples(chunk, |mut b, id| {
            b.push_bind(*id);
        });
        let found: Vec<Uuid> = query.build_query_scalar().fetch_all(&mut *conn).await?;
        stored.extend(found);
    }
    let last_position: i64 = sqlx::query_scalar("SELECT coalesce(max(position), 0) FROM events")
        .fetch_one(&mut *conn)
        .await?;
    Ok((heads, stored, stored_u64(last_position, "events.position")?))
}

/// Inserts a batch's rows with positions `first, first + 1, ...`, or, when `first` is
/// `None`, with the rowids SQLite assigns (which, under the write lock, are `max + 1, max + 2,
/// ...` in row order); returns the last position.
async fn insert_rows(
    conn: &mut SqliteConnection,
    rows: &[Sealed],
    first: Option<u64>,
) -> Result<u64, StoreError> {
    let mut last = 0;
    for (c, chunk) in rows.chunks(INSERT_CHUNK).enumerate() {
        let base = first.map(|first| first + (c * INSERT_CHUNK) as u64);
        let mut values = Vec::with_capacity(chunk.len());
        for (i, row) in chunk.iter().enumerate() {
            let position = match base {
                Some(base) => Some(to_i64(base + i as u64, "position")?),
                None => None,
            };
            values.push((position, row));
        }
        let mut query = QueryBuilder::<Sqlite>::new(if first.is_some() {
            format!("INSERT INTO events ({COLUMNS}) ")
        } else {
            format!("INSERT INTO events ({}) ", &COLUMNS["position, ".len()..])
        });
        query.push_values(values, |mut b, (position, row)| {
            let e = &row.event;
            if let Some(position) = position {
                b.push_bind(position);
            }
            b.push_bind(e.event_id)
                .push_bind(e.stream_id.as_str().to_owned())
                .push_bind(row.version)
                .push_bind(e.event_type.clone())
                .push_bind(row.occurred_at_us)
                .push_bind(e.correlation_id.clone())
                .push_bind(e.causation_id.clone())
                .push_bind(trace_context_json(&e.trace_context))
                .push_bind(e.payload.clone())
                .push_bind(e.prev_hash.to_vec())
                .push_bind(e.hash.to_vec());
        });
        let done = query.build().execute(&mut *conn).await?;
        last = stored_u64(done.last_insert_rowid(), "events.position")?;
    }
    Ok(last)
}

fn row_from_sqlite(row: &SqliteRow) -> Result<Row, sqlx::Error> {
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

#[async_trait]
impl EventStore for SqliteEventStore {
    #[tracing::instrument(skip(self, events), fields(stream_id = %stream_id, count = events.len()))]
    async fn append(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        let request = AppendRequest {
            stream_id: stream_id.clone(),
            expected,
            events,
            fence: None,
        };
        let pool = self.pool.clone();
        let writer = || SqliteWriter {
            pool,
            conn: None,
            heads: HeadCache::default(),
        };
        self.group.append(request, writer).await
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
        let rows = sqlx::query(
            "SELECT position, event_id, stream_id, version, event_type, occurred_at_us, \
                 correlation_id, causation_id, trace_context, payload, prev_hash, hash \
             FROM events WHERE stream_id = ? AND version >= ? ORDER BY version LIMIT ?",
        )
        .bind(stream_id.as_str())
        .bind(to_i64(query_from, "version")?)
        .bind(limit_i64(limit).saturating_add(extra))
        .fetch_all(&self.pool)
        .await?;
        let rows = rows
            .iter()
            .map(row_from_sqlite)
            .collect::<Result<Vec<_>, _>>()?;
        verify_stream_rows(stream_id, from, rows, limit)
    }

    async fn read_all(
        &self,
        from_position: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT position, event_id, stream_id, version, event_type, occurred_at_us, \
                 correlation_id, causation_id, trace_context, payload, prev_hash, hash \
             FROM events WHERE position >= ? ORDER BY position LIMIT ?",
        )
        .bind(to_i64(from_position, "position")?)
        .bind(limit_i64(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| row_from_sqlite(row).map_err(StoreError::from)?.into_event())
            .collect()
    }

    async fn head_position(&self) -> Result<u64, StoreError> {
        let head: i64 = sqlx::query_scalar("SELECT coalesce(max(position), 0) FROM events")
            .fetch_one(&self.pool)
            .await?;
        stored_u64(head, "events.position")
    }

    async fn committed_position(&self) -> Result<u64, StoreError> {
        self.head_position().await
    }

    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError> {
        let version: i64 =
            sqlx::query_scalar("SELECT coalesce(max(version), 0) FROM events WHERE stream_id = ?")
                .bind(stream_id.as_str())
                .fetch_one(&self.pool)
                .await?;
        stored_u64(version, "events.version")
    }
}
