//! Events on NATS JetStream: subjects, headers and stream setup shared by the relay and the
//! consumers.
//!
//! One JetStream stream per service (or per test) holds every event of the service's store,
//! in global-position order, one message per event:
//!
//! - subject `<prefix>.events.<category>`, where the category is the stream id up to its
//!   first `-` (`table-<uuid>` -> `table`), so NATS tools can filter by aggregate kind;
//! - payload: the protobuf-encoded envelope ([`fairdeal_eventstore::Envelope`], hash included);
//! - headers: `Nats-Msg-Id` = event id (JetStream deduplicates a re-publish), the envelope's
//!   `traceparent`/`tracestate`, and [`HEADER_EVENT_TYPE`], [`HEADER_STREAM_ID`],
//!   [`HEADER_STREAM_VERSION`], [`HEADER_GLOBAL_POSITION`].
//!
//! The stream uses file storage, denies deletes and purges and keeps messages forever: it is
//! a faithful copy of the log, and its sequence numbers count events without gaps, which the
//! consumers rely on. Dead letters go to a second stream, `<prefix>.deadletter.<consumer>`.
//!
//! An event NATS refuses for good (larger than the server's `max_payload` or the stream's
//! maximum message size) is replaced by a small placeholder with the same id, position and
//! headers plus [`HEADER_WITHHELD`]: the log's order and numbering stay intact, later events
//! flow, and every consumer dead-letters the placeholder (see [`Relay`]).

mod consumer;
mod relay;

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use fairdeal_eventstore::StreamId;

pub use consumer::{JetStreamConsumer, JetStreamConsumerConfig};
pub use relay::{MESSAGE_MARGIN_BYTES, MIN_MAX_PAYLOAD, Relay, RelayConfig, check_max_payload};

use crate::error::BusError;

/// Header naming the event type (the payload's protobuf message name).
pub const HEADER_EVENT_TYPE: &str = "Fairdeal-Event-Type";
/// Header naming the event's stream id.
pub const HEADER_STREAM_ID: &str = "Fairdeal-Stream-Id";
/// Header carrying the event's version in its stream.
pub const HEADER_STREAM_VERSION: &str = "Fairdeal-Stream-Version";
/// Header carrying the event's global position in the store it was relayed from.
pub const HEADER_GLOBAL_POSITION: &str = "Fairdeal-Global-Position";
/// Header naming the event id (on a placeholder, whose payload is not the envelope).
pub const HEADER_EVENT_ID: &str = "Fairdeal-Event-Id";
/// Header marking a placeholder the relay published in place of an event NATS refused for
/// good (see [`Relay`]): why it was refused. Consumers dead-letter such a message.
pub const HEADER_WITHHELD: &str = "Fairdeal-Withheld";
/// Dead-letter header: the consumer that gave up.
pub const HEADER_DEAD_LETTER_CONSUMER: &str = "Fairdeal-Dead-Letter-Consumer";
/// Dead-letter header: why it gave up (one line).
pub const HEADER_DEAD_LETTER_REASON: &str = "Fairdeal-Dead-Letter-Reason";
/// Dead-letter header: handler attempts made.
pub const HEADER_DEAD_LETTER_ATTEMPTS: &str = "Fairdeal-Dead-Letter-Attempts";
/// Dead-letter header: the event's sequence in the events stream.
pub const HEADER_DEAD_LETTER_SEQUENCE: &str = "Fairdeal-Dead-Letter-Sequence";

/// Where events and dead letters live on JetStream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JetStreamConfig {
    /// First subject token(s), e.g. `fairdeal` or `fairdeal.auth`; unique per test.
    prefix: String,
    /// Name of the events stream.
    stream_name: String,
    /// Name of the dead-letter stream.
    dead_letter_stream_name: String,
    /// Stream replicas (1 on a single server, 3 in a cluster).
    replicas: usize,
    /// JetStream's `Nats-Msg-Id` deduplication window.
    duplicate_window: Duration,
}

impl JetStreamConfig {
    /// Streams for subject prefix `prefix`: events stream `<PREFIX>_EVENTS`, dead-letter stream
    /// `<PREFIX>_DEAD_LETTERS` (prefix upper-cased, dots as underscores), one replica, a
    /// two-minute deduplication window.
    ///
    /// The prefix is one or more dot-separated tokens of ASCII letters, digits, `-` and `_`.
    pub fn new(prefix: impl Into<String>) -> Result<Self, BusError> {
        let prefix = prefix.into();
        let tokens_ok = !prefix.is_empty()
            && prefix.len() <= 200
            && prefix.split('.').all(|token| {
                !token.is_empty()
                    && token
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !tokens_ok {
            return Err(BusError::Config(format!(
                "subject prefix {prefix:?} must be dot-separated tokens of ASCII letters, digits, '-' and '_'"
            )));
        }
        let base = prefix.replace('.', "_").to_ascii_uppercase();
        Ok(Self {
            stream_name: format!("{base}_EVENTS"),
            dead_letter_stream_name: format!("{base}_DEAD_LETTERS"),
            prefix,
            replicas: 1,
            duplicate_window: Duration::from_secs(120),
        })
    }

    /// Overrides the two stream names.
    pub fn with_stream_names(
        mut self,
        events: impl Into<String>,
        dead_letters: impl Into<String>,
    ) -> Result<Self, BusError> {
        let events = events.into();
        let dead_letters = dead_letters.into();
        for name in [&events, &dead_letters] {
            validate_name("stream name", name)?;
        }
        if events == dead_letters {
            return Err(BusError::Config(
                "the events and dead-letter streams need different names".into(),
            ));
        }
        self.stream_name = events;
        self.dead_letter_stream_name = dead_letters;
        Ok(self)
    }

    /// Sets the number of stream replicas (at least 1; JetStream allows up to 5).
    pub fn with_replicas(mut self, replicas: usize) -> Result<Self, BusError> {
        if !(1..=5).contains(&replicas) {
            return Err(BusError::Config(format!(
                "replicas must be 1 to 5, got {replicas}"
            )));
        }
        self.replicas = replicas;
        Ok(self)
    }

    /// Sets the deduplication window (at least one second).
    pub fn with_duplicate_window(mut self, window: Duration) -> Result<Self, BusError> {
        if window < Duration::from_secs(1) {
            return Err(BusError::Config(format!(
                "duplicate window must be at least 1s, got {window:?}"
            )));
        }
        self.duplicate_window = window;
        Ok(self)
    }

    /// The subject prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The events stream's name.
    pub fn stream_name(&self) -> &str {
        &self.stream_name
    }

    /// The dead-letter stream's name.
    pub fn dead_letter_stream_name(&self) -> &str {
        &self.dead_letter_stream_name
    }

    /// Stream replicas.
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// Deduplication window.
    pub fn duplicate_window(&self) -> Duration {
        self.duplicate_window
    }

    /// The subject an event of `stream_id` is published on.
    pub fn event_subject(&self, stream_id: &StreamId) -> String {
        format!("{}.events.{}", self.prefix, category(stream_id))
    }

    /// The subject filter matching every event.
    pub fn events_filter(&self) -> String {
        format!("{}.events.>", self.prefix)
    }

    /// The subject `consumer`'s dead letters are published on.
    pub fn dead_letter_subject(&self, consumer: &str) -> String {
        format!("{}.deadletter.{consumer}", self.prefix)
    }

    /// The subject filter matching every dead letter.
    pub fn dead_letters_filter(&self) -> String {
        format!("{}.deadletter.>", self.prefix)
    }
}

/// The category of a stream: its id up to the first `-` (`table-<uuid>` -> `table`), or the
/// whole id. Stream ids only hold ASCII letters, digits, `-` and `_`, so this is always a
/// valid subject token.
pub fn category(stream_id: &StreamId) -> &str {
    let id = stream_id.as_str();
    id.split('-').next().filter(|c| !c.is_empty()).unwrap_or(id)
}

/// A header value is one line of printable text (newlines would break the NATS protocol),
/// at most 1024 characters.
pub(crate) fn header_text(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(1024)
        .collect()
}

/// Checks a JetStream stream or consumer name: ASCII letters, digits, `-` and `_`, 1 to 64
/// characters (consumer names are also subject tokens of the dead-letter subject).
pub(crate) fn validate_name(what: &str, name: &str) -> Result<(), BusError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(BusError::Config(format!(
            "{what} {name:?} must be 1 to 64 ASCII letters, digits, '-' or '_'"
        )))
    }
}

/// Creates the events and dead-letter streams, or updates them to `config` (idempotent: safe
/// at every start, from every replica).
pub async fn ensure_streams(
    js: &jetstream::Context,
    config: &JetStreamConfig,
) -> Result<(), BusError> {
    let events = stream::Config {
        name: config.stream_name.clone(),
        description: Some(format!("fairdeal events under {}", config.prefix)),
        subjects: vec![config.events_filter()],
        storage: stream::StorageType::File,
        retention: stream::RetentionPolicy::Limits,
        // Zero means unlimited: the stream is a full copy of the log.
        max_age: Duration::ZERO,
        max_messages: -1,
        max_bytes: -1,
        deny_delete: true,
        deny_purge: true,
        num_replicas: config.replicas,
        duplicate_window: config.duplicate_window,
        ..Default::default()
    };
    create_or_update(js, events, "create events stream").await?;

    // Dead letters are an operator's work queue: durable, but purgeable once handled.
    let dead_letters = stream::Config {
        name: config.dead_letter_stream_name.clone(),
        description: Some(format!("fairdeal dead letters under {}", config.prefix)),
        subjects: vec![config.dead_letters_filter()],
        storage: stream::StorageType::File,
        retention: stream::RetentionPolicy::Limits,
        max_age: Duration::ZERO,
        max_messages: -1,
        max_bytes: -1,
        num_replicas: config.replicas,
        duplicate_window: config.duplicate_window,
        ..Default::default()
    };
    create_or_update(js, dead_letters, "create dead-letter stream").await
}

/// How many times a stream's creation or update is tried.
const STREAM_ATTEMPTS: u32 = 5;

/// `create_or_update_stream`, tried again a few times (100 ms, doubling: 1.5 s in all).
/// Replicas starting together race to create the same stream, and NATS may answer the loser
/// with a transient error while the winner's store is being made (JetStream 10049, "error
/// creating store for stream", seen when two auth replicas started at once); the next try
/// finds the stream and updates it. A lasting refusal fails the start after the last try.
async fn create_or_update(
    js: &jetstream::Context,
    config: stream::Config,
    operation: &'static str,
) -> Result<(), BusError> {
    let mut pause = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match js.create_or_update_stream(config.clone()).await {
            Ok(_) => return Ok(()),
            Err(err) if attempt < STREAM_ATTEMPTS => {
                tracing::warn!(
                    stream = %config.name,
                    attempt,
                    error = %err,
                    "{operation} failed; trying again"
                );
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            Err(err) => return Err(BusError::jetstream(operation, err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(id: &str) -> StreamId {
        StreamId::parse(id.to_owned()).unwrap()
    }

    #[test]
    fn subjects_and_names() {
        let config = JetStreamConfig::new("t_1.auth").unwrap();
        assert_eq!(config.stream_name(), "T_1_AUTH_EVENTS");
        assert_eq!(config.dead_letter_stream_name(), "T_1_AUTH_DEAD_LETTERS");
        assert_eq!(
            config.event_subject(&stream("table-0190b6a2-7c1e")),
            "t_1.auth.events.table"
        );
        assert_eq!(
            config.event_subject(&stream("ledger")),
            "t_1.auth.events.ledger"
        );
        assert_eq!(config.events_filter(), "t_1.auth.events.>");
        assert_eq!(
            config.dead_letter_subject("rating"),
            "t_1.auth.deadletter.rating"
        );
    }

    #[test]
    fn leading_dash_keeps_a_valid_token() {
        assert_eq!(category(&stream("-x")), "-x");
    }

    #[test]
    fn rejects_bad_settings() {
        for prefix in ["", "a..b", "a.*", "a b", "a.>", ".a"] {
            assert!(JetStreamConfig::new(prefix).is_err(), "{prefix:?}");
        }
        let config = JetStreamConfig::new("x").unwrap();
        assert!(config.clone().with_replicas(0).is_err());
        assert!(config.clone().with_replicas(3).is_ok());
        assert!(config.clone().with_stream_names("A", "A").is_err());
        assert!(config.clone().with_stream_names("A.B", "C").is_err());
        assert!(
            config
                .with_duplicate_window(Duration::from_millis(10))
                .is_err()
        );
        assert!(validate_name("consumer", "rating-v1_2").is_ok());
        assert!(validate_name("consumer", "a.b").is_err());
    }
}
