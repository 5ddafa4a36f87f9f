//! The use cases: subscribe (presence and live delivery), post (membership, presence, mute,
//! read-only, rate limit, then one transaction), history, and the moderators' removal and
//! mute. Errors are [`ChatError`], mapped once to the wire.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use fairdeal_authn::Clock;
use fairdeal_eventstore::{EventStore, StoreError, StreamId};
use fairdeal_kit::{ServiceError, Shutdown};
use fairdeal_platform::quota::{LimiterError, RequestQuota};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use tokio::sync::{broadcast, mpsc};
use tonic::Status;
use uuid::Uuid;

use crate::domain::{Channel, MessageText, MuteDuration, MuteScope, Reason};
use crate::events::{timestamp, timestamp_of};
use crate::hub::{Delivery, Hub, deliver};
use crate::presence::Presence;
use crate::store::{ChatStore, Removal, StoredMessage, WriteError};

/// Events read per page when a subscription catches up from the store.
const CATCH_UP_PAGE: usize = 500;
/// Items buffered per subscription before it waits for its client.
const SUBSCRIBER_BUFFER: usize = 256;

/// The chat's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatLimits {
    /// Messages one user may post within `window`, across channels.
    pub messages: u32,
    /// The rate limit's sliding window.
    pub window: Duration,
    /// How long a connection counts without its stream refreshing it (refreshed every
    /// third of it).
    pub presence_ttl: Duration,
}

impl Default for ChatLimits {
    /// 5 messages per 10 s; presence 30 s.
    fn default() -> Self {
        Self {
            messages: 5,
            window: Duration::from_secs(10),
            presence_ttl: Duration::from_secs(30),
        }
    }
}

/// A profanity filter: the text with the words it finds masked.
pub type Filter = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// Why a use case failed.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The caller is not a member of the table's channel.
    #[error("channel: not a member of {0}")]
    NotMember(Channel),
    /// The caller has no open subscription to the channel.
    #[error("not connected to {0}: open Subscribe on it first")]
    NotConnected(Channel),
    /// The table's game finished.
    #[error("{0} is read-only: its game finished")]
    ReadOnly(Channel),
    /// The caller's account was deleted (a token issued before lives on until it expires).
    #[error("the caller's account was deleted")]
    AccountDeleted,
    /// A moderator muted the caller.
    #[error("muted until {}", rfc3339(*until))]
    Muted {
        /// The end of the mute (Unix seconds).
        until: i64,
    },
    /// Over the rate limit.
    #[error("at most {limit} messages per {window}s; retry after {retry_after}s")]
    RateLimited {
        /// The limit.
        limit: u32,
        /// Its window, seconds.
        window: u64,
        /// Seconds until a message is accepted again.
        retry_after: i64,
    },
    /// No such message in the channel.
    #[error("message_id: no such message in {0}")]
    UnknownMessage(Channel),
    /// The database, the event store or Redis failed.
    #[error("{what} unavailable")]
    Unavailable {
        /// What failed, for the caller.
        what: &'static str,
        /// Why, for the log.
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ChatError {
    fn database(error: sqlx::Error) -> Self {
        ChatError::Unavailable {
            what: "database",
            cause: error.into(),
        }
    }

    fn store(error: StoreError) -> Self {
        ChatError::Unavailable {
            what: "event store",
            cause: error.into(),
        }
    }

    fn sealing(error: fairdeal_shred::ShredError) -> Self {
        ChatError::Unavailable {
            what: "random source",
            cause: error.into(),
        }
    }

    fn limiter(error: LimiterError) -> Self {
        ChatError::Unavailable {
            what: "presence and rate limits",
            cause: error.into(),
        }
    }
}

fn rfc3339(seconds: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    humantime::format_rfc3339_seconds(at).to_string()
}

impl From<ChatError> for ServiceError {
    fn from(error: ChatError) -> Self {
        let message = error.to_string();
        match error {
            ChatError::NotMember(_) | ChatError::Muted { .. } | ChatError::AccountDeleted => {
                ServiceError::PermissionDenied(message)
            }
            ChatError::NotConnected(_) | ChatError::ReadOnly(_) => {
                ServiceError::FailedPrecondition(message)
            }
            ChatError::RateLimited { .. } => ServiceError::ResourceExhausted(message),
            ChatError::UnknownMessage(_) => ServiceError::NotFound(message),
            ChatError::Unavailable { what, cause } => {
                ServiceError::unavailable(format!("{what} unavailable"), cause)
            }
        }
    }
}

impl From<WriteError> for ChatError {
    fn from(error: WriteError) -> Self {
        match error {
            WriteError::Db(e) => ChatError::database(e),
            WriteError::Store(e) => ChatError::store(e),
            WriteError::Seal(e) => ChatError::sealing(e),
            WriteError::AccountDeleted => ChatError::AccountDeleted,
            // Mapped by the callers, who know the channel.
            WriteError::ReadOnly | WriteError::NoMessage => ChatError::Unavailable {
                what: "database",
                cause: error.into(),
            },
        }
    }
}

/// The chat's use cases. Cheap to clone.
#[derive(Clone)]
pub struct Chat {
    inner: Arc<Inner>,
}

struct Inner {
    /// Tables and writes.
    store: Arc<dyn ChatStore>,
    /// The event store, for subscriptions' catch-up reads.
    events: Arc<dyn EventStore>,
    /// This replica's fan-out.
    hub: Hub,
    /// Who is connected.
    presence: Arc<dyn Presence>,
    /// Messages per user.
    quota: Arc<dyn RequestQuota>,
    /// Time of mutes, presence and the rate limit.
    clock: Arc<dyn Clock>,
    /// The profanity filter, when on.
    filter: Option<Filter>,
    /// The limits.
    limits: ChatLimits,
    /// Ends subscriptions when the server drains.
    shutdown: Shutdown,
    /// `fairdeal.chat.connected_users`: this replica's open subscriptions.
    connected: fairdeal_kit::metrics::Level,
}

impl fmt::Debug for Chat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chat")
            .field("limits", &self.inner.limits)
            .field("filter", &self.inner.filter.is_some())
            .finish_non_exhaustive()
    }
}

/// What [`Chat::new`] is built from.
pub struct ChatDeps {
    /// Tables and writes.
    pub store: Arc<dyn ChatStore>,
    /// The event store.
    pub events: Arc<dyn EventStore>,
    /// The fan-out (its tail runs elsewhere).
    pub hub: Hub,
    /// Presence.
    pub presence: Arc<dyn Presence>,
    /// The rate limit's quota (its window is the limits').
    pub quota: Arc<dyn RequestQuota>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// The profanity filter, when on.
    pub filter: Option<Filter>,
    /// Limits.
    pub limits: ChatLimits,
    /// The server's shutdown.
    pub shutdown: Shutdown,
}

impl fmt::Debug for ChatDeps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatDeps")
            .field("limits", &self.limits)
            .field("filter", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

fn millis(clock: &dyn Clock) -> i64 {
    clock
        .now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A live subscription's items.
pub type Items = mpsc::Receiver<Result<pb::SubscribeResponse, Status>>;

/// A stored message on the wire.
pub fn message_of(m: &StoredMessage) -> pb::ChatMessage {
    pb::ChatMessage {
        message_id: m.message_id.to_string(),
        channel: m.channel.to_string(),
        seq: m.seq,
        author_id: m.author.to_string(),
        text: if m.removed {
            String::new()
        } else {
            m.text.clone()
        },
        posted_at: Some(timestamp_of(crate::events::from_micros(m.posted_us))),
        removed: m.removed,
    }
}

/// A subscription's end that the client should hear of.
fn ended(error: ChatError) -> Status {
    Status::from(ServiceError::from(error))
}

impl Chat {
    /// The use cases over `deps`.
    pub fn new(deps: ChatDeps) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: deps.store,
                events: deps.events,
                hub: deps.hub,
                presence: deps.presence,
                quota: deps.quota,
                clock: deps.clock,
                filter: deps.filter,
                limits: deps.limits,
                shutdown: deps.shutdown,
                connected: fairdeal_kit::metrics::level(
                    "fairdeal.chat.connected_users",
                    "Open chat subscriptions on this replica (a user in two channels counts twice)",
                    "{subscription}",
                ),
            }),
        }
    }

    /// `Ok` when `user` may read and post in `channel` (any player in the lobby; a table's
    /// seated players and spectators in its channel).
    async fn authorize(&self, user: Uuid, channel: Channel) -> Result<(), ChatError> {
        match channel {
            Channel::Lobby => Ok(()),
            Channel::Table(table) => {
                if self
                    .inner
                    .store
                    .is_member(table, user)
                    .await
                    .map_err(ChatError::database)?
                {
                    Ok(())
                } else {
                    Err(ChatError::NotMember(channel))
                }
            }
        }
    }

    fn stream(channel: Channel) -> Result<StreamId, ChatError> {
        channel.stream().map_err(|e| ChatError::Unavailable {
            what: "event store",
            cause: e.into(),
        })
    }

    /// Opens a subscription: the caller is connected from the first item (`connected`) on,
    /// and gets every later event of the channel once, in order, until the client goes,
    /// the server drains, or the caller stops being a member.
    #[tracing::instrument(skip(self), fields(%user, %channel))]
    pub async fn subscribe(&self, user: Uuid, channel: Channel) -> Result<Items, ChatError> {
        self.authorize(user, channel).await?;
        let stream = Self::stream(channel)?;
        // Listen before reading the head: whatever is appended after the head is either
        // broadcast to us or read back by the catch-up.
        let live = self.inner.hub.listen(stream.as_str());
        let head = self
            .inner
            .events
            .stream_version(&stream)
            .await
            .map_err(ChatError::store)?;
        let connection = Uuid::now_v7();
        self.touch(channel, user, connection).await?;
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BUFFER);
        let connected = pb::SubscribeResponse {
            item: Some(pb::subscribe_response::Item::Connected(pb::Connected {
                seq: head,
            })),
        };
        // The channel is empty: this cannot fail for want of room.
        let _ = tx.try_send(Ok(connected));
        let this = self.clone();
        tokio::spawn(async move {
            // Counted while the subscription's loop runs.
            let _connected = this.inner.connected.hold();
            let result = this
                .feed(user, channel, &stream, head, live, &tx, connection)
                .await;
            if let Err(status) = result {
                let _ = tx.send(Err(status)).await;
            }
            if let Err(e) = this.inner.presence.leave(channel, user, connection).await {
                // It expires on its own.
                tracing::warn!(error = %e, "presence not cleared; it expires");
            }
        });
        Ok(rx)
    }

    /// Records the connection until now + the presence TTL.
    async fn touch(&self, channel: Channel, user: Uuid, connection: Uuid) -> Result<(), ChatError> {
        let ttl = i64::try_from(self.inner.limits.presence_ttl.as_millis()).unwrap_or(i64::MAX);
        let expires = millis(self.inner.clock.as_ref()).saturating_add(ttl);
        self.inner
            .presence
            .touch(channel, user, connection, expires)
            .await
            .map_err(ChatError::limiter)
    }

    /// A subscription's loop (see [`crate::hub`] for why it is exactly once and in order).
    #[allow(clippy::too_many_arguments)]
    async fn feed(
        &self,
        user: Uuid,
        channel: Channel,
        stream: &StreamId,
        head: u64,
        mut live: broadcast::Receiver<Arc<Delivery>>,
        tx: &mpsc::Sender<Result<pb::SubscribeResponse, Status>>,
        connection: Uuid,
    ) -> Result<(), Status> {
        let mut last = head;
        let mut refresh = tokio::time::interval(self.inner.limits.presence_ttl / 3);
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        refresh.tick().await;
        loop {
            tokio::select! {
                received = live.recv() => match received {
                    Ok(delivery) => {
                        if delivery.version <= last {
                            continue;
                        }
                        if delivery.version > last + 1
                            && !self.catch_up(stream, &mut last, delivery.version - 1, tx).await?
                        {
                            return Ok(());
                        }
                        if !send(tx, stream, &delivery).await? {
                            return Ok(());
                        }
                        last = delivery.version;
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        if !self.catch_up(stream, &mut last, u64::MAX, tx).await? {
                            return Ok(());
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
                _ = refresh.tick() => {
                    // A player who left the table stops hearing it.
                    self.authorize(user, channel).await.map_err(ended)?;
                    if let Err(e) = self.touch(channel, user, connection).await {
                        tracing::warn!(error = %e, "presence refresh failed");
                    }
                }
                () = tx.closed() => return Ok(()),
                () = self.inner.shutdown.draining() => return Ok(()),
            }
        }
    }

    /// Delivers the stream's events after `last` up to `until` (inclusive) from the store.
    /// `false` when the client went away.
    async fn catch_up(
        &self,
        stream: &StreamId,
        last: &mut u64,
        until: u64,
        tx: &mpsc::Sender<Result<pb::SubscribeResponse, Status>>,
    ) -> Result<bool, Status> {
        while *last < until {
            let page = self
                .inner
                .events
                .read_stream(stream, *last + 1, CATCH_UP_PAGE)
                .await
                .map_err(|e| ended(ChatError::store(e)))?;
            if page.is_empty() {
                break;
            }
            for event in page.iter().take_while(|e| e.version <= until) {
                let delivery = deliver(self.inner.store.as_ref(), event)
                    .await
                    .map_err(|e| ended(ChatError::database(e)))?;
                if !send(tx, stream, &delivery).await? {
                    return Ok(false);
                }
                *last = event.version;
            }
            if page.len() < CATCH_UP_PAGE {
                break;
            }
        }
        Ok(true)
    }

    /// Posts `text` by `user` to `channel`.
    #[tracing::instrument(skip(self, text), fields(%user, %channel))]
    pub async fn post(
        &self,
        user: Uuid,
        channel: Channel,
        text: MessageText,
    ) -> Result<StoredMessage, ChatError> {
        let inner = &self.inner;
        self.authorize(user, channel).await?;
        let now_ms = millis(inner.clock.as_ref());
        if !inner
            .presence
            .is_connected(channel, user, now_ms)
            .await
            .map_err(ChatError::limiter)?
        {
            return Err(ChatError::NotConnected(channel));
        }
        let now = now_ms.div_euclid(1000);
        if let Some(until) = inner
            .store
            .muted_until(user, channel, now)
            .await
            .map_err(ChatError::database)?
        {
            return Err(ChatError::Muted { until });
        }
        if inner
            .store
            .is_read_only(channel)
            .await
            .map_err(ChatError::database)?
        {
            return Err(ChatError::ReadOnly(channel));
        }
        // Last, so a post refused for another reason costs nothing of the quota.
        let limit = inner.limits.messages;
        if let Some(retry_after) = inner
            .quota
            .admit(&format!("post:{user}"), limit, now)
            .await
            .map_err(ChatError::limiter)?
        {
            return Err(ChatError::RateLimited {
                limit,
                window: inner.limits.window.as_secs(),
                retry_after,
            });
        }
        let text = match &inner.filter {
            Some(filter) => text.filtered(|t| filter(t)),
            None => text,
        };
        inner
            .store
            .post(channel, Uuid::now_v7(), user, &text)
            .await
            .map_err(|e| match e {
                WriteError::ReadOnly => ChatError::ReadOnly(channel),
                other => other.into(),
            })
    }

    /// Up to `limit` messages of `channel` before `before`, newest first, and whether there
    /// are older ones.
    #[tracing::instrument(skip(self), fields(%user, %channel))]
    pub async fn history(
        &self,
        user: Uuid,
        channel: Channel,
        before: Option<Uuid>,
        limit: u32,
    ) -> Result<(Vec<StoredMessage>, bool), ChatError> {
        self.authorize(user, channel).await?;
        let store = &self.inner.store;
        let before = match before {
            None => None,
            Some(id) => Some(
                store
                    .seq_of(channel, id)
                    .await
                    .map_err(ChatError::database)?
                    .ok_or(ChatError::UnknownMessage(channel))?,
            ),
        };
        store
            .history(channel, before, limit)
            .await
            .map_err(ChatError::database)
    }

    /// A moderator removes a message (idempotent).
    #[tracing::instrument(skip(self, reason), fields(%moderator, %channel, %message_id))]
    pub async fn remove(
        &self,
        moderator: Uuid,
        channel: Channel,
        message_id: Uuid,
        reason: Reason,
    ) -> Result<Removal, ChatError> {
        let removal = self
            .inner
            .store
            .remove(channel, message_id, moderator, &reason)
            .await
            .map_err(|e| match e {
                WriteError::NoMessage => ChatError::UnknownMessage(channel),
                other => other.into(),
            })?;
        tracing::info!(?removal, "message removed by a moderator");
        Ok(removal)
    }

    /// A moderator mutes `user` in `scope` for `duration`; answers the end (Unix seconds).
    #[tracing::instrument(skip(self, reason), fields(%moderator, %user))]
    pub async fn mute(
        &self,
        moderator: Uuid,
        user: Uuid,
        scope: MuteScope,
        duration: MuteDuration,
        reason: Reason,
    ) -> Result<prost_types::Timestamp, ChatError> {
        let until = duration.until(self.inner.clock.unix_seconds());
        self.inner
            .store
            .mute(user, scope, until, moderator, &reason)
            .await?;
        tracing::info!(until, "user muted by a moderator");
        Ok(timestamp(until))
    }
}

/// Sends `delivery` of `stream` to the subscriber; `false` when it went away.
async fn send(
    tx: &mpsc::Sender<Result<pb::SubscribeResponse, Status>>,
    stream: &StreamId,
    delivery: &Delivery,
) -> Result<bool, Status> {
    let item = delivery.item.as_ref().map_err(|reason| {
        Status::from(ServiceError::internal(format!(
            "{stream} version {} does not decode: {reason}",
            delivery.version
        )))
    })?;
    match item {
        Some(item) => Ok(tx.send(Ok(item.clone())).await.is_ok()),
        None => Ok(true),
    }
}
