//! The archive's statements that differ between the backends: the ingest's batch reads and
//! writes, a whole batch in a few statements. Public for the ingest benchmark, which inserts
//! the same rows with the same statement as its baseline. PostgreSQL binds lists as arrays (one
//! statement text whatever the batch, prepared once); SQLite binds them as JSON arrays
//! (`json_each`) and inserts rows as multi-row `VALUES` (statements are cheap to prepare
//! there).

use std::future::Future;

use fairdeal_db::Backend;
use sqlx::{PgConnection, Postgres, QueryBuilder, Sqlite, SqliteConnection};

/// One new row of `ledger_leaves`, format 2.
#[derive(Debug, Clone)]
pub struct LeafRow {
    /// The leaf index.
    pub leaf_index: i64,
    /// The event's id.
    pub event_id: String,
    /// The event's stream.
    pub stream_id: String,
    /// The event's version in its stream.
    pub stream_version: i64,
    /// The event's type.
    pub event_type: String,
    /// The event's correlation id.
    pub correlation_id: String,
    /// The event's own chain hash.
    pub hash: Vec<u8>,
    /// The leaf bytes (65).
    pub leaf: Vec<u8>,
    /// What the event is about (`visibility::subject`).
    pub subject: Option<String>,
    /// The content: `None` when it was erased before it arrived.
    pub content: Option<Content>,
    /// When it was erased (with `content` `None`).
    pub erased_at_ms: Option<i64>,
}

/// An event's content as the archive keeps it beside its leaf.
#[derive(Debug, Clone)]
pub struct Content {
    /// The whole envelope (hash included).
    pub envelope: Vec<u8>,
    /// The body commitment's salt.
    pub body_salt: Vec<u8>,
    /// The chain commitment's salt.
    pub chain_salt: Vec<u8>,
}

/// A stream's head as the batch leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The stream.
    pub stream_id: String,
    /// Its last archived version (0: none, a stream halted at its first event).
    pub version: i64,
    /// That event's hash (32 zero bytes for none).
    pub hash: Vec<u8>,
    /// Whether an event of the stream was refused: every later one is too.
    pub halted: bool,
}

/// An earlier leaf holding an event id: (event id, stream, version, hash).
pub type SameId = (String, String, i64, Vec<u8>);

/// What an erasure reaches.
#[derive(Debug, Clone, Copy)]
pub enum Reach<'a> {
    /// One event, by id.
    Event(&'a str),
    /// Every event about a subject.
    Subject(&'a str),
}

/// SQLite rows per multi-row `INSERT` (13 parameters a row, well below SQLite's limit).
const SQLITE_ROWS_PER_INSERT: usize = 500;

/// The statements the ingest runs inside the consumer's transaction.
pub trait IngestSql: Backend {
    /// The leaves already holding any of `ids`.
    fn same_ids<'a>(
        conn: &'a mut Self::Connection,
        ids: &'a [String],
    ) -> impl Future<Output = Result<Vec<SameId>, sqlx::Error>> + Send + 'a;

    /// The heads of `streams` that exist.
    fn heads<'a>(
        conn: &'a mut Self::Connection,
        streams: &'a [String],
    ) -> impl Future<Output = Result<Vec<Head>, sqlx::Error>> + Send + 'a;

    /// Which of `targets` (`event:<id>`, `user:<id>`) were erased.
    fn erased<'a>(
        conn: &'a mut Self::Connection,
        targets: &'a [String],
    ) -> impl Future<Output = Result<Vec<String>, sqlx::Error>> + Send + 'a;

    /// Inserts `rows`.
    fn insert_leaves<'a>(
        conn: &'a mut Self::Connection,
        rows: &'a [LeafRow],
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'a;

    /// Writes `heads` (each stream once).
    fn save_heads<'a>(
        conn: &'a mut Self::Connection,
        heads: &'a [Head],
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'a;

    /// Erases the content of the archived events of `types` that `reach` names; returns how
    /// many.
    fn erase<'a>(
        conn: &'a mut Self::Connection,
        reach: Reach<'a>,
        types: &'a [String],
        now_ms: i64,
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send + 'a;
}

/// The erasure's SET clause: what erasing a leaf's content changes (the only update the
/// archive's trigger lets through).
const ERASE_SET: &str =
    "SET envelope = NULL, body_salt = NULL, chain_salt = NULL, erased_at_ms = $3";

impl IngestSql for Postgres {
    fn same_ids<'a>(
        conn: &'a mut PgConnection,
        ids: &'a [String],
    ) -> impl Future<Output = Result<Vec<SameId>, sqlx::Error>> + Send + 'a {
        sqlx::query_as(
            "SELECT event_id, stream_id, stream_version, hash FROM ledger_leaves \
             WHERE event_id = ANY($1)",
        )
        .bind(ids)
        .fetch_all(conn)
    }

    async fn heads<'a>(
        conn: &'a mut PgConnection,
        streams: &'a [String],
    ) -> Result<Vec<Head>, sqlx::Error> {
        let rows: Vec<(String, i64, Vec<u8>, i64)> = sqlx::query_as(
            "SELECT stream_id, stream_version, hash, halted FROM ledger_heads \
             WHERE stream_id = ANY($1)",
        )
        .bind(streams)
        .fetch_all(conn)
        .await?;
        Ok(rows.into_iter().map(head).collect())
    }

    fn erased<'a>(
        conn: &'a mut PgConnection,
        targets: &'a [String],
    ) -> impl Future<Output = Result<Vec<String>, sqlx::Error>> + Send + 'a {
        sqlx::query_scalar("SELECT target FROM ledger_erasures WHERE target = ANY($1)")
            .bind(targets)
            .fetch_all(conn)
    }

    async fn insert_leaves<'a>(
        conn: &'a mut PgConnection,
        rows: &'a [LeafRow],
    ) -> Result<(), sqlx::Error> {
        let n = rows.len();
        let mut index = Vec::with_capacity(n);
        let mut event_id = Vec::with_capacity(n);
        let mut stream_id = Vec::with_capacity(n);
        let mut version = Vec::with_capacity(n);
        let mut event_type = Vec::with_capacity(n);
        let mut correlation = Vec::with_capacity(n);
        let mut hash = Vec::with_capacity(n);
        let mut leaf = Vec::with_capacity(n);
        let mut subject = Vec::with_capacity(n);
        let mut envelope = Vec::with_capacity(n);
        let mut body_salt = Vec::with_capacity(n);
        let mut chain_salt = Vec::with_capacity(n);
        let mut erased = Vec::with_capacity(n);
        for row in rows {
            index.push(row.leaf_index);
            event_id.push(row.event_id.as_str());
            stream_id.push(row.stream_id.as_str());
            version.push(row.stream_version);
            event_type.push(row.event_type.as_str());
            correlation.push(row.correlation_id.as_str());
            hash.push(row.hash.as_slice());
            leaf.push(row.leaf.as_slice());
            subject.push(row.subject.as_deref());
            envelope.push(row.content.as_ref().map(|c| c.envelope.as_slice()));
            body_salt.push(row.content.as_ref().map(|c| c.body_salt.as_slice()));
            chain_salt.push(row.content.as_ref().map(|c| c.chain_salt.as_slice()));
            erased.push(row.erased_at_ms);
        }
        sqlx::query(
            "INSERT INTO ledger_leaves (leaf_index, event_id, stream_id, stream_version, \
                 event_type, correlation_id, hash, leaf_format, leaf, subject, envelope, \
                 body_salt, chain_salt, erased_at_ms) \
             SELECT u.leaf_index, u.event_id, u.stream_id, u.stream_version, u.event_type, \
                 u.correlation_id, u.hash, 2, u.leaf, u.subject, u.envelope, u.body_salt, \
                 u.chain_salt, u.erased_at_ms \
             FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], \
                 $6::text[], $7::bytea[], $8::bytea[], $9::text[], $10::bytea[], \
                 $11::bytea[], $12::bytea[], $13::bigint[]) \
                 AS u(leaf_index, event_id, stream_id, stream_version, event_type, \
                 correlation_id, hash, leaf, subject, envelope, body_salt, chain_salt, \
                 erased_at_ms)",
        )
        .bind(index)
        .bind(event_id)
        .bind(stream_id)
        .bind(version)
        .bind(event_type)
        .bind(correlation)
        .bind(hash)
        .bind(leaf)
        .bind(subject)
        .bind(envelope)
        .bind(body_salt)
        .bind(chain_salt)
        .bind(erased)
        .execute(conn)
        .await
        .map(|_| ())
    }

    async fn save_heads<'a>(
        conn: &'a mut PgConnection,
        heads: &'a [Head],
    ) -> Result<(), sqlx::Error> {
        let stream: Vec<&str> = heads.iter().map(|h| h.stream_id.as_str()).collect();
        let version: Vec<i64> = heads.iter().map(|h| h.version).collect();
        let hash: Vec<&[u8]> = heads.iter().map(|h| h.hash.as_slice()).collect();
        let halted: Vec<i64> = heads.iter().map(|h| i64::from(h.halted)).collect();
        sqlx::query(
            "INSERT INTO ledger_heads (stream_id, stream_version, hash, halted) \
             SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bytea[], $4::bigint[]) \
             ON CONFLICT (stream_id) DO UPDATE SET stream_version = excluded.stream_version, \
                 hash = excluded.hash, halted = excluded.halted",
        )
        .bind(stream)
        .bind(version)
        .bind(hash)
        .bind(halted)
        .execute(conn)
        .await
        .map(|_| ())
    }

    async fn erase<'a>(
        conn: &'a mut PgConnection,
        reach: Reach<'a>,
        types: &'a [String],
        now_ms: i64,
    ) -> Result<u64, sqlx::Error> {
        let (column, value) = reach.column();
        let sql = format!(
            "UPDATE ledger_leaves {ERASE_SET} WHERE {column} AND event_type = ANY($2) \
             AND leaf_format = 2 AND envelope IS NOT NULL"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(value)
            .bind(types)
            .bind(now_ms)
            .execute(conn)
            .await
            .map(|done| done.rows_affected())
    }
}

impl IngestSql for Sqlite {
    fn same_ids<'a>(
        conn: &'a mut SqliteConnection,
        ids: &'a [String],
    ) -> impl Future<Output = Result<Vec<SameId>, sqlx::Error>> + Send + 'a {
        sqlx::query_as(
            "SELECT event_id, stream_id, stream_version, hash FROM ledger_leaves \
             WHERE event_id IN (SELECT value FROM json_each($1))",
        )
        .bind(json_list(ids))
        .fetch_all(conn)
    }

    async fn heads<'a>(
        conn: &'a mut SqliteConnection,
        streams: &'a [String],
    ) -> Result<Vec<Head>, sqlx::Error> {
        let rows: Vec<(String, i64, Vec<u8>, i64)> = sqlx::query_as(
            "SELECT stream_id, stream_version, hash, halted FROM ledger_heads \
             WHERE stream_id IN (SELECT value FROM json_each($1))",
        )
        .bind(json_list(streams))
        .fetch_all(conn)
        .await?;
        Ok(rows.into_iter().map(head).collect())
    }

    fn erased<'a>(
        conn: &'a mut SqliteConnection,
        targets: &'a [String],
    ) -> impl Future<Output = Result<Vec<String>, sqlx::Error>> + Send + 'a {
        sqlx::query_scalar(
            "SELECT target FROM ledger_erasures WHERE target IN (SELECT value FROM json_each($1))",
        )
        .bind(json_list(targets))
        .fetch_all(conn)
    }

    async fn insert_leaves<'a>(
        conn: &'a mut SqliteConnection,
        rows: &'a [LeafRow],
    ) -> Result<(), sqlx::Error> {
        for chunk in rows.chunks(SQLITE_ROWS_PER_INSERT) {
            let mut insert = QueryBuilder::<Sqlite>::new(
                "INSERT INTO ledger_leaves (leaf_index, event_id, stream_id, stream_version, \
                 event_type, correlation_id, hash, leaf_format, leaf, subject, envelope, \
                 body_salt, chain_salt, erased_at_ms) ",
            );
            insert.push_values(chunk, |mut b, row| {
                b.push_bind(row.leaf_index)
                    .push_bind(row.event_id.as_str())
                    .push_bind(row.stream_id.as_str())
                    .push_bind(row.stream_version)
                    .push_bind(row.event_type.as_str())
                    .push_bind(row.correlation_id.as_str())
                    .push_bind(row.hash.as_slice())
                    .push("2")
                    .push_bind(row.leaf.as_slice())
                    .push_bind(row.subject.as_deref())
                    .push_bind(row.content.as_ref().map(|c| c.envelope.as_slice()))
                    .push_bind(row.content.as_ref().map(|c| c.body_salt.as_slice()))
                    .push_bind(row.content.as_ref().map(|c| c.chain_salt.as_slice()))
                    .push_bind(row.erased_at_ms);
            });
            insert.build().execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn save_heads<'a>(
        conn: &'a mut SqliteConnection,
        heads: &'a [Head],
    ) -> Result<(), sqlx::Error> {
        for chunk in heads.chunks(SQLITE_ROWS_PER_INSERT) {
            let mut upsert = QueryBuilder::<Sqlite>::new(
                "INSERT INTO ledger_heads (stream_id, stream_version, hash, halted) ",
            );
            upsert.push_values(chunk, |mut b, h| {
                b.push_bind(h.stream_id.as_str())
                    .push_bind(h.version)
                    .push_bind(h.hash.as_slice())
                    .push_bind(i64::from(h.halted));
            });
            upsert.push(
                " ON CONFLICT (stream_id) DO UPDATE SET stream_version = excluded.stream_version, \
                 hash = excluded.hash, halted = excluded.halted",
            );
            upsert.build().execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn erase<'a>(
        conn: &'a mut SqliteConnection,
        reach: Reach<'a>,
        types: &'a [String],
        now_ms: i64,
    ) -> Result<u64, sqlx::Error> {
        let (column, value) = reach.column();
        let sql = format!(
            "UPDATE ledger_leaves {ERASE_SET} WHERE {column} \
             AND event_type IN (SELECT value FROM json_each($2)) \
             AND leaf_format = 2 AND envelope IS NOT NULL"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(value)
            .bind(json_list(types))
            .bind(now_ms)
            .execute(conn)
            .await
            .map(|done| done.rows_affected())
    }
}

impl Reach<'_> {
    /// The condition an erasure selects on (binding `$1`), and its value.
    fn column(self) -> (&'static str, String) {
        match self {
            Reach::Event(id) => ("event_id = $1", id.to_owned()),
            // The partial index over people's events is used only when the statement
            // repeats its condition.
            Reach::Subject(subject) => {
                ("subject = $1 AND subject LIKE 'user:%'", subject.to_owned())
            }
        }
    }
}

fn head((stream_id, version, hash, halted): (String, i64, Vec<u8>, i64)) -> Head {
    Head {
        stream_id,
        version,
        hash,
        halted: halted != 0,
    }
}

/// A list of texts as one JSON array parameter.
fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}
