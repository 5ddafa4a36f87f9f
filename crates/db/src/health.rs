//! Dead PostgreSQL connections, dropped before anyone is handed one.
//!
//! When the server restarts (or an operator terminates sessions), every session of every
//! pool is gone at once, but a pool only finds out when it next uses each connection: the
//! pools skip sqlx's ping before checkout (it would double the cost of a one-row commit), so
//! before this module each idle connection failed one request after a restart ("expected to
//! read 5 bytes, got 0 bytes at EOF", "Broken pipe"), for as long as it took to use them all.
//!
//! What it costs nothing in steady state to know instead:
//!
//! - whoever finds a connection lost ([`is_connection_lost`]) notes the time
//!   ([`note_lost_connection`]): the shared pool's release check, the check below, the event
//!   store's readers and writers, the notification listener (whose session is the first to
//!   see a restart, since it is always reading);
//! - before a pooled connection is handed out, it is pinged only if it has been idle since
//!   before the last such note, or for [`LONG_IDLE`] or more (a restart during a quiet
//!   period, seen by nobody yet); one that fails the ping is closed and the next one tried,
//!   and a new one opened when none is left ([`is_suspect`], used by every pool of
//!   [`crate::pool`]).
//!
//! So after a restart at most the requests in flight and the first use of a connection that
//! nobody has yet seen fail, and the idle siblings of a broken connection go with it.
//!
//! The note is process-wide rather than per pool: a server restart kills every pool's
//! sessions (the shared pool's, the readers', the writers', the listener's), and a service
//! process talks to one server. A process that talks to several (tests) pays at most one
//! ping per idle connection after another server's break, never a failure.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A connection idle this long is pinged before it is handed out, break noted or not.
pub const LONG_IDLE: Duration = Duration::from_secs(30);

/// The origin of the note's clock (first use in the process).
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Nanoseconds after [`EPOCH`], plus one, of the latest lost connection; 0 for none yet.
static LAST_LOST: AtomicU64 = AtomicU64::new(0);

/// Nanoseconds since [`EPOCH`], plus one (so 0 stays "never").
fn now_mark() -> u64 {
    u64::try_from(EPOCH.elapsed().as_nanos())
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
}

/// Notes that a PostgreSQL connection of this process was just found lost: every connection
/// idle since before now is pinged before its next use.
pub fn note_lost_connection() {
    LAST_LOST.fetch_max(now_mark(), Ordering::Relaxed);
}

/// [`note_lost_connection`] if `error` says the connection is lost; returns whether it did.
pub fn note_if_lost(error: &sqlx::Error) -> bool {
    let lost = is_connection_lost(error);
    if lost {
        note_lost_connection();
    }
    lost
}

/// Whether a connection idle for `idle_for` must be pinged before use: idle since the latest
/// lost connection was noted or before, or for [`LONG_IDLE`] or more.
pub fn is_suspect(idle_for: Duration) -> bool {
    if idle_for >= LONG_IDLE {
        return true;
    }
    let lost = LAST_LOST.load(Ordering::Relaxed);
    if lost == 0 {
        return false;
    }
    let idle_since =
        now_mark().saturating_sub(u64::try_from(idle_for.as_nanos()).unwrap_or(u64::MAX));
    idle_since <= lost
}

/// Whether `error` means the session is gone (or going): a socket or TLS failure, or the
/// server's word that it ended the session (SQLSTATE class 08, connection exception, or
/// 57P01-57P05: shut down, crashed, starting, database dropped, idle timeout). A statement
/// the server refused (a constraint, a cancelled query, a serialization failure) is not.
pub fn is_connection_lost(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| code.starts_with("08") || code.starts_with("57P")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_failures_are_lost_connections_and_refusals_are_not() {
        let eof = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "expected to read 5 bytes, got 0 bytes at EOF",
        ));
        assert!(is_connection_lost(&eof));
        let pipe = sqlx::Error::Io(std::io::ErrorKind::BrokenPipe.into());
        assert!(is_connection_lost(&pipe));
        assert!(!is_connection_lost(&sqlx::Error::RowNotFound));
        assert!(!is_connection_lost(&sqlx::Error::PoolTimedOut));
    }

    #[test]
    fn long_idle_connections_are_always_suspect() {
        assert!(is_suspect(LONG_IDLE));
        assert!(is_suspect(Duration::from_secs(3600)));
    }

    #[test]
    fn a_note_makes_connections_idle_since_before_it_suspect_and_later_ones_not() {
        // The only test of this binary that notes a loss: nothing else moves the mark.
        note_lost_connection();
        assert!(
            is_suspect(Duration::from_millis(4)),
            "idle since before the note"
        );
        std::thread::sleep(Duration::from_millis(20));
        // Idle for 1 ms: since well after the note.
        assert!(!is_suspect(Duration::from_millis(1)));
    }
}
