//! Test harness: the two deployments behind one trait, a recording handler, and helpers.
//!
//! - [`JetStreamHarness`]: a fresh PostgreSQL database (event store in schema `eventstore`,
//!   bus tables beside it), a unique subject prefix and streams on the local NATS server, a
//!   [`Relay`] and [`JetStreamConsumer`]s.
//! - [`EmbeddedHarness`]: a fresh SQLite file, an [`EmbeddedBus`] and its consumers.
//!
//! Every test builds one with `create`, runs a case written against [`Harness`], and cleans up
//! (database dropped, streams deleted) even when the case panics.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use async_trait::async_trait;
use fairdeal_bus::{
    AppendSignal, BusDatabase, BusDb, BusError, DeadLetter, EmbeddedBus, EmbeddedConsumerConfig,
    Handler, HandlerError, JetStreamConfig, JetStreamConsumer, JetStreamConsumerConfig,
    NotifyingEventStore, Relay, RelayConfig, RetryPolicy, ensure_streams,
};
use fairdeal_eventstore::conformance::{Backend, PgBackend, SqliteBackend};
use fairdeal_eventstore::{
    EventStore, ExpectedVersion, NewEvent, PgEventStore, RecordedEvent, StreamId,
};
use futures::{FutureExt, TryStreamExt};
use sqlx::postgres::PgPool;
use sqlx::{Postgres, Sqlite, Transaction};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Retries fast enough for tests.
pub(crate) fn quick_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(40),
    }
}

/// A relay or consumer running on its own task.
pub(crate) struct Running {
    shutdown: CancellationToken,
    handle: JoinHandle<Result<(), BusError>>,
    /// The task's own connections ("its process's"), closed when it stops or is killed.
    pool: Option<PgPool>,
}

impl Running {
    /// Spawns `run(shutdown)`.
    pub(crate) fn spawn<F>(run: impl FnOnce(CancellationToken) -> F) -> Self
    where
        F: Future<Output = Result<(), BusError>> + Send + 'static,
    {
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(run(shutdown.clone()));
        Self {
            shutdown,
            handle,
            pool: None,
        }
    }

    /// Gives the task its own pool, closed with it: a killed task then loses its connections
    /// as a crashed process would, instead of handing a connection back to a shared pool in
    /// the middle of a transaction.
    fn with_pool(mut self, pool: PgPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Graceful stop: cancels and waits; the task must end cleanly.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        let result = tokio::time::timeout(Duration::from_secs(30), self.handle)
            .await
            .expect("task stops within 30s after shutdown")
            .expect("task did not panic");
        result.expect("task ended without error");
        if let Some(pool) = self.pool {
            pool.close().await;
        }
    }

    /// Crash: the task is dropped wherever it is (mid-batch, mid-publish, mid-transaction).
    pub(crate) async fn abort(self) {
        self.handle.abort();
        let _ = self.handle.await;
        if let Some(pool) = self.pool {
            pool.close().await;
        }
    }
}

/// A handler that records each applied event in the `applied` table (no unique constraint:
/// a double application shows up as a second row) and fails on demand.
#[derive(Debug)]
pub(crate) struct Recorder {
    /// Consumer name, written with each row.
    pub(crate) consumer: String,
    /// Transient failures still to inject, per event.
    transient: Mutex<HashMap<Uuid, u32>>,
    /// Events that always fail permanently.
    permanent: Mutex<HashSet<Uuid>>,
    /// Handler calls per event.
    calls: Mutex<HashMap<Uuid, u32>>,
    /// Whether it takes whole batches (`Handler::handle_batch`).
    batched: bool,
    /// The size of each batch handed over whole.
    batch_sizes: Mutex<Vec<usize>>,
    /// Whether it settles by position (`Handler::settles_by_position`).
    by_position: bool,
}

impl Recorder {
    pub(crate) fn new(consumer: &str) -> Arc<Self> {
        Self::with(consumer, false, false)
    }

    /// A recorder that takes whole batches and writes each in one statement.
    pub(crate) fn batched(consumer: &str) -> Arc<Self> {
        Self::with(consumer, true, false)
    }

    /// A recorder whose consumer settles by position (no ids recorded on the embedded bus).
    pub(crate) fn by_position(consumer: &str) -> Arc<Self> {
        Self::with(consumer, false, true)
    }

    fn with(consumer: &str, batched: bool, by_position: bool) -> Arc<Self> {
        Arc::new(Self {
            consumer: consumer.to_owned(),
            transient: Mutex::default(),
            permanent: Mutex::default(),
            calls: Mutex::default(),
            batched,
            batch_sizes: Mutex::default(),
            by_position,
        })
    }

    /// The sizes of the batches handed over whole, in order.
    pub(crate) fn batch_sizes(&self) -> Vec<usize> {
        self.batch_sizes.lock().unwrap().clone()
    }

    /// Counts a whole batch and injects the failures configured for its events.
    fn before_batch(&self, events: &[&RecordedEvent]) -> Result<(), HandlerError> {
        self.batch_sizes.lock().unwrap().push(events.len());
        events.iter().try_for_each(|event| self.before(event))
    }

    /// Fails the next `times` attempts at `event_id` transiently.
    pub(crate) fn fail_transiently(&self, event_id: Uuid, times: u32) {
        self.transient.lock().unwrap().insert(event_id, times);
    }

    /// Fails every attempt at `event_id` permanently.
    pub(crate) fn fail_permanently(&self, event_id: Uuid) {
        self.permanent.lock().unwrap().insert(event_id);
    }

    /// Stops failing `event_id` (the fix an operator deploys before re-driving).
    pub(crate) fn heal(&self, event_id: Uuid) {
        self.permanent.lock().unwrap().remove(&event_id);
        self.transient.lock().unwrap().remove(&event_id);
    }

    /// How often the handler was called for `event_id`.
    pub(crate) fn calls(&self, event_id: Uuid) -> u32 {
        self.calls
            .lock()
            .unwrap()
            .get(&event_id)
            .copied()
            .unwrap_or(0)
    }

    /// Counts the call and injects the configured failure.
    fn before(&self, event: &RecordedEvent) -> Result<(), HandlerError> {
        *self
            .calls
            .lock()
            .unwrap()
            .entry(event.event_id)
            .or_default() += 1;
        if let Some(left) = self.transient.lock().unwrap().get_mut(&event.event_id)
            && *left > 0
        {
            *left -= 1;
            return Err(HandlerError::transient(format!(
                "injected transient failure for {}",
                event.event_id
            )));
        }
        if self.permanent.lock().unwrap().contains(&event.event_id) {
            return Err(HandlerError::permanent(format!(
                "injected permanent failure for {}",
                event.event_id
            )));
        }
        Ok(())
    }
}

impl Handler<Postgres> for Recorder {
    async fn handle(
        &self,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), HandlerError> {
        self.before(event)?;
        sqlx::query("INSERT INTO public.applied (consumer, event_id) VALUES ($1, $2)")
            .bind(&self.consumer)
            .bind(event.event_id)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn handle_batch(
        &self,
        events: &[&RecordedEvent],
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), HandlerError> {
        self.before_batch(events)?;
        let ids: Vec<Uuid> = events.iter().map(|e| e.event_id).collect();
        sqlx::query(
            "INSERT INTO public.applied (consumer, event_id) \
             SELECT $1, id FROM UNNEST($2::uuid[]) WITH ORDINALITY AS u(id, n) ORDER BY n",
        )
        .bind(&self.consumer)
        .bind(ids)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    fn batches(&self) -> bool {
        self.batched
    }

    fn settles_by_position(&self) -> bool {
        self.by_position
    }
}

impl Handler<Sqlite> for Recorder {
    async fn handle(
        &self,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, Sqlite>,
    ) -> Result<(), HandlerError> {
        self.before(event)?;
        sqlx::query("INSERT INTO applied (consumer, event_id) VALUES (?1, ?2)")
            .bind(&self.consumer)
            .bind(event.event_id.hyphenated().to_string())
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn handle_batch(
        &self,
        events: &[&RecordedEvent],
        tx: &mut Transaction<'_, Sqlite>,
    ) -> Result<(), HandlerError> {
        self.before_batch(events)?;
        let ids: Vec<String> = events
            .iter()
            .map(|e| e.event_id.hyphenated().to_string())
            .collect();
        sqlx::query(
            "INSERT INTO applied (consumer, event_id) \
             SELECT ?1, value FROM json_each(?2) ORDER BY key",
        )
        .bind(&self.consumer)
        .bind(serde_json::to_string(&ids).unwrap())
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    fn batches(&self) -> bool {
        self.batched
    }

    fn settles_by_position(&self) -> bool {
        self.by_position
    }
}

/// One deployment of the bus, as the conformance cases see it.
#[async_trait]
pub(crate) trait Harness: Send + Sync + 'static {
    /// The store services append through.
    fn store(&self) -> Arc<dyn EventStore>;
    /// Starts the relay (a task that only waits for shutdown on the embedded bus).
    fn start_relay(&self) -> Running;
    /// Starts a consumer named `recorder.consumer`.
    fn start_consumer(&self, recorder: Arc<Recorder>, retry: RetryPolicy) -> Running;
    /// Event ids the handler applied for `consumer`, in application order.
    async fn applied(&self, consumer: &str) -> Vec<Uuid>;
    /// The bus tables, read and asked through the bus's own API.
    fn tables(&self) -> &dyn BusTables;
    /// Moves the time `consumer`'s processed ids were recorded back by `secs` seconds.
    async fn age_processed(&self, consumer: &str, secs: i64);
    /// Dead letters announced outside the table (JetStream subject / in-process channel).
    async fn announced_dead_letters(&self, consumer: &str) -> usize;
    /// As if every ack of `consumer` had been lost: its position goes back to 0 and (on
    /// JetStream) the durable consumer is deleted, so every event is delivered again.
    async fn rewind_consumer(&self, consumer: &str);
    /// As if the relay had crashed after publishing but before checkpointing anything.
    async fn rewind_relay(&self);
    /// Messages in the JetStream events stream (`None` on the embedded bus).
    async fn published(&self) -> Option<u64>;
    /// Drops the database and the streams.
    async fn cleanup(&self);
}

/// What the cases read and ask of the bus tables: the same calls of [`BusDb`] over either
/// database.
#[async_trait]
pub(crate) trait BusTables: Send + Sync {
    /// Event ids `consumer` recorded as settled.
    async fn processed(&self, consumer: &str) -> HashSet<Uuid>;
    /// Forgets `consumer`'s processed ids older than `retention`; returns how many.
    async fn prune_processed(&self, consumer: &str, retention: Duration) -> u64;
    /// `consumer`'s dead-letter table rows.
    async fn dead_letters(&self, consumer: &str) -> Vec<DeadLetter>;
    /// `consumer`'s dead letters as operators see them (ids, re-drive state).
    async fn stored_dead_letters(&self, consumer: &str) -> Vec<fairdeal_bus::StoredDeadLetter>;
    /// Asks for dead letter `id` to be re-driven (`fairdeal-admin dead-letters redrive`).
    async fn request_redrive(&self, id: i64) -> bool;
}

#[async_trait]
impl<DB: BusDatabase> BusTables for BusDb<DB> {
    async fn processed(&self, consumer: &str) -> HashSet<Uuid> {
        let ids = self.processed_event_ids(consumer).await.unwrap();
        ids.into_iter().collect()
    }

    async fn prune_processed(&self, consumer: &str, retention: Duration) -> u64 {
        BusDb::prune_processed(self, consumer, retention)
            .await
            .unwrap()
    }

    async fn dead_letters(&self, consumer: &str) -> Vec<DeadLetter> {
        BusDb::dead_letters(self, consumer).await.unwrap()
    }

    async fn stored_dead_letters(&self, consumer: &str) -> Vec<fairdeal_bus::StoredDeadLetter> {
        BusDb::stored_dead_letters(self, Some(consumer))
            .await
            .unwrap()
    }

    async fn request_redrive(&self, id: i64) -> bool {
        BusDb::request_redrive(self, id).await.unwrap()
    }
}

/// Installs, once per test binary, a global subscriber with an OpenTelemetry layer (spans
/// are built, not exported), as a service with tracing configured would have. Global rather
/// than per-test: tracing caches per-callsite interest process-wide, so a thread-local
/// subscriber in one test races with tests running without one.
pub(crate) fn init_tracing() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        use opentelemetry::trace::TracerProvider as _;
        use tracing_subscriber::layer::SubscriberExt;
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry().with(
            tracing_opentelemetry::layer().with_tracer(provider.tracer("fairdeal-bus-tests")),
        );
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

/// Creates a harness, runs `case` on it, and cleans up even if the case panics.
pub(crate) async fn run<H, C, CF, F, Fut>(create: C, case: F)
where
    H: Harness,
    C: FnOnce() -> CF,
    CF: Future<Output = H>,
    F: FnOnce(Arc<dyn Harness>) -> Fut,
    Fut: Future<Output = ()>,
{
    run_with(create, |harness: Arc<H>| case(harness)).await;
}

/// [`run`] for cases that need the concrete harness.
pub(crate) async fn run_with<H, C, CF, F, Fut>(create: C, case: F)
where
    H: Harness,
    C: FnOnce() -> CF,
    CF: Future<Output = H>,
    F: FnOnce(Arc<H>) -> Fut,
    Fut: Future<Output = ()>,
{
    init_tracing();
    let harness = Arc::new(create().await);
    let outcome = AssertUnwindSafe(case(Arc::clone(&harness)))
        .catch_unwind()
        .await;
    harness.cleanup().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

// ---------------------------------------------------------------------------------------
// PostgreSQL + JetStream.

/// Schema of the store (and so of the bus tables) in the test database.
const SCHEMA: &str = "eventstore";

pub(crate) struct JetStreamHarness {
    pg: PgBackend,
    db: BusDb<Postgres>,
    store: Arc<dyn EventStore>,
    signal: AppendSignal,
    js: jetstream::Context,
    streams: JetStreamConfig,
}

impl JetStreamHarness {
    pub(crate) async fn create() -> Self {
        Self::create_on(&fairdeal_testkit::nats_url()).await
    }

    /// A harness on the NATS server at `nats_url` (a test's own server).
    pub(crate) async fn create_on(nats_url: &str) -> Self {
        let pg = PgBackend::create().await;
        let db = BusDb::postgres(pg.pg_store().pool().clone(), SCHEMA).unwrap();
        db.migrate().await.unwrap();
        db.migrate().await.unwrap(); // idempotent
        sqlx::query(
            "CREATE TABLE public.applied (ord BIGSERIAL PRIMARY KEY, consumer TEXT NOT NULL, \
             event_id UUID NOT NULL)",
        )
        .execute(db.pool())
        .await
        .unwrap();
        let client = async_nats::connect(nats_url)
            .await
            .expect("NATS with JetStream (`cargo xtask test` starts one)");
        let js = jetstream::new(client);
        let streams = JetStreamConfig::new(fairdeal_testkit::subject_prefix("bus")).unwrap();
        ensure_streams(&js, &streams).await.unwrap();
        ensure_streams(&js, &streams).await.unwrap(); // idempotent
        let signal = AppendSignal::new();
        let store: Arc<dyn EventStore> = Arc::new(NotifyingEventStore::new(
            Arc::new(pg.pg_store().clone()),
            signal.clone(),
        ));
        Self {
            pg,
            db,
            store,
            signal,
            js,
            streams,
        }
    }

    pub(crate) fn js(&self) -> &jetstream::Context {
        &self.js
    }

    pub(crate) fn streams(&self) -> &JetStreamConfig {
        &self.streams
    }

    pub(crate) fn db(&self) -> &BusDb<Postgres> {
        &self.db
    }

    /// A relay with the test settings, not started, on the shared pool.
    pub(crate) fn relay(&self) -> Relay<Postgres> {
        Relay::new(
            Arc::new(self.pg.pg_store().clone()),
            self.db.clone(),
            self.js.clone(),
            self.streams.clone(),
            test_relay_config(),
        )
        .unwrap()
    }

    /// A pool of its own for one relay or consumer instance (see [`Running::with_pool`]).
    fn instance_pool(&self) -> PgPool {
        fairdeal_db::postgres_pool_options()
            .max_connections(4)
            .connect_lazy_with(self.pg.connect_options())
    }
}

/// The relay settings tests use: small batches and windows so that crashes land mid-stream.
fn test_relay_config() -> RelayConfig {
    let mut config = RelayConfig::new("relay");
    config.batch_size = 64;
    config.max_in_flight = 32;
    config.poll_interval = Duration::from_millis(50);
    config.initial_backoff = Duration::from_millis(10);
    config.max_backoff = Duration::from_millis(200);
    config.standby_interval = Duration::from_millis(50);
    config
}

impl JetStreamHarness {
    /// A relay with `config`, woken by the store's append signal, running on a pool of its
    /// own.
    pub(crate) fn start_relay_with(&self, config: RelayConfig) -> Running {
        let pool = self.instance_pool();
        let relay = Relay::new(
            Arc::new(PgEventStore::new(pool.clone(), SCHEMA).unwrap()),
            BusDb::postgres(pool.clone(), SCHEMA).unwrap(),
            self.js.clone(),
            self.streams.clone(),
            config,
        )
        .unwrap()
        .with_waiter(self.signal.subscribe());
        Running::spawn(|shutdown| relay.run(shutdown)).with_pool(pool)
    }
}

/// The relay settings tests use, but the safety poll of the platform's relays (5 s): only
/// its wake-ups and re-checks make it publish sooner.
pub(crate) fn platform_relay_config() -> RelayConfig {
    let mut config = test_relay_config();
    config.poll_interval = fairdeal_bus::db::LEASE_CHECK_INTERVAL;
    config
}

#[async_trait]
impl Harness for JetStreamHarness {
    fn store(&self) -> Arc<dyn EventStore> {
        Arc::clone(&self.store)
    }

    fn start_relay(&self) -> Running {
        self.start_relay_with(test_relay_config())
    }

    fn start_consumer(&self, recorder: Arc<Recorder>, retry: RetryPolicy) -> Running {
        let mut config = JetStreamConsumerConfig::new(recorder.consumer.clone());
        config.batch_size = 64;
        config.retry = retry;
        let pool = self.instance_pool();
        let consumer = JetStreamConsumer::new(
            self.js.clone(),
            self.streams.clone(),
            BusDb::postgres(pool.clone(), SCHEMA).unwrap(),
            recorder,
            config,
        )
        .unwrap();
        Running::spawn(|shutdown| consumer.run(shutdown)).with_pool(pool)
    }

    async fn applied(&self, consumer: &str) -> Vec<Uuid> {
        sqlx::query_scalar("SELECT event_id FROM public.applied WHERE consumer = $1 ORDER BY ord")
            .bind(consumer)
            .fetch_all(self.db.pool())
            .await
            .unwrap()
    }

    fn tables(&self) -> &dyn BusTables {
        &self.db
    }

    async fn age_processed(&self, consumer: &str, secs: i64) {
        sqlx::query(
            "UPDATE eventstore.bus_processed_events \
             SET processed_at = processed_at - ($2 * interval '1 second') WHERE consumer = $1",
        )
        .bind(consumer)
        .bind(secs)
        .execute(self.db.pool())
        .await
        .unwrap();
    }

    async fn announced_dead_letters(&self, consumer: &str) -> usize {
        let stream = self
            .js
            .get_stream(self.streams.dead_letter_stream_name())
            .await
            .unwrap();
        let subject = self.streams.dead_letter_subject(consumer);
        let counts: Vec<(String, usize)> = stream
            .info_with_subjects(subject.as_str())
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        counts.into_iter().map(|(_, count)| count).sum()
    }

    async fn rewind_consumer(&self, consumer: &str) {
        sqlx::query(
            "UPDATE eventstore.bus_consumer_positions SET position = 0 WHERE consumer = $1",
        )
        .bind(consumer)
        .execute(self.db.pool())
        .await
        .unwrap();
        let stream = self
            .js
            .get_stream(self.streams.stream_name())
            .await
            .unwrap();
        stream.delete_consumer(consumer).await.unwrap();
    }

    async fn rewind_relay(&self) {
        sqlx::query("UPDATE eventstore.bus_relay_checkpoints SET position = 0")
            .execute(self.db.pool())
            .await
            .unwrap();
    }

    async fn published(&self) -> Option<u64> {
        let mut stream = self
            .js
            .get_stream(self.streams.stream_name())
            .await
            .unwrap();
        Some(stream.info().await.unwrap().state.messages)
    }

    async fn cleanup(&self) {
        let _ = self.js.delete_stream(self.streams.stream_name()).await;
        let _ = self
            .js
            .delete_stream(self.streams.dead_letter_stream_name())
            .await;
        self.pg.cleanup().await;
    }
}

// ---------------------------------------------------------------------------------------
// SQLite + in-process bus.

pub(crate) struct EmbeddedHarness {
    sqlite: SqliteBackend,
    db: BusDb<Sqlite>,
    bus: EmbeddedBus<Sqlite>,
    dead_letters: Mutex<broadcast::Receiver<DeadLetter>>,
    announced: Mutex<HashMap<String, usize>>,
}

impl EmbeddedHarness {
    pub(crate) async fn create() -> Self {
        let sqlite = SqliteBackend::create().await;
        let db = BusDb::sqlite(sqlite.sqlite_store().pool().clone());
        db.migrate().await.unwrap();
        db.migrate().await.unwrap(); // idempotent
        sqlx::query(
            "CREATE TABLE applied (ord INTEGER PRIMARY KEY AUTOINCREMENT, \
             consumer TEXT NOT NULL, event_id TEXT NOT NULL)",
        )
        .execute(db.pool())
        .await
        .unwrap();
        let bus = EmbeddedBus::new(sqlite.store(), db.clone());
        let dead_letters = Mutex::new(bus.subscribe_dead_letters());
        Self {
            sqlite,
            db,
            bus,
            dead_letters,
            announced: Mutex::default(),
        }
    }

    pub(crate) fn bus(&self) -> &EmbeddedBus<Sqlite> {
        &self.bus
    }
}

#[async_trait]
impl Harness for EmbeddedHarness {
    fn store(&self) -> Arc<dyn EventStore> {
        self.bus.store()
    }

    fn start_relay(&self) -> Running {
        // Nothing to relay: consumers tail the log directly.
        Running::spawn(|shutdown| async move {
            shutdown.cancelled().await;
            Ok(())
        })
    }

    fn start_consumer(&self, recorder: Arc<Recorder>, retry: RetryPolicy) -> Running {
        let mut config = EmbeddedConsumerConfig::new(recorder.consumer.clone());
        config.batch_size = 64;
        config.retry = retry;
        let consumer = self.bus.consumer(recorder, config).unwrap();
        Running::spawn(|shutdown| consumer.run(shutdown))
    }

    async fn applied(&self, consumer: &str) -> Vec<Uuid> {
        let rows: Vec<String> =
            sqlx::query_scalar("SELECT event_id FROM applied WHERE consumer = ?1 ORDER BY ord")
                .bind(consumer)
                .fetch_all(self.db.pool())
                .await
                .unwrap();
        rows.iter().map(|id| Uuid::parse_str(id).unwrap()).collect()
    }

    fn tables(&self) -> &dyn BusTables {
        &self.db
    }

    async fn age_processed(&self, consumer: &str, secs: i64) {
        sqlx::query(
            "UPDATE bus_processed_events \
             SET processed_at = strftime('%Y-%m-%dT%H:%M:%fZ', processed_at, '-' || $2 || ' seconds') \
             WHERE consumer = $1",
        )
        .bind(consumer)
        .bind(secs)
        .execute(self.db.pool())
        .await
        .unwrap();
    }

    async fn announced_dead_letters(&self, consumer: &str) -> usize {
        let mut receiver = self.dead_letters.lock().unwrap();
        let mut announced = self.announced.lock().unwrap();
        while let Ok(letter) = receiver.try_recv() {
            *announced.entry(letter.consumer).or_default() += 1;
        }
        announced.get(consumer).copied().unwrap_or(0)
    }

    async fn rewind_consumer(&self, consumer: &str) {
        sqlx::query("UPDATE bus_consumer_positions SET position = 0 WHERE consumer = ?1")
            .bind(consumer)
            .execute(self.db.pool())
            .await
            .unwrap();
    }

    async fn rewind_relay(&self) {}

    async fn published(&self) -> Option<u64> {
        None
    }

    async fn cleanup(&self) {
        self.sqlite.cleanup().await;
    }
}

// ---------------------------------------------------------------------------------------
// Helpers.

/// A fresh stream id of `category`.
pub(crate) fn stream(category: &str) -> StreamId {
    StreamId::of(category, Uuid::now_v7()).unwrap()
}

/// A test event carrying `n`, with a trace context.
pub(crate) fn event(n: u32) -> NewEvent {
    NewEvent::new("fairdeal.test.v1.Happened", n.to_be_bytes().to_vec()).with_trace_context(
        [(
            "traceparent".to_owned(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
        )]
        .into(),
    )
}

/// Appends `total` events round-robin over `streams` streams, `per_append` at a time.
pub(crate) async fn append_round_robin(
    store: &dyn EventStore,
    streams: usize,
    total: u32,
    per_append: u32,
) {
    let ids: Vec<StreamId> = (0..streams).map(|_| stream("table")).collect();
    let mut n = 0;
    let mut turn = 0;
    while n < total {
        let count = per_append.min(total - n);
        let batch = (n..n + count).map(event).collect();
        store
            .append(&ids[turn % ids.len()], ExpectedVersion::Any, batch)
            .await
            .unwrap();
        n += count;
        turn += 1;
    }
}

/// All events in log order, once at least `at_least` are visible (PostgreSQL's read
/// horizon can lag behind other tests' open transactions for a moment).
pub(crate) async fn log_events(store: &dyn EventStore, at_least: usize) -> Vec<RecordedEvent> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let events = store.read_all(1, usize::MAX).await.unwrap();
        if events.len() >= at_least {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {at_least} events visible",
            events.len()
        );
        // Visibility waits on other tests' transactions, which signal nothing: poll.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// All event ids in log order, once at least `at_least` are visible.
pub(crate) async fn log_ids(store: &dyn EventStore, at_least: usize) -> Vec<Uuid> {
    log_events(store, at_least)
        .await
        .iter()
        .map(|e| e.event_id)
        .collect()
}

/// Waits until `consumer` applied at least `count` events (bounded), returning them.
pub(crate) async fn wait_applied(harness: &dyn Harness, consumer: &str, count: usize) -> Vec<Uuid> {
    wait_for(Duration::from_secs(120), || async {
        let applied = harness.applied(consumer).await;
        (applied.len() >= count).then_some(applied)
    })
    .await
    .unwrap_or_else(|| panic!("{consumer} did not apply {count} events in time"))
}

/// Polls `check` every 10 ms until it yields a value or `timeout` passes.
pub(crate) async fn wait_for<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        // What the checks read (database rows, stream state) signals no change: poll.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Asserts `applied` is exactly `expected`, reporting duplicates and gaps readably.
pub(crate) fn assert_exactly_once_in_order(applied: &[Uuid], expected: &[Uuid]) {
    let distinct: HashSet<&Uuid> = applied.iter().collect();
    assert_eq!(
        distinct.len(),
        applied.len(),
        "{} events applied more than once",
        applied.len() - distinct.len()
    );
    let missing = expected.iter().filter(|id| !distinct.contains(id)).count();
    assert_eq!(missing, 0, "{missing} events never applied");
    assert_eq!(applied.len(), expected.len(), "unexpected events applied");
    assert!(applied == expected, "events applied out of log order");
}

/// The metrics this test binary records, collected in memory.
pub(crate) struct MetricsProbe {
    exporter: opentelemetry_sdk::metrics::InMemoryMetricExporter,
    provider: opentelemetry_sdk::metrics::SdkMeterProvider,
}

impl MetricsProbe {
    /// The sum over every series of the counter `name` (0 before its first recording).
    pub(crate) fn sum(&self, name: &str) -> u64 {
        use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
        self.provider.force_flush().unwrap();
        let exported = self.exporter.get_finished_metrics().unwrap();
        // Cumulative: the last export holding the metric has its total.
        exported
            .iter()
            .rev()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
            .find(|metric| metric.name() == name)
            .map_or(0, |metric| match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    sum.data_points().map(|point| point.value()).sum()
                }
                other => panic!("{name} is not a u64 counter: {other:?}"),
            })
    }
}

/// Installs, once per test binary, a global meter provider exporting to memory, as
/// `fairdeal_kit::telemetry::init` installs an OTLP one. Instruments created before the
/// first call record nowhere.
pub(crate) fn init_metrics() -> &'static MetricsProbe {
    static PROBE: std::sync::OnceLock<MetricsProbe> = std::sync::OnceLock::new();
    PROBE.get_or_init(|| {
        let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
        let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
            .with_reader(
                opentelemetry_sdk::metrics::PeriodicReader::builder(exporter.clone()).build(),
            )
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        MetricsProbe { exporter, provider }
    })
}
