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
//!
//! A message's text is sealed in its event: [`deliver`] opens it with the message's key,
//! read from the store when the event is handed out, once per replica for the broadcast
//! (and again for a subscription catching up). The opened text lives in memory only. Once
//! the key is gone (the message was removed, or its author's account deleted) the message
//! goes out as removed, without its text, as History shows it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_bus::{AppendSignal, Recheck, Wake};
use fairdeal_eventstore::{EventStore, RecordedEvent};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::domain::CHANNEL_CATEGORY;
use crate::events::{ChatEvent, open_text, timestamp_of};
use crate::store::ChatStore;

/// A channel's event as subscribers get it.
#[derive(Debug)]
pub struct Delivery {
    /// Its version in the channel's stream.
    pub version: u64,
    /// What subscribers get (`None`: nothing, e.g. a mute), or why the event cannot be
    /// delivered (it does not decode, or its text does not open): never the text itself.
    pub item: Result<Option<pb::SubscribeResponse>, String>,
}

/// `event` of a channel's stream as subscribers get it, its text opened with its key from
/// `store` (see the module docs). `Err` only when the store could not be read.
pub async fn deliver(
    store: &dyn ChatStore,
    event: &RecordedEvent,
) -> Result<Delivery, sqlx::Error> {
    use pb::subscribe_response::Item;
    let item = match ChatEvent::from_recorded(event) {
        Err(reason) => Err(reason.to_string()),
        Ok(ChatEvent::Posted {
            channel,
            author,
            sealed_text,
        }) => {
            let message_id = event.event_id;
            let text = match store.message_key(message_id).await? {
                Some(key) => open_text(&key, message_id, &sealed_text)
                    .map(Some)
                    .map_err(|e| e.to_string()),
                None => Ok(None),
            };
            text.map(|text| {
                Some(Item::Message(pb::ChatMessage {
                    message_id: message_id.to_string(),
                    channel: channel.to_string(),
                    seq: event.version,
                    author_id: author.to_string(),
                    removed: text.is_none(),
                    text: text.map(|t| t.as_str().to_owned()).unwrap_or_default(),
                    posted_at: Some(timestamp_of(event.occurred_at)),
                }))
            })
        }
        Ok(ChatEvent::Removed { message_id, .. }) => Ok(Some(Item::Removed(pb::Removal {
            message_id: message_id.to_string(),
            seq: event.version,
        }))),
        Ok(ChatEvent::Muted { .. }) => Ok(None),
    };
    Ok(Delivery {
        version: event.version,
        item: item.map(|item| item.map(|item| pb::SubscribeResponse { item: Some(item) })),
    })
}

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
    channels: Arc<Mutex<HashMap<String, broadcast::Sender<Arc<Delivery>>>>>,
}

impl Hub {
    /// The new events of stream `stream` from now on.
    pub fn listen(&self, stream: &str) -> broadcast::Receiver<Arc<Delivery>> {
        let mut channels = self.channels.lock();
        channels
            .entry(stream.to_owned())
            .or_insert_with(|| broadcast::channel(CHANNEL_BUFFER).0)
            .subscribe()
    }

    /// Whether anyone here listens to `stream`; forgets it if nobody does any more.
    fn listened(&self, stream: &str) -> bool {
        let mut channels = self.channels.lock();
        match channels.get(stream) {
            Some(sender) if sender.receiver_count() == 0 => {
                channels.remove(stream);
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Hands `delivery` to `stream`'s listeners, if any are left.
    fn dispatch(&self, stream: &str, delivery: Delivery) {
        let channels = self.channels.lock();
        if let Some(sender) = channels.get(stream) {
            // No receiver left between the check and the send is harmless.
            let _ = sender.send(Arc::new(delivery));
        }
    }

    /// Tails `store` from its head until `token` is cancelled (see the module docs), reading
    /// messages' keys from `messages`.
    pub async fn run(
        self,
        store: Arc<dyn EventStore>,
        messages: Arc<dyn ChatStore>,
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
        let mut recheck = Recheck::new();
        loop {
            let page = match store.read_all(next, PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(error = %e, "chat fan-out: reading the log failed");
                    Vec::new()
                }
            };
            let full = page.len() == PAGE;
            let found = !page.is_empty();
            let mut stalled = false;
            for event in page {
                let stream = event.stream_id.as_str();
                if stream.starts_with(&prefix) && self.listened(stream) {
                    match deliver(messages.as_ref(), &event).await {
                        Ok(delivery) => self.dispatch(stream, delivery),
                        Err(e) => {
                            // From this event again after a wait; listeners skip what
                            // they already have.
                            tracing::warn!(error = %e, "chat fan-out: reading a message's key failed");
                            stalled = true;
                            break;
                        }
                    }
                }
                next = event.position.saturating_add(1);
            }
            if full && !stalled {
                continue;
            }
            if found {
                recheck.found();
            }
            // After a wake-up whose commit the read could not see yet (PostgreSQL gates the
            // log below the oldest running transaction), look again soon rather than at the
            // next wake-up, which may be seconds away: a post must not wait for a later one.
            if recheck.wait(Some(&mut waiter), SAFETY_POLL, &token).await == Wake::Shutdown {
                return;
            }
        }
    }
}
