//! Fan-out of new channel events to this replica's subscribers.
//!
//! One task per replica tails the store's log (`read_all`, which never skips an event) from
//! the head at start, woken by the storage's append signal (fed on PostgreSQL by the other
//! replicas' appends too), and hands each chat channel's event to that channel's broadcast
//! if anyone here listens. A thousand quiet channels therefore cost nothing, and an append
//! costs one read per replica, not one per subscriber.
//!
//! The broadcast is a hint, not the record: each subscription ([`crate::service`]) delivers
//! versions strictly in order from where it started, reading any version it did not get
//! (missed, reordered by commit order, or dropped because it lagged) from the channel's
//! stream. Every subscription therefore gets every message exactly once, in the stream's
//! order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_bus::AppendSignal;
use fairdeal_eventstore::{EventStore, RecordedEvent};
use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::domain::CHANNEL_CATEGORY;

/// Events read per call while tailing.
const PAGE: usize = 1000;
/// Events buffered per channel for slow subscribers before they read from the store.
const CHANNEL_BUFFER: usize = 256;
/// How long the tail waits for a wake-up before looking anyway (a safety net).
const SAFETY_POLL: Duration = Duration::from_secs(2);

/// The channels' broadcasts of this replica.
#[derive(Debug, Clone, Default)]
pub struct Hub {
    /// Broadcast per channel stream with subscribers here.
    channels: Arc<Mutex<HashMap<String, broadcast::Sender<Arc<RecordedEvent>>>>>,
}

impl Hub {
    /// The new events of stream `stream` from now on.
    pub fn listen(&self, stream: &str) -> broadcast::Receiver<Arc<RecordedEvent>> {
        let mut channels = self.channels.lock();
        channels
            .entry(stream.to_owned())
            .or_insert_with(|| broadcast::channel(CHANNEL_BUFFER).0)
            .subscribe()
    }

    /// Hands `event` to its channel's listeners; forgets channels nobody listens to.
    fn dispatch(&self, event: RecordedEvent) {
        let mut channels = self.channels.lock();
        let stream = event.stream_id.as_str();
        if let Some(sender) = channels.get(stream) {
            if sender.receiver_count() == 0 {
                channels.remove(stream);
            } else {
                // No receiver left between the check and the send is harmless.
                let _ = sender.send(Arc::new(event));
            }
        }
    }

    /// Tails `store` from its head until `token` is cancelled (see the module docs).
    pub async fn run(
        self,
        store: Arc<dyn EventStore>,
        signal: AppendSignal,
        token: CancellationToken,
    ) {
        let mut waiter = signal.subscribe();
        let mut next = loop {
            match store.head_position().await {
                Ok(head) => break head.saturating_add(1),
                Err(e) => {
                    tracing::warn!(error = %e, "chat fan-out: reading the log head failed");
                    tokio::select! {
                        () = token.cancelled() => return,
                        () = tokio::time::sleep(SAFETY_POLL) => {}
                    }
                }
            }
        };
        let prefix = format!("{CHANNEL_CATEGORY}-");
        loop {
            let page = match store.read_all(next, PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(error = %e, "chat fan-out: reading the log failed");
                    Vec::new()
                }
            };
            let full = page.len() == PAGE;
            for event in page {
                next = event.position.saturating_add(1);
                if event.stream_id.as_str().starts_with(&prefix) {
                    self.dispatch(event);
                }
            }
            if full {
                continue;
            }
            tokio::select! {
                () = token.cancelled() => return,
                alive = waiter.changed() => if !alive { return },
                () = tokio::time::sleep(SAFETY_POLL) => {}
            }
        }
    }
}
