//! `tally`: the smallest real service that uses the whole platform kit, built the way the six
//! services are meant to be built.
//!
//! - gRPC `fairdeal.e2e.v1.Tally/Record(tally_id, amount)` validates the request and appends
//!   a `fairdeal.e2e.v1.TallyRecorded` event to stream `tally-<tally_id>`, carrying the
//!   request's trace context in the envelope;
//! - the `tally-projection` consumer applies each event to a `tally_totals` table in the same
//!   database transaction in which the bus records the event id (exactly-once effects);
//! - [`start`] wires store, bus and server from a [`CommonConfig`] like a `main` would:
//!   `postgres://` or `sqlite://` picks the store, `nats_url` picks JetStream (with the
//!   outbox relay) or the in-process bus, and every background task hangs on the server's
//!   shutdown handle.
//!
//! The gRPC plumbing is written by hand with tonic's building blocks (what generated code
//! does) so the test service needs no `.proto` file in the public `proto/` tree.

use std::collections::HashSet;
use std::convert::Infallible;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use anyhow::Context as _;
use fairdeal_bus::{
    AppendSignal, BusDatabase, BusDb, EmbeddedBus, EmbeddedConsumerConfig, Handler, HandlerError,
    JetStreamConfig, JetStreamConsumer, JetStreamConsumerConfig, NotifyingEventStore, Relay,
    RelayConfig, ensure_streams,
};
use fairdeal_eventstore::{
    EventStore, ExpectedVersion, NewEvent, PgEventStore, RecordedEvent, SqliteEventStore,
    StoreError, StreamId,
};
use fairdeal_kit::config::CommonConfig;
use fairdeal_kit::{Application, ServiceError, Shutdown, propagation};
use sqlx::{Postgres, Sqlite, Transaction};
use tokio::sync::watch;
use tonic::body::Body;
use tonic::server::NamedService;
use tracing::Instrument as _;
use uuid::Uuid;

/// The service's gRPC name.
pub(crate) const SERVICE: &str = "fairdeal.e2e.v1.Tally";
/// The one RPC.
pub(crate) const RECORD_PATH: &str = "/fairdeal.e2e.v1.Tally/Record";
/// The consumer's durable name.
pub(crate) const CONSUMER: &str = "tally-projection";
/// PostgreSQL schema of the service (store, bus tables, projection).
pub(crate) const SCHEMA: &str = "tally";

/// `Record` request.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RecordRequest {
    /// Which tally (lowercase letters and digits).
    #[prost(string, tag = "1")]
    pub(crate) tally_id: String,
    /// Amount to add (not zero).
    #[prost(int64, tag = "2")]
    pub(crate) amount: i64,
}

/// `Record` reply.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RecordReply {
    /// The tally stream's version after the append.
    #[prost(uint64, tag = "1")]
    pub(crate) version: u64,
    /// The appended event's id.
    #[prost(string, tag = "2")]
    pub(crate) event_id: String,
}

/// The event.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TallyRecorded {
    /// Which tally.
    #[prost(string, tag = "1")]
    pub(crate) tally_id: String,
    /// Amount added.
    #[prost(int64, tag = "2")]
    pub(crate) amount: i64,
}

impl prost::Name for TallyRecorded {
    const NAME: &'static str = "TallyRecorded";
    const PACKAGE: &'static str = "fairdeal.e2e.v1";
}

/// The gRPC service: validates, then appends.
#[derive(Clone)]
pub(crate) struct TallyService {
    /// Where events go (the bus's notifying wrapper of the store).
    store: Arc<dyn EventStore>,
}

impl NamedService for TallyService {
    const NAME: &'static str = SERVICE;
}

impl TallyService {
    /// `Record`: one event per call.
    async fn record(&self, request: RecordRequest) -> Result<RecordReply, ServiceError> {
        let valid_id = !request.tally_id.is_empty()
            && request
                .tally_id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !valid_id {
            return Err(ServiceError::InvalidArgument(
                "tally_id: lowercase letters and digits, not empty".into(),
            ));
        }
        if request.amount == 0 {
            return Err(ServiceError::InvalidArgument(
                "amount: must not be 0".into(),
            ));
        }
        let stream = StreamId::of("tally", &request.tally_id)
            .map_err(|error| ServiceError::InvalidArgument(error.to_string()))?;
        let span = tracing::info_span!("tally.append", stream = %stream);
        async {
            let mut trace_context = Default::default();
            propagation::inject_current(&mut trace_context);
            let event = NewEvent::from_message(&TallyRecorded {
                tally_id: request.tally_id.clone(),
                amount: request.amount,
            })
            .with_correlation_id(stream.as_str())
            .with_trace_context(trace_context);
            let event_id = event.event_id;
            let appended = self
                .store
                .append(&stream, ExpectedVersion::Any, vec![event])
                .await
                .map_err(store_error)?;
            Ok(RecordReply {
                version: appended.version,
                event_id: event_id.to_string(),
            })
        }
        .instrument(span)
        .await
    }
}

/// The one mapping of store errors for this service.
fn store_error(error: StoreError) -> ServiceError {
    match error {
        StoreError::Conflict { .. } => ServiceError::Conflict(error.to_string()),
        StoreError::InvalidArgument(message) => ServiceError::InvalidArgument(message),
        other => ServiceError::internal(other),
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl tower::Service<http::Request<Body>> for TallyService {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            if request.uri().path() != RECORD_PATH {
                return Ok(tonic::Status::unimplemented("no such method").into_http());
            }
            let handler = tower::service_fn(move |request: tonic::Request<RecordRequest>| {
                let this = this.clone();
                async move {
                    this.record(request.into_inner())
                        .await
                        .map(tonic::Response::new)
                        .map_err(tonic::Status::from)
                }
            });
            let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<
                RecordReply,
                RecordRequest,
            >::default());
            Ok(grpc.unary(handler, request).await)
        })
    }
}

/// Calls `Record` through a traced channel.
pub(crate) async fn record(
    channel: tonic::transport::Channel,
    tally_id: &str,
    amount: i64,
) -> Result<RecordReply, tonic::Status> {
    let mut client = tonic::client::Grpc::new(propagation::traced(channel));
    client
        .ready()
        .await
        .map_err(|error| tonic::Status::unavailable(error.to_string()))?;
    client
        .unary(
            tonic::Request::new(RecordRequest {
                tally_id: tally_id.to_owned(),
                amount,
            }),
            http::uri::PathAndQuery::from_static(RECORD_PATH),
            tonic_prost::ProstCodec::<RecordRequest, RecordReply>::default(),
        )
        .await
        .map(tonic::Response::into_inner)
}

/// The projection: `tally_totals(tally_id, total, events)`.
#[derive(Debug)]
pub(crate) struct TallyProjection {
    /// Events applied so far by this instance (the test waits on it).
    applied: watch::Sender<u64>,
    /// Amounts whose first handling fails transiently (a retried handler must still apply
    /// exactly once). Keyed by amount because the test knows it before the event exists.
    fail_once: Mutex<HashSet<i64>>,
    /// How many first-attempt failures were injected (the test checks the retry happened).
    injected_failures: AtomicU64,
}

impl TallyProjection {
    /// A projection reporting on `applied`.
    pub(crate) fn new(applied: watch::Sender<u64>) -> Self {
        Self {
            applied,
            fail_once: Mutex::new(HashSet::new()),
            injected_failures: AtomicU64::new(0),
        }
    }

    /// Makes the first attempt at the next event of `amount` fail transiently.
    pub(crate) fn fail_once(&self, amount: i64) {
        if let Ok(mut amounts) = self.fail_once.lock() {
            amounts.insert(amount);
        }
    }

    /// First-attempt failures injected so far.
    pub(crate) fn injected_failures(&self) -> u64 {
        self.injected_failures.load(Ordering::Relaxed)
    }

    /// Decodes the event, failing the first attempt of listed events.
    fn prepare(&self, event: &RecordedEvent) -> Result<TallyRecorded, HandlerError> {
        let recorded: TallyRecorded = event
            .decode_payload()
            .map_err(|error| HandlerError::Permanent(error.into()))?;
        let first_attempt = self
            .fail_once
            .lock()
            .map(|mut amounts| amounts.remove(&recorded.amount))
            .unwrap_or(false);
        if first_attempt {
            self.injected_failures.fetch_add(1, Ordering::Relaxed);
            return Err(HandlerError::Transient(
                "injected first-attempt failure".into(),
            ));
        }
        Ok(recorded)
    }

    /// Counts an applied event (after the handler's writes; the commit follows).
    fn count(&self) {
        self.applied.send_modify(|applied| *applied += 1);
    }
}

impl Handler<Sqlite> for TallyProjection {
    async fn handle(
        &self,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, Sqlite>,
    ) -> Result<(), HandlerError> {
        let recorded = self.prepare(event)?;
        sqlx::query(
            "INSERT INTO tally_totals (tally_id, total, events) VALUES (?1, ?2, 1) \
             ON CONFLICT (tally_id) DO UPDATE SET total = total + excluded.total, events = events + 1",
        )
        .bind(&recorded.tally_id)
        .bind(recorded.amount)
        .execute(&mut **tx)
        .await
        .map_err(|error| HandlerError::Transient(error.into()))?;
        self.count();
        Ok(())
    }

    fn accepts(&self, event: &RecordedEvent) -> bool {
        event.event_type == <TallyRecorded as prost::Name>::full_name()
    }
}

impl Handler<Postgres> for TallyProjection {
    async fn handle(
        &self,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), HandlerError> {
        let recorded = self.prepare(event)?;
        sqlx::query(
            "INSERT INTO tally.tally_totals (tally_id, total, events) VALUES ($1, $2, 1) \
             ON CONFLICT (tally_id) DO UPDATE \
             SET total = tally_totals.total + excluded.total, events = tally_totals.events + 1",
        )
        .bind(&recorded.tally_id)
        .bind(recorded.amount)
        .execute(&mut **tx)
        .await
        .map_err(|error| HandlerError::Transient(error.into()))?;
        self.count();
        Ok(())
    }

    fn accepts(&self, event: &RecordedEvent) -> bool {
        event.event_type == <TallyRecorded as prost::Name>::full_name()
    }
}

/// The database side of a running tally, for the test's checks.
#[derive(Debug, Clone)]
pub(crate) enum TallyDb {
    /// SQLite file.
    Sqlite(BusDb<Sqlite>),
    /// PostgreSQL, schema [`SCHEMA`].
    Postgres(BusDb<Postgres>),
}

impl TallyDb {
    /// `(total, events)` of every tally, by id.
    pub(crate) async fn totals(&self) -> anyhow::Result<Vec<(String, i64, i64)>> {
        Ok(match self {
            TallyDb::Sqlite(db) => {
                sqlx::query_as("SELECT tally_id, total, events FROM tally_totals ORDER BY tally_id")
                    .fetch_all(db.pool())
                    .await?
            }
            TallyDb::Postgres(db) => {
                sqlx::query_as(
                    "SELECT tally_id, total, events FROM tally.tally_totals ORDER BY tally_id",
                )
                .fetch_all(db.pool())
                .await?
            }
        })
    }

    /// Event ids the consumer settled.
    pub(crate) async fn processed(&self) -> anyhow::Result<Vec<Uuid>> {
        Ok(match self {
            TallyDb::Sqlite(db) => db.processed_event_ids(CONSUMER).await?,
            TallyDb::Postgres(db) => db.processed_event_ids(CONSUMER).await?,
        })
    }

    /// Dead letters of the consumer (there must be none).
    pub(crate) async fn dead_letters(&self) -> anyhow::Result<usize> {
        Ok(match self {
            TallyDb::Sqlite(db) => db.dead_letters(CONSUMER).await?.len(),
            TallyDb::Postgres(db) => db.dead_letters(CONSUMER).await?.len(),
        })
    }
}

/// A started (bound, not yet serving) tally.
pub(crate) struct Tally {
    /// The server; run it with `run_until_stopped`.
    pub(crate) app: Application,
    /// The database, for checks.
    pub(crate) db: TallyDb,
}

/// Wires the tally service from `common` as its `main` would, and binds the server.
pub(crate) async fn start(
    common: &CommonConfig,
    projection: Arc<TallyProjection>,
) -> anyhow::Result<Tally> {
    let shutdown = Shutdown::new();
    let url = common.database_url.expose_secret();
    let (store, db): (Arc<dyn EventStore>, TallyDb) = match common.database_url.scheme().as_deref()
    {
        Some("sqlite") => {
            let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)?;
            let store = SqliteEventStore::open_with(SqliteEventStore::with_store_settings(options))
                .await
                .context("open the SQLite event store")?;
            sqlx::query(
                "CREATE TABLE IF NOT EXISTS tally_totals \
                 (tally_id TEXT PRIMARY KEY, total INTEGER NOT NULL, events INTEGER NOT NULL)",
            )
            .execute(store.pool())
            .await?;
            let db = BusDb::sqlite(store.pool().clone());
            (Arc::new(store), TallyDb::Sqlite(db))
        }
        Some("postgres" | "postgresql") => {
            let store = PgEventStore::connect(url, SCHEMA)
                .await
                .context("connect the PostgreSQL event store")?;
            sqlx::query(
                "CREATE TABLE IF NOT EXISTS tally.tally_totals \
                 (tally_id TEXT PRIMARY KEY, total BIGINT NOT NULL, events BIGINT NOT NULL)",
            )
            .execute(store.pool())
            .await?;
            let db = BusDb::postgres(store.pool().clone(), SCHEMA)?;
            (Arc::new(store), TallyDb::Postgres(db))
        }
        other => anyhow::bail!("unsupported database scheme {other:?}"),
    };
    let append_store = match &db {
        TallyDb::Sqlite(bus_db) => {
            wire_bus(common, store, bus_db.clone(), projection, &shutdown).await?
        }
        TallyDb::Postgres(bus_db) => {
            wire_bus(common, store, bus_db.clone(), projection, &shutdown).await?
        }
    };
    let app = Application::builder(common)
        .with_shutdown(shutdown)
        .handle_signals(false)
        .add_service(TallyService {
            store: append_store,
        })
        .build()
        .await?;
    Ok(Tally { app, db })
}

/// Migrates the bus tables, then starts the relay and consumer on JetStream (when
/// `nats_url` is set) or the in-process bus. Returns the store the service must append
/// through (it wakes the relay or the embedded consumer at once).
async fn wire_bus<DB>(
    common: &CommonConfig,
    store: Arc<dyn EventStore>,
    db: BusDb<DB>,
    projection: Arc<TallyProjection>,
    shutdown: &Shutdown,
) -> anyhow::Result<Arc<dyn EventStore>>
where
    DB: BusDatabase,
    TallyProjection: Handler<DB>,
{
    db.migrate().await?;
    let Some(nats_url) = &common.nats_url else {
        let bus = EmbeddedBus::new(store, db);
        let consumer = bus.consumer(projection, EmbeddedConsumerConfig::new(CONSUMER))?;
        let token = shutdown.token();
        shutdown.spawn("tally-projection", consumer.run(token));
        return Ok(bus.store());
    };
    let client = async_nats::connect(nats_url.expose_secret())
        .await
        .context("NATS (`cargo xtask test` starts the test servers)")?;
    let js = async_nats::jetstream::new(client);
    let streams = JetStreamConfig::new(&common.subject_prefix)?
        .with_replicas(usize::from(common.jetstream_replicas))?;
    ensure_streams(&js, &streams).await?;

    let signal = AppendSignal::new();
    let relay = Relay::new(
        Arc::clone(&store),
        db.clone(),
        js.clone(),
        streams.clone(),
        RelayConfig::new("tally-relay"),
    )?
    .with_waiter(signal.subscribe());
    let consumer = JetStreamConsumer::new(
        js.clone(),
        streams.clone(),
        db,
        projection,
        JetStreamConsumerConfig::new(CONSUMER),
    )?;
    consumer.ensure().await?;
    shutdown.spawn("tally-relay", relay.run(shutdown.token()));
    shutdown.spawn("tally-projection", consumer.run(shutdown.token()));
    Ok(Arc::new(NotifyingEventStore::new(store, signal)))
}
