//! The consumer of the tables' events (`rating`) and the projections it keeps.
//!
//! For each `fairdeal.tables.v1.GameFinished`, inside the bus's transaction (so the event id
//! the bus records, the `RatingChanged` events and the projections commit together, or not
//! at all): read the game, decide whether it is rated ([`crate::domain`]), read the
//! players' ratings in its kind from the `ratings` projection, compute the changes with
//! crates/rating, append one `RatingChanged` per player to `rating-<player>` with the
//! stream version the projection knows (`ExpectedVersion::Exact`: a concurrent writer makes
//! the batch fail and retry instead of rating from stale values), and update `ratings` and
//! `rating_history` from the very events appended ([`apply`], also what [`rebuild`] runs).
//!
//! Parked (dead-lettered with an error line, the consumer carries on): a `GameFinished` that
//! does not decode or is inconsistent, and any event of a table stream whose type is not
//! the tables service's (an unknown event). The tables' other events are not wanted and
//! only advance the position.

use std::collections::HashMap;
use std::future::Future;

use fairdeal_bus::{AppendSignal, Handler, HandlerError};
use fairdeal_eventstore::{
    AnyEventStore, EventBackend, EventStore, ExpectedVersion, NewEvent, PgEventStore,
    RecordedEvent, SqliteEventStore, StoreError, StreamId,
};
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating::{
    DEFAULT_RATING, Exactness, KFactor, Opponents, Rating, RecordedChange, Score,
};
use prost::Message;
use sqlx::{Row, Transaction};
use uuid::Uuid;

use crate::events::{Malformed, rating_changed, read_game};

/// The consumer's durable name.
pub const CONSUMER: &str = "rating";

/// The service's migrations (ratings and history), both backends.
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "fairdeal_rating",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// The prefix of every event type of the tables service.
const TABLES_PACKAGE: &str = "fairdeal.tables.v1.";

/// Rates finished games (see the module docs).
#[derive(Debug, Clone)]
pub struct Ratings {
    /// The event store, appended to inside the consumer's transaction.
    events: AnyEventStore,
    /// Fired once the consumer's transaction commits: wakes the relay and readers.
    signal: AppendSignal,
    /// K of every change.
    k: KFactor,
}

impl Ratings {
    /// A consumer appending to `storage`'s log with `k`.
    pub fn new(storage: &fairdeal_platform::Storage, k: KFactor) -> Self {
        Self {
            events: storage.backend().clone(),
            signal: storage.signal().clone(),
            k,
        }
    }
}

/// A player's stream, `rating-<uuid>`.
pub fn stream_of(player: Uuid) -> Result<StreamId, fairdeal_eventstore::EventError> {
    StreamId::of("rating", player)
}

fn permanent(reason: impl std::fmt::Display) -> HandlerError {
    HandlerError::permanent(reason.to_string())
}

/// The stored store of a backend (the consumer holds the backend-neutral one).
trait StoreOf: EventBackend {
    fn store_of(any: &AnyEventStore) -> Option<&Self::Store>;
}

impl StoreOf for sqlx::Postgres {
    fn store_of(any: &AnyEventStore) -> Option<&PgEventStore> {
        match any {
            AnyEventStore::Postgres(store) => Some(store),
            AnyEventStore::Sqlite(_) => None,
        }
    }
}

impl StoreOf for sqlx::Sqlite {
    fn store_of(any: &AnyEventStore) -> Option<&SqliteEventStore> {
        match any {
            AnyEventStore::Sqlite(store) => Some(store),
            AnyEventStore::Postgres(_) => None,
        }
    }
}

/// An append failure inside the handler: a version conflict or a lost race is worth
/// retrying (the batch is re-read from the projections), anything else too unless the
/// events themselves are invalid.
fn append_error(error: StoreError) -> HandlerError {
    match error {
        StoreError::InvalidEvent(_) => permanent(error),
        other => HandlerError::transient(other),
    }
}

/// A rating as stored.
fn stored_rating(value: f64) -> Result<Rating, HandlerError> {
    Rating::new(value).map_err(|e| HandlerError::permanent(format!("stored rating: {e}")))
}

fn to_u32(value: i64, what: &str) -> Result<u32, HandlerError> {
    u32::try_from(value).map_err(|_| permanent(format!("stored {what} {value} is out of range")))
}

fairdeal_db::for_each_backend! { DB =>
    impl Handler<DB> for Ratings {
        async fn handle(
            &self,
            event: &RecordedEvent,
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            if !event.is::<tpb::GameFinished>() {
                return Err(permanent(format!(
                    "unknown event type {:?} in a table stream",
                    fairdeal_kit::status::shown(&event.event_type)
                )));
            }
            let game = read_game(event).map_err(|e: Malformed| permanent(e))?;
            let players = match game.players() {
                Ok(players) => players,
                Err(reason) => {
                    tracing::info!(table_id = %game.table_id(), %reason, "game not rated");
                    return Ok(());
                }
            };
            let table = game.table_id().to_string();
            let kind = game.kind().as_str();
            let rated: Option<String> =
                sqlx::query_scalar("SELECT table_id FROM rating_history WHERE table_id = $1 LIMIT 1")
                    .bind(&table)
                    .fetch_optional(&mut **tx)
                    .await?;
            if rated.is_some() {
                // Another GameFinished of the same table (never sent twice by the tables
                // service; the bus already drops redeliveries of one event).
                tracing::warn!(table_id = %table, "game already rated; ignored");
                return Ok(());
            }
            // The players' ratings in this kind and their streams' versions, in one
            // statement each (the players are distinct: `players` checked it).
            let ids: Vec<String> = players.iter().map(Uuid::to_string).collect();
            let seats = ids.len();
            let mut before = vec![DEFAULT_RATING; seats];
            let mut games = vec![0u32; seats];
            let mut versions = vec![0u64; seats];
            // One primary-key lookup per seat in one statement (point lookups whatever the
            // plan), each row tagged with its seat.
            let mut lookups = sqlx::QueryBuilder::<DB>::new("");
            for (seat, id) in ids.iter().enumerate() {
                if seat > 0 {
                    lookups.push(" UNION ALL ");
                }
                // The seat is a number below 5: a literal, typed as the column of the
                // first branch on PostgreSQL.
                lookups
                    .push(format_args!(
                        "SELECT {seat} AS seat, rating, games_played FROM ratings WHERE player_id = "
                    ))
                    .push_bind(id.clone())
                    .push(" AND game_kind = ")
                    .push_bind(kind);
            }
            let rows = lookups.build().fetch_all(&mut **tx).await?;
            for row in rows {
                let seat: i32 = row.try_get("seat")?;
                let seat = usize::try_from(seat)
                    .ok()
                    .filter(|s| *s < seats)
                    .ok_or_else(|| permanent(format!("seat {seat} out of 0..{seats}")))?;
                before[seat] = stored_rating(row.try_get("rating")?)?;
                games[seat] = to_u32(row.try_get("games_played")?, "games_played")?;
            }
            // One subquery per player: each is a backward scan of the primary key, where an
            // `IN (...) GROUP BY` lets PostgreSQL's generic plan scan the whole history.
            let mut heads = sqlx::QueryBuilder::<DB>::new("SELECT ");
            for (seat, id) in ids.iter().enumerate() {
                if seat > 0 {
                    heads.push(", ");
                }
                heads
                    .push("(SELECT MAX(version) FROM rating_history WHERE player_id = ")
                    .push_bind(id.clone())
                    .push(")");
            }
            let heads = heads.build().fetch_one(&mut **tx).await?;
            for (seat, version) in versions.iter_mut().enumerate() {
                let head: Option<i64> = heads.try_get(seat)?;
                *version = u64::try_from(head.unwrap_or(0)).unwrap_or(0);
            }
            let changes = match game.rate(&before, self.k) {
                Ok(changes) => changes,
                Err(reason) => {
                    tracing::info!(table_id = %table, %reason, "game not rated");
                    return Ok(());
                }
            };
            let store = <DB as StoreOf>::store_of(&self.events)
                .ok_or_else(|| permanent("the event store is not on the consumer's database"))?;
            let mut recorded = Vec::with_capacity(changes.len());
            for seat in &changes {
                let message = rating_changed(&game, seat, games[seat.seat].saturating_add(1));
                let new = NewEvent::from_message(&message)
                    .with_occurred_at(event.occurred_at)
                    .with_correlation_id(table.clone())
                    .with_causation_id(event.event_id.to_string())
                    .with_trace_context(event.trace_context.clone());
                let appended = store
                    .append_in_tx(
                        tx,
                        &stream_of(seat.player).map_err(permanent)?,
                        ExpectedVersion::Exact(versions[seat.seat]),
                        vec![new],
                    )
                    .await
                    .map_err(append_error)?;
                recorded.push((appended.version, message));
            }
            apply(tx, &recorded).await?;
            tracing::info!(table_id = %table, kind, "game rated");
            Ok(())
        }

        fn accepts(&self, event: &RecordedEvent) -> bool {
            // The embedded log holds every service's events: only the tables' streams count.
            // Of those, GameFinished is rated and unknown types are parked; the tables'
            // other events are not wanted.
            event.stream_id.category() == "table"
                && (event.is::<tpb::GameFinished>()
                    || !event.event_type.starts_with(TABLES_PACKAGE))
        }

        fn committed(&self) {
            self.signal.notify();
        }
    }

    impl RebuildOn for DB {
        async fn rebuild_on(
            pool: &sqlx::Pool<DB>,
            events: &dyn EventStore,
        ) -> Result<RebuildReport, RebuildError> {
            let mut tx = <DB as fairdeal_db::Backend>::begin_write(pool).await?;
            if <DB as fairdeal_db::Backend>::KIND == fairdeal_db::BackendKind::Postgres {
                // The consumer's writes wait for the rebuild (reads go on).
                sqlx::query("LOCK TABLE ratings, rating_history IN EXCLUSIVE MODE")
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query("DELETE FROM rating_history").execute(&mut *tx).await?;
            sqlx::query("DELETE FROM ratings").execute(&mut *tx).await?;
            let mut checker = Checker::default();
            let mut from = 1;
            // Everything committed before the rebuild started, however long an older
            // transaction of the cluster keeps the latest of it from `read_all` (a page that
            // comes back short of it is asked again, briefly later).
            let end = events.committed_position().await?;
            let mut short = std::time::Duration::from_millis(5);
            while from <= end {
                let page = events.read_all(from, REBUILD_PAGE).await?;
                let Some(last) = page.last() else {
                    tokio::time::sleep(short).await;
                    short = (short * 2).min(std::time::Duration::from_millis(200));
                    continue;
                };
                from = last.position + 1;
                for event in &page {
                    if event.stream_id.category() != "rating"
                        || !event.is::<rpb::RatingChanged>()
                    {
                        continue;
                    }
                    let message: rpb::RatingChanged = event
                        .decode_payload()
                        .map_err(|e| RebuildError::Invalid(event.event_id, e.to_string()))?;
                    checker.check(event, &message)?;
                    apply(&mut tx, &[(event.version, message)]).await?;
                }
            }
            tx.commit().await?;
            Ok(checker.report())
        }
    }
}

/// Writes recorded changes into the projections: each change's history row (the payload as
/// recorded) and its player's current rating in the kind (its `rating_after`, exactly).
/// One statement per table for all of them; the players must be distinct (a game's are).
pub(crate) async fn apply<DB>(
    tx: &mut Transaction<'_, DB>,
    changes: &[(u64, rpb::RatingChanged)],
) -> Result<(), sqlx::Error>
where
    DB: ApplyOn,
{
    if changes.is_empty() {
        return Ok(());
    }
    DB::apply_on(tx, changes).await
}

/// [`apply`] on each backend.
pub(crate) trait ApplyOn: sqlx::Database {
    fn apply_on(
        tx: &mut Transaction<'_, Self>,
        changes: &[(u64, rpb::RatingChanged)],
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
}

fairdeal_db::for_each_backend! { DB =>
    impl ApplyOn for DB {
        async fn apply_on(
            tx: &mut Transaction<'_, DB>,
            changes: &[(u64, rpb::RatingChanged)],
        ) -> Result<(), sqlx::Error> {
            let mut history = sqlx::QueryBuilder::<DB>::new(
                "INSERT INTO rating_history (player_id, version, table_id, game_kind, payload) ",
            );
            history.push_values(changes, |mut row, (version, change)| {
                row.push_bind(change.player_id.clone())
                    .push_bind(i64::try_from(*version).unwrap_or(i64::MAX))
                    .push_bind(change.table_id.clone())
                    .push_bind(change.game_kind.clone())
                    .push_bind(change.encode_to_vec());
            });
            history.build().execute(&mut **tx).await?;
            let mut ratings = sqlx::QueryBuilder::<DB>::new(
                "INSERT INTO ratings (player_id, game_kind, rating, games_played) ",
            );
            ratings.push_values(changes, |mut row, (_, change)| {
                row.push_bind(change.player_id.clone())
                    .push_bind(change.game_kind.clone())
                    .push_bind(change.rating_after)
                    .push_bind(i64::from(change.games_played));
            });
            ratings.push(
                " ON CONFLICT (player_id, game_kind) DO UPDATE \
                 SET rating = excluded.rating, games_played = excluded.games_played",
            );
            ratings.build().execute(&mut **tx).await?;
            Ok(())
        }
    }
}

/// Events read per page by [`rebuild`].
const REBUILD_PAGE: usize = 1_000;

/// Why a rebuild failed (nothing was changed: it runs in one transaction).
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// The log could not be read.
    #[error("event store: {0}")]
    Store(#[from] StoreError),
    /// The projections could not be written.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A recorded change does not check out.
    #[error("RatingChanged {0}: {1}")]
    Invalid(Uuid, String),
}

/// What a rebuild applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuildReport {
    /// `RatingChanged` events applied (each recomputed and checked).
    pub changes: u64,
    /// Distinct (player, game kind) ratings.
    pub ratings: u64,
}

/// Rebuilds the ratings and history from the log (see the module docs): every change is
/// recomputed with crates/rating from its recorded inputs and must give the same bits, and
/// must start from the player's previous rating in its kind (1500 for the first game), with
/// `games_played` counting up by one. One transaction: on any failure nothing changes.
pub async fn rebuild(storage: &fairdeal_platform::Storage) -> Result<RebuildReport, RebuildError> {
    let events = storage.events();
    fairdeal_db::on_db!(storage.db(), pool => rebuild_in(pool, events.as_ref()).await)
}

/// [`rebuild`] on the pool of one backend.
async fn rebuild_in<DB: RebuildOn>(
    pool: &sqlx::Pool<DB>,
    events: &dyn EventStore,
) -> Result<RebuildReport, RebuildError> {
    DB::rebuild_on(pool, events).await
}

/// [`rebuild`] on each backend: empties the projections and applies every `RatingChanged`
/// of the log again, checking each.
trait RebuildOn: sqlx::Database {
    fn rebuild_on(
        pool: &sqlx::Pool<Self>,
        events: &dyn EventStore,
    ) -> impl Future<Output = Result<RebuildReport, RebuildError>> + Send;
}

/// Checks each recorded change against the chain of its player's changes.
#[derive(Debug, Default)]
struct Checker {
    /// (player, kind) -> (last rating, games played).
    last: HashMap<(String, String), (f64, u32)>,
    /// Changes checked.
    changes: u64,
}

impl Checker {
    fn check(&mut self, event: &RecordedEvent, m: &rpb::RatingChanged) -> Result<(), RebuildError> {
        let invalid = |reason: String| RebuildError::Invalid(event.event_id, reason);
        if event.stream_id.as_str() != format!("rating-{}", m.player_id) {
            return Err(invalid("player_id is not the stream's".into()));
        }
        let key = (m.player_id.clone(), m.game_kind.clone());
        let (previous, played) = self
            .last
            .get(&key)
            .copied()
            .unwrap_or((DEFAULT_RATING.value(), 0));
        if m.rating_before.to_bits() != previous.to_bits() {
            return Err(invalid(format!(
                "rating_before {:?} is not the previous rating {previous:?}",
                m.rating_before
            )));
        }
        if m.games_played != played.saturating_add(1) {
            return Err(invalid(format!(
                "games_played {} does not follow {played}",
                m.games_played
            )));
        }
        let parse = || -> Result<RecordedChange, fairdeal_rating::RatingError> {
            Ok(RecordedChange {
                before: Rating::new(m.rating_before)?,
                opponents: Opponents::new(
                    m.opponents
                        .iter()
                        .map(|o| Rating::new(o.rating_before))
                        .collect::<Result<_, _>>()?,
                )?,
                // A mean of results when the player had several opponents placed each
                // against them (Tarot); 1, 0 or 0.5 otherwise.
                score: Score::recorded(m.score, m.opponents.len())?,
                k: KFactor::new(m.k)?,
                expectation: m.expectation,
                after: m.rating_after,
            })
        };
        let recorded = parse().map_err(|e| invalid(e.to_string()))?;
        recorded
            .verify(Exactness::Bits)
            .map_err(|e| invalid(e.to_string()))?;
        self.last.insert(key, (m.rating_after, m.games_played));
        self.changes += 1;
        Ok(())
    }

    fn report(&self) -> RebuildReport {
        RebuildReport {
            changes: self.changes,
            ratings: self.last.len() as u64,
        }
    }
}
