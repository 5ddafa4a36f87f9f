//! The bus's own tables, behind one trait with a PostgreSQL and a SQLite implementation.
//!
//! The bus keeps four tables in the same database as the event store (see `migrations/`):
//! relay checkpoints, consumer positions, processed event ids and dead letters. Every statement
//! the bus runs lives here, once per backend, so the relay and consumer loops stay generic over
//! [`BusDatabase`] without sqlx's executor bounds leaking into their signatures.

use std::future::Future;

use sqlx::migrate::Migrator;
use sqlx::{PgConnection, Pool, Postgres, Row, Sqlite, SqliteConnection};
use uuid::Uuid;

/// Name of the table tracking the bus's migrations. Distinct from the store's migrations table
/// (and the bus's versions are 2000-2999) so the two migrators never see each other's rows.
pub const MIGRATIONS_TABLE: &str = "_fairdeal_bus_migrations";

/// A poison event a consumer gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Durable name of the consumer that gave up.
    pub consumer: String,
    /// Position of the event in the consumer's source: JetStream stream sequence for JetStream
    /// consumers, global position for embedded consumers.
    pub position: i64,
    /// Event id, when the message could be decoded far enough to know it.
    pub event_id: Option<Uuid>,
    /// Stream the event belongs to, when known.
    pub stream_id: Option<String>,
    /// Event type, when known.
    pub event_type: Option<String>,
    /// How many times the handler was tried (or 0 when the message could not be decoded).
    pub attempts: u32,
    /// Why the consumer gave up: the last handler or decoding error.
    pub reason: String,
    /// The message as received (the encoded envelope), so an operator can replay it.
    pub payload: Vec<u8>,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for sqlx::Postgres {}
    impl Sealed for sqlx::Sqlite {}
}

/// A database backend the bus can keep its tables in: PostgreSQL or SQLite.
///
/// Sealed: the bus ships one implementation per backend of the event store. The methods take a
/// plain connection so they run equally inside a transaction (`&mut *tx`) or on a pooled
/// connection.
pub trait BusDatabase: sqlx::Database + sealed::Sealed {
    /// Runs the bus's migrations (idempotent) on `pool`.
    fn migrate(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<(), sqlx::migrate::MigrateError>> + Send;

    /// The consumer's last settled position, 0 when it has never run.
    fn load_consumer_position(
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<i64, sqlx::Error>> + Send;

    /// Moves the consumer's position forward to `position` (never backwards, so a lagging
    /// instance cannot rewind a faster one).
    fn save_consumer_position(
        conn: &mut Self::Connection,
        consumer: &str,
        position: i64,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// The relay's last acknowledged global position, 0 when it has never run.
    fn load_relay_checkpoint(
        conn: &mut Self::Connection,
        relay: &str,
    ) -> impl Future<Output = Result<i64, sqlx::Error>> + Send;

    /// Moves the relay's checkpoint forward to `position` (never backwards).
    fn save_relay_checkpoint(
        conn: &mut Self::Connection,
        relay: &str,
        position: i64,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Records that `consumer` settled `event_id`. Returns `false` when it was already recorded,
    /// i.e. the event is a redelivery whose effects are already committed.
    fn record_processed(
        conn: &mut Self::Connection,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// Whether `consumer` has settled `event_id`.
    fn is_processed(
        conn: &mut Self::Connection,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// Event ids settled by `consumer`, in the order they were recorded.
    fn processed_event_ids(
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<Vec<Uuid>, sqlx::Error>> + Send;

    /// Stores a dead letter. Returns `false` when this consumer already dead-lettered the same
    /// position (a retried transaction), leaving the first record untouched.
    fn insert_dead_letter(
        conn: &mut Self::Connection,
        letter: &DeadLetter,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// The consumer's dead letters, oldest first.
    fn dead_letters(
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<Vec<DeadLetter>, sqlx::Error>> + Send;
}

/// Builds a migrator that records its versions in [`MIGRATIONS_TABLE`].
fn with_own_table(mut migrator: Migrator) -> Migrator {
    migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
    migrator
}

/// Attempts are stored as INTEGER; a count beyond `i32::MAX` cannot happen with a bounded retry
/// policy, but saturate rather than wrap.
fn attempts_to_db(attempts: u32) -> i32 {
    i32::try_from(attempts).unwrap_or(i32::MAX)
}

fn attempts_from_db(attempts: i32) -> u32 {
    u32::try_from(attempts).unwrap_or(0)
}

impl BusDatabase for Postgres {
    async fn migrate(pool: &Pool<Self>) -> Result<(), sqlx::migrate::MigrateError> {
        with_own_table(sqlx::migrate!("./migrations/postgres"))
            .run(pool)
            .await
    }

    async fn load_consumer_position(
        conn: &mut PgConnection,
        consumer: &str,
    ) -> Result<i64, sqlx::Error> {
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT position FROM bus_consumer_positions WHERE consumer = $1")
                .bind(consumer)
                .fetch_optional(&mut *conn)
                .await?;
        Ok(row.map_or(0, |(position,)| position))
    }

    async fn save_consumer_position(
        conn: &mut PgConnection,
        consumer: &str,
        position: i64,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO bus_consumer_positions (consumer, position) VALUES ($1, $2)
             ON CONFLICT (consumer) DO UPDATE
             SET position = GREATEST(bus_consumer_positions.position, EXCLUDED.position),
                 updated_at = now()",
        )
        .bind(consumer)
        .bind(position)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    async fn load_relay_checkpoint(
        conn: &mut PgConnection,
        relay: &str,
    ) -> Result<i64, sqlx::Error> {
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT position FROM bus_relay_checkpoints WHERE relay = $1")
                .bind(relay)
                .fetch_optional(&mut *conn)
                .await?;
        Ok(row.map_or(0, |(position,)| position))
    }

    async fn save_relay_checkpoint(
        conn: &mut PgConnection,
        relay: &str,
        position: i64,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO bus_relay_checkpoints (relay, position) VALUES ($1, $2)
             ON CONFLICT (relay) DO UPDATE
             SET position = GREATEST(bus_relay_checkpoints.position, EXCLUDED.position),
                 updated_at = now()",
        )
        .bind(relay)
        .bind(position)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    async fn record_processed(
        conn: &mut PgConnection,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO bus_processed_events (consumer, event_id) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
        )
        .bind(consumer)
        .bind(event_id)
        .execute(&mut *conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn is_processed(
        conn: &mut PgConnection,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<bool, sqlx::Error> {
        let row: Option<(i32,)> = sqlx::query_as(
            "SELECT 1 FROM bus_processed_events WHERE consumer = $1 AND event_id = $2",
        )
        .bind(consumer)
        .bind(event_id)
        .fetch_optional(&mut *conn)
        .await?;
        Ok(row.is_some())
    }

    async fn processed_event_ids(
        conn: &mut PgConnection,
        consumer: &str,
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        let rows: Vec<(Uuid,)> = sqlx::query_as(
            "SELECT event_id FROM bus_processed_events WHERE consumer = $1
             ORDER BY processed_at, event_id",
        )
        .bind(consumer)
        .fetch_all(&mut *conn)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    async fn insert_dead_letter(
        conn: &mut PgConnection,
        letter: &DeadLetter,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO bus_dead_letters
                 (consumer, position, event_id, stream_id, event_type, attempts, reason, payload)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (consumer, position) DO NOTHING",
        )
        .bind(&letter.consumer)
        .bind(letter.position)
        .bind(letter.event_id)
        .bind(&letter.stream_id)
        .bind(&letter.event_type)
        .bind(attempts_to_db(letter.attempts))
        .bind(&letter.reason)
        .bind(&letter.payload)
        .execute(&mut *conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn dead_letters(
        conn: &mut PgConnection,
        consumer: &str,
    ) -> Result<Vec<DeadLetter>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT consumer, position, event_id, stream_id, event_type, attempts, reason, payload
             FROM bus_dead_letters WHERE consumer = $1 ORDER BY id",
        )
        .bind(consumer)
        .fetch_all(&mut *conn)
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(DeadLetter {
                    consumer: row.try_get("consumer")?,
                    position: row.try_get("position")?,
                    event_id: row.try_get("event_id")?,
                    stream_id: row.try_get("stream_id")?,
                    event_type: row.try_get("event_type")?,
                    attempts: attempts_from_db(row.try_get("attempts")?),
                    reason: row.try_get("reason")?,
                    payload: row.try_get("payload")?,
                })
            })
            .collect()
    }
}

/// SQLite stores event ids as hyphenated text: readable with the sqlite3 shell, and the same
/// form the envelope uses.
fn uuid_from_text(text: &str) -> Result<Uuid, sqlx::Error> {
    Uuid::parse_str(text).map_err(|err| sqlx::Error::Decode(Box::new(err)))
}

impl BusDatabase for Sqlite {
    async fn migrate(pool: &Pool<Self>) -> Result<(), sqlx::migrate::MigrateError> {
        with_own_table(sqlx::migrate!("./migrations/sqlite"))
            .run(pool)
            .await
    }

    async fn load_consumer_position(
        conn: &mut SqliteConnection,
        consumer: &str,
    ) -> Result<i64, sqlx::Error> {
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT position FROM bus_consumer_positions WHERE consumer = ?1")
                .bind(consumer)
                .fetch_optional(&mut *conn)
                .await?;
        Ok(row.map_or(0, |(position,)| position))
    }

    async fn save_consumer_position(
        conn: &mut SqliteConnection,
        consumer: &str,
        position: i64,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO bus_consumer_positions (consumer, position) VALUES (?1, ?2)
             ON CONFLICT (consumer) DO UPDATE
             SET position = MAX(position, excluded.position),
                 updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        )
        .bind(consumer)
        .bind(position)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    async fn load_relay_checkpoint(
        conn: &mut SqliteConnection,
        relay: &str,
    ) -> Result<i64, sqlx::Error> {
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT position FROM bus_relay_checkpoints WHERE relay = ?1")
                .bind(relay)
                .fetch_optional(&mut *conn)
                .await?;
        Ok(row.map_or(0, |(position,)| position))
    }

    async fn save_relay_checkpoint(
        conn: &mut SqliteConnection,
        relay: &str,
        position: i64,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO bus_relay_checkpoints (relay, position) VALUES (?1, ?2)
             ON CONFLICT (relay) DO UPDATE
             SET position = MAX(position, excluded.position),
                 updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        )
        .bind(relay)
        .bind(position)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    async fn record_processed(
        conn: &mut SqliteConnection,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO bus_processed_events (consumer, event_id) VALUES (?1, ?2)
             ON CONFLICT DO NOTHING",
        )
        .bind(consumer)
        .bind(event_id.hyphenated().to_string())
        .execute(&mut *conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn is_processed(
        conn: &mut SqliteConnection,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<bool, sqlx::Error> {
        let row: Option<(i32,)> = sqlx::query_as(
            "SELECT 1 FROM bus_processed_events WHERE consumer = ?1 AND event_id = ?2",
        )
        .bind(consumer)
        .bind(event_id.hyphenated().to_string())
        .fetch_optional(&mut *conn)
        .await?;
        Ok(row.is_some())
    }

    async fn processed_event_ids(
        conn: &mut SqliteConnection,
        consumer: &str,
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT event_id FROM bus_processed_events WHERE consumer = ?1
             ORDER BY processed_at, event_id",
        )
        .bind(consumer)
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(|(id,)| uuid_from_text(id)).collect()
    }

    async fn insert_dead_letter(
        conn: &mut SqliteConnection,
        letter: &DeadLetter,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "INSERT INTO bus_dead_letters
                 (consumer, position, event_id, stream_id, event_type, attempts, reason, payload)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (consumer, position) DO NOTHING",
        )
        .bind(&letter.consumer)
        .bind(letter.position)
        .bind(letter.event_id.map(|id| id.hyphenated().to_string()))
        .bind(&letter.stream_id)
        .bind(&letter.event_type)
        .bind(attempts_to_db(letter.attempts))
        .bind(&letter.reason)
        .bind(&letter.payload)
        .execute(&mut *conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn dead_letters(
        conn: &mut SqliteConnection,
        consumer: &str,
    ) -> Result<Vec<DeadLetter>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT consumer, position, event_id, stream_id, event_type, attempts, reason, payload
             FROM bus_dead_letters WHERE consumer = ?1 ORDER BY id",
        )
        .bind(consumer)
        .fetch_all(&mut *conn)
        .await?;
        rows.into_iter()
            .map(|row| {
                let event_id: Option<String> = row.try_get("event_id")?;
                Ok(DeadLetter {
                    consumer: row.try_get("consumer")?,
                    position: row.try_get("position")?,
                    event_id: event_id.as_deref().map(uuid_from_text).transpose()?,
                    stream_id: row.try_get("stream_id")?,
                    event_type: row.try_get("event_type")?,
                    attempts: attempts_from_db(row.try_get("attempts")?),
                    reason: row.try_get("reason")?,
                    payload: row.try_get("payload")?,
                })
            })
            .collect()
    }
}
