//! The use cases behind the RPCs: checkpoints, proofs, status and the export of a finished
//! game. Errors are [`LedgerError`], mapped once to gRPC statuses.

use std::sync::Arc;

use fairdeal_db::Db;
use fairdeal_eventstore::is_event_type;
use fairdeal_kit::ServiceError;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_tlog::ProofError;
use fairdeal_tlog::export::{
    Consistency, EventLine, FORMAT, Header, Line, encode_bytes, encode_hashes,
};
use prost::Message;
use uuid::Uuid;

use crate::log::{Log, LogError, Signed};

/// At most this many consistency proofs per export.
pub const MAX_PREVIOUS: usize = 8;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// A malformed request; the message names the field.
    #[error("{0}")]
    Invalid(String),
    /// Nothing of that id.
    #[error("{0}")]
    NotFound(String),
    /// Valid, but not now (a size beyond the log, a game not finished).
    #[error("{0}")]
    Precondition(String),
    /// The archive or the tree failed.
    #[error(transparent)]
    Log(#[from] LogError),
}

impl From<sqlx::Error> for LedgerError {
    fn from(error: sqlx::Error) -> Self {
        LedgerError::Log(LogError::Database(error))
    }
}

impl From<LedgerError> for ServiceError {
    fn from(error: LedgerError) -> Self {
        match error {
            LedgerError::Invalid(m) => ServiceError::InvalidArgument(m),
            LedgerError::NotFound(m) => ServiceError::NotFound(m),
            LedgerError::Precondition(m) => ServiceError::FailedPrecondition(m),
            LedgerError::Log(LogError::Database(e)) => {
                ServiceError::unavailable("ledger archive unavailable", e)
            }
            LedgerError::Log(e) => ServiceError::internal(e),
        }
    }
}

/// A proof error for sizes the caller chose.
fn proof_error(field: &str, error: ProofError) -> LedgerError {
    LedgerError::Precondition(format!("{field}: {error}"))
}

/// An inclusion proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inclusion {
    /// The leaf index.
    pub leaf_index: u64,
    /// The tree size.
    pub tree_size: u64,
    /// The proof.
    pub proof: Vec<fairdeal_tlog::Hash>,
    /// The leaf bytes.
    pub envelope: Vec<u8>,
}

/// Counters for `GetStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Leaves in the tree.
    pub tree_size: u64,
    /// The latest checkpoint's size.
    pub checkpoint_size: u64,
    /// Halted streams.
    pub halted_streams: u64,
    /// Refused events.
    pub refused_events: u64,
}

/// The ledger's use cases.
#[derive(Debug, Clone)]
pub struct Ledger {
    log: Arc<Log>,
}

/// One archived row of a game.
type Row = (i64, String, i64, String, Vec<u8>);

fn u64_of(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn i64_of(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A UUID field: at most 45 characters, parsed.
pub fn parse_uuid(field: &str, value: &str) -> Result<Uuid, LedgerError> {
    if value.is_empty() {
        return Err(LedgerError::Invalid(format!("{field} is required")));
    }
    if value.len() > 45 {
        return Err(LedgerError::Invalid(format!("{field} is not a UUID")));
    }
    Uuid::parse_str(value).map_err(|_| LedgerError::Invalid(format!("{field} is not a UUID")))
}

impl Ledger {
    /// The use cases over `log`.
    pub fn new(log: Arc<Log>) -> Self {
        Self { log }
    }

    fn db(&self) -> &Db {
        self.log.db()
    }

    /// The latest checkpoint (signing the first one when there is none yet).
    pub async fn checkpoint(&self) -> Result<Signed, LedgerError> {
        match self.log.latest() {
            Some(latest) => Ok(latest),
            None => Ok(self.log.sign().await?),
        }
    }

    /// The size a request names: 0 means the latest checkpoint's.
    async fn size_or_latest(&self, field: &str, size: u64) -> Result<u64, LedgerError> {
        if size == 0 {
            return Ok(self.checkpoint().await?.size);
        }
        if size > self.log.size() {
            return Err(LedgerError::Precondition(format!(
                "{field} {size} is beyond the log's size {}",
                self.log.size()
            )));
        }
        Ok(size)
    }

    /// The inclusion proof of event `event_id` at `tree_size` (0: the latest checkpoint's).
    pub async fn inclusion(
        &self,
        event_id: &str,
        tree_size: u64,
    ) -> Result<Inclusion, LedgerError> {
        let id = parse_uuid("event_id", event_id)?;
        let size = self.size_or_latest("tree_size", tree_size).await?;
        let row: Option<(i64, Vec<u8>)> = fairdeal_db::on_db!(self.db(), pool => {
            sqlx::query_as("SELECT leaf_index, envelope FROM ledger_leaves WHERE event_id = $1")
                .bind(id.to_string())
                .fetch_optional(pool)
                .await?
        });
        let Some((index, envelope)) = row else {
            return Err(LedgerError::NotFound(format!(
                "event {id} is not in the log"
            )));
        };
        let index = u64_of(index);
        if index >= size {
            return Err(LedgerError::Precondition(format!(
                "event {id} is leaf {index}, not in the tree of size {size}"
            )));
        }
        let proof = self
            .log
            .inclusion_proof(index, size)
            .map_err(|e| proof_error("tree_size", e))?;
        Ok(Inclusion {
            leaf_index: index,
            tree_size: size,
            proof,
            envelope,
        })
    }

    /// The consistency proof from `old_size` to `new_size` (0: the latest checkpoint's).
    pub async fn consistency(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> Result<(u64, u64, Vec<fairdeal_tlog::Hash>), LedgerError> {
        let new_size = self.size_or_latest("new_size", new_size).await?;
        if old_size == 0 {
            return Err(LedgerError::Invalid("old_size must be at least 1".into()));
        }
        if old_size > new_size {
            return Err(LedgerError::Invalid(format!(
                "old_size {old_size} is above new_size {new_size}"
            )));
        }
        let proof = self
            .log
            .consistency_proof(old_size, new_size)
            .map_err(|e| proof_error("old_size", e))?;
        Ok((old_size, new_size, proof))
    }

    /// Counters.
    pub async fn status(&self) -> Result<Status, LedgerError> {
        let (halted, refused): (i64, i64) = fairdeal_db::on_db!(self.db(), pool => {
            sqlx::query_as(
                "SELECT COUNT(DISTINCT stream_id), COUNT(*) FROM ledger_refused",
            )
            .fetch_one(pool)
            .await?
        });
        Ok(Status {
            tree_size: self.log.size(),
            checkpoint_size: self.log.latest().map_or(0, |s| s.size),
            halted_streams: u64_of(halted),
            refused_events: u64_of(refused),
        })
    }

    /// The export of finished game `table_id` as NDJSON lines (see
    /// `fairdeal_tlog::export`), with consistency proofs from each of `previous` sizes.
    ///
    /// The game's events are those correlated to the table (every service correlates a
    /// game's events to its table id: table, commitment, deals, chat, rating) and the
    /// table's own streams (`table-`, `commitmenttable-`, `deals-<id>`). A game whose table
    /// stream holds no `GameFinished` yet, or whose seed is not revealed yet, exports
    /// nothing: before the end its hands and deals are private.
    pub async fn export_game(
        &self,
        table_id: &str,
        previous: &[u64],
    ) -> Result<Vec<String>, LedgerError> {
        let id = parse_uuid("table_id", table_id)?;
        if previous.len() > MAX_PREVIOUS {
            return Err(LedgerError::Invalid(format!(
                "previous_tree_sizes: at most {MAX_PREVIOUS}"
            )));
        }
        self.log.catch_up().await?;
        let table_stream = format!("table-{id}");
        let rows: Vec<Row> = fairdeal_db::on_db!(self.db(), pool => {
            sqlx::query_as(
                "SELECT leaf_index, stream_id, stream_version, event_type, envelope \
                 FROM ledger_leaves WHERE (correlation_id = $1 OR stream_id IN ($2, $3, $4)) \
                 AND leaf_index < $5 ORDER BY leaf_index",
            )
            .bind(id.to_string())
            .bind(&table_stream)
            .bind(format!("commitmenttable-{id}"))
            .bind(format!("deals-{id}"))
            .bind(i64_of(self.log.size()))
            .fetch_all(pool)
            .await?
        });
        if !rows.iter().any(|r| r.1 == table_stream) {
            return Err(LedgerError::NotFound(format!(
                "table {id} is not in the log"
            )));
        }
        if !rows
            .iter()
            .any(|r| r.1 == table_stream && is_event_type::<tpb::GameFinished>(&r.3))
        {
            return Err(LedgerError::Precondition(format!(
                "table {id} has not finished: its game cannot be exported yet"
            )));
        }
        let seed = revealed_seed(&rows, &table_stream).ok_or_else(|| {
            LedgerError::Precondition(format!(
                "table {id} finished but its seed is not revealed yet"
            ))
        })?;
        if !game_complete(&rows, &table_stream) {
            return Err(LedgerError::Precondition(format!(
                "table {id} finished but the ledger has not ingested all of its game yet \
                 (the commitment's reveal and one deal per hand); retry shortly"
            )));
        }
        let last = rows.last().map_or(0, |r| u64_of(r.0));
        let checkpoint = self.log.checkpoint_covering(last + 1).await?;
        let mut lines = Vec::with_capacity(rows.len() + 1 + previous.len());
        lines.push(Line::Header(Header {
            format: FORMAT.into(),
            table_id: id.to_string(),
            checkpoint: checkpoint.note.clone(),
            server_seed: seed,
        }));
        for &old in previous {
            if old == 0 || old > checkpoint.size {
                return Err(LedgerError::Invalid(format!(
                    "previous_tree_sizes: {old} is not in 1..={}",
                    checkpoint.size
                )));
            }
            let proof = self
                .log
                .consistency_proof(old, checkpoint.size)
                .map_err(|e| proof_error("previous_tree_sizes", e))?;
            lines.push(Line::Consistency(Consistency {
                old_size: old,
                proof: encode_hashes(&proof),
            }));
        }
        for (index, stream_id, version, event_type, envelope) in rows {
            let index = u64_of(index);
            let proof = self
                .log
                .inclusion_proof(index, checkpoint.size)
                .map_err(|e| LedgerError::Log(LogError::Inconsistent(e.to_string())))?;
            lines.push(Line::Event(EventLine {
                leaf_index: index,
                stream_id,
                version: u64_of(version),
                event_type,
                envelope: encode_bytes(&envelope),
                proof: encode_hashes(&proof),
            }));
        }
        lines
            .iter()
            .map(|l| {
                serde_json::to_string(l)
                    .map_err(|e| LedgerError::Log(LogError::Inconsistent(e.to_string())))
            })
            .collect()
    }
}

/// Whether the rows hold the whole game the auditor requires beside the table stream: the
/// commitment service's reveal of the session and one `HandDealt` per hand played. Each
/// service's events reach the ledger through its own consumer (on NATS, one per source
/// stream), so the table's `GameFinished` can be in before the other services' last events;
/// an export waits for them rather than hand out a partial game.
fn game_complete(rows: &[Row], table_stream: &str) -> bool {
    use fairdeal_proto::fairdeal::commitment::v1 as cpb;
    use fairdeal_proto::fairdeal::dealing::v1 as dpb;
    let hands_played = rows
        .iter()
        .filter(|r| r.1 == table_stream && is_event_type::<tpb::GameFinished>(&r.3))
        .find_map(|r| {
            fairdeal_proto::fairdeal::event::v1::Envelope::decode(r.4.as_slice())
                .ok()
                .and_then(|e| tpb::GameFinished::decode(e.payload.as_slice()).ok())
                .map(|m| m.hands_played)
        });
    let Some(hands_played) = hands_played else {
        return false;
    };
    let dealt = rows
        .iter()
        .filter(|r| is_event_type::<dpb::HandDealt>(&r.3))
        .count();
    let revealed = rows
        .iter()
        .any(|r| is_event_type::<cpb::TableSeedRevealed>(&r.3));
    revealed && dealt >= hands_played as usize
}

/// The server seed the table stream reveals (its `TableSeedRevealed`, recorded after
/// `GameFinished`): the export waits for it, so the table stream it holds is the whole
/// finished stream the auditor requires.
fn revealed_seed(rows: &[Row], table_stream: &str) -> Option<String> {
    rows.iter()
        .filter(|r| r.1 == table_stream && is_event_type::<tpb::TableSeedRevealed>(&r.3))
        .find_map(|r| {
            fairdeal_proto::fairdeal::event::v1::Envelope::decode(r.4.as_slice())
                .ok()
                .and_then(|e| tpb::TableSeedRevealed::decode(e.payload.as_slice()).ok())
                .map(|m| m.server_seed)
        })
        .filter(|s| !s.is_empty())
}
