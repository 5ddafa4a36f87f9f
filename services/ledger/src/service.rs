//! The use cases behind the RPCs: checkpoints, proofs, status and the export of a finished
//! game. Errors are [`LedgerError`], mapped once to gRPC statuses.
//!
//! Content leaves the archive one way: [`Ledger::read`] reads rows and turns each into a
//! [`Disclosed`] through [`visibility::disclose`]; the raw rows never leave this module. So
//! every read path, now and later, shows what the visibility rule allows and nothing else.

use std::sync::Arc;

use fairdeal_db::Db;
use fairdeal_eventstore::is_event_type;
use fairdeal_kit::ServiceError;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_tlog::ProofError;
use fairdeal_tlog::entry::Salt;
use fairdeal_tlog::export::{Consistency, Content, EventLine, FORMAT, Header, Line, encode_hashes};
use prost::Message;
use uuid::Uuid;

use crate::log::{Log, LogError, Signed};
use crate::visibility::{self, Disclosure};

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

/// An inclusion proof, and what the visibility rule lets its caller see of the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inclusion {
    /// The tree size.
    pub tree_size: u64,
    /// The proof.
    pub proof: Vec<fairdeal_tlog::Hash>,
    /// The leaf and its content as disclosed.
    pub event: Disclosed,
}

/// One archived event as the visibility rule lets anyone see it: the only form in which
/// archived content leaves [`Ledger`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disclosed {
    /// The leaf index.
    pub leaf_index: u64,
    /// The stream, version and type the ledger recorded.
    pub stream_id: String,
    /// See `stream_id`.
    pub version: u64,
    /// See `stream_id`.
    pub event_type: String,
    /// The leaf and what of the event is disclosed, as the export writes it.
    pub content: Content,
}

/// The columns [`Ledger::read`] selects (`l`: the leaf, `f`: its finished game, if any).
const STORED: &str = "SELECT l.leaf_index, l.stream_id, l.stream_version, l.event_type, \
     CAST(l.leaf_format AS BIGINT), l.leaf, l.envelope, l.subject, l.body_salt, l.chain_salt, \
     f.subject IS NOT NULL \
     FROM ledger_leaves l LEFT JOIN ledger_finished f ON f.subject = l.subject";

/// A row as [`STORED`] reads it.
type StoredRow = (
    i64,
    String,
    i64,
    String,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<String>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    bool,
);

/// What the rule lets anyone see of a stored row.
fn disclosed(row: StoredRow) -> Result<Disclosed, LedgerError> {
    let (
        index,
        stream_id,
        version,
        event_type,
        format,
        leaf,
        envelope,
        subject,
        body_salt,
        chain_salt,
        finished,
    ) = row;
    let inconsistent =
        |what: String| LedgerError::Log(LogError::Inconsistent(format!("leaf {index}: {what}")));
    let salt = |name: &str, bytes: Option<Vec<u8>>| -> Result<Salt, LedgerError> {
        bytes
            .as_deref()
            .and_then(|b| Salt::try_from(b).ok())
            .ok_or_else(|| inconsistent(format!("its {name} is not 32 bytes")))
    };
    let content = match (format, leaf, envelope) {
        (1, None, Some(envelope)) => {
            // A format 1 leaf is the envelope itself: nothing of it can be shown apart, so
            // it is shown whole or not at all.
            match visibility::disclose(&event_type, subject.as_deref(), finished, false) {
                Disclosure::Full => Content::V1Envelope { envelope },
                Disclosure::Body => Content::V1Sealed {
                    disclosure: Disclosure::WithheldGame,
                    leaf_hash: fairdeal_tlog::leaf_hash(&envelope),
                },
                disclosure => Content::V1Sealed {
                    disclosure,
                    leaf_hash: fairdeal_tlog::leaf_hash(&envelope),
                },
            }
        }
        (2, Some(leaf), envelope) => {
            let erased = envelope.is_none();
            match visibility::disclose(&event_type, subject.as_deref(), finished, erased) {
                Disclosure::Full => Content::Full {
                    leaf,
                    envelope: envelope.unwrap_or_default(),
                    body_salt: salt("body salt", body_salt)?,
                    chain_salt: salt("chain salt", chain_salt)?,
                },
                Disclosure::Body => {
                    let decoded = fairdeal_proto::fairdeal::event::v1::Envelope::decode(
                        envelope.unwrap_or_default().as_slice(),
                    )
                    .map_err(|e| inconsistent(format!("its envelope does not decode: {e}")))?;
                    Content::Body {
                        leaf,
                        body: fairdeal_event::body_bytes(&decoded),
                        body_salt: salt("body salt", body_salt)?,
                    }
                }
                disclosure => Content::Sealed { disclosure, leaf },
            }
        }
        _ => {
            return Err(inconsistent(
                "neither a format 1 nor a format 2 leaf".into(),
            ));
        }
    };
    Ok(Disclosed {
        leaf_index: u64_of(index),
        stream_id,
        version: u64_of(version),
        event_type,
        content,
    })
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
        let event = self
            .read("WHERE l.event_id = $1", &id.to_string(), None)
            .await?
            .pop()
            .ok_or_else(|| LedgerError::NotFound(format!("event {id} is not in the log")))?;
        let index = event.leaf_index;
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
            tree_size: size,
            proof,
            event,
        })
    }

    /// Archived events, disclosed: `filter` is the statement's `WHERE` clause over `l` (the
    /// leaf), binding `$1` to `key` and (when given) `$2` to `below` (a leaf index bound).
    async fn read(
        &self,
        filter: &'static str,
        key: &str,
        below: Option<u64>,
    ) -> Result<Vec<Disclosed>, LedgerError> {
        let sql = sqlx::AssertSqlSafe(format!("{STORED} {filter} ORDER BY l.leaf_index"));
        let rows: Vec<StoredRow> = fairdeal_db::on_db!(self.db(), pool => {
            let mut query = sqlx::query_as(sql).bind(key);
            if let Some(below) = below {
                query = query.bind(i64_of(below));
            }
            query.fetch_all(pool).await?
        });
        rows.into_iter().map(disclosed).collect()
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
    /// The game's events are those correlated to the table: every service correlates a
    /// game's events to its table id (table, commitment session, deals, chat, rating), and
    /// the auditor requires the game's own streams whole, so an event that were not would
    /// show as a gap. A game whose table stream holds no `GameFinished` (or `TableExpired`:
    /// the table reached its latest end) yet, or whose seed is not revealed yet, exports
    /// nothing: its record is not whole before then.
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
        let events = self
            .read(
                "WHERE l.correlation_id = $1 AND l.leaf_index < $2",
                &id.to_string(),
                Some(self.log.size()),
            )
            .await?;
        if !events.iter().any(|e| e.stream_id == table_stream) {
            return Err(LedgerError::NotFound(format!(
                "table {id} is not in the log"
            )));
        }
        if !events
            .iter()
            .any(|e| e.stream_id == table_stream && visibility::ends_game(&e.event_type))
        {
            return Err(LedgerError::Precondition(format!(
                "table {id} has not finished: its game cannot be exported yet"
            )));
        }
        let seed = revealed_seed(&events, &table_stream).ok_or_else(|| {
            LedgerError::Precondition(format!(
                "table {id} finished but its seed is not revealed yet"
            ))
        })?;
        if !game_complete(&events, &table_stream) {
            return Err(LedgerError::Precondition(format!(
                "table {id} finished but the ledger has not ingested all of its game yet \
                 (the commitment's reveal and one deal per hand); retry shortly"
            )));
        }
        let last = events.last().map_or(0, |e| e.leaf_index);
        let checkpoint = self.log.checkpoint_covering(last + 1).await?;
        let mut lines = Vec::with_capacity(events.len() + 1 + previous.len());
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
        for event in events {
            let proof = self
                .log
                .inclusion_proof(event.leaf_index, checkpoint.size)
                .map_err(|e| LedgerError::Log(LogError::Inconsistent(e.to_string())))?;
            lines.push(Line::Event(EventLine::new(
                event.leaf_index,
                &proof,
                event.stream_id,
                event.version,
                event.event_type,
                &event.content,
            )));
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

/// The payload of a disclosed event of type `M`, if it is one and is disclosed whole.
fn payload<M: Message + prost::Name + Default>(event: &Disclosed) -> Option<M> {
    let envelope = match &event.content {
        Content::Full { envelope, .. } | Content::V1Envelope { envelope } => envelope,
        _ => return None,
    };
    if !is_event_type::<M>(&event.event_type) {
        return None;
    }
    fairdeal_proto::fairdeal::event::v1::Envelope::decode(envelope.as_slice())
        .ok()
        .and_then(|e| M::decode(e.payload.as_slice()).ok())
}

/// Whether the events hold the whole game the auditor requires beside the table stream: the
/// commitment service's reveal of the session and one `HandDealt` per hand played (or dealt,
/// when the table expired). Each
/// service's events reach the ledger through its own consumer (on NATS, one per source
/// stream), so the table's `GameFinished` can be in before the other services' last events;
/// an export waits for them rather than hand out a partial game.
fn game_complete(events: &[Disclosed], table_stream: &str) -> bool {
    use fairdeal_proto::fairdeal::commitment::v1 as cpb;
    use fairdeal_proto::fairdeal::dealing::v1 as dpb;
    let table_events = || events.iter().filter(|e| e.stream_id == table_stream);
    let hands_played = table_events()
        .find_map(payload::<tpb::GameFinished>)
        .map(|m| m.hands_played)
        .or_else(|| {
            table_events()
                .find_map(payload::<tpb::TableExpired>)
                .map(|m| m.hands_dealt)
        });
    let Some(hands_played) = hands_played else {
        return false;
    };
    let dealt = events
        .iter()
        .filter(|e| is_event_type::<dpb::HandDealt>(&e.event_type))
        .count();
    let revealed = events
        .iter()
        .any(|e| is_event_type::<cpb::TableSeedRevealed>(&e.event_type));
    revealed && dealt >= hands_played as usize
}

/// The server seed the table stream reveals (its `TableSeedRevealed`, recorded after
/// `GameFinished`): the export waits for it, so the table stream it holds is the whole
/// finished stream the auditor requires.
fn revealed_seed(events: &[Disclosed], table_stream: &str) -> Option<String> {
    events
        .iter()
        .filter(|e| e.stream_id == table_stream)
        .find_map(payload::<tpb::TableSeedRevealed>)
        .map(|m| m.server_seed)
        .filter(|s| !s.is_empty())
}
