//! The chat's events <-> protobuf (`fairdeal.chat.v1`, events.proto), re-validated on
//! decode.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fairdeal_eventstore::{NewEvent, RecordedEvent, is_event_type};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use uuid::Uuid;

use crate::domain::{Channel, MessageText, MuteScope, Reason};

/// A chat event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatEvent {
    /// A message was posted (the event id is the message id).
    Posted {
        /// Where.
        channel: Channel,
        /// Who.
        author: Uuid,
        /// What.
        text: MessageText,
    },
    /// A moderator removed a message.
    Removed {
        /// Where.
        channel: Channel,
        /// The message.
        message_id: Uuid,
        /// Who removed it.
        moderator: Uuid,
        /// Why.
        reason: Reason,
    },
    /// A moderator muted a user.
    Muted {
        /// Who is muted.
        user: Uuid,
        /// Where.
        scope: MuteScope,
        /// Until (Unix seconds).
        until: i64,
        /// Who muted.
        moderator: Uuid,
        /// Why.
        reason: Reason,
    },
}

/// `seconds` since the epoch as a protobuf timestamp.
pub fn timestamp(seconds: i64) -> prost_types::Timestamp {
    prost_types::Timestamp { seconds, nanos: 0 }
}

/// `at` as a protobuf timestamp.
pub fn timestamp_of(at: SystemTime) -> prost_types::Timestamp {
    prost_types::Timestamp::from(at)
}

/// Microseconds since the epoch of `at` (0 before the epoch).
pub fn micros(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The time `micros` microseconds after the epoch.
pub fn from_micros(micros: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

impl ChatEvent {
    /// The event as the store takes it (protobuf payload typed by its full name,
    /// correlated to the table, the lobby or the muted user).
    pub fn to_new_event(&self) -> NewEvent {
        match self {
            ChatEvent::Posted {
                channel,
                author,
                text,
            } => NewEvent::from_message(&pb::MessagePosted {
                channel: channel.to_string(),
                author_id: author.to_string(),
                text: text.as_str().to_owned(),
            })
            .with_correlation_id(channel.correlation()),
            ChatEvent::Removed {
                channel,
                message_id,
                moderator,
                reason,
            } => NewEvent::from_message(&pb::MessageRemoved {
                channel: channel.to_string(),
                message_id: message_id.to_string(),
                moderator_id: moderator.to_string(),
                reason: reason.as_str().to_owned(),
            })
            .with_correlation_id(channel.correlation())
            .with_causation_id(message_id.to_string()),
            ChatEvent::Muted {
                user,
                scope,
                until,
                moderator,
                reason,
            } => NewEvent::from_message(&pb::UserMuted {
                user_id: user.to_string(),
                channel: scope.stored(),
                until: Some(timestamp(*until)),
                moderator_id: moderator.to_string(),
                reason: reason.as_str().to_owned(),
            })
            .with_correlation_id(user.to_string()),
        }
    }

    /// Decodes a stored chat event; the error says what does not parse.
    pub fn from_recorded(event: &RecordedEvent) -> Result<Self, String> {
        let uuid = |field: &str, value: &str| {
            Uuid::try_parse(value).map_err(|_| format!("{field} is not a UUID"))
        };
        let channel = |value: &str| Channel::parse(value).map_err(|e| format!("channel {e}"));
        let t = event.event_type.as_str();
        if is_event_type::<pb::MessagePosted>(t) {
            let m: pb::MessagePosted = event.decode_payload().map_err(|e| e.to_string())?;
            Ok(ChatEvent::Posted {
                channel: channel(&m.channel)?,
                author: uuid("author_id", &m.author_id)?,
                text: MessageText::parse(&m.text).map_err(|e| format!("text {e}"))?,
            })
        } else if is_event_type::<pb::MessageRemoved>(t) {
            let m: pb::MessageRemoved = event.decode_payload().map_err(|e| e.to_string())?;
            Ok(ChatEvent::Removed {
                channel: channel(&m.channel)?,
                message_id: uuid("message_id", &m.message_id)?,
                moderator: uuid("moderator_id", &m.moderator_id)?,
                reason: Reason::parse(&m.reason).map_err(|e| format!("reason {e}"))?,
            })
        } else if is_event_type::<pb::UserMuted>(t) {
            let m: pb::UserMuted = event.decode_payload().map_err(|e| e.to_string())?;
            let scope = if m.channel.is_empty() {
                MuteScope::Everywhere
            } else {
                MuteScope::Channel(channel(&m.channel)?)
            };
            Ok(ChatEvent::Muted {
                user: uuid("user_id", &m.user_id)?,
                scope,
                until: m.until.map(|t| t.seconds).ok_or("until is missing")?,
                moderator: uuid("moderator_id", &m.moderator_id)?,
                reason: Reason::parse(&m.reason).map_err(|e| format!("reason {e}"))?,
            })
        } else {
            Err(format!("{t} is not a chat event"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairdeal_eventstore::{GENESIS_PREV_HASH, StreamId};

    fn recorded(new: NewEvent, stream: &str) -> RecordedEvent {
        RecordedEvent {
            position: 1,
            event_id: new.event_id,
            stream_id: StreamId::parse(stream).unwrap(),
            version: 1,
            event_type: new.event_type,
            occurred_at: new.occurred_at,
            correlation_id: new.correlation_id,
            causation_id: new.causation_id,
            trace_context: new.trace_context,
            payload: new.payload,
            prev_hash: GENESIS_PREV_HASH,
            hash: GENESIS_PREV_HASH,
        }
    }

    #[test]
    fn events_round_trip() {
        let table = Uuid::now_v7();
        let events = [
            ChatEvent::Posted {
                channel: Channel::Table(table),
                author: Uuid::now_v7(),
                text: MessageText::parse("hello").unwrap(),
            },
            ChatEvent::Removed {
                channel: Channel::Lobby,
                message_id: Uuid::now_v7(),
                moderator: Uuid::now_v7(),
                reason: Reason::parse("spam").unwrap(),
            },
            ChatEvent::Muted {
                user: Uuid::now_v7(),
                scope: MuteScope::Everywhere,
                until: 1_800_000_000,
                moderator: Uuid::now_v7(),
                reason: Reason::default(),
            },
        ];
        for event in events {
            let new = event.to_new_event();
            let back = ChatEvent::from_recorded(&recorded(new, "chat-lobby")).unwrap();
            assert_eq!(back, event);
        }
        let new = ChatEvent::Posted {
            channel: Channel::Table(table),
            author: Uuid::now_v7(),
            text: MessageText::parse("x").unwrap(),
        }
        .to_new_event();
        assert_eq!(new.correlation_id, table.to_string());
    }
}
