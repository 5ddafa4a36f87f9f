//! One mapping from service errors to `tonic::Status`.
//!
//! A service keeps its own `thiserror` enum and classifies each variant once, in a
//! `From<ItsError> for ServiceError`; handlers then end with `.map_err(ServiceError::from)?`
//! or return `Result<_, ServiceError>` and convert with `?` into `Status`. The codes follow
//! one convention across the platform:
//!
//! | variant              | gRPC code           | when                                            |
//! |----------------------|---------------------|-------------------------------------------------|
//! | `InvalidArgument`    | INVALID_ARGUMENT    | the request itself is malformed                 |
//! | `NotFound`           | NOT_FOUND           | the table/game/user does not exist              |
//! | `AlreadyExists`      | ALREADY_EXISTS      | creating what exists (username, seat taken)     |
//! | `FailedPrecondition` | FAILED_PRECONDITION | valid request, wrong state (not your turn)      |
//! | `Conflict`           | ABORTED             | optimistic concurrency: expected version stale  |
//! | `Unauthenticated`    | UNAUTHENTICATED     | no/expired/invalid token                        |
//! | `PermissionDenied`   | PERMISSION_DENIED   | authenticated, but not this player's seat       |
//! | `ResourceExhausted`  | RESOURCE_EXHAUSTED  | rate limit hit                                  |
//! | `Unavailable`        | UNAVAILABLE         | a dependency is down; retrying may succeed      |
//! | `Internal`           | INTERNAL            | a bug or unexpected failure                     |
//!
//! Messages of the first nine go to the caller as written (cut to [`MAX_MESSAGE`]
//! characters), so they must name the problem without secrets, quoting a caller's value
//! through [`shown`]. `Internal` and the cause of `Unavailable` go to the log only (at
//! conversion, inside the request span); the caller gets a fixed text and the trace id to
//! quote to an operator.

use std::error::Error as StdError;

use fairdeal_eventstore::StoreError;
use fairdeal_platform::RunError;
use opentelemetry::trace::TraceContextExt;
use tonic::{Code, Status};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// A boxed error cause, kept for the log.
pub type Cause = Box<dyn StdError + Send + Sync + 'static>;

/// A service error classified for the wire. See the module docs for the convention.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The request is malformed; the message says which field and why.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The named entity does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The entity to create exists already.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// The request is valid but the state does not allow it.
    #[error("failed precondition: {0}")]
    FailedPrecondition(String),
    /// An optimistic-concurrency conflict; the caller may re-read and retry.
    #[error("conflict: {0}")]
    Conflict(String),
    /// No valid credentials.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// Valid credentials without the right to act.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// A rate limit or quota was hit.
    #[error("resource exhausted: {0}")]
    ResourceExhausted(String),
    /// A dependency is unavailable. `message` goes to the caller, `cause` to the log.
    #[error("unavailable: {message}")]
    Unavailable {
        /// What the caller is told (e.g. "event store unavailable").
        message: String,
        /// The underlying failure, logged only.
        #[source]
        cause: Option<Cause>,
    },
    /// Anything unexpected. Logged with its cause chain; the caller learns nothing of it.
    #[error("internal error: {0}")]
    Internal(#[source] Cause),
}

impl ServiceError {
    /// [`ServiceError::Internal`] from any error.
    pub fn internal(cause: impl Into<Cause>) -> Self {
        ServiceError::Internal(cause.into())
    }

    /// [`ServiceError::Unavailable`] with a caller-facing message and a logged cause.
    pub fn unavailable(message: impl Into<String>, cause: impl Into<Cause>) -> Self {
        ServiceError::Unavailable {
            message: message.into(),
            cause: Some(cause.into()),
        }
    }

    /// The gRPC code this error maps to.
    pub fn code(&self) -> Code {
        match self {
            ServiceError::InvalidArgument(_) => Code::InvalidArgument,
            ServiceError::NotFound(_) => Code::NotFound,
            ServiceError::AlreadyExists(_) => Code::AlreadyExists,
            ServiceError::FailedPrecondition(_) => Code::FailedPrecondition,
            ServiceError::Conflict(_) => Code::Aborted,
            ServiceError::Unauthenticated(_) => Code::Unauthenticated,
            ServiceError::PermissionDenied(_) => Code::PermissionDenied,
            ServiceError::ResourceExhausted(_) => Code::ResourceExhausted,
            ServiceError::Unavailable { .. } => Code::Unavailable,
            ServiceError::Internal(_) => Code::Internal,
        }
    }
}

/// Longest message a caller gets: a status travels in HTTP/2 headers (a 1 MB message would
/// not fit and the caller would see RESOURCE_EXHAUSTED instead), and a message is for a
/// human, not a copy of the request.
pub const MAX_MESSAGE: usize = 256;

pub use fairdeal_text::{SHOWN_PREFIX, shown};

/// `message` cut to [`MAX_MESSAGE`] characters (with `…`).
fn bounded(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE) {
        Some((end, _)) => format!("{}…", &message[..end]),
        None => message,
    }
}

impl From<ServiceError> for Status {
    fn from(error: ServiceError) -> Self {
        let code = error.code();
        match error {
            ServiceError::InvalidArgument(message)
            | ServiceError::NotFound(message)
            | ServiceError::AlreadyExists(message)
            | ServiceError::FailedPrecondition(message)
            | ServiceError::Conflict(message)
            | ServiceError::Unauthenticated(message)
            | ServiceError::PermissionDenied(message)
            | ServiceError::ResourceExhausted(message) => Status::new(code, bounded(message)),
            ServiceError::Unavailable { message, cause } => {
                if let Some(cause) = &cause {
                    tracing::warn!(error = %chain(cause.as_ref()), "{message}");
                }
                Status::new(code, bounded(message))
            }
            ServiceError::Internal(cause) => {
                tracing::error!(error = %chain(cause.as_ref()), "internal error");
                Status::new(code, internal_message())
            }
        }
    }
}

impl<E: Into<ServiceError>> From<RunError<E>> for ServiceError {
    /// The platform-wide mapping: a rejection as the caller classified it, contention as
    /// ABORTED with the current version, a duplicate event id as ALREADY_EXISTS, an event
    /// the envelope rules refuse as INVALID_ARGUMENT, an unreachable database as UNAVAILABLE, the rest
    /// INTERNAL.
    fn from(error: RunError<E>) -> Self {
        match error {
            RunError::Rejected(e) => e.into(),
            RunError::Contended { stream, version } => ServiceError::Conflict(format!(
                "too many concurrent changes to {stream}, now at version {version}; re-read and retry"
            )),
            RunError::Store(e) => store_error(e),
            RunError::Corrupt(e) => ServiceError::internal(e),
            RunError::Stream(e) => ServiceError::internal(e),
        }
    }
}

/// The platform-wide mapping of an event-store failure to the wire.
pub fn store_error(error: StoreError) -> ServiceError {
    match error {
        StoreError::Conflict { .. } => ServiceError::Conflict(error.to_string()),
        StoreError::DuplicateEventId { .. } => ServiceError::AlreadyExists(error.to_string()),
        StoreError::InvalidEvent(_) => ServiceError::InvalidArgument(error.to_string()),
        StoreError::InvalidArgument(message) => ServiceError::InvalidArgument(message),
        StoreError::Database(e) => ServiceError::unavailable("database unavailable", e),
        // Another replica owns the stream now: the caller retries (through any replica).
        StoreError::Fenced { .. } => ServiceError::Unavailable {
            message: error.to_string(),
            cause: None,
        },
        other => ServiceError::internal(other),
    }
}

/// "internal error", plus the trace id when there is one, so a caller can quote it.
fn internal_message() -> String {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let span_context = span.span_context();
    if span_context.is_valid() {
        format!("internal error (trace id {})", span_context.trace_id())
    } else {
        "internal error".to_owned()
    }
}

/// An error and its sources, `outer: inner: innermost`, for one log field.
fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("connection refused to 10.0.0.1 with password hunter2")]
    struct Leaky;

    #[test]
    fn long_messages_and_quoted_values_are_bounded() {
        let status = Status::from(ServiceError::InvalidArgument(format!(
            "deck: unknown deck {}",
            "x".repeat(1_000_000)
        )));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().chars().count() <= MAX_MESSAGE + 1);
        assert!(status.message().starts_with("deck: unknown deck xxx"));
        assert_eq!(shown("tarot7"), "tarot7");
        assert_eq!(
            shown(&"y".repeat(100)),
            format!("{}…", "y".repeat(SHOWN_PREFIX))
        );
        assert_eq!(shown("a\nb\u{7}"), "a\\nb\\u{7}");
    }

    #[test]
    fn caller_facing_variants_keep_their_message_and_code() {
        let cases = [
            (
                ServiceError::InvalidArgument("seat: out of range".into()),
                Code::InvalidArgument,
            ),
            (ServiceError::NotFound("table t1".into()), Code::NotFound),
            (
                ServiceError::AlreadyExists("user bob".into()),
                Code::AlreadyExists,
            ),
            (
                ServiceError::FailedPrecondition("not your turn".into()),
                Code::FailedPrecondition,
            ),
            (
                ServiceError::Conflict("expected version 3".into()),
                Code::Aborted,
            ),
            (
                ServiceError::Unauthenticated("token expired".into()),
                Code::Unauthenticated,
            ),
            (
                ServiceError::PermissionDenied("not your seat".into()),
                Code::PermissionDenied,
            ),
            (
                ServiceError::ResourceExhausted("slow down".into()),
                Code::ResourceExhausted,
            ),
        ];
        for (error, code) in cases {
            let text = match &error {
                ServiceError::InvalidArgument(m)
                | ServiceError::NotFound(m)
                | ServiceError::AlreadyExists(m)
                | ServiceError::FailedPrecondition(m)
                | ServiceError::Conflict(m)
                | ServiceError::Unauthenticated(m)
                | ServiceError::PermissionDenied(m)
                | ServiceError::ResourceExhausted(m) => m.clone(),
                other => panic!("unexpected {other:?}"),
            };
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert_eq!(status.message(), text);
        }
    }

    #[test]
    fn internal_and_unavailable_causes_never_reach_the_caller() {
        let status = Status::from(ServiceError::internal(Leaky));
        assert_eq!(status.code(), Code::Internal);
        assert_eq!(status.message(), "internal error");

        let status = Status::from(ServiceError::unavailable("event store unavailable", Leaky));
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "event store unavailable");
        assert!(!status.message().contains("hunter2"));
    }

    #[derive(Debug, thiserror::Error)]
    #[error("append failed")]
    struct Outer(#[source] Leaky);

    #[test]
    fn chain_lists_every_source() {
        assert_eq!(
            chain(&Outer(Leaky)),
            "append failed: connection refused to 10.0.0.1 with password hunter2"
        );
    }
}
