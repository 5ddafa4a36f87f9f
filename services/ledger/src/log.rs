//! The log: the in-memory RFC 9162 tree over the archive's leaves, rebuilt from the archive at
//! start and extended by a follower as leaves commit, and the signed checkpoints.
//!
//! The archive is the truth; the tree is a cache of its leaf hashes (64 bytes a leaf) that
//! answers roots and proofs at any past size in O(log n). At start every leaf (format 2: its
//! 65 bytes; format 1: its envelope) is re-hashed, the leaf indexes must be dense from 0, and the latest stored checkpoint must
//! be the root of the rebuilt tree at its size (otherwise the archive was altered and the
//! ledger refuses to start).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fairdeal_db::Db;
use fairdeal_tlog::{Checkpoint, Hash, NoteSigner, ProofError, Tree, leaf_hash};
use parking_lot::RwLock;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Rows read per query while rebuilding or following.
const PAGE: i64 = 5_000;

/// How often the follower looks for committed leaves without a wake-up (a wake-up comes
/// before its batch commits, so this also bounds the delay after one).
const FOLLOW_POLL: Duration = Duration::from_millis(50);

/// A signed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The signed note.
    pub note: String,
    /// Its tree size.
    pub size: u64,
    /// Its root hash.
    pub root: Hash,
}

/// Why the log could not be opened or extended.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The database failed.
    #[error("archive: {0}")]
    Database(#[from] sqlx::Error),
    /// The archive does not match itself (a gap in leaf indexes, a checkpoint whose root is
    /// not the tree's): it was altered outside the ledger.
    #[error("archive inconsistent: {0}")]
    Inconsistent(String),
    /// A checkpoint could not be formed.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
}

/// The tree and its checkpoints.
#[derive(Debug)]
pub struct Log {
    db: Db,
    signer: NoteSigner,
    state: RwLock<State>,
    /// One signer at a time (the timer and an export may both want a checkpoint).
    signing: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    tree: Tree,
    latest: Option<Signed>,
}

fn i64_of(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Log {
    /// Rebuilds the tree from the archive of `db` and loads the latest checkpoint, which
    /// must match it. Checkpoints are signed by `signer` (its name is the log's origin).
    pub async fn open(db: Db, signer: NoteSigner) -> Result<Arc<Self>, LogError> {
        let log = Arc::new(Self {
            db,
            signer,
            state: RwLock::new(State::default()),
            signing: tokio::sync::Mutex::new(()),
        });
        log.catch_up().await?;
        let latest: Option<(i64, Vec<u8>, String)> = fairdeal_db::on_db!(log.db(), pool => {
            sqlx::query_as(
                "SELECT tree_size, root_hash, note FROM ledger_checkpoints \
                 ORDER BY tree_size DESC LIMIT 1",
            )
            .fetch_optional(pool)
            .await?
        });
        if let Some((size, root, note)) = latest {
            let size = u64::try_from(size).unwrap_or(u64::MAX);
            let root = Hash::try_from(root.as_slice())
                .map_err(|_| LogError::Inconsistent("a checkpoint root is not 32 bytes".into()))?;
            let ours =
                log.state.read().tree.root_at(size).map_err(|e| {
                    LogError::Inconsistent(format!("checkpoint of size {size}: {e}"))
                })?;
            if ours != root {
                return Err(LogError::Inconsistent(format!(
                    "the checkpoint of size {size} is not the root of the archive's leaves"
                )));
            }
            log.state.write().latest = Some(Signed { note, size, root });
        }
        Ok(log)
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The log's origin (its key's name).
    pub fn origin(&self) -> &str {
        self.signer.name()
    }

    /// Leaves in the tree.
    pub fn size(&self) -> u64 {
        self.state.read().tree.size()
    }

    /// The latest signed checkpoint.
    pub fn latest(&self) -> Option<Signed> {
        self.state.read().latest.clone()
    }

    /// Runs `f` on the tree.
    pub fn with_tree<R>(&self, f: impl FnOnce(&Tree) -> R) -> R {
        f(&self.state.read().tree)
    }

    /// The inclusion proof of leaf `index` at `size`.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        self.state.read().tree.inclusion_proof(index, size)
    }

    /// The consistency proof from `old` to `new`.
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>, ProofError> {
        self.state.read().tree.consistency_proof(old, new)
    }

    /// Appends the committed leaves the tree does not have yet; returns how many.
    pub async fn catch_up(&self) -> Result<u64, LogError> {
        let mut added = 0;
        loop {
            let from = self.size();
            // The leaf bytes: format 2 rows keep them in `leaf`, format 1 rows are their
            // envelope.
            let rows: Vec<(i64, Vec<u8>)> = fairdeal_db::on_db!(self.db(), pool => {
                sqlx::query_as(
                    "SELECT leaf_index, CASE WHEN leaf_format = 2 THEN leaf ELSE envelope END \
                     FROM ledger_leaves WHERE leaf_index >= $1 ORDER BY leaf_index LIMIT $2",
                )
                .bind(i64_of(from))
                .bind(PAGE)
                .fetch_all(pool)
                .await?
            });
            if rows.is_empty() {
                return Ok(added);
            }
            let count = rows.len();
            let hashes = rows
                .iter()
                .enumerate()
                .map(|(i, (index, leaf))| {
                    let expected = from + i as u64;
                    if u64::try_from(*index).ok() == Some(expected) {
                        Ok(leaf_hash(leaf))
                    } else {
                        Err(LogError::Inconsistent(format!(
                            "leaf {index} where leaf {expected} was expected"
                        )))
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            {
                let mut state = self.state.write();
                // Another caller may have appended meanwhile: only ours if still in place.
                if state.tree.size() == from {
                    state.tree.extend(hashes);
                    added += count as u64;
                }
            }
            if count < PAGE as usize {
                return Ok(added);
            }
        }
    }

    /// Signs a checkpoint of the current tree (or returns the latest one when the tree has
    /// not grown since), stores it and makes it the latest.
    pub async fn sign(&self) -> Result<Signed, LogError> {
        let _one = self.signing.lock().await;
        let (size, root) = {
            let state = self.state.read();
            if let Some(latest) = &state.latest
                && latest.size == state.tree.size()
            {
                return Ok(latest.clone());
            }
            (state.tree.size(), state.tree.root())
        };
        let note = Checkpoint::new(self.signer.name(), size, root)
            .map_err(|e| LogError::Checkpoint(e.to_string()))?
            .sign(&self.signer);
        fairdeal_db::on_db!(self.db(), pool => {
            sqlx::query(
                "INSERT INTO ledger_checkpoints (tree_size, root_hash, note, signed_at_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (tree_size) DO NOTHING",
            )
            .bind(i64_of(size))
            .bind(root.to_vec())
            .bind(&note)
            .bind(now_ms())
            .execute(pool)
            .await
            .map(|_| ())?
        });
        let signed = Signed { note, size, root };
        self.state.write().latest = Some(signed.clone());
        tracing::debug!(tree_size = size, "checkpoint signed");
        Ok(signed)
    }

    /// A checkpoint covering at least `size` leaves: the latest if it does, else a new one
    /// (after catching up with the archive).
    pub async fn checkpoint_covering(&self, size: u64) -> Result<Signed, LogError> {
        if let Some(latest) = self.latest()
            && latest.size >= size
        {
            return Ok(latest);
        }
        self.catch_up().await?;
        self.sign().await
    }
}

/// When the follower signs checkpoints.
#[derive(Debug, Clone, Copy)]
pub struct CheckpointPolicy {
    /// At most this long after a leaf arrives.
    pub interval: Duration,
    /// Or as soon as this many leaves arrived since the last checkpoint.
    pub leaves: u64,
}

/// Follows the archive into the tree and signs checkpoints by `policy`, until `stop`. When
/// `scrub` is set (a committed batch erased content), it also scrubs the database's files so
/// the erased bytes do not linger there ([`Db::scrub`]).
pub async fn follow(
    log: Arc<Log>,
    appended: Arc<Notify>,
    scrub: Arc<AtomicBool>,
    policy: CheckpointPolicy,
    stop: CancellationToken,
) {
    let mut last_signed = Instant::now();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = appended.notified() => {}
            () = tokio::time::sleep(FOLLOW_POLL) => {}
        }
        if let Err(e) = log.catch_up().await {
            tracing::error!(error = %e, "ledger: reading the archive failed");
            continue;
        }
        if scrub.swap(false, Ordering::AcqRel)
            && let Err(e) = log.db().scrub().await
        {
            scrub.store(true, Ordering::Release);
            tracing::warn!(error = %e, "ledger: scrubbing erased content from the files failed; retrying");
        }
        let size = log.size();
        let signed = log.latest().map_or(0, |s| s.size);
        let due = log.latest().is_none()
            || (size > signed
                && (size - signed >= policy.leaves || last_signed.elapsed() >= policy.interval));
        if due {
            match log.sign().await {
                Ok(_) => last_signed = Instant::now(),
                Err(e) => tracing::error!(error = %e, "ledger: signing a checkpoint failed"),
            }
        }
    }
}
