//! Stream ids and event types: the two names every event carries.

use crate::error::{EventError, clip};
use std::fmt;
use std::str::FromStr;

/// Longest accepted stream id, in bytes.
pub const MAX_STREAM_ID_LEN: usize = 128;
/// Longest accepted event type, in bytes.
pub const MAX_EVENT_TYPE_LEN: usize = 255;

/// The id of an event stream (one aggregate: a table, a user, a commitment...).
///
/// 1 to 128 ASCII letters, digits, `-` and `_`, e.g. `table-0190b6a2-7c1e-7d4a-9f0b-2c5d8e9f1a2b`.
/// The alphabet is deliberately narrow: a stream id is safe inside a NATS subject token, a URL
/// path segment, a file name and a log line without escaping.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(String);

impl StreamId {
    /// Validates `value` as a stream id.
    pub fn parse(value: impl Into<String>) -> Result<Self, EventError> {
        let value = value.into();
        let reason = if value.is_empty() {
            Some("must not be empty")
        } else if value.len() > MAX_STREAM_ID_LEN {
            Some("longer than 128 bytes")
        } else if !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            Some("only ASCII letters, digits, '-' and '_' are allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(EventError::InvalidStreamId {
                value: clip(&value),
                reason,
            }),
            None => Ok(Self(value)),
        }
    }

    /// The stream of one entity: `<category>-<id>`, e.g. `StreamId::of("table", uuid)`.
    pub fn of(category: &str, id: impl fmt::Display) -> Result<Self, EventError> {
        Self::parse(format!("{category}-{id}"))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part before the first `-` (`table` for `table-<uuid>`), or the whole id.
    pub fn category(&self) -> &str {
        self.0.split('-').next().unwrap_or(&self.0)
    }

    /// The owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for StreamId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for StreamId {
    type Err = EventError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for StreamId {
    type Error = EventError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(value)
    }
}

impl TryFrom<&str> for StreamId {
    type Error = EventError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::parse(value)
    }
}

/// Checks an event type: 1 to 255 ASCII letters, digits, `.`, `_` and `-`, conventionally the
/// fully qualified protobuf name of the payload (`fairdeal.tables.v1.PlayerSat`).
pub fn validate_event_type(value: &str) -> Result<(), EventError> {
    let reason = if value.is_empty() {
        Some("must not be empty")
    } else if value.len() > MAX_EVENT_TYPE_LEN {
        Some("longer than 255 bytes")
    } else if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        Some("only ASCII letters, digits, '.', '_' and '-' are allowed")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(EventError::InvalidEventType {
            value: clip(value),
            reason,
        }),
        None => Ok(()),
    }
}

/// Whether `event_type` is message `M`'s fully qualified protobuf name (`M::full_name()`),
/// compared without building that name: the consumers, projections and watchers ask this of
/// every event they see, and `full_name()` allocates a `String` each time.
pub fn is_event_type<M: prost::Name>(event_type: &str) -> bool {
    if M::PACKAGE.is_empty() {
        return event_type == M::NAME;
    }
    event_type
        .strip_prefix(M::PACKAGE)
        .and_then(|rest| rest.strip_prefix('.'))
        == Some(M::NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn event_types_match_the_full_name_exactly() {
        use crate::Envelope;
        use prost::Name;
        let full = Envelope::full_name();
        assert!(is_event_type::<Envelope>(&full));
        for other in [
            "",
            "Envelope",
            "fairdeal.event.v1",
            "fairdeal.event.v1.",
            "fairdeal.event.v1Envelope",
            "fairdeal.event.v1.Envelope2",
            "fairdeal.event.v1.Envelop",
            "xfairdeal.event.v1.Envelope",
            "fairdeal.event.v2.Envelope",
        ] {
            assert!(!is_event_type::<Envelope>(other), "{other}");
        }
    }

    #[test]
    fn accepts_entity_streams() {
        let id = StreamId::of("table", "0190b6a2-7c1e-7d4a-9f0b-2c5d8e9f1a2b").unwrap();
        assert_eq!(id.as_str(), "table-0190b6a2-7c1e-7d4a-9f0b-2c5d8e9f1a2b");
        assert_eq!(id.category(), "table");
    }

    #[test]
    fn rejects_bad_stream_ids() {
        let long = "x".repeat(129);
        for bad in ["", "a.b", "a b", "tab*", "é", long.as_str()] {
            let err = StreamId::parse(bad).unwrap_err();
            assert!(matches!(err, EventError::InvalidStreamId { .. }), "{bad:?}");
        }
        assert!(StreamId::parse("x".repeat(128)).is_ok());
    }

    #[test]
    fn event_types() {
        assert!(validate_event_type("fairdeal.tables.v1.PlayerSat").is_ok());
        assert!(validate_event_type("").is_err());
        assert!(validate_event_type("a/b").is_err());
        assert!(validate_event_type(&"a".repeat(256)).is_err());
    }

    proptest! {
        #[test]
        fn parse_accepts_exactly_the_alphabet(s in "\\PC{0,140}") {
            let ok = !s.is_empty() && s.len() <= 128
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            prop_assert_eq!(StreamId::parse(s.clone()).is_ok(), ok);
            if ok {
                let parsed = StreamId::parse(s.clone()).unwrap();
                prop_assert_eq!(parsed.as_str(), s.as_str());
            }
        }
    }
}
