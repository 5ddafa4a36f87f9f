//! Projections of the tables' own events, kept by the `tables-projections` consumer inside
//! the bus's transaction (exactly-once): table `lobby` (one row per table not yet started)
//! with the `ListTables` query over it, and table `deadlines` that a (re)started replica's
//! timer reads: for every table not done, when it next needs someone to act
//! ([`TableEvent::due`]). A player's turn is its deadline (Unix ms, a `TurnClock`'s or the
//! one a seat's command carries). A step the service owes (a deal, a bot's move, the
//! reveal) is recorded as *due since* the event's version, written as that version negated:
//! a past instant whatever the clock, and a distinct value per owed step, so the timer
//! fires each once. A replica that restarts, or takes over, thus finds the tables whose
//! step failed and takes it, rather than waiting for a player's request that a seat on
//! `Watch` (or nobody, after the game ended) will never send. The row goes when the seed is
//! revealed.

use fairdeal_bus::{Handler, HandlerError};
use fairdeal_db::Db;
use fairdeal_eventstore::RecordedEvent;
use fairdeal_fairness::Deck;
use fairdeal_games::{Purchase, TableOptions};
use fairdeal_games_wire::WireGame;
use fairdeal_games_wire::any::AnyOptions;
use fairdeal_platform::ownership::{Wake, Waking};
use fairdeal_table_game::Seat;
use fairdeal_tarot::TarotOptions;
use sqlx::{QueryBuilder, Transaction};
use std::collections::HashMap;

use crate::domain::Due;
use crate::events::from_recorded;
use crate::timers::OwedSteps;
use crate::{Game, TableEvent};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use uuid::Uuid;

/// The consumer's durable name.
pub const CONSUMER: &str = "tables-projections";

/// Deadline rows per statement (two parameters each, far below either backend's limit).
const DEADLINE_ROWS: usize = 500;

/// The service's migrations (the lobby table), both backends.
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "fairdeal_tables",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// Keeps the lobby and deadlines tables, and tells this replica's timers of each step the
/// service owes as it records it (see [`OwedSteps`]). With several replicas, it also wakes
/// a table's owner for a row the owner cannot have seen ([`Wake`]: an event written before
/// the owner took the table, projected after it loaded the rows).
#[derive(Debug, Default)]
pub struct LobbyProjection {
    /// This replica's timers, if any run here.
    owed: Option<OwedSteps>,
    /// The owners' wake-ups, with ownership.
    wake: Option<Wake>,
}

impl LobbyProjection {
    /// A projection that wakes `owed` for each step the service owes.
    pub fn waking(owed: OwedSteps) -> Self {
        Self {
            owed: Some(owed),
            wake: None,
        }
    }

    /// The same projection, also waking tables' owners through `wake` for what they cannot
    /// have seen.
    #[must_use]
    pub fn with_owner_wake(mut self, wake: Wake) -> Self {
        self.wake = Some(wake);
        self
    }

    /// Tells the timers of a deadline row just written, if it is an owed step (negative).
    fn recorded(&self, table_id: &str, deadline_ms: i64) {
        if deadline_ms < 0
            && let Some(owed) = &self.owed
            && let Ok(table_id) = Uuid::parse_str(table_id)
        {
            owed.owe(table_id, deadline_ms);
        }
    }
}

/// The lobby's form of a purchase mode.
fn purchase_text(purchase: Option<Purchase>) -> &'static str {
    match purchase {
        None => "",
        Some(Purchase::Points) => "points",
        Some(Purchase::Budget) => "budget",
    }
}

fn permanent(reason: String) -> HandlerError {
    HandlerError::Permanent(reason.into())
}

fn transient(error: sqlx::Error) -> HandlerError {
    HandlerError::Transient(error.into())
}

/// `seats` with seat `seat` set to `mark`.
fn mark(seats: &str, seat: Seat, mark: char) -> String {
    seats
        .chars()
        .enumerate()
        .map(|(i, c)| if i == seat.index() { mark } else { c })
        .collect()
}

fairdeal_db::for_each_backend! { DB =>
    /// Projects one event; the table and position of the deadline row it wrote, if any.
    async fn project_one(
        this: &LobbyProjection,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, DB>,
    ) -> Result<Option<(Uuid, u64)>, HandlerError> {
            let table_id = event.correlation_id.clone();
            let decoded: TableEvent = from_recorded::<Game>(event).map_err(|e| permanent(e.to_string()))?;
            let mut written = None;
            match deadline_of(event, decoded.due()) {
                Some(Some(deadline_ms)) => {
                    sqlx::query(
                        "INSERT INTO deadlines (table_id, deadline_ms) VALUES ($1, $2) \
                         ON CONFLICT (table_id) DO UPDATE SET deadline_ms = excluded.deadline_ms",
                    )
                    .bind(&table_id)
                    .bind(deadline_ms)
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
                    this.recorded(&table_id, deadline_ms);
                    written = written_row(event);
                }
                Some(None) => {
                    sqlx::query("DELETE FROM deadlines WHERE table_id = $1")
                        .bind(&table_id)
                        .execute(&mut **tx)
                        .await
                        .map_err(transient)?;
                }
                None => {}
            }
            match decoded {
                TableEvent::Created(c) => {
                    let seats: String =
                        c.bots.iter().map(|bot| if *bot { 'b' } else { 'o' }).collect();
                    let open = seats.chars().filter(|c| *c == 'o').count() as i64;
                    let row = LobbyOptions::of(&c.options);
                    sqlx::query(
                        "INSERT INTO lobby (table_id, position, deck, penalised_aces, \
                         made_or_nothing, purchase, budget, move_seconds, short_code, seats, \
                         open_seats, rounds) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                         ON CONFLICT (table_id) DO NOTHING",
                    )
                    .bind(&table_id)
                    .bind(i64::try_from(event.position).unwrap_or(i64::MAX))
                    .bind(row.deck)
                    .bind(row.penalised_aces)
                    .bind(row.made_or_nothing)
                    .bind(row.purchase)
                    .bind(row.budget)
                    .bind(i64::from(c.move_seconds))
                    .bind(&c.short_code)
                    .bind(seats)
                    .bind(open)
                    .bind(row.rounds)
                    .execute(&mut **tx)
                    .await
                    .map_err(transient)?;
                }
                ev @ (TableEvent::SeatTaken { .. } | TableEvent::SeatLeft { .. }) => {
                    let (seat, taken) = match ev {
                        TableEvent::SeatTaken { seat, .. } => (seat, true),
                        TableEvent::SeatLeft { seat, .. } => (seat, false),
                        _ => return Ok(written),
                    };
                    let seats: Option<String> =
                        sqlx::query_scalar("SELECT seats FROM lobby WHERE table_id = $1")
                            .bind(&table_id)
                            .fetch_optional(&mut **tx)
                            .await
                            .map_err(transient)?;
                    let Some(seats) = seats else { return Ok(written) };
                    let seats = mark(&seats, seat, if taken { 'p' } else { 'o' });
                    let open = seats.chars().filter(|c| *c == 'o').count() as i64;
                    sqlx::query("UPDATE lobby SET seats = $2, open_seats = $3 WHERE table_id = $1")
                        .bind(&table_id)
                        .bind(seats)
                        .bind(open)
                        .execute(&mut **tx)
                        .await
                        .map_err(transient)?;
                }
                // Started, or expired before it started: out of the lobby.
                TableEvent::Engine { command: None, .. } | TableEvent::Expired { .. } => {
                    sqlx::query("DELETE FROM lobby WHERE table_id = $1")
                        .bind(&table_id)
                        .execute(&mut **tx)
                        .await
                        .map_err(transient)?;
                }
                _ => {}
            }
            Ok(written)
    }

    /// Wakes the owners of the tables of `written` that cannot have seen their rows.
    async fn wake_owners(
        this: &LobbyProjection,
        written: &[(Uuid, u64)],
        tx: &mut Transaction<'_, DB>,
    ) -> Result<(), HandlerError> {
        if let Some(wake) = &this.wake {
            (**tx).wake_owners(wake, written).await.map_err(transient)?;
        }
        Ok(())
    }

    impl Handler<DB> for LobbyProjection {
        async fn handle(
            &self,
            event: &RecordedEvent,
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            let written = project_one(self, event, tx).await?;
            wake_owners(self, written.as_slice(), tx).await
        }

        /// A batch: the deadlines table gets only each table's last word in the batch (its
        /// last deadline or owed step, or its removal once the seed is revealed), in two
        /// statements; the lobby's changes (a few per table, before it starts) go event by
        /// event.
        async fn handle_batch(
            &self,
            events: &[&RecordedEvent],
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            let mut last: HashMap<String, (Option<i64>, &RecordedEvent)> = HashMap::new();
            let mut written = Vec::new();
            for event in events {
                if event.is::<pb::TurnClock>()
                    || carries_command(event)
                    || event.is::<pb::GameFinished>()
                    || event.is::<pb::TableSeedRevealed>()
                {
                    let decoded: TableEvent = from_recorded::<Game>(event).map_err(|e| permanent(e.to_string()))?;
                    if let Some(deadline) = deadline_of(event, decoded.due()) {
                        last.insert(event.correlation_id.clone(), (deadline, *event));
                    }
                } else {
                    // The lobby's events (and MatchStarted, which also owes the first deal;
                    // TableExpired, which owes the reveal and leaves the lobby: its row is
                    // the table's last word, whatever came before it in this batch).
                    if event.is::<pb::TableExpired>() {
                        last.remove(&event.correlation_id);
                    }
                    written.extend(project_one(self, event, tx).await?);
                }
            }
            let (set, finished): (Vec<_>, Vec<_>) =
                last.into_iter().partition(|(_, (deadline, _))| deadline.is_some());
            for chunk in set.chunks(DEADLINE_ROWS) {
                let mut query = QueryBuilder::<DB>::new(
                    "INSERT INTO deadlines (table_id, deadline_ms) ",
                );
                query.push_values(chunk, |mut row, (table_id, (deadline, _))| {
                    row.push_bind(table_id.clone()).push_bind(deadline.unwrap_or_default());
                });
                query.push(
                    " ON CONFLICT (table_id) DO UPDATE SET deadline_ms = excluded.deadline_ms",
                );
                query.build().execute(&mut **tx).await.map_err(transient)?;
            }
            for (table_id, (deadline, event)) in &set {
                self.recorded(table_id, deadline.unwrap_or_default());
                written.extend(written_row(event));
            }
            for chunk in finished.chunks(DEADLINE_ROWS) {
                let mut query = QueryBuilder::<DB>::new("DELETE FROM deadlines WHERE table_id IN ");
                query.push_tuples(chunk, |mut row, (table_id, _)| {
                    row.push_bind(table_id.clone());
                });
                query.build().execute(&mut **tx).await.map_err(transient)?;
            }
            // After the rows are written (see `Wake`).
            wake_owners(self, &written, tx).await
        }

        fn batches(&self) -> bool {
            true
        }

        /// A replay ends where the first pass did: each deadline row is its table's last
        /// word, and a lobby row is written, marked and deleted by its table's events in
        /// order (docs/decisions.md, "An embedded consumer settles by position").
        fn settles_by_position(&self) -> bool {
            true
        }

        fn accepts(&self, event: &RecordedEvent) -> bool {
            event.is::<pb::TableCreated>()
                || event.is::<pb::SeatTaken>()
                || event.is::<pb::SeatLeft>()
                || event.is::<pb::MatchStarted>()
                || event.is::<pb::TurnClock>()
                || carries_command(event)
                || event.is::<pb::GameFinished>()
                || event.is::<pb::TableExpired>()
                || event.is::<pb::TableSeedRevealed>()
        }
    }
}

/// The deadlines row `due` makes of `event`'s table: `Some(Some(ms))` to write (a player's
/// deadline, or an owed step as its version negated: see the module docs), `Some(None)` to
/// remove, `None` to leave as it is.
fn deadline_of(event: &RecordedEvent, due: Option<Due>) -> Option<Option<i64>> {
    Some(match due? {
        Due::Player(deadline_ms) => Some(deadline_ms),
        Due::Service => Some(-i64::try_from(event.version).unwrap_or(i64::MAX)),
        // Not before the latest end: a deadline like a player's.
        Due::Expires(latest_end_ms) => Some(latest_end_ms),
        Due::Nobody => None,
    })
}

/// The table and store position of the event a deadline row came from.
fn written_row(event: &RecordedEvent) -> Option<(Uuid, u64)> {
    Some((Uuid::parse_str(&event.correlation_id).ok()?, event.position))
}

/// Whether `event` is of a type that records a seat's command (and may carry the next
/// turn's clock).
fn carries_command(event: &RecordedEvent) -> bool {
    event.is::<pb::CardPlayed>()
        || event.is::<pb::BidPlaced>()
        || event.is::<pb::PlayerPassed>()
        || event.is::<pb::TrumpNamed>()
}

/// A table's options as the lobby's columns: Jeu du 10's in their own columns, French
/// Tarot's as its deck (`tarot3`..`tarot5`, the seats) and `rounds`.
struct LobbyOptions {
    deck: &'static str,
    penalised_aces: i64,
    made_or_nothing: i64,
    purchase: &'static str,
    budget: i64,
    rounds: i64,
}

impl LobbyOptions {
    fn of(options: &AnyOptions) -> Self {
        match options {
            AnyOptions::JeuDu10(o) => LobbyOptions {
                deck: o.deck.name(),
                penalised_aces: i64::from(o.penalised_aces),
                made_or_nothing: i64::from(o.made_or_nothing),
                purchase: purchase_text(o.purchase),
                budget: o.budget.map_or(-1, i64::from),
                rounds: 0,
            },
            AnyOptions::Tarot(o) => LobbyOptions {
                deck: o.deck().name(),
                penalised_aces: 0,
                made_or_nothing: 0,
                purchase: "",
                budget: -1,
                rounds: i64::from(o.rounds),
            },
        }
    }
}

/// What a lobby query asks for (parsed from `ListTablesRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LobbyQuery {
    /// Deck name, or any.
    pub deck: Option<String>,
    /// Penalised aces, or any.
    pub penalised_aces: Option<bool>,
    /// Made or nothing, or any.
    pub made_or_nothing: Option<bool>,
    /// Purchase mode (`""`, `points`, `budget`), or any.
    pub purchase: Option<&'static str>,
    /// At least this many open seats (1..=4).
    pub min_open_seats: u32,
    /// At most this many rows (1..=100).
    pub limit: u32,
}

/// One lobby row.
type Row = (
    String,
    String,
    i64,
    i64,
    String,
    i64,
    i64,
    String,
    String,
    i64,
);

fn flag(value: Option<bool>) -> i64 {
    value.map_or(-1, i64::from)
}

/// The tables the query matches, oldest first.
pub async fn list(db: &Db, query: &LobbyQuery) -> Result<Vec<pb::LobbyTable>, sqlx::Error> {
    let sql = "SELECT table_id, deck, penalised_aces, made_or_nothing, purchase, budget, \
               move_seconds, short_code, seats, rounds FROM lobby \
               WHERE open_seats >= $1 AND ($2 = '*' OR deck = $2) \
               AND ($3 < 0 OR penalised_aces = $3) AND ($4 < 0 OR made_or_nothing = $4) \
               AND ($5 = '*' OR purchase = $5) ORDER BY position LIMIT $6";
    let rows: Vec<Row> = fairdeal_db::on_db!(db, pool => {
        sqlx::query_as(sql)
            .bind(i64::from(query.min_open_seats))
            .bind(query.deck.clone().unwrap_or_else(|| "*".into()))
            .bind(flag(query.penalised_aces))
            .bind(flag(query.made_or_nothing))
            .bind(query.purchase.unwrap_or("*"))
            .bind(i64::from(query.limit))
            .fetch_all(pool)
            .await?
    });
    Ok(rows.into_iter().map(lobby_table).collect())
}

fn lobby_table(row: Row) -> pb::LobbyTable {
    let (table_id, deck, aces, made, purchase, budget, move_seconds, short_code, seats, rounds) =
        row;
    let deck: Deck = deck.parse().unwrap_or(Deck::Dix);
    let options = match deck {
        Deck::Tarot3 | Deck::Tarot4 | Deck::Tarot5 => AnyOptions::Tarot(TarotOptions {
            seats: u8::try_from(deck.hands()).unwrap_or(4),
            rounds: u8::try_from(rounds).unwrap_or(1),
        }),
        _ => AnyOptions::JeuDu10(TableOptions {
            deck,
            penalised_aces: aces == 1,
            made_or_nothing: made == 1,
            purchase: match purchase.as_str() {
                "points" => Some(Purchase::Points),
                "budget" => Some(Purchase::Budget),
                _ => None,
            },
            budget: u32::try_from(budget).ok(),
        }),
    };
    let with = |mark: char| -> Vec<u32> {
        seats
            .chars()
            .enumerate()
            .filter(|(_, c)| *c == mark)
            .map(|(i, _)| i as u32)
            .collect()
    };
    pb::LobbyTable {
        table_id,
        options: Some(Game::options_message(&options)),
        open_seats: with('o'),
        bot_seats: with('b'),
        move_seconds: u32::try_from(move_seconds).unwrap_or(0),
        short_code,
    }
}

/// Every table's last recorded turn deadline (Unix ms), as projected so far. On
/// PostgreSQL the read waits for the projection's transactions writing rows to commit (a
/// share lock on the table, for the read only): a row written after the read began is
/// written by a projection that reads the partitions' epoch starts after it, and wakes the
/// owner if it must ([`Wake`]).
pub async fn deadlines(db: &Db) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
    const SQL: &str = "SELECT table_id, deadline_ms FROM deadlines";
    let rows: Vec<(String, i64)> = match db {
        Db::Postgres { pool, .. } => {
            let mut tx = pool.begin().await?;
            sqlx::query("LOCK TABLE deadlines IN SHARE MODE")
                .execute(&mut *tx)
                .await?;
            let rows = sqlx::query_as(SQL).fetch_all(&mut *tx).await?;
            tx.commit().await?;
            rows
        }
        Db::Sqlite { pool } => sqlx::query_as(SQL).fetch_all(pool).await?,
    };
    Ok(rows
        .into_iter()
        .filter_map(|(id, deadline)| Some((Uuid::parse_str(&id).ok()?, deadline)))
        .collect())
}
