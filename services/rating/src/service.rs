//! The reads (use cases) over the projections: a player's ratings, their history a page at
//! a time (newest first, keyed by stream version), a game kind's leaderboard a page at a
//! time (highest first, ties by player id). SQL written once for both backends.

use std::sync::Arc;

use async_trait::async_trait;
use fairdeal_kit::ServiceError;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use prost::Message;
use sqlx::Row;
use uuid::Uuid;

use crate::domain::GameKind;

/// A player's rating in one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct KindRating {
    /// The kind's name.
    pub kind: String,
    /// Unrounded.
    pub rating: f64,
    /// Rated games of the kind.
    pub games_played: u32,
}

/// One page of a player's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    /// (stream version, the change), newest first.
    pub entries: Vec<(u64, rpb::RatingChanged)>,
    /// The version to continue below, when there may be more.
    pub next: Option<u64>,
}

/// One leaderboard line.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardEntry {
    /// 1-based.
    pub rank: u64,
    /// The player (as stored: a UUID).
    pub player_id: String,
    /// Unrounded.
    pub rating: f64,
    /// Rated games of the kind.
    pub games_played: u32,
}

/// One page of a leaderboard.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardPage {
    /// The lines, rank order.
    pub entries: Vec<BoardEntry>,
    /// The offset to continue from, when there may be more.
    pub next: Option<u64>,
}

/// Why a read failed (the caller's mistakes are refused earlier, in `grpc`).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The database failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored row does not decode.
    #[error("corrupt projection: {0}")]
    Corrupt(String),
}

impl From<ReadError> for ServiceError {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::Database(_) => ServiceError::Unavailable {
                message: "rating store unavailable".into(),
                cause: Some(Box::new(error)),
            },
            ReadError::Corrupt(_) => ServiceError::internal(error),
        }
    }
}

/// The reads, on either backend.
#[async_trait]
pub trait RatingReads: Send + Sync + std::fmt::Debug {
    /// Every kind the player has a rating in, by kind.
    async fn ratings(&self, player: Uuid) -> Result<Vec<KindRating>, ReadError>;
    /// Up to `limit` changes of `player` (of `kind` only, if given) with a version below
    /// `below`, newest first.
    async fn history(
        &self,
        player: Uuid,
        kind: Option<GameKind>,
        below: u64,
        limit: u32,
    ) -> Result<HistoryPage, ReadError>;
    /// Up to `limit` players of `kind` with at least `min_games`, from rank `offset + 1`.
    async fn board(
        &self,
        kind: GameKind,
        min_games: u32,
        offset: u64,
        limit: u32,
    ) -> Result<BoardPage, ReadError>;
}

/// [`RatingReads`] over a pool.
#[derive(Debug)]
struct SqlReads<DB: sqlx::Database> {
    pool: sqlx::Pool<DB>,
}

/// The reads over `db`.
pub fn reads(db: &fairdeal_db::Db) -> Arc<dyn RatingReads> {
    fairdeal_db::on_db!(db, pool => Arc::new(SqlReads { pool: pool.clone() }) as Arc<dyn RatingReads>)
}

fn games(value: i64) -> Result<u32, ReadError> {
    u32::try_from(value).map_err(|_| ReadError::Corrupt(format!("games_played {value}")))
}

fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fairdeal_db::for_each_backend! { DB =>
    #[async_trait]
    impl RatingReads for SqlReads<DB> {
        async fn ratings(&self, player: Uuid) -> Result<Vec<KindRating>, ReadError> {
            let rows = sqlx::query(
                "SELECT game_kind, rating, games_played FROM ratings \
                 WHERE player_id = $1 ORDER BY game_kind",
            )
            .bind(player.to_string())
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(KindRating {
                        kind: row.try_get("game_kind")?,
                        rating: row.try_get("rating")?,
                        games_played: games(row.try_get("games_played")?)?,
                    })
                })
                .collect()
        }

        async fn history(
            &self,
            player: Uuid,
            kind: Option<GameKind>,
            below: u64,
            limit: u32,
        ) -> Result<HistoryPage, ReadError> {
            let rows = sqlx::query(
                "SELECT version, payload FROM rating_history \
                 WHERE player_id = $1 AND ($2 = '' OR game_kind = $2) AND version < $3 \
                 ORDER BY version DESC LIMIT $4",
            )
            .bind(player.to_string())
            .bind(kind.map_or("", GameKind::as_str))
            .bind(as_i64(below))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
            let mut entries = Vec::with_capacity(rows.len());
            for row in &rows {
                let version: i64 = row.try_get("version")?;
                let payload: Vec<u8> = row.try_get("payload")?;
                let change = rpb::RatingChanged::decode(payload.as_slice())
                    .map_err(|e| ReadError::Corrupt(format!("history payload: {e}")))?;
                let version = u64::try_from(version)
                    .map_err(|_| ReadError::Corrupt(format!("history version {version}")))?;
                entries.push((version, change));
            }
            let next = (entries.len() == limit as usize)
                .then(|| entries.last().map(|(v, _)| *v))
                .flatten();
            Ok(HistoryPage { entries, next })
        }

        async fn board(
            &self,
            kind: GameKind,
            min_games: u32,
            offset: u64,
            limit: u32,
        ) -> Result<BoardPage, ReadError> {
            let rows = sqlx::query(
                "SELECT player_id, rating, games_played FROM ratings \
                 WHERE game_kind = $1 AND games_played >= $2 \
                 ORDER BY rating DESC, player_id LIMIT $3 OFFSET $4",
            )
            .bind(kind.as_str())
            .bind(i64::from(min_games))
            .bind(i64::from(limit))
            .bind(as_i64(offset))
            .fetch_all(&self.pool)
            .await?;
            let mut entries = Vec::with_capacity(rows.len());
            for (i, row) in rows.iter().enumerate() {
                entries.push(BoardEntry {
                    rank: offset + i as u64 + 1,
                    player_id: row.try_get("player_id")?,
                    rating: row.try_get("rating")?,
                    games_played: games(row.try_get("games_played")?)?,
                });
            }
            let next = (entries.len() == limit as usize).then(|| offset + u64::from(limit));
            Ok(BoardPage { entries, next })
        }
    }
}
