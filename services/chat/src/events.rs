//! The chat's events <-> protobuf (`fairdeal.chat.v1`, events.proto), re-validated on
//! decode.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fairdeal_eventstore::{EventError, NewEvent, RecordedEvent, is_event_type};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_shred::{ShredError, SubjectKey};
use uuid::Uuid;

use crate::domain::{Channel, ChannelError, MessageText, MuteScope, Reason, TextError};

/// The sealed field, first part of the associated data of every message's sealed text.
pub const SEALED_TEXT_FIELD: &str = "fairdeal.chat.v1.MessagePosted.sealed_text";

/// Why a stored event does not decode into what the chat reads from it: its own events
/// ([`ChatEvent::from_recorded`]) and the other services' events it projects (membership,
/// account deletion). Names the field, never a message's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoredEventError {
    /// The payload is not a message of its type.
    #[error(transparent)]
    Payload(#[from] EventError),
    /// The type is none of the chat's events.
    #[error("{0} is not a chat event")]
    NotAChatEvent(String),
    /// An id field is not a UUID.
    #[error("{field} is not a UUID")]
    NotAUuid {
        /// The field.
        field: &'static str,
    },
    /// The channel names no channel.
    #[error("channel {0}")]
    Channel(#[source] ChannelError),
    /// A posted message's sealed text is missing or shorter than a seal.
    #[error("sealed_text is missing or too short")]
    SealedTextTooShort,
    /// A moderation reason the domain no longer accepts.
    #[error("reason {0}")]
    Reason(#[source] TextError),
    /// A mute without its end.
    #[error("until is missing")]
    UntilMissing,
    /// A seat past a table's four.
    #[error("seat {0} is out of range")]
    SeatOutOfRange(u32),
}

/// `value` of the id field `field`.
pub(crate) fn uuid_of(field: &'static str, value: &str) -> Result<Uuid, StoredEventError> {
    Uuid::try_parse(value).map_err(|_| StoredEventError::NotAUuid { field })
}

/// Why a message's sealed text does not open into a text ([`open_text`]); never says what
/// the text is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealedTextError {
    /// The bytes do not open under the message's key and context.
    #[error("sealed_text: {0}")]
    Open(#[source] ShredError),
    /// The opened text is not a message's text.
    #[error("sealed_text {0}")]
    Text(#[source] TextError),
}

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
pub fn open_text(
    key: &SubjectKey,
    message_id: Uuid,
    sealed: &[u8],
) -> Result<MessageText, SealedTextError> {
    let text = key
        .open_text(text_context(message_id).as_bytes(), sealed)
        .map_err(SealedTextError::Open)?;
    MessageText::recorded(&text).map_err(SealedTextError::Text)
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
    pub fn from_recorded(event: &RecordedEvent) -> Result<Self, StoredEventError> {
        let channel = |value: &str| Channel::parse(value).map_err(StoredEventError::Channel);
        let reason = |value: &str| Reason::recorded(value).map_err(StoredEventError::Reason);
        let t = event.event_type.as_str();
        if is_event_type::<pb::MessagePosted>(t) {
            let m: pb::MessagePosted = event.decode_payload()?;
            // Earlier versions' plain `text` is not read: their events precede any
            // subscription's start, the only reader of the log's messages.
            if m.sealed_text.len() < fairdeal_shred::OVERHEAD {
                return Err(StoredEventError::SealedTextTooShort);
            }
            Ok(ChatEvent::Posted {
                channel: channel(&m.channel)?,
                author: uuid_of("author_id", &m.author_id)?,
                sealed_text: m.sealed_text,
            })
        } else if is_event_type::<pb::MessageRemoved>(t) {
            let m: pb::MessageRemoved = event.decode_payload()?;
            Ok(ChatEvent::Removed {
                channel: channel(&m.channel)?,
                message_id: uuid_of("message_id", &m.message_id)?,
                moderator: uuid_of("moderator_id", &m.moderator_id)?,
                reason: reason(&m.reason)?,
            })
        } else if is_event_type::<pb::UserMuted>(t) {
            let m: pb::UserMuted = event.decode_payload()?;
            let scope = if m.channel.is_empty() {
                MuteScope::Everywhere
            } else {
                MuteScope::Channel(channel(&m.channel)?)
            };
            Ok(ChatEvent::Muted {
                user: uuid_of("user_id", &m.user_id)?,
                scope,
                until: m
                    .until
                    .map(|t| t.seconds)
                    .ok_or(StoredEventError::UntilMissing)?,
                moderator: uuid_of("moderator_id", &m.moderator_id)?,
                reason: reason(&m.reason)?,
            })
        } else {
            Err(StoredEventError::NotAChatEvent(t.to_owned()))
        }
    }
}

/// `new` as the store would record it first in `stream` (the chat's unit tests decode
/// events through this).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn recorded(new: NewEvent, stream: &str) -> RecordedEvent {
    use fairdeal_eventstore::{GENESIS_PREV_HASH, StreamId, seal};
    seal(
        &StreamId::parse(stream).unwrap(),
        1,
        &GENESIS_PREV_HASH,
        new,
    )
    .unwrap()
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
        let wrong = open_text(&key, other, &sealed).unwrap_err().to_string();
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
