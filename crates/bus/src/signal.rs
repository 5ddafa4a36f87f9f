//! Waking relays and embedded consumers when events are appended, instead of polling only.
//!
//! [`AppendSignal`] is a counter in a `tokio::sync::watch` channel: every append bumps it and
//! every [`AppendWaiter`] remembers the last value it saw, so a wake-up that fires while the
//! waiter is busy reading is never lost (unlike `Notify::notify_waiters`). Appends made by
//! other processes (another replica writing to the same PostgreSQL schema) do not pass through
//! the signal; the waiters' poll interval covers those.
//!
//! [`NotifyingEventStore`] wraps any [`EventStore`] and fires the signal after each successful
//! append, so services keep appending through a plain `Arc<dyn EventStore>`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fairdeal_eventstore::{
    Appended, EventStore, ExpectedVersion, NewEvent, RecordedEvent, StoreError, StreamId,
};
use fairdeal_kit::metrics::{Counter, Histogram, KeyValue};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Fired after events are appended; cheap to clone and share.
#[derive(Debug, Clone)]
pub struct AppendSignal {
    /// Counts appends; waiters only compare it with what they saw last.
    sender: Arc<watch::Sender<u64>>,
}

impl Default for AppendSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl AppendSignal {
    /// A signal nobody waits on yet.
    pub fn new() -> Self {
        Self {
            sender: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Wakes every waiter (call after the appending transaction committed).
    pub fn notify(&self) {
        self.sender
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// A waiter that wakes on appends notified from now on.
    pub fn subscribe(&self) -> AppendWaiter {
        AppendWaiter {
            receiver: self.sender.subscribe(),
        }
    }
}

/// Waits for the next append notified on an [`AppendSignal`].
#[derive(Debug)]
pub struct AppendWaiter {
    /// Holds the last count this waiter saw.
    receiver: watch::Receiver<u64>,
}

impl AppendWaiter {
    /// Waits for the next append notified after this waiter was created or last woke (an
    /// append notified meanwhile wakes it at once). `false` once every [`AppendSignal`] is
    /// gone and nothing can wake it any more. For live readers outside this crate (a
    /// table's watchers): subscribe, read, then wait, and no append is missed.
    pub async fn changed(&mut self) -> bool {
        self.receiver.changed().await.is_ok()
    }
}

/// Why [`wait_for_events`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// New events may be there (signal, or poll interval elapsed).
    Check,
    /// Shutdown was requested.
    Shutdown,
}

/// Waits until `waiter` fires, `poll` elapses or `shutdown` is cancelled. Without a waiter,
/// only the poll interval wakes.
pub(crate) async fn wait_for_events(
    waiter: Option<&mut AppendWaiter>,
    poll: Duration,
    shutdown: &CancellationToken,
) -> Wake {
    let signalled = async {
        match waiter {
            Some(waiter) => {
                // An error means every AppendSignal is gone: no more wake-ups, poll only.
                if waiter.receiver.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = shutdown.cancelled() => Wake::Shutdown,
        () = signalled => Wake::Check,
        () = tokio::time::sleep(poll) => Wake::Check,
    }
}

/// An [`EventStore`] that fires an [`AppendSignal`] after every successful, non-empty append,
/// and measures appends: `fairdeal.events.appended` (events stored) and
/// `fairdeal.events.append.duration` (seconds, by `outcome`: `ok`, `conflict` for a stale
/// expected version or a duplicate event id, `refused` for an invalid event, `error`).
pub struct NotifyingEventStore {
    /// The store doing the work.
    inner: Arc<dyn EventStore>,
    /// Fired after each committed append.
    signal: AppendSignal,
    /// Events appended.
    appended: Counter<u64>,
    /// Append latency by outcome.
    duration: Histogram<f64>,
}

impl NotifyingEventStore {
    /// Wraps `inner`, firing `signal` after each append.
    pub fn new(inner: Arc<dyn EventStore>, signal: AppendSignal) -> Self {
        Self {
            inner,
            signal,
            appended: fairdeal_kit::metrics::counter(
                "fairdeal.events.appended",
                "Events appended to the event store",
                "{event}",
            ),
            duration: fairdeal_kit::metrics::latency(
                "fairdeal.events.append.duration",
                "Duration of event store appends, by outcome",
            ),
        }
    }

    /// The signal this store fires.
    pub fn signal(&self) -> &AppendSignal {
        &self.signal
    }
}

/// The `outcome` attribute of an append.
fn append_outcome(result: &Result<Appended, StoreError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(StoreError::Conflict { .. } | StoreError::DuplicateEventId { .. }) => "conflict",
        Err(StoreError::InvalidEvent(_) | StoreError::InvalidArgument(_)) => "refused",
        Err(_) => "error",
    }
}

impl fmt::Debug for NotifyingEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotifyingEventStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl EventStore for NotifyingEventStore {
    async fn append(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        let started = std::time::Instant::now();
        let result = self.inner.append(stream_id, expected, events).await;
        self.duration.record(
            started.elapsed().as_secs_f64(),
            &[KeyValue::new("outcome", append_outcome(&result))],
        );
        let appended = result?;
        if !appended.events.is_empty() {
            self.appended.add(
                u64::try_from(appended.events.len()).unwrap_or(u64::MAX),
                &[],
            );
            self.signal.notify();
        }
        Ok(appended)
    }

    async fn read_stream(
        &self,
        stream_id: &StreamId,
        from_version: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        self.inner.read_stream(stream_id, from_version, limit).await
    }

    async fn read_all(
        &self,
        from_position: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        self.inner.read_all(from_position, limit).await
    }

    async fn head_position(&self) -> Result<u64, StoreError> {
        self.inner.head_position().await
    }

    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError> {
        self.inner.stream_version(stream_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_notification_sent_while_busy_is_not_lost() {
        let signal = AppendSignal::new();
        let mut waiter = signal.subscribe();
        let shutdown = CancellationToken::new();
        // Fired before anyone waits: the next wait must return at once, not after the poll.
        signal.notify();
        let started = tokio::time::Instant::now();
        let wake = wait_for_events(Some(&mut waiter), Duration::from_secs(60), &shutdown).await;
        assert_eq!(wake, Wake::Check);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn polls_when_nothing_happens_and_stops_on_shutdown() {
        let signal = AppendSignal::new();
        let mut waiter = signal.subscribe();
        let shutdown = CancellationToken::new();
        let started = tokio::time::Instant::now();
        let wake = wait_for_events(Some(&mut waiter), Duration::from_secs(2), &shutdown).await;
        assert_eq!(wake, Wake::Check);
        assert!(started.elapsed() >= Duration::from_secs(2));
        shutdown.cancel();
        let wake = wait_for_events(None, Duration::from_secs(60), &shutdown).await;
        assert_eq!(wake, Wake::Shutdown);
    }
}
