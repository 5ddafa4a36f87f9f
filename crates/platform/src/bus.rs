//! [`Bus`]: how a service's events leave it and how it consumes other services' events, one
//! call each, whichever deployment it runs in.
//!
//! - With `--nats-url` ([`Bus::start`]): the service's streams (`<prefix>.<service>`) are
//!   created idempotently and the outbox relay publishes every committed event to JetStream,
//!   woken by the storage's append signal, which also fires for other replicas' appends on
//!   PostgreSQL (LISTEN/NOTIFY, see [`crate::wake`]). [`Bus::spawn_consumer`] runs a durable
//!   JetStream consumer of another service's stream.
//! - Without it: events stay in the store. In the all-in-one process every service shares
//!   one SQLite file, so its log holds every service's events, and [`Bus::spawn_consumer`]
//!   runs an in-process consumer that tails it. On PostgreSQL each service's log is its own
//!   schema, so a consumer of *another* service needs NATS; that combination is refused at
//!   start ([`SetupError::NeedsNats`]).
//! - Either way, a consumer of the service's *own* events (its projections) tails its own
//!   store in-process, woken by the same signal: the store is the outbox the relay reads, so
//!   the projection neither waits for nor depends on NATS, and its events do not travel to
//!   NATS and back (measured in docs/performance.md). Of several replicas, one runs it at a
//!   time, holding the consumer's lease (see [`fairdeal_bus::embedded`]).
//!
//! Either way the handler applies each event exactly once, in the storage's database (its
//! effects, the processed id and the position commit together), and a consumer never stops
//! on a poison event (it is dead-lettered with a log line).

use std::sync::Arc;

use async_nats::jetstream;
use fairdeal_bus::prune::{PROCESSED_RETENTION, PRUNE_EVERY, prune_processed_every};
use fairdeal_bus::{
    BusDatabase, BusDb, EmbeddedBus, EmbeddedConsumerConfig, Handler, JetStreamConfig,
    JetStreamConsumer, JetStreamConsumerConfig, Relay, RelayConfig, ensure_streams,
};
use fairdeal_db::Db;
use sqlx::{Postgres, Sqlite};

use crate::error::SetupError;
use crate::settings::Deployment;
use crate::shutdown::Shutdown;
use crate::storage::Storage;

/// How long the relay and in-process consumers wait for a wake-up before looking anyway: a
/// safety net only, since every append fires the storage's signal (see [`crate::wake`]).
const SAFETY_POLL: std::time::Duration = fairdeal_bus::db::LEASE_CHECK_INTERVAL;

/// Keeps consumer `name`'s processed ids within the retention (see [`fairdeal_bus::prune`]).
fn spawn_pruner<DB: BusDatabase>(db: BusDb<DB>, name: &str, shutdown: &Shutdown) {
    shutdown.spawn(
        "prune-processed",
        prune_processed_every(
            db,
            name.to_owned(),
            PROCESSED_RETENTION,
            PRUNE_EVERY,
            shutdown.token(),
        ),
    );
}

/// Settings of the in-process consumer `name`.
fn embedded(name: &str, batch_size: Option<usize>) -> EmbeddedConsumerConfig {
    let mut config = EmbeddedConsumerConfig::new(name);
    config.poll_interval = SAFETY_POLL;
    if let Some(size) = batch_size {
        config.batch_size = size;
    }
    config
}

/// A service's connection to the event bus (see the module docs).
#[derive(Debug, Clone)]
pub struct Bus {
    /// The service's storage (the relay's outbox, the consumers' database).
    storage: Storage,
    /// This service's name (its stream is `<prefix>.<service>`).
    service: String,
    /// JetStream, when `nats_url` is set.
    jetstream: Option<JetStream>,
}

/// The JetStream side of a [`Bus`].
#[derive(Debug, Clone)]
struct JetStream {
    /// The client context.
    context: jetstream::Context,
    /// First token(s) of every subject and stream name.
    subject_prefix: String,
    /// Stream replicas.
    replicas: usize,
}

impl Bus {
    /// Connects the service `service` to the bus `deployment` names and, with NATS, starts
    /// the relay publishing its events on `shutdown` (see the module docs).
    pub async fn start(
        deployment: &impl Deployment,
        storage: &Storage,
        service: &str,
        shutdown: &Shutdown,
    ) -> Result<Self, SetupError> {
        let settings = deployment.bus();
        let jetstream = match &settings.nats {
            None => None,
            Some(url) => {
                let client = async_nats::connect(url.expose_secret())
                    .await
                    .map_err(|e| SetupError::Nats {
                        url: url.redacted().to_owned(),
                        reason: e.to_string(),
                    })?;
                // Refuse to start, rather than store events the relay could never publish.
                fairdeal_bus::check_max_payload(client.server_info().max_payload)?;
                Some(JetStream {
                    context: jetstream::new(client),
                    subject_prefix: settings.subject_prefix.clone(),
                    replicas: usize::from(settings.replicas),
                })
            }
        };
        let bus = Self {
            storage: storage.clone(),
            service: service.to_owned(),
            jetstream,
        };
        if let Db::Postgres { pool, schema } = storage.db() {
            crate::wake::spawn_listener(pool.clone(), schema.clone(), storage.hearers(), shutdown);
        }
        bus.start_relay(shutdown).await?;
        Ok(bus)
    }

    /// Whether events travel on JetStream (else in process).
    pub fn uses_jetstream(&self) -> bool {
        self.jetstream.is_some()
    }

    /// The JetStream client, when on NATS.
    pub fn jetstream(&self) -> Option<&jetstream::Context> {
        self.jetstream.as_ref().map(|js| &js.context)
    }

    /// The streams of `service` on JetStream.
    fn streams(js: &JetStream, service: &str) -> Result<JetStreamConfig, SetupError> {
        Ok(
            JetStreamConfig::new(format!("{}.{service}", js.subject_prefix))?
                .with_replicas(js.replicas)?,
        )
    }

    async fn start_relay(&self, shutdown: &Shutdown) -> Result<(), SetupError> {
        let Some(js) = &self.jetstream else {
            return Ok(());
        };
        let streams = Self::streams(js, &self.service)?;
        ensure_streams(&js.context, &streams).await?;
        let store = self.storage.backend().clone().into_dyn();
        let mut config = RelayConfig::new(self.service.clone());
        // Wake-ups come from the append signal (this process, and others through the
        // PostgreSQL listener); the poll is only a safety net.
        config.poll_interval = SAFETY_POLL;
        let waiter = self.storage.signal().subscribe();
        let token = shutdown.token();
        match self.storage.db() {
            Db::Postgres { pool, schema } => {
                let db = BusDb::postgres(pool.clone(), schema.as_str())?;
                let relay =
                    Relay::new(store, db, js.context.clone(), streams, config)?.with_waiter(waiter);
                shutdown.spawn("relay", relay.run(token));
            }
            Db::Sqlite { pool } => {
                let relay = Relay::new(
                    store,
                    BusDb::sqlite(pool.clone()),
                    js.context.clone(),
                    streams,
                    config,
                )?
                .with_waiter(waiter);
                shutdown.spawn("relay", relay.run(token));
            }
        }
        Ok(())
    }

    /// Runs the durable consumer `name` of `source`'s events (`source` may be this service)
    /// on `shutdown`, applying each event with `handler` in this service's database.
    pub async fn spawn_consumer<H>(
        &self,
        source: &str,
        name: &str,
        handler: Arc<H>,
        shutdown: &Shutdown,
    ) -> Result<(), SetupError>
    where
        H: Handler<Postgres> + Handler<Sqlite>,
    {
        let token = shutdown.token();
        // A projection of this service's own events tails its store (see the module docs).
        let jetstream = self.jetstream.as_ref().filter(|_| source != self.service);
        match (jetstream, self.storage.db()) {
            (Some(js), db) => {
                let streams = Self::streams(js, source)?;
                // Idempotent: the source service may not have started yet.
                ensure_streams(&js.context, &streams).await?;
                let mut config = JetStreamConsumerConfig::new(name);
                if let Some(size) = Handler::<Postgres>::batch_size(&*handler) {
                    config.batch_size = size;
                    // Room for several batches in flight (see `max_ack_pending`).
                    config.max_ack_pending = config
                        .max_ack_pending
                        .max(i64::try_from(size.saturating_mul(8)).unwrap_or(i64::MAX));
                }
                match db {
                    Db::Postgres { pool, schema } => {
                        let db = BusDb::postgres(pool.clone(), schema.as_str())?;
                        let consumer = JetStreamConsumer::new(
                            js.context.clone(),
                            streams,
                            db,
                            handler,
                            config,
                        )?;
                        consumer.ensure().await?;
                        shutdown.spawn("consumer", consumer.run(token));
                    }
                    Db::Sqlite { pool } => {
                        let db = BusDb::sqlite(pool.clone());
                        let consumer = JetStreamConsumer::new(
                            js.context.clone(),
                            streams,
                            db,
                            handler,
                            config,
                        )?;
                        consumer.ensure().await?;
                        shutdown.spawn("consumer", consumer.run(token));
                    }
                }
            }
            (None, Db::Postgres { .. }) if source != self.service => {
                return Err(SetupError::NeedsNats {
                    consumer: name.to_owned(),
                    source_service: source.to_owned(),
                });
            }
            (None, Db::Postgres { pool, schema }) => {
                let db = BusDb::postgres(pool.clone(), schema.as_str())?;
                spawn_pruner(db.clone(), name, shutdown);
                let bus = EmbeddedBus::with_signal(
                    self.storage.events(),
                    self.storage.signal().clone(),
                    db,
                );
                let config = embedded(name, Handler::<Postgres>::batch_size(&*handler));
                let consumer = bus.consumer(handler, config)?;
                shutdown.spawn("consumer", consumer.run(token));
            }
            (None, Db::Sqlite { pool }) => {
                let db = BusDb::sqlite(pool.clone());
                spawn_pruner(db.clone(), name, shutdown);
                let bus = EmbeddedBus::with_signal(
                    self.storage.events(),
                    self.storage.signal().clone(),
                    db,
                );
                let config = embedded(name, Handler::<Postgres>::batch_size(&*handler));
                let consumer = bus.consumer(handler, config)?;
                shutdown.spawn("consumer", consumer.run(token));
            }
        }
        Ok(())
    }
}
