//! The restart loop of the bus's long-running parts: a consumer (embedded or JetStream) and
//! the relay each run until an error; a retryable one (the network, the database, a lost
//! lease) restarts them after a wait doubling from the first backoff to the longest,
//! anything else stops them for an operator. Each part keeps its loop
//! (`while !shutdown.is_cancelled()`, run, [`Restarts::after`]) and this decides what
//! follows a run.

use std::time::Duration;

use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::error::{BusError, error_chain};
use crate::handler::doubling;

/// What follows each run of one part ([`Restarts::after`]).
#[derive(Debug)]
pub(crate) struct Restarts<'a> {
    /// What kind of part, for the log lines: `"consumer"` or `"relay"`.
    kind: &'static str,
    /// Its configured name.
    name: &'a str,
    /// The first wait and the longest.
    initial: Duration,
    max: Duration,
    /// Failures in a row.
    failures: u32,
    /// When the current run began.
    started: Instant,
}

impl<'a> Restarts<'a> {
    /// Restarts of the part `kind` named `name`, after `initial` doubling to `max`; its
    /// first run begins now.
    pub(crate) fn new(
        kind: &'static str,
        name: &'a str,
        (initial, max): (Duration, Duration),
    ) -> Self {
        Restarts {
            kind,
            name,
            initial,
            max,
            failures: 0,
            started: Instant::now(),
        }
    }

    /// After a run that ended with `result`: `Some` ends the part with it (it stopped as
    /// asked, or with an error that is not retryable, after an ERROR line); `None` after a
    /// retryable error, logged, once the backoff has passed or `shutdown` came. A run that
    /// outlasted the longest wait was healthy: its failure waits the first again, not what
    /// the failures before it added up to.
    pub(crate) async fn after(
        &mut self,
        result: Result<(), BusError>,
        shutdown: &CancellationToken,
    ) -> Option<Result<(), BusError>> {
        let (kind, name) = (self.kind, self.name);
        match result {
            Ok(()) => Some(Ok(())),
            Err(err) if err.is_retryable() => {
                self.failures = if self.started.elapsed() > self.max {
                    1
                } else {
                    self.failures.saturating_add(1)
                };
                tracing::warn!(
                    part = kind,
                    name,
                    error = %error_chain(&err),
                    failures = self.failures,
                    "{kind} failed; restarting"
                );
                tokio::select! {
                    () = shutdown.cancelled() => {}
                    () = tokio::time::sleep(doubling(self.initial, self.max, self.failures)) => {}
                }
                self.started = Instant::now();
                None
            }
            Err(err) => {
                tracing::error!(part = kind, name, error = %error_chain(&err), "{kind} stopped");
                Some(Err(err))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retryable() -> BusError {
        BusError::Database(sqlx::Error::PoolTimedOut)
    }

    /// Runs the parts' loop over `run` (its run number, 1-based), returning the part's end
    /// and when each run began (ms after the first).
    async fn restarted(
        shutdown: &CancellationToken,
        mut run: impl AsyncFnMut(usize) -> Result<(), BusError>,
    ) -> (Result<(), BusError>, Vec<u128>) {
        let backoff = (Duration::from_millis(100), Duration::from_secs(1));
        let mut restarts = Restarts::new("consumer", "test", backoff);
        let begun = Instant::now();
        let mut runs = Vec::new();
        while !shutdown.is_cancelled() {
            runs.push(begun.elapsed().as_millis());
            if let Some(end) = restarts.after(run(runs.len()).await, shutdown).await {
                return (end, runs);
            }
        }
        (Ok(()), runs)
    }

    #[tokio::test(start_paused = true)]
    async fn retryable_failures_restart_after_a_doubling_wait_and_others_stop_it() {
        let shutdown = CancellationToken::new();
        let (end, runs) = restarted(&shutdown, async |n| match n {
            1..=3 => Err(retryable()),
            _ => Err(BusError::Config("a bad setting".into())),
        })
        .await;
        assert!(matches!(end, Err(BusError::Config(_))), "{end:?}");
        assert_eq!(runs, [0, 100, 300, 700]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_healthy_run_waits_the_first_backoff_again_and_shutdown_ends_the_wait() {
        let shutdown = CancellationToken::new();
        let (end, runs) = restarted(&shutdown, async |n| {
            match n {
                // Two quick failures, then a run of a minute.
                3 => tokio::time::sleep(Duration::from_secs(60)).await,
                5 => shutdown.cancel(),
                _ => {}
            }
            Err(retryable())
        })
        .await;
        assert!(end.is_ok(), "{end:?}");
        // 100, 200, then a minute's run: 100 again, then 200; the last wait cut short.
        assert_eq!(runs, [0, 100, 300, 60_400, 60_600]);
    }

    #[tokio::test]
    async fn a_part_that_stops_as_asked_ends() {
        let shutdown = CancellationToken::new();
        let (end, runs) = restarted(&shutdown, async |_| Ok(())).await;
        assert!(end.is_ok());
        assert_eq!(runs.len(), 1);
    }
}
