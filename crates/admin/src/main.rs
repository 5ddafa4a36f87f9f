//! `fairdeal-admin`: operator commands against one service's database.
//!
//! ```text
//! fairdeal-admin dead-letters list    --database-url URL [--schema S] [--consumer NAME]
//! fairdeal-admin dead-letters show    ID --database-url URL [--schema S]
//! fairdeal-admin dead-letters redrive ID --database-url URL [--schema S]
//! ```
//!
//! A dead letter is an event a consumer gave up on (a handler that failed permanently, or
//! transiently past its attempts). `list` and `show` print one JSON object per line; `show`
//! adds the letter's envelope. After fixing the cause (a deploy, a repaired row), `redrive`
//! asks the consumer to apply the letter again: the running consumer does it within seconds,
//! in one transaction with the handler's effects, and stamps it done (`list` shows it); if
//! it fails again the new error is recorded and it may be requested again. The database URL
//! may also come from `FAIRDEAL_DATABASE_URL`; the schema is the service's (`auth`,
//! `commitment`, ...). Errors are one line on stderr and exit status 2.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)] // A command-line tool prints.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fairdeal_bus::{BusDb, Redrive, StoredDeadLetter};
use fairdeal_db::{DatabaseUrl, Db, Schema};
use serde_json::{Value, json};

/// Operator commands for a fairdeal service's database.
#[derive(Debug, Parser)]
#[command(name = "fairdeal-admin", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Events consumers gave up on.
    #[command(subcommand)]
    DeadLetters(DeadLetters),
}

/// Where the service's tables are.
#[derive(Debug, clap::Args)]
struct Target {
    /// The service's database (`postgres://...` or `sqlite://path`).
    #[arg(long, env = "FAIRDEAL_DATABASE_URL", hide_env_values = true)]
    database_url: String,
    /// The service's PostgreSQL schema (ignored on SQLite).
    #[arg(long, default_value = "public")]
    schema: String,
}

#[derive(Debug, Subcommand)]
enum DeadLetters {
    /// Lists dead letters, oldest first.
    List {
        #[command(flatten)]
        target: Target,
        /// Only this consumer's.
        #[arg(long)]
        consumer: Option<String>,
    },
    /// Shows one dead letter with its envelope.
    Show {
        /// The letter's id (from `list`).
        id: i64,
        #[command(flatten)]
        target: Target,
    },
    /// Asks its consumer to apply the letter again.
    Redrive {
        /// The letter's id (from `list`).
        id: i64,
        #[command(flatten)]
        target: Target,
    },
}

/// Why a command failed (the message is the one line printed).
#[derive(Debug, thiserror::Error)]
enum AdminError {
    #[error("--database-url: {0}")]
    Url(#[from] fairdeal_db::DatabaseUrlError),
    #[error("--schema: {0}")]
    Schema(#[from] fairdeal_db::BadSchema),
    #[error(transparent)]
    Open(#[from] fairdeal_db::OpenError),
    #[error("{0}")]
    Bus(#[from] fairdeal_bus::BusError),
    #[error("dead letter {0} not found")]
    NotFound(i64),
    #[error("dead letter {0} was re-driven already")]
    AlreadyDone(i64),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

/// Runs `command`, returning the JSON lines to print.
async fn run(command: Command) -> Result<Vec<Value>, AdminError> {
    let Command::DeadLetters(command) = command;
    match command {
        DeadLetters::List { target, consumer } => {
            let letters = with_bus(&target, async |bus| {
                bus.stored_dead_letters(consumer.as_deref()).await
            })
            .await?;
            Ok(letters.iter().map(|l| summary(l, false)).collect())
        }
        DeadLetters::Show { id, target } => {
            let letter = with_bus(&target, async |bus| bus.stored_dead_letter(id).await)
                .await?
                .ok_or(AdminError::NotFound(id))?;
            Ok(vec![summary(&letter, true)])
        }
        DeadLetters::Redrive { id, target } => {
            let outcome = with_bus(&target, async |bus| {
                let found = bus.stored_dead_letter(id).await?;
                let requested = bus.request_redrive(id).await?;
                Ok((found, requested))
            })
            .await?;
            match outcome {
                (None, _) => Err(AdminError::NotFound(id)),
                (Some(_), false) => Err(AdminError::AlreadyDone(id)),
                (Some(letter), true) => Ok(vec![json!({
                    "id": id,
                    "consumer": letter.letter.consumer,
                    "redrive": "requested",
                })]),
            }
        }
    }
}

/// Opens the target's database and runs `f` on its bus tables, whichever backend.
async fn with_bus<T>(
    target: &Target,
    f: impl AsyncFnOnce(BusView) -> Result<T, fairdeal_bus::BusError>,
) -> Result<T, AdminError> {
    let url: DatabaseUrl = target.database_url.parse()?;
    let schema = Schema::new(&target.schema)?;
    let db = Db::open(&url, &schema).await?;
    let view = match &db {
        Db::Postgres { pool, schema } => {
            BusView::Postgres(BusDb::postgres(pool.clone(), schema.as_str())?)
        }
        Db::Sqlite { pool } => BusView::Sqlite(BusDb::sqlite(pool.clone())),
    };
    let result = f(view).await;
    db.close().await;
    Ok(result?)
}

/// The bus tables on either backend.
#[derive(Debug)]
enum BusView {
    Postgres(BusDb<sqlx::Postgres>),
    Sqlite(BusDb<sqlx::Sqlite>),
}

impl BusView {
    async fn stored_dead_letters(
        &self,
        consumer: Option<&str>,
    ) -> Result<Vec<StoredDeadLetter>, fairdeal_bus::BusError> {
        match self {
            BusView::Postgres(db) => db.stored_dead_letters(consumer).await,
            BusView::Sqlite(db) => db.stored_dead_letters(consumer).await,
        }
    }

    async fn stored_dead_letter(
        &self,
        id: i64,
    ) -> Result<Option<StoredDeadLetter>, fairdeal_bus::BusError> {
        match self {
            BusView::Postgres(db) => db.stored_dead_letter(id).await,
            BusView::Sqlite(db) => db.stored_dead_letter(id).await,
        }
    }

    async fn request_redrive(&self, id: i64) -> Result<bool, fairdeal_bus::BusError> {
        match self {
            BusView::Postgres(db) => db.request_redrive(id).await,
            BusView::Sqlite(db) => db.request_redrive(id).await,
        }
    }
}

/// One letter as a JSON line; `full` adds the envelope (or the raw bytes, in hex, when they
/// do not decode).
fn summary(stored: &StoredDeadLetter, full: bool) -> Value {
    let letter = &stored.letter;
    let (redrive, at, error) = match &stored.redrive {
        Redrive::NotRequested => ("none", None, None),
        Redrive::Requested(at) => ("requested", Some(at.as_str()), None),
        Redrive::Done(at) => ("done", Some(at.as_str()), None),
        Redrive::Failed(error) => ("failed", None, Some(error.as_str())),
    };
    let mut line = json!({
        "id": stored.id,
        "consumer": letter.consumer,
        "position": letter.position,
        "event_id": letter.event_id.map(|id| id.to_string()),
        "stream_id": letter.stream_id,
        "event_type": letter.event_type,
        "attempts": letter.attempts,
        "reason": letter.reason,
        "dead_lettered_at": stored.dead_lettered_at,
        "redrive": redrive,
        "redrive_at": at,
        "redrive_error": error,
    });
    if full {
        let envelope = match fairdeal_event::RecordedEvent::decode_envelope(0, &letter.payload) {
            Ok(event) => json!({
                "event_id": event.event_id.to_string(),
                "stream_id": event.stream_id.as_str(),
                "version": event.version,
                "event_type": event.event_type,
                "correlation_id": event.correlation_id,
                "causation_id": event.causation_id,
                "payload_hex": hex::encode(&event.payload),
                "hash": hex::encode(event.hash),
            }),
            Err(error) => json!({
                "undecodable": error.to_string(),
                "bytes_hex": hex::encode(&letter.payload),
            }),
        };
        line["envelope"] = envelope;
    }
    line
}
