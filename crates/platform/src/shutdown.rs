//! Coordinated shutdown: one handle, cloned into every part of a service, that says when
//! to drain and when to stop, and tracks the background tasks that must finish first.
//!
//! Two stages, because the parts of a service stop at different moments:
//! 1. **draining** ([`Shutdown::draining`]): SIGTERM/SIGINT or [`Shutdown::trigger`]. The
//!    server reports NOT_SERVING, stops accepting connections and lets in-flight RPCs finish.
//!    Long-lived server streams should end here so clients reconnect elsewhere.
//! 2. **stopping** ([`Shutdown::token`]): once RPCs have drained. Background tasks (outbox
//!    relay, consumers) stop here, after the RPCs whose events they carry, and are waited
//!    for through the task tracker.
//!
//! Both stages share one deadline: the grace period, counted from the trigger.

use std::future::Future;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// The shutdown handle. Cheap to clone; all clones see the same state.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    /// Cancelled when shutdown begins (stage 1).
    draining: CancellationToken,
    /// Cancelled when background work must stop (stage 2).
    stopping: CancellationToken,
    /// Background tasks the server waits for before it returns.
    tracker: TaskTracker,
}

impl Shutdown {
    /// A fresh handle: not draining, no tasks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Begins a graceful shutdown, as SIGTERM would. Idempotent.
    pub fn trigger(&self) {
        self.draining.cancel();
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    /// Resolves once shutdown has begun (stage 1).
    pub async fn draining(&self) {
        self.draining.cancelled().await;
    }

    /// The token background tasks watch: cancelled once in-flight RPCs are done (stage 2),
    /// or directly by [`Shutdown::stop_background`]. Pass it to relays and consumers.
    pub fn token(&self) -> CancellationToken {
        self.stopping.clone()
    }

    /// Tells background tasks to stop now (stage 2). The server does this after draining;
    /// call it directly in programs without a server.
    pub fn stop_background(&self) {
        self.draining.cancel();
        self.stopping.cancel();
    }

    /// Runs `task` as a tracked background task inside a span named `task`. The task must
    /// watch [`Shutdown::token`] and return when it is cancelled; the server waits for it
    /// (within the grace period) before returning.
    pub fn spawn<F>(&self, name: &'static str, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker
            .spawn(task.instrument(tracing::info_span!("task", task = name)))
    }

    /// The tracker, for tasks spawned elsewhere (`tracker.track_future(...)`).
    pub fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    /// Background tasks still running.
    pub fn running_tasks(&self) -> usize {
        self.tracker.len()
    }

    /// Stops background work and waits until every tracked task has finished.
    pub async fn wait_for_tasks(&self) {
        self.stop_background();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C). If the handlers cannot be installed the error
/// is logged and the future never resolves: the service still stops through
/// [`Shutdown::trigger`], and refusing to start over a signal handler would be worse.
pub async fn signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!(signal = "SIGINT", "shutdown requested"),
        () = terminate => tracing::info!(signal = "SIGTERM", "shutdown requested"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn background_task_stops_on_token_and_is_waited_for() {
        let shutdown = Shutdown::new();
        let token = shutdown.token();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        shutdown.spawn("worker", async move {
            token.cancelled().await;
            done_tx.send(()).unwrap();
        });
        assert_eq!(shutdown.running_tasks(), 1);
        assert!(!shutdown.is_draining());
        shutdown.wait_for_tasks().await;
        assert!(shutdown.is_draining());
        assert_eq!(shutdown.running_tasks(), 0);
        done_rx.await.unwrap();
    }

    #[tokio::test]
    async fn trigger_starts_draining_but_not_stopping() {
        let shutdown = Shutdown::new();
        shutdown.trigger();
        shutdown.draining().await;
        assert!(!shutdown.token().is_cancelled());
    }
}
