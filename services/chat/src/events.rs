//! The chat's events <-> protobuf (`fairdeal.chat.v1`, events.proto), re-validated on
//! decode.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fairdeal_eventstore::{NewEvent, RecordedEvent, is_event_type};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_shred::{ShredError, SubjectKey};
use uuid::Uuid;

use crate::domain::{Channel, MessageText, MuteScope, Reason};

/// The sealed field, first part of the associated data of every message's sealed text.
pub const SEALED_TEXT_FIELD: &str = "fairdeal.chat.v1.MessagePosted.sealed_text";

/// A chat event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatEvent {
    /// A message was posted (the event id is the message id).
    Posted {
        /// Where.
        channel: Channel,
        /// Who.
        author: Uuid,
        /// What, sealed under the message's own key ([`seal_text`]); never in plain.
        sealed_text: Vec<u8>,
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

/// The associated data sealing message `message_id`'s text: the field and the message, so
/// sealed bytes copied into another message's event do not open.
pub fn text_context(message_id: Uuid) -> String {
    format!("{SEALED_TEXT_FIELD}/{message_id}")
}

/// `text` of message `message_id` sealed under the message's `key`.
pub fn seal_text(
    key: &SubjectKey,
    message_id: Uuid,
    text: &MessageText,
) -> Result<Vec<u8>, ShredError> {
    key.seal(
        text_context(message_id).as_bytes(),
        text.as_str().as_bytes(),
    )
}

/// The text of message `message_id` from its `sealed` bytes and its `key`, re-validated; the
/// error says what failed, never what the text is.
pub fn open_text(key: &SubjectKey, message_id: Uuid, sealed: &[u8]) -> Result<MessageText, String> {
    let text = key
        .open_text(text_context(message_id).as_bytes(), sealed)
        .map_err(|e| format!("sealed_text: {e}"))?;
    MessageText::recorded(&text).map_err(|e| format!("sealed_text {e}"))
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
                sealed_text,
            } => NewEvent::from_message(&pb::MessagePosted {
                channel: channel.to_string(),
                author_id: author.to_string(),
                sealed_text: sealed_text.clone(),
                // The plain `text` of earlier versions stays empty.
                ..Default::default()
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
            // Earlier versions' plain `text` is not read: their events precede any
            // subscription's start, the only reader of the log's messages.
            if m.sealed_text.len() < fairdeal_shred::OVERHEAD {
                return Err("sealed_text is missing or too short".to_owned());
            }
            Ok(ChatEvent::Posted {
                channel: channel(&m.channel)?,
                author: uuid("author_id", &m.author_id)?,
                sealed_text: m.sealed_text,
            })
        } else if is_event_type::<pb::MessageRemoved>(t) {
            let m: pb::MessageRemoved = event.decode_payload().map_err(|e| e.to_string())?;
            Ok(ChatEvent::Removed {
                channel: channel(&m.channel)?,
                message_id: uuid("message_id", &m.message_id)?,
                moderator: uuid("moderator_id", &m.moderator_id)?,
                reason: Reason::recorded(&m.reason).map_err(|e| format!("reason {e}"))?,
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
                reason: Reason::recorded(&m.reason).map_err(|e| format!("reason {e}"))?,
            })
        } else {
            Err(format!("{t} is not a chat event"))
        }
    }
}

/// `new` as the store would record it first in `stream` (the chat's unit tests decode
/// events through this).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn recorded(new: NewEvent, stream: &str) -> RecordedEvent {
    use fairdeal_eventstore::{GENESIS_PREV_HASH, StreamId};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip() {
        let table = Uuid::now_v7();
        let key = SubjectKey::generate().unwrap();
        let text = MessageText::parse("hello").unwrap();
        let events = [
            ChatEvent::Posted {
                channel: Channel::Table(table),
                author: Uuid::now_v7(),
                sealed_text: seal_text(&key, Uuid::now_v7(), &text).unwrap(),
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
            sealed_text: seal_text(&key, Uuid::now_v7(), &text).unwrap(),
        }
        .to_new_event();
        assert_eq!(new.correlation_id, table.to_string());
    }

    #[test]
    fn a_posted_text_is_sealed_under_its_message_and_opens_only_there() {
        let (key, message, other) = (
            SubjectKey::generate().unwrap(),
            Uuid::now_v7(),
            Uuid::now_v7(),
        );
        let text = MessageText::parse("meet me at the blue door").unwrap();
        let sealed = seal_text(&key, message, &text).unwrap();
        let new = ChatEvent::Posted {
            channel: Channel::Lobby,
            author: Uuid::now_v7(),
            sealed_text: sealed.clone(),
        }
        .to_new_event();
        // Neither the event's payload nor its envelope holds the text.
        assert!(!new.payload.windows(9).any(|w| w == b"blue door"));
        assert_eq!(open_text(&key, message, &sealed).unwrap(), text);
        // Another message's context, another key: refused, and the error has no text.
        let wrong = open_text(&key, other, &sealed).unwrap_err();
        assert!(!wrong.contains("blue"), "{wrong}");
        assert!(open_text(&SubjectKey::generate().unwrap(), message, &sealed).is_err());
        // An event of an earlier version (plain text, nothing sealed) is not read.
        #[allow(deprecated)]
        let plain = NewEvent::from_message(&pb::MessagePosted {
            channel: "lobby".into(),
            author_id: Uuid::now_v7().to_string(),
            text: "hello".into(),
            sealed_text: Vec::new(),
        });
        assert!(ChatEvent::from_recorded(&recorded(plain, "chat-lobby")).is_err());
    }
}
