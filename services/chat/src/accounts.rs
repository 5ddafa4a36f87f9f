//! Account deletion, read from the auth service's events by the `chat-accounts` consumer
//! inside the bus's transaction (exactly once): on `fairdeal.auth.v1.AccountDeleted` every
//! chat line of the account is erased ([`ErasureDatabase::erase_author`]: keys deleted,
//! history rows cleared, mutes and memberships dropped, later posts refused), and once that
//! transaction has committed the database's files are scrubbed ([`Scrubber`]). The event is
//! read from its protobuf message, not through the auth service's code.
//!
//! Embedded, every service shares one SQLite log and the consumer tails it for the auth
//! service's events; on PostgreSQL they come over JetStream (`<prefix>.auth`).

use std::sync::Arc;
use std::time::Duration;

use fairdeal_bus::{Handler, HandlerError};
use fairdeal_db::Db;
use fairdeal_eventstore::RecordedEvent;
use fairdeal_kit::Shutdown;
use fairdeal_proto::fairdeal::auth::v1 as auth;
use sqlx::Transaction;
use tokio::sync::Notify;
use uuid::Uuid;

use crate::events::{StoredEventError, uuid_of};
use crate::store::ErasureDatabase;

/// The consumer's durable name.
pub const CONSUMER: &str = "chat-accounts";

/// The source service of the events.
pub const SOURCE: &str = "auth";

/// How long the scrubber waits before trying again after a failed scrub.
const SCRUB_RETRY: Duration = Duration::from_secs(1);

/// Scrubs the database's files ([`Db::scrub`]) in the background after an erasure committed
/// where no `await` can run (the consumer's `committed` hook). Requests made while a scrub
/// runs are served by one more scrub, not one each. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// Holds one pending request.
    requested: Arc<Notify>,
}

impl Scrubber {
    /// Asks for a scrub after what has committed so far.
    pub fn request(&self) {
        self.requested.notify_one();
    }

    /// Scrubs `db` on each request until `shutdown`; a failed scrub is retried.
    pub fn spawn(&self, db: Db, shutdown: &Shutdown) {
        let requested = Arc::clone(&self.requested);
        let token = shutdown.token();
        shutdown.spawn("chat-scrub", async move {
            loop {
                tokio::select! {
                    () = token.cancelled() => return,
                    () = requested.notified() => {}
                }
                if let Err(e) = db.scrub().await {
                    tracing::warn!(error = %e, "scrubbing the database after an erasure failed; retrying");
                    requested.notify_one();
                    tokio::select! {
                        () = token.cancelled() => return,
                        () = tokio::time::sleep(SCRUB_RETRY) => {}
                    }
                }
            }
        });
    }
}

/// Erases a deleted account's chat lines.
#[derive(Debug)]
pub struct AccountErasure {
    /// Scrubs the files after each committed batch.
    scrubber: Scrubber,
}

impl AccountErasure {
    /// The handler; `scrubber` runs after each commit.
    pub fn new(scrubber: Scrubber) -> Self {
        Self { scrubber }
    }
}

/// The deleted account of an `AccountDeleted` event (`Err`: it does not decode).
fn deleted_account(event: &RecordedEvent) -> Result<Uuid, StoredEventError> {
    let m: auth::AccountDeleted = event.decode_payload()?;
    uuid_of("user_id", &m.user_id)
}

fairdeal_db::for_each_backend! { DB =>
    impl Handler<DB> for AccountErasure {
        async fn handle(
            &self,
            event: &RecordedEvent,
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            let user = deleted_account(event).map_err(|e| HandlerError::Permanent(e.into()))?;
            DB::erase_author(tx, user)
                .await
                .map_err(|e| HandlerError::Transient(e.into()))?;
            tracing::info!(%user, "chat lines of a deleted account erased");
            Ok(())
        }

        fn accepts(&self, event: &RecordedEvent) -> bool {
            event.is::<auth::AccountDeleted>()
        }

        fn committed(&self) {
            self.scrubber.request();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairdeal_eventstore::NewEvent;

    fn recorded(new: NewEvent) -> RecordedEvent {
        crate::events::recorded(new, "user-x")
    }

    #[test]
    fn only_account_deletions_are_read() {
        let user = Uuid::now_v7();
        let erasure = AccountErasure::new(Scrubber::default());
        let deleted = recorded(NewEvent::from_message(&auth::AccountDeleted {
            user_id: user.to_string(),
        }));
        assert!(Handler::<sqlx::Sqlite>::accepts(&erasure, &deleted));
        assert_eq!(deleted_account(&deleted), Ok(user));
        let bad = recorded(NewEvent::from_message(&auth::AccountDeleted {
            user_id: "nobody".into(),
        }));
        assert_eq!(
            deleted_account(&bad).map_err(|e| e.to_string()),
            Err("user_id is not a UUID".to_owned())
        );
        let other = recorded(NewEvent::from_message(&auth::EmailConfirmed::default()));
        assert!(!Handler::<sqlx::Postgres>::accepts(&erasure, &other));
    }
}
