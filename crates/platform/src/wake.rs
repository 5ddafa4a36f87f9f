//! Wake-ups from other processes: the PostgreSQL event store sends a notification on
//! channel [`CHANNEL`] when a transaction that appended events commits, naming the streams it
//! appended to with their new versions, payload `<schema> <stream id> <new version>
//! [<stream id> <new version>]...` (a group commit names many streams in one; the older
//! payloads, `<schema>` alone and one stream per notification, are still understood).
//! `spawn_listener` forwards the ones of this service's schema to the storage's
//! [`AppendSignal`]: the log-wide waiters (relay, consumers) and that stream's waiters (a
//! table's watchers) of a replica see another replica's appends at once instead of polling
//! for them. A notification of this process's own append finds its stream's waiters told of
//! that version already and wakes nobody twice.
//!
//! Whenever the listening connection is (re)established, the signal fires for everything:
//! whatever committed while nobody listened is re-read.
//!
//! The same connection hears the wake-ups of the schema's aggregate owners
//! (`crate::ownership::Wake`), handed to the storage's `owner_wakes`, and the keepers'
//! announcements that who holds what has changed (`crate::ownership::LEASES_CHANNEL`),
//! counted in the storage's `lease_changes`: one listening session a process, whatever it
//! listens for (the connection budget counts one).
//! `spawn_channel_listener` is the listening loop, for any channels.

use std::sync::Arc;
use std::time::Duration;

use crate::shutdown::Shutdown;
use fairdeal_bus::AppendSignal;
use fairdeal_db::Schema;
use sqlx::PgPool;
use sqlx::postgres::PgListener;

use crate::ownership::Woken;

/// The notification channel of every event store.
pub const CHANNEL: &str = fairdeal_eventstore::postgres::NOTIFY_CHANNEL;

/// Wait before reconnecting after the listening connection failed.
const RECONNECT: Duration = Duration::from_secs(1);

/// Whom a process's listener tells what it hears of its schema.
#[derive(Debug, Clone)]
pub struct Hearers {
    /// Fired for each append.
    pub appends: AppendSignal,
    /// Told of each wake-up of an aggregate's owner (`crate::ownership::Wake`).
    pub owner_wakes: tokio::sync::broadcast::Sender<Woken>,
    /// Raised by one for each keeper's announcement (`crate::ownership::Keeper::hearing`).
    pub lease_changes: Arc<tokio::sync::watch::Sender<u64>>,
}

/// Listens on `pool`'s server, on one connection until `shutdown` stops the background
/// tasks, for appends to `schema`, the wake-ups of its aggregate owners and its keepers'
/// announcements, and tells `hearers` of each. Whenever the connection is (re)established,
/// everything is woken, the owners hear [`Woken::Missed`] and the lease changes are raised
/// (what was sent while nobody listened is read again).
pub fn spawn_listener(pool: PgPool, schema: Schema, hearers: Hearers, shutdown: &Shutdown) {
    use crate::ownership::{LEASES_CHANNEL, WAKE_CHANNEL};
    let channels = &[CHANNEL, WAKE_CHANNEL, LEASES_CHANNEL];
    spawn_channel_listener(pool, channels, "append-listener", shutdown, move |heard| {
        match heard {
            Heard::Notification { channel, payload } if channel == CHANNEL => {
                forward(payload, schema.as_str(), &hearers.appends);
            }
            Heard::Notification { channel, payload } if channel == WAKE_CHANNEL => {
                if let Some(woken) = crate::ownership::woken(payload, schema.as_str()) {
                    // Nobody listening (no owner in this process) is no error.
                    let _ = hearers.owner_wakes.send(woken);
                }
            }
            Heard::Notification { payload, .. } => {
                if crate::ownership::leases_changed(payload, schema.as_str()) {
                    hearers
                        .lease_changes
                        .send_modify(|n| *n = n.wrapping_add(1));
                }
            }
            Heard::Listening => {
                wake_everything(&hearers.appends);
                let _ = hearers.owner_wakes.send(Woken::Missed);
                hearers
                    .lease_changes
                    .send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    });
}

/// What a channel's listener hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heard<'a> {
    /// The listening connection is (re)established: notifications sent while it was not may
    /// have been missed, so whatever they would have said must be re-read.
    Listening,
    /// A notification.
    Notification {
        /// Its channel.
        channel: &'a str,
        /// Its payload.
        payload: &'a str,
    },
}

/// Listens on `pool`'s server on `channels` (one connection), telling `on` of each
/// notification and of each time the listening connection is (re)established, until
/// `shutdown` stops the background tasks (the task is named `task`). A lost connection is
/// re-established after a pause.
fn spawn_channel_listener(
    pool: PgPool,
    channels: &'static [&'static str],
    task: &'static str,
    shutdown: &Shutdown,
    mut on: impl FnMut(Heard<'_>) + Send + 'static,
) {
    let stop = shutdown.token();
    shutdown.spawn(task, async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                result = listen(&pool, channels, &mut on) => {
                    if let Err(error) = result {
                        fairdeal_db::health::note_if_lost(&error);
                        tracing::warn!(%error, ?channels, "notifications lost; reconnecting");
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
async fn listen(
    pool: &PgPool,
    channels: &[&str],
    on: &mut (impl FnMut(Heard<'_>) + Send),
) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen_all(channels.iter().copied()).await?;
    on(Heard::Listening);
    loop {
        match listener.try_recv().await? {
            Some(notification) => on(Heard::Notification {
                channel: notification.channel(),
                payload: notification.payload(),
            }),
            // The connection was lost and is re-established on the next call: notifications
            // may have been missed. It is the first session to see a server restart (it is
            // always reading), so it tells the pools to ping their idle connections.
            None => {
                fairdeal_db::health::note_lost_connection();
                on(Heard::Listening);
            }
        }
    }
}

fn wake_everything(signal: &AppendSignal) {
    signal.notify();
    signal.notify_all_streams();
}

/// Fires `signal` for a notification's `payload` if it is about `schema`.
fn forward(payload: &str, schema: &str, signal: &AppendSignal) {
    let mut parts = payload.split(' ');
    if parts.next() != Some(schema) {
        return;
    }
    let mut heads = Vec::new();
    loop {
        match (parts.next(), parts.next().map(str::parse::<u64>)) {
            (None, None) => break,
            (Some(stream), Some(Ok(version))) => heads.push((stream, version)),
            // A payload not understood: wake everyone.
            _ => return wake_everything(signal),
        }
    }
    if heads.is_empty() {
        // The schema alone (an older trigger): wake everyone.
        return wake_everything(signal);
    }
    signal.notify();
    for (stream, version) in heads {
        signal.notify_stream(stream, version);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairdeal_eventstore::StreamId;

    /// Whether `waiter` wakes within a (paused-clock) second.
    async fn woke(waiter: &mut fairdeal_bus::StreamWaiter) -> bool {
        tokio::time::timeout(Duration::from_secs(1), waiter.changed())
            .await
            .is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_notification_wakes_its_schemas_stream_only() {
        let signal = AppendSignal::new();
        let mut log = signal.subscribe();
        let mut one = signal.subscribe_stream(&StreamId::parse("table-1").unwrap());
        let mut two = signal.subscribe_stream(&StreamId::parse("table-2").unwrap());
        forward("other table-1 4", "tables", &signal);
        assert!(!woke(&mut one).await);
        forward("tables table-1 4", "tables", &signal);
        assert!(woke(&mut one).await);
        assert!(!woke(&mut two).await);
        assert!(log.changed().await);
        // The older payload, or one not understood, wakes every stream.
        forward("tables", "tables", &signal);
        assert!(woke(&mut one).await && woke(&mut two).await);
        forward("tables table-2 x", "tables", &signal);
        assert!(woke(&mut two).await);
        // A group commit names several streams in one payload.
        let mut three = signal.subscribe_stream(&StreamId::parse("table-3").unwrap());
        forward("tables table-1 9 table-3 2", "tables", &signal);
        assert!(woke(&mut one).await && woke(&mut three).await);
        assert!(!woke(&mut two).await);
        forward("tables table-1 10 table-3", "tables", &signal);
        assert!(woke(&mut two).await);
    }
}
