//! Mail requests (RequestPasswordReset, ResendConfirmation) answered before the work.
//!
//! Whether an address has an account must not show in the reply nor in its timing. The
//! request path therefore does the same work for every well-formed address: it parses the
//! address, takes the per-client and per-address quotas, and hands the request to this queue;
//! the reply follows at once. A background task owned by the service
//! ([`run`], spawned on the kit's shutdown handle) then looks the account up and, when there
//! is one to write to, issues the token and queues the mail in the outbox (see
//! [`crate::mail`]), all off the request path, after a short random wait so that the work
//! does not compete for the server's cores with the reply of the request that caused it.
//!
//! The queue is bounded: when it is full (the database is down and the task is stuck), a
//! request is dropped with a warning, and the caller, answered the same as always, asks again
//! later. Requests already queued when the service stops are finished before the task ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::accounts::Accounts;
use crate::domain::Email;

/// Requests waiting at most (beyond it, new ones are dropped).
pub const CAPACITY: usize = 1024;

/// Which mail is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    /// A password-reset link, for any account with the address.
    PasswordReset,
    /// A new confirmation link, for an unconfirmed account with the address.
    Confirmation,
}

/// One accepted request (the address is personal data: Debug does not show it).
#[derive(Debug, Clone)]
pub struct MailRequest {
    /// What to send.
    pub kind: MailKind,
    /// To which address, if it has an account.
    pub email: Email,
}

/// Requests accepted and not yet finished, and a signal when there are none.
#[derive(Debug, Default)]
struct Pending {
    count: AtomicUsize,
    idle: Notify,
}

/// The request side of the queue (cheap to clone).
#[derive(Debug, Clone)]
pub struct MailRequests {
    sender: mpsc::Sender<MailRequest>,
    pending: Arc<Pending>,
}

/// The worker side of the queue, handed to [`run`].
#[derive(Debug)]
pub struct MailRequestQueue {
    receiver: mpsc::Receiver<MailRequest>,
    pending: Arc<Pending>,
}

impl MailRequests {
    /// A queue of `capacity` requests: the handle use cases submit to, and its worker side.
    pub fn channel(capacity: usize) -> (Self, MailRequestQueue) {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        let pending = Arc::new(Pending::default());
        (
            Self {
                sender,
                pending: pending.clone(),
            },
            MailRequestQueue { receiver, pending },
        )
    }

    /// Queues `request` without waiting; `false` when the queue is full or closed (the
    /// request is dropped).
    pub fn submit(&self, request: MailRequest) -> bool {
        self.pending.count.fetch_add(1, Ordering::SeqCst);
        if self.sender.try_send(request).is_ok() {
            true
        } else {
            self.pending.finish_one();
            false
        }
    }

    /// Resolves once every request submitted so far is finished (tests, and operators
    /// draining a replica).
    pub async fn idle(&self) {
        loop {
            let notified = self.pending.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.pending.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Pending {
    fn finish_one(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }
}

/// Shortest wait between accepting a request and starting its work.
pub const SETTLE_MIN: Duration = Duration::from_millis(20);
/// Longest such wait.
pub const SETTLE_MAX: Duration = Duration::from_millis(100);

/// A wait drawn uniformly from [`SETTLE_MIN`, `SETTLE_MAX`] (the middle if the operating
/// system's random source fails).
fn settle_delay() -> Duration {
    let spread = SETTLE_MAX.saturating_sub(SETTLE_MIN);
    let mut bytes = [0u8; 4];
    let fraction = match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX),
        Err(_) => 0.5,
    };
    SETTLE_MIN + spread.mul_f64(fraction)
}

/// Works through the queue until `stop` is cancelled, then finishes what is queued.
///
/// The work a request causes does not start at once: the task waits a random
/// [`SETTLE_MIN`] to [`SETTLE_MAX`] first, then does it together with whatever arrived
/// meanwhile. Otherwise the lookup and the writes for a known address would run on the
/// server's cores while that very request's reply is still leaving, and a busy server would
/// answer a known address measurably later than an unknown one; after the wait they fall on
/// whichever calls happen to be in flight then.
pub async fn run(accounts: Arc<Accounts>, mut queue: MailRequestQueue, stop: CancellationToken) {
    loop {
        let first = tokio::select! {
            () = stop.cancelled() => break,
            request = queue.receiver.recv() => match request {
                Some(request) => request,
                None => return,
            },
        };
        tokio::select! {
            () = stop.cancelled() => {}
            () = tokio::time::sleep(settle_delay()) => {}
        }
        accounts.send_requested_mail(first).await;
        queue.pending.finish_one();
        while let Ok(request) = queue.receiver.try_recv() {
            accounts.send_requested_mail(request).await;
            queue.pending.finish_one();
        }
    }
    queue.receiver.close();
    while let Some(request) = queue.receiver.recv().await {
        accounts.send_requested_mail(request).await;
        queue.pending.finish_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settle_delays_stay_in_range() {
        for _ in 0..1000 {
            let d = settle_delay();
            assert!((SETTLE_MIN..=SETTLE_MAX).contains(&d), "{d:?}");
        }
    }
}
