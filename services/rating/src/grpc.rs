//! The tonic adapter: any authenticated caller (player or service) may read ratings, which
//! are public; requests are parsed here (INVALID_ARGUMENT naming the field), answers mapped
//! to the wire with both the rounded and the unrounded ratings.

use std::sync::Arc;

use fairdeal_authn::Caller;
use fairdeal_kit::ServiceError;
use fairdeal_kit::status::shown;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_rating::Rating;
use rpb::rating_service_server::RatingService;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::domain::GameKind;
use crate::service::RatingReads;

/// Page size when the request gives 0.
pub const DEFAULT_PAGE: u32 = 20;
/// The largest page.
pub const MAX_PAGE: u32 = 100;
/// The deepest leaderboard offset a page token may name.
pub const MAX_OFFSET: u64 = 1_000_000;

/// The tonic service.
#[derive(Debug, Clone)]
pub struct RatingApi {
    /// The projections.
    reads: Arc<dyn RatingReads>,
}

impl RatingApi {
    /// An API over `reads`.
    pub fn new(reads: Arc<dyn RatingReads>) -> Self {
        Self { reads }
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Status {
    Status::from(ServiceError::InvalidArgument(format!(
        "{field}: {}",
        reason.into()
    )))
}

fn player_id(value: &str) -> Result<Uuid, Status> {
    Uuid::parse_str(value)
        .map_err(|_| invalid("player_id", format!("\"{}\" is not a UUID", shown(value))))
}

fn game_kind(value: &str) -> Result<GameKind, Status> {
    GameKind::parse(value).ok_or_else(|| {
        let kinds: Vec<&str> = GameKind::ALL.iter().map(|k| k.as_str()).collect();
        invalid(
            "game_kind",
            format!(
                "\"{}\" is not a game kind ({})",
                shown(value),
                kinds.join(", ")
            ),
        )
    })
}

fn page_size(value: u32) -> Result<u32, Status> {
    match value {
        0 => Ok(DEFAULT_PAGE),
        n @ 1..=MAX_PAGE => Ok(n),
        n => Err(invalid(
            "page_size",
            format!("{n} is out of range (1..={MAX_PAGE})"),
        )),
    }
}

/// A page token: a decimal number in `1..=max` (empty: `None`).
fn page_token(value: &str, max: u64) -> Result<Option<u64>, Status> {
    if value.is_empty() {
        return Ok(None);
    }
    value
        .parse::<u64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .map(Some)
        .ok_or_else(|| {
            invalid(
                "page_token",
                format!("\"{}\" is not a token of this list", shown(value)),
            )
        })
}

/// The rating as shown.
fn rounded(value: f64) -> i64 {
    // Stored ratings are finite; a corrupt one shows as 0 rather than failing a read.
    Rating::new(value).map_or(0, |r| r.rounded() as i64)
}

fn caller<T>(request: &Request<T>) -> Result<(), Status> {
    Caller::from_request(request).map(|_| ())
}

#[tonic::async_trait]
impl RatingService for RatingApi {
    #[tracing::instrument(skip_all)]
    async fn get_ratings(
        &self,
        request: Request<rpb::GetRatingsRequest>,
    ) -> Result<Response<rpb::GetRatingsResponse>, Status> {
        caller(&request)?;
        let player = player_id(&request.get_ref().player_id)?;
        let ratings = self
            .reads
            .ratings(player)
            .await
            .map_err(ServiceError::from)?;
        Ok(Response::new(rpb::GetRatingsResponse {
            player_id: player.to_string(),
            ratings: ratings
                .into_iter()
                .map(|r| rpb::KindRating {
                    game_kind: r.kind,
                    rating: rounded(r.rating),
                    rating_unrounded: r.rating,
                    games_played: r.games_played,
                })
                .collect(),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn list_rating_history(
        &self,
        request: Request<rpb::ListRatingHistoryRequest>,
    ) -> Result<Response<rpb::ListRatingHistoryResponse>, Status> {
        caller(&request)?;
        let r = request.get_ref();
        let player = player_id(&r.player_id)?;
        let kind = match r.game_kind.as_str() {
            "" => None,
            kind => Some(game_kind(kind)?),
        };
        let limit = page_size(r.page_size)?;
        let below = page_token(&r.page_token, i64::MAX as u64)?.unwrap_or(i64::MAX as u64);
        let page = self
            .reads
            .history(player, kind, below, limit)
            .await
            .map_err(ServiceError::from)?;
        Ok(Response::new(rpb::ListRatingHistoryResponse {
            entries: page
                .entries
                .into_iter()
                .map(|(version, change)| rpb::HistoryEntry {
                    version,
                    rating_after_rounded: rounded(change.rating_after),
                    change: Some(change),
                })
                .collect(),
            next_page_token: page.next.map(|v| v.to_string()).unwrap_or_default(),
        }))
    }

    #[tracing::instrument(skip_all)]
    async fn get_leaderboard(
        &self,
        request: Request<rpb::GetLeaderboardRequest>,
    ) -> Result<Response<rpb::GetLeaderboardResponse>, Status> {
        caller(&request)?;
        let r = request.get_ref();
        let kind = game_kind(&r.game_kind)?;
        let limit = page_size(r.page_size)?;
        let offset = page_token(&r.page_token, MAX_OFFSET)?.unwrap_or(0);
        let page = self
            .reads
            .board(kind, r.min_games, offset, limit)
            .await
            .map_err(ServiceError::from)?;
        Ok(Response::new(rpb::GetLeaderboardResponse {
            game_kind: kind.as_str().to_owned(),
            entries: page
                .entries
                .into_iter()
                .map(|e| rpb::LeaderboardEntry {
                    rank: e.rank,
                    player_id: e.player_id,
                    rating: rounded(e.rating),
                    rating_unrounded: e.rating,
                    games_played: e.games_played,
                })
                .collect(),
            next_page_token: page
                .next
                .filter(|n| *n <= MAX_OFFSET)
                .map(|n| n.to_string())
                .unwrap_or_default(),
        }))
    }
}
