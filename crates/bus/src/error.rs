//! [`BusError`]: every way the relay or a consumer fails, and the handler's [`HandlerError`].

use fairdeal_eventstore::StoreError;

/// A boxed error with the bounds async tasks need.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failure of the bus machinery (not of a handler: see [`HandlerError`]).
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// A configuration value is unusable (subject prefix, stream or consumer name, sizes).
    #[error("invalid bus configuration: {0}")]
    Config(String),
    /// The event store failed (`StoreError::Integrity` here means the log no longer verifies:
    /// the relay stops rather than publish or skip such an event).
    #[error("event store: {0}")]
    Store(#[from] StoreError),
    /// The bus's own tables could not be read or written.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// Running the bus's migrations failed.
    #[error("bus migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A JetStream request failed (stream or consumer setup, publish, ack, message fetch).
    #[error("JetStream {operation}: {source}")]
    JetStream {
        /// What the bus was doing.
        operation: &'static str,
        /// The client's error.
        #[source]
        source: BoxError,
    },
    /// The JetStream stream holds something the relay did not put there (a message without
    /// the global-position header, or out of order): the relay refuses to guess.
    #[error("JetStream stream {stream} is inconsistent: {detail}")]
    StreamInconsistent {
        /// The stream's name.
        stream: String,
        /// What was found.
        detail: String,
    },
    /// Another instance of a consumer that settles by position moved the position on past
    /// the batch in hand (this one had lost its lease): the batch was rolled back, and the
    /// consumer reads its position again.
    #[error("consumer {consumer}: another instance moved its position on")]
    Superseded {
        /// The consumer's name.
        consumer: String,
    },
}

impl BusError {
    /// Wraps a JetStream client error.
    pub(crate) fn jetstream(operation: &'static str, source: impl Into<BoxError>) -> Self {
        Self::JetStream {
            operation,
            source: source.into(),
        }
    }

    /// Whether retrying later can help. Integrity failures, inconsistent streams and bad
    /// configuration need an operator; everything else (network, database) is worth retrying.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Config(_) | Self::StreamInconsistent { .. } | Self::Migrate(_) => false,
            Self::Store(err) => !matches!(
                err,
                StoreError::Integrity { .. } | StoreError::InvalidArgument(_)
            ),
            Self::Database(_) | Self::JetStream { .. } | Self::Superseded { .. } => true,
        }
    }
}

/// Why a [`crate::Handler`] did not apply an event.
///
/// The distinction decides what the consumer does next: a transient failure is retried with
/// backoff (up to the consumer's attempt limit, then dead-lettered); a permanent failure is
/// dead-lettered at once, because retrying an event the handler can never apply only delays
/// every event behind it.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// Might succeed if tried again (a database hiccup, a lock timeout, an unavailable peer).
    #[error("transient: {0}")]
    Transient(#[source] BoxError),
    /// Will never succeed for this event (it does not decode, it breaks an invariant).
    #[error("permanent: {0}")]
    Permanent(#[source] BoxError),
}

impl HandlerError {
    /// A failure worth retrying.
    pub fn transient(err: impl Into<BoxError>) -> Self {
        Self::Transient(err.into())
    }

    /// A failure not worth retrying: the event goes straight to the dead letters.
    pub fn permanent(err: impl Into<BoxError>) -> Self {
        Self::Permanent(err.into())
    }

    /// Whether this failure is permanent.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Permanent(_))
    }
}

/// Database errors inside a handler are transient by default (lock timeouts, serialization
/// failures, a dropped connection), so `?` on sqlx calls does the right thing. A handler that
/// knows better (e.g. a check constraint that will always fail) maps to
/// [`HandlerError::permanent`] itself.
impl From<sqlx::Error> for HandlerError {
    fn from(err: sqlx::Error) -> Self {
        Self::Transient(Box::new(err))
    }
}

/// Renders an error and its chain of sources on one line (`outer: inner: root`), for dead
/// letter reasons and logs.
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // thiserror's `{0}` formats already include the source's text; don't repeat it.
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn error_chain_joins_sources_once() {
        let err = Outer(std::io::Error::other("disk on fire"));
        assert_eq!(error_chain(&err), "outer: disk on fire");
        let handler = HandlerError::transient(Outer(std::io::Error::other("x")));
        assert_eq!(error_chain(&handler), "transient: outer: x");
    }

    #[test]
    fn sqlx_errors_are_transient() {
        let err: HandlerError = sqlx::Error::PoolTimedOut.into();
        assert!(!err.is_permanent());
        assert!(HandlerError::permanent("bad").is_permanent());
    }

    #[test]
    fn retryable_classification() {
        assert!(!BusError::Config("x".into()).is_retryable());
        assert!(BusError::Database(sqlx::Error::PoolTimedOut).is_retryable());
        assert!(BusError::jetstream("publish", "timeout").is_retryable());
    }
}
