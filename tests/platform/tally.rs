//! `tally`: the smallest real service that uses the whole platform kit, built the way the six
//! services are meant to be built.
//!
//! - gRPC `fairdeal.e2e.v1.Tally/Record(tally_id, amount)` validates the request and appends
//!   a `fairdeal.e2e.v1.TallyRecorded` event to stream `tally-<tally_id>`, carrying the
//!   request's trace context in the envelope;
//! - the `tally-projection` consumer applies each event to a `tally_totals` table in the same
//!   database transaction in which the bus records the event id (exactly-once effects);
//! - [`start`] wires storage, bus and server from a [`CommonConfig`] like a `main` would,
//!   with the platform's recipe (`fairdeal_platform::Storage`, `Bus`): `postgres://` or
//!   `sqlite://` picks the store, `nats_url` adds JetStream (the outbox relay publishes
//!   every event; the projection of the service's own events tails its store either way),
//!   and every background task hangs on the server's shutdown handle.
//!
//! The gRPC plumbing is written by hand with tonic's building blocks (what generated code
//! does) so the test service needs no `.proto` file in the public `proto/` tree.

use std::collections::HashSet;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use fairdeal_bus::{BusDb, Handler, HandlerError};
use fairdeal_db::Db;
use fairdeal_eventstore::{EventStore, ExpectedVersion, NewEvent, RecordedEvent, StreamId};
use fairdeal_kit::config::CommonConfig;
use fairdeal_kit::status::store_error;
use fairdeal_kit::{Application, ServiceError, Shutdown, propagation};
use fairdeal_platform::{Bus, Storage};
use sqlx::Transaction;
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
/// The service's name on the bus: its events go to `<prefix>.tally`.
pub(crate) const SERVICE_NAME: &str = "tally";

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

fairdeal_db::for_each_backend! { DB =>
    impl Handler<DB> for TallyProjection {
        async fn handle(
            &self,
            event: &RecordedEvent,
            tx: &mut Transaction<'_, DB>,
        ) -> Result<(), HandlerError> {
            let recorded = self.prepare(event)?;
            sqlx::query(
                "INSERT INTO tally_totals (tally_id, total, events) VALUES ($1, $2, 1) \
                 ON CONFLICT (tally_id) DO UPDATE \
                 SET total = tally_totals.total + excluded.total, \
                     events = tally_totals.events + 1",
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
            event.is::<TallyRecorded>()
        }
    }
}

/// The tally's schema, both backends.
static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "tally",
    postgres: sqlx::migrate!("platform/migrations/postgres"),
    sqlite: sqlx::migrate!("platform/migrations/sqlite"),
};

/// The database side of a running tally, for the test's checks.
#[derive(Debug, Clone)]
pub(crate) struct TallyDb {
    /// The tally's database.
    db: Db,
}

impl TallyDb {
    /// `(total, events)` of every tally, by id.
    pub(crate) async fn totals(&self) -> anyhow::Result<Vec<(String, i64, i64)>> {
        Ok(fairdeal_db::on_db!(&self.db, pool => {
            sqlx::query_as("SELECT tally_id, total, events FROM tally_totals ORDER BY tally_id")
                .fetch_all(pool)
                .await?
        }))
    }

    /// Event ids the consumer settled.
    pub(crate) async fn processed(&self) -> anyhow::Result<Vec<Uuid>> {
        Ok(match &self.db {
            Db::Sqlite { pool } => {
                BusDb::sqlite(pool.clone())
                    .processed_event_ids(CONSUMER)
                    .await?
            }
            Db::Postgres { pool, schema } => {
                BusDb::postgres(pool.clone(), schema.as_str())?
                    .processed_event_ids(CONSUMER)
                    .await?
            }
        })
    }

    /// Dead letters of the consumer (there must be none).
    pub(crate) async fn dead_letters(&self) -> anyhow::Result<usize> {
        Ok(match &self.db {
            Db::Sqlite { pool } => BusDb::sqlite(pool.clone())
                .dead_letters(CONSUMER)
                .await?
                .len(),
            Db::Postgres { pool, schema } => BusDb::postgres(pool.clone(), schema.as_str())?
                .dead_letters(CONSUMER)
                .await?
                .len(),
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

/// Wires the tally service from `common` as its `main` would (the recipe of
/// docs/services.md), and binds the server.
pub(crate) async fn start(
    common: &CommonConfig,
    projection: Arc<TallyProjection>,
) -> anyhow::Result<Tally> {
    let shutdown = Shutdown::new();
    let storage = Storage::open(common, SCHEMA, &[&MIGRATIONS]).await?;
    let bus = Bus::start(common, &storage, SERVICE_NAME, &shutdown).await?;
    bus.spawn_consumer(SERVICE_NAME, CONSUMER, projection, &shutdown)
        .await?;
    let app = Application::builder(common)
        .with_shutdown(shutdown)
        .handle_signals(false)
        .add_service(TallyService {
            store: storage.events(),
        })
        .build()
        .await?;
    Ok(Tally {
        app,
        db: TallyDb {
            db: storage.db().clone(),
        },
    })
}
