//! Time, injected: [`TableClock`] gives the time turn deadlines are recorded in (Unix
//! milliseconds) and sleeps until one of them. [`SystemClock`] is the real one;
//! [`ManualClock`] is moved by hand (tests advance it instead of sleeping), and wakes its
//! sleepers when it moves.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// A clock for turn deadlines.
pub trait TableClock: Send + Sync + fmt::Debug {
    /// Now, Unix milliseconds.
    fn now_ms(&self) -> i64;

    /// Resolves once [`TableClock::now_ms`] has reached `deadline_ms`.
    fn sleep_until(&self, deadline_ms: i64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl TableClock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    fn sleep_until(&self, deadline_ms: i64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            // The wall clock may be stepped while we sleep: check again on waking.
            loop {
                let left = deadline_ms.saturating_sub(self.now_ms());
                if left <= 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(left.unsigned_abs())).await;
            }
        })
    }
}

/// A clock moved by hand.
#[derive(Debug)]
pub struct ManualClock {
    /// Now, Unix milliseconds.
    now: AtomicI64,
    /// Bumped on every move, to wake sleepers.
    moved: watch::Sender<i64>,
}

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        ManualClock {
            now: AtomicI64::new(now_ms),
            moved: watch::Sender::new(now_ms),
        }
    }

    /// Moves the clock forward by `by`, waking whoever sleeps on it.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        let now = self.now.fetch_add(by, Ordering::SeqCst).saturating_add(by);
        self.moved.send_replace(now);
    }
}

impl TableClock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep_until(&self, deadline_ms: i64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let mut moved = self.moved.subscribe();
        Box::pin(async move {
            while self.now_ms() < deadline_ms {
                if moved.changed().await.is_err() {
                    return std::future::pending().await;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_manual_clock_wakes_its_sleepers_when_it_reaches_their_deadline() {
        let clock = std::sync::Arc::new(ManualClock::new(1_000));
        let sleeper = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep_until(31_000).await })
        };
        clock.advance(Duration::from_secs(10));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(20));
        sleeper.await.unwrap();
        assert_eq!(clock.now_ms(), 31_000);
    }
}
