//! Wake-ups from other processes: the PostgreSQL event store sends a notification on
//! channel [`CHANNEL`] (payload: the schema) when a transaction that appended events commits
//! (migration `0002_notify.sql`). [`spawn_listener`] forwards the ones of this service's schema
//! to the storage's [`AppendSignal`], so the relay and live readers of a replica see another
//! replica's appends at once instead of polling for them.
//!
//! Whenever the listening connection is (re)established, the signal fires too: whatever
//! committed while nobody listened is re-read.

use std::time::Duration;

use fairdeal_bus::AppendSignal;
use fairdeal_db::Schema;
use fairdeal_kit::Shutdown;
use sqlx::PgPool;
use sqlx::postgres::PgListener;

/// The notification channel of every event store.
pub const CHANNEL: &str = "fairdeal_events";

/// Wait before reconnecting after the listening connection failed.
const RECONNECT: Duration = Duration::from_secs(1);

/// Listens on `pool`'s server for appends to `schema` and fires `signal` for each, until
/// `shutdown` stops the background tasks.
pub(crate) fn spawn_listener(
    pool: PgPool,
    schema: Schema,
    signal: AppendSignal,
    shutdown: &Shutdown,
) {
    let stop = shutdown.token();
    shutdown.spawn("append-listener", async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                result = listen(&pool, &schema, &signal) => {
                    if let Err(error) = result {
                        tracing::warn!(%error, "event notifications lost; reconnecting");
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(RECONNECT) => {}
            }
        }
    });
}

/// Listens until the connection fails.
async fn listen(pool: &PgPool, schema: &Schema, signal: &AppendSignal) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    // Anything committed before we listened is read now.
    signal.notify();
    loop {
        match listener.try_recv().await? {
            Some(notification) if notification.payload() == schema.as_str() => signal.notify(),
            Some(_) => {}
            // The connection was lost and is re-established on the next call: notifications
            // may have been missed.
            None => signal.notify(),
        }
    }
}
