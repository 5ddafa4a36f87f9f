//! The embedded default: an in-process bus that tails the event store itself.
//!
//! With no NATS server around (the single-binary, SQLite deployment), every consumer reads the
//! log directly with `read_all` from its own checkpoint. The consumer semantics are the
//! JetStream ones: durable named consumers whose position lives in the database, exactly-once
//! effects (processed ids and position written in the handler's transaction), retries with
//! backoff and dead letters (the `bus_dead_letters` table plus a broadcast channel standing
//! in for the dead-letter subject). Consumers wake as soon as an append is signalled through
//! [`AppendSignal`] (see [`EmbeddedBus::store`]), and poll as a fallback.
//!
//! Generic over the database like the rest of the bus: SQLite is the default, but the same
//! consumer tails a PostgreSQL store just as well: that is how a service projects its own
//! events (`fairdeal_platform::Bus::spawn_consumer`), NATS or not. Of several replicas
//! running the consumer of one name, one applies: it holds the consumer's [`crate::Lease`]
//! (a PostgreSQL advisory lock; always granted on SQLite, whose file has one process) and
//! the others stand by, trying every `standby_interval`, as the relay does. So batches are
//! applied in log order by one process at a time; a holder that lost its lease (its session
//! vanished) only notices at its next check, every [`crate::db::LEASE_CHECK_INTERVAL`], and
//! the processed ids keep each event's effects single even then (for a handler that
//! settles by position, the position does: each batch moves it on from where the
//! instance's last batch left it, or is rolled back; see `Settler::by_position_if`).

use std::sync::Arc;
use std::time::Duration;

use fairdeal_eventstore::EventStore;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::apply::{DeadLetterSink, Delivery, Settler};
use crate::db::{BusDatabase, BusDb, DeadLetter, LEASE_CHECK_INTERVAL, Lease};
use crate::error::BusError;
use crate::handler::{Handler, RetryPolicy};
use crate::jetstream::validate_name;
use crate::restart::Restarts;
use crate::signal::{AppendSignal, AppendWaiter, NotifyingEventStore, Recheck, Wake};

/// Dead letters announced on an embedded bus (the stand-in for the dead-letter subject).
const DEAD_LETTER_CHANNEL_CAPACITY: usize = 256;

/// The in-process bus: a notifying store, the database and the dead-letter channel shared by
/// the embedded consumers of one process.
#[derive(Debug, Clone)]
pub struct EmbeddedBus<DB: BusDatabase> {
    /// The store wrapped to fire `signal` on every append; services append through it.
    store: Arc<dyn EventStore>,
    /// Where consumers keep positions, processed ids and dead letters (the store's database).
    db: BusDb<DB>,
    /// Fired after each append.
    signal: AppendSignal,
    /// Dead letters of every consumer of this bus.
    dead_letters: broadcast::Sender<DeadLetter>,
}

impl<DB: BusDatabase> EmbeddedBus<DB> {
    /// A bus over `store`, keeping consumer state in `db` (the store's database, migrated
    /// with [`BusDb::migrate`]). Appends through [`EmbeddedBus::store`] wake the consumers.
    pub fn new(store: Arc<dyn EventStore>, db: BusDb<DB>) -> Self {
        let signal = AppendSignal::new();
        let store: Arc<dyn EventStore> = Arc::new(NotifyingEventStore::new(store, signal.clone()));
        Self::with_signal(store, signal, db)
    }

    /// A bus over `store`, which already fires `signal` after each append (a
    /// [`NotifyingEventStore`] the service holds), so one signal wakes the relay and the
    /// consumers alike.
    pub fn with_signal(store: Arc<dyn EventStore>, signal: AppendSignal, db: BusDb<DB>) -> Self {
        let (dead_letters, _) = broadcast::channel(DEAD_LETTER_CHANNEL_CAPACITY);
        Self {
            store,
            db,
            signal,
            dead_letters,
        }
    }

    /// The store services must append through so consumers wake at once.
    pub fn store(&self) -> Arc<dyn EventStore> {
        Arc::clone(&self.store)
    }

    /// The signal fired on each append through [`EmbeddedBus::store`].
    pub fn signal(&self) -> &AppendSignal {
        &self.signal
    }

    /// Receives every dead letter from now on (the embedded dead-letter subject). The table
    /// `bus_dead_letters` keeps them all regardless.
    pub fn subscribe_dead_letters(&self) -> broadcast::Receiver<DeadLetter> {
        self.dead_letters.subscribe()
    }

    /// A durable consumer of this bus applying events with `handler`.
    pub fn consumer<H: Handler<DB>>(
        &self,
        handler: Arc<H>,
        config: EmbeddedConsumerConfig,
    ) -> Result<EmbeddedConsumer<DB, H>, BusError> {
        config.validate()?;
        let sink = BroadcastDeadLetters {
            sender: self.dead_letters.clone(),
        };
        let by_position = handler.settles_by_position();
        Ok(EmbeddedConsumer {
            db: self.db.clone(),
            store: Arc::clone(&self.store),
            waiter: self.signal.subscribe(),
            settler: Settler::new(
                self.db.clone(),
                config.name.clone(),
                handler,
                config.retry,
                sink,
            )
            .by_position_if(by_position),
            config,
        })
    }
}

/// Settings of one embedded consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedConsumerConfig {
    /// Durable name (ASCII letters, digits, `-`, `_`): key of its position, processed ids and
    /// dead letters.
    pub name: String,
    /// Events read per `read_all` call and at most per database transaction.
    pub batch_size: usize,
    /// Retries of transient handler failures before dead-lettering.
    pub retry: RetryPolicy,
    /// Fallback poll for appends that bypass the signal (e.g. another process).
    pub poll_interval: Duration,
    /// How often a consumer standing by (another replica holds its lease) tries to take it.
    pub standby_interval: Duration,
}

impl EmbeddedConsumerConfig {
    /// Defaults for consumer `name`: batches of 256, the default [`RetryPolicy`], a 1 s poll,
    /// a 2 s standby.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            batch_size: 256,
            retry: RetryPolicy::default(),
            poll_interval: Duration::from_secs(1),
            standby_interval: Duration::from_secs(2),
        }
    }

    /// The name of its lease: apart from the relays' (a `.` is in no valid name).
    fn lease_name(&self) -> String {
        format!("consumer.{}", self.name)
    }

    fn validate(&self) -> Result<(), BusError> {
        validate_name("consumer name", &self.name)?;
        if self.batch_size == 0 {
            return Err(BusError::Config(format!(
                "consumer {}: batch_size must be at least 1",
                self.name
            )));
        }
        Ok(())
    }
}

/// Announces dead letters on the bus's broadcast channel.
#[derive(Debug, Clone)]
struct BroadcastDeadLetters {
    /// The bus's dead-letter channel.
    sender: broadcast::Sender<DeadLetter>,
}

impl DeadLetterSink for BroadcastDeadLetters {
    async fn publish(&self, letter: &DeadLetter) -> Result<(), BusError> {
        // No receiver is fine: the table is the durable record.
        let _ = self.sender.send(letter.clone());
        Ok(())
    }
}

/// A durable consumer that tails the store in-process.
#[derive(Debug)]
pub struct EmbeddedConsumer<DB: BusDatabase, H: Handler<DB>> {
    /// Where its lease is taken.
    db: BusDb<DB>,
    /// The log.
    store: Arc<dyn EventStore>,
    /// Wakes on appends.
    waiter: AppendWaiter,
    /// The shared apply core.
    settler: Settler<DB, H, BroadcastDeadLetters>,
    /// Settings.
    config: EmbeddedConsumerConfig,
}

impl<DB, H> EmbeddedConsumer<DB, H>
where
    DB: BusDatabase,
    H: Handler<DB>,
{
    /// The last global position this consumer settled (0 before the first).
    pub async fn position(&self) -> Result<i64, BusError> {
        self.settler.load_position().await
    }

    /// Consumes until `shutdown` is cancelled, then returns once the batch in hand is
    /// committed; stands by while another replica holds the consumer's lease (see the module
    /// docs). Store and database errors (a lost lease included) are logged and retried with
    /// backoff; an integrity failure of the log is returned.
    pub async fn run(mut self, shutdown: CancellationToken) -> Result<(), BusError> {
        let name = self.config.name.clone();
        let backoff = (
            self.config.retry.initial_backoff,
            self.config.retry.max_backoff,
        );
        let mut restarts = Restarts::new("consumer", &name, backoff);
        while !shutdown.is_cancelled() {
            let result = match self.lead(&shutdown).await {
                Ok(Some(mut lease)) => self.consume_until_error(&shutdown, &mut lease).await,
                Ok(None) => return Ok(()),
                Err(err) => Err(err),
            };
            if let Some(end) = restarts.after(result, &shutdown).await {
                return end;
            }
        }
        Ok(())
    }

    /// Waits until this consumer holds its lease (`None`: shut down while standing by).
    async fn lead(&self, shutdown: &CancellationToken) -> Result<Option<Lease<DB>>, BusError> {
        let consumer = &self.config.name;
        self.db
            .lead(
                &self.config.lease_name(),
                self.config.standby_interval,
                shutdown,
                || {
                    tracing::info!(
                        %consumer,
                        "another replica runs this consumer; standing by"
                    );
                },
            )
            .await
    }

    async fn consume_until_error(
        &mut self,
        shutdown: &CancellationToken,
        lease: &mut Lease<DB>,
    ) -> Result<(), BusError> {
        let mut position = self.settler.load_position().await?;
        tracing::info!(consumer = %self.config.name, position, "embedded consumer starting");
        let mut redrives_checked: Option<std::time::Instant> = None;
        let mut lease_checked_at = std::time::Instant::now();
        let mut recheck = Recheck::new();
        loop {
            if shutdown.is_cancelled() {
                return Ok(());
            }
            if lease_checked_at.elapsed() >= LEASE_CHECK_INTERVAL {
                self.db.keep_lease(lease).await?;
                lease_checked_at = std::time::Instant::now();
            }
            if redrives_checked.is_none_or(|at| at.elapsed() >= crate::handler::REDRIVE_CHECK) {
                self.settler.redrive_pending().await?;
                redrives_checked = Some(std::time::Instant::now());
            }
            let from = fairdeal_db::stored_u64(position, "bus_consumer_positions.position")
                .map_err(sqlx::Error::from)?
                .saturating_add(1);
            let events = self.store.read_all(from, self.config.batch_size).await?;
            if events.is_empty() {
                self.settler.metrics.record_lag(0);
                let wake = recheck
                    .wait(Some(&mut self.waiter), self.config.poll_interval, shutdown)
                    .await;
                if wake == Wake::Shutdown {
                    return Ok(());
                }
                continue;
            }
            recheck.found();
            let mut deliveries = Vec::with_capacity(events.len());
            for event in events {
                let event_position = i64::try_from(event.position).map_err(|_| {
                    BusError::Config(format!("global position {} exceeds i64", event.position))
                })?;
                deliveries.push(Delivery {
                    position: event_position,
                    event: Ok(event),
                    raw: None,
                    prior_attempts: 0,
                    trace: None,
                });
            }
            let settled = self.settler.settle(&deliveries, position, shutdown).await;
            if let Some(last) = settled.count.checked_sub(1).and_then(|i| deliveries.get(i)) {
                position = last.position;
            }
            if settled.count < deliveries.len() {
                if settled.superseded {
                    return Err(BusError::Superseded {
                        consumer: self.config.name.clone(),
                    });
                }
                return Ok(()); // Shutdown while waiting to retry.
            }
            // A short batch reached the head as it was read; a full one may be behind.
            if deliveries.len() >= self.config.batch_size {
                let head = self.store.head_position().await?;
                let settled_to =
                    fairdeal_db::stored_u64(position, "bus_consumer_positions.position")
                        .map_err(sqlx::Error::from)?;
                self.settler
                    .metrics
                    .record_lag(head.saturating_sub(settled_to));
            }
        }
    }
}
