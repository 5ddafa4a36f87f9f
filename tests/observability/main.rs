//! Issue 19 "Observability": one trace per table move across the gRPC and NATS hops, and the
//! platform's metrics of that move.
//!
//! The commitment, dealing and tables services run as in production on PostgreSQL + NATS
//! JetStream (port 0, one schema each), plus an observer: a consumer of the tables service's
//! events on the bus, as the rating, chat and ledger services consume them. A player makes
//! one move through the public gRPC API, under a client span; the test then reads the
//! finished spans of that trace (the kit's OpenTelemetry layer exporting to memory,
//! [`fairdeal_e2e::trace_recorder`]) and the metrics (a meter provider exporting to memory,
//! installed as `telemetry::init` installs the OTLP one), and checks:
//!
//! - client span -> the tables server span (`TablesService/Act`) -> ... -> the event store's
//!   `append` and the relay's `bus.relay.publish` of the move's event -> the observer's
//!   `bus.handle` of that event, each hop the child of the one before, and every span of the
//!   trace parented inside it (one connected tree, one trace id);
//! - the metrics of that move: the Act call by method and status, the appended events, the
//!   relay's published count and lag, the consumer's lag.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use fairdeal_authn::{AccessToken, KeySet, SigningKey, StaticToken};
use fairdeal_bus::{Handler, HandlerError};
use fairdeal_e2e::trace_recorder;
use fairdeal_eventstore::RecordedEvent;
use fairdeal_harness::{authenticator, lazy, serving, with};
use fairdeal_kit::propagation::TraceContextInterceptor;
use fairdeal_kit::{CommonConfig, Shutdown};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use opentelemetry::trace::{SpanId, TraceContextExt as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SpanData;
use sqlx::Transaction;
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use uuid::Uuid;

/// Safety net for the waits below (each ends on its condition long before).
const PATIENCE: Duration = Duration::from_secs(60);

/// The consumer in the test: counts the events it handled, by id.
#[derive(Debug)]
struct Observer {
    handled: watch::Sender<Vec<Uuid>>,
}

impl Observer {
    fn record(&self, event: &RecordedEvent) {
        self.handled.send_modify(|ids| ids.push(event.event_id));
    }
}

impl Handler<sqlx::Postgres> for Observer {
    async fn handle(
        &self,
        event: &RecordedEvent,
        _tx: &mut Transaction<'_, sqlx::Postgres>,
    ) -> Result<(), HandlerError> {
        self.record(event);
        Ok(())
    }
}

impl Handler<sqlx::Sqlite> for Observer {
    async fn handle(
        &self,
        event: &RecordedEvent,
        _tx: &mut Transaction<'_, sqlx::Sqlite>,
    ) -> Result<(), HandlerError> {
        self.record(event);
        Ok(())
    }
}

/// The process's metrics, in memory (installed before any service is built).
struct Metrics {
    exporter: InMemoryMetricExporter,
    provider: SdkMeterProvider,
}

impl Metrics {
    fn get() -> &'static Metrics {
        static METRICS: OnceLock<Metrics> = OnceLock::new();
        METRICS.get_or_init(|| {
            let exporter = InMemoryMetricExporter::default();
            let provider = SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(exporter.clone()).build())
                .build();
            opentelemetry::global::set_meter_provider(provider.clone());
            Metrics { exporter, provider }
        })
    }

    /// Waits until metric `name` has a data point (with attribute `key` = `value`, if given).
    async fn recorded(&self, name: &str, attribute: Option<(&str, &str)>) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !self.points(name).iter().any(|(a, _)| {
            attribute.is_none_or(|(key, value)| a.get(key).map(String::as_str) == Some(value))
        }) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name} never recorded a point with {attribute:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Every data point of metric `name` as (attributes, value); histograms give their count.
    fn points(&self, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        self.provider.force_flush().unwrap();
        let exported = self.exporter.get_finished_metrics().unwrap();
        let Some(metric) = exported
            .iter()
            .rev()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
            .find(|metric| metric.name() == name)
        else {
            return Vec::new();
        };
        let attributes = |kvs: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
            kvs.map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        #[allow(clippy::cast_precision_loss)]
        match metric.data() {
            AggregatedMetrics::U64(MetricData::Sum(sum)) => sum
                .data_points()
                .map(|p| (attributes(&mut p.attributes()), p.value() as f64))
                .collect(),
            AggregatedMetrics::U64(MetricData::Gauge(gauge)) => gauge
                .data_points()
                .map(|p| (attributes(&mut p.attributes()), p.value() as f64))
                .collect(),
            AggregatedMetrics::F64(MetricData::Histogram(histogram)) => histogram
                .data_points()
                .map(|p| (attributes(&mut p.attributes()), p.count() as f64))
                .collect(),
            other => panic!("{name}: unexpected data {other:?}"),
        }
    }
}

/// [`fairdeal_harness::common`] on NATS under `prefix`, validated.
fn common(name: &str, database_url: &str, prefix: &str) -> CommonConfig {
    let c = fairdeal_harness::common(name, database_url, Some(prefix));
    c.validate().unwrap();
    c
}

/// The services of the test, running.
struct Platform {
    tables: TablesServiceClient<InterceptedService<Channel, TraceContextInterceptor>>,
    tables_storage: Storage,
    signing: SigningKey,
    handled: watch::Receiver<Vec<Uuid>>,
    shutdowns: Vec<Shutdown>,
    storages: Vec<Storage>,
}

impl Platform {
    async fn start(database_url: &str, prefix: &str) -> Self {
        let signing = SigningKey::generate().unwrap();
        let keys = || KeySet::new([signing.public_key()]);
        let authn = || authenticator(keys());
        let service_token = |name: &str| {
            Arc::new(StaticToken::new(fairdeal_harness::service_token(
                &signing, name,
            )))
        };
        let mut shutdowns = Vec::new();
        let mut storages = Vec::new();

        let config = common("commitment", database_url, prefix);
        let storage = Storage::open(
            &config,
            fairdeal_commitment::startup::SCHEMA,
            &[&fairdeal_commitment::seeds::MIGRATIONS],
        )
        .await
        .unwrap();
        let commitment = fairdeal_commitment::Application::assemble(
            &config,
            fairdeal_commitment::startup::Parts {
                storage: storage.clone(),
                keys: fairdeal_commitment::vault::KeyRing::generate("test").unwrap(),
                authn: authn(),
                drand: None,
            },
        )
        .await
        .unwrap();
        let commitment_port = commitment.port();
        shutdowns.push(commitment.shutdown());
        storages.push(storage);
        tokio::spawn(commitment.run_until_stopped());
        serving(commitment_port).await;

        let config = common("dealing", database_url, prefix);
        let storage = Storage::open(&config, fairdeal_dealing::startup::SCHEMA, &[])
            .await
            .unwrap();
        let dealing = fairdeal_dealing::Application::assemble(
            &config,
            fairdeal_dealing::startup::Parts {
                storage: storage.clone(),
                commitment: lazy(commitment_port),
                tokens: service_token("dealing"),
                authn: authn(),
            },
        )
        .await
        .unwrap();
        let dealing_port = dealing.port();
        shutdowns.push(dealing.shutdown());
        storages.push(storage);
        tokio::spawn(dealing.run_until_stopped());
        serving(dealing_port).await;

        let config = common("tables", database_url, prefix);
        let tables_storage = Storage::open(
            &config,
            fairdeal_tables::startup::SCHEMA,
            <fairdeal_tables::TablesService as fairdeal_kit::Service>::MIGRATIONS,
        )
        .await
        .unwrap();
        let tables = fairdeal_tables::Application::assemble(
            &config,
            fairdeal_tables::startup::Parts {
                storage: tables_storage.clone(),
                commitment: lazy(commitment_port),
                dealing: lazy(dealing_port),
                tokens: service_token("tables"),
                authn: authn(),
                clock: Arc::new(fairdeal_tables::clock::ManualClock::new(
                    fairdeal_testkit::now() * 1000,
                )),
                advertise_url: String::new(),
            },
        )
        .await
        .unwrap();
        let tables_port = tables.port();
        shutdowns.push(tables.shutdown());
        storages.push(tables_storage.clone());
        tokio::spawn(tables.run_until_stopped());
        serving(tables_port).await;

        // The observer: another service's consumer of the tables' events, over NATS.
        let config = common("observer", database_url, prefix);
        let storage = Storage::open(&config, "observer", &[]).await.unwrap();
        let shutdown = Shutdown::new();
        let bus = Bus::start(&config, &storage, "observer", &shutdown)
            .await
            .unwrap();
        let (handled_tx, handled) = watch::channel(Vec::new());
        bus.spawn_consumer(
            "tables",
            "observer",
            Arc::new(Observer {
                handled: handled_tx,
            }),
            &shutdown,
        )
        .await
        .unwrap();
        shutdowns.push(shutdown);
        storages.push(storage);

        Platform {
            tables: TablesServiceClient::with_interceptor(
                lazy(tables_port),
                TraceContextInterceptor,
            ),
            tables_storage,
            signing,
            handled,
            shutdowns,
            storages,
        }
    }

    fn player_token(&self, user: Uuid) -> AccessToken {
        fairdeal_harness::player_token(&self.signing, user)
    }

    async fn stop(self, prefix: &str) {
        // The servers drain and stop their tasks themselves; the observer's tasks are told
        // to stop here.
        for shutdown in &self.shutdowns {
            shutdown.trigger();
            shutdown.stop_background();
        }
        for shutdown in &self.shutdowns {
            shutdown.tracker().close();
            tokio::time::timeout(PATIENCE, shutdown.tracker().wait())
                .await
                .expect("every task stops");
        }
        fairdeal_harness::delete_streams(prefix, ["commitment", "dealing", "tables", "observer"])
            .await;
        for storage in &self.storages {
            storage.db().close().await;
        }
    }
}

/// A span's attribute as text.
fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// The move's spans, once the relay's and the observer's spans of `event_id` have ended
/// (they end after the handler's signal: the relay's at the ack, the consumer's after its
/// batch).
async fn spans_of_move(trace_id: opentelemetry::trace::TraceId, event_id: Uuid) -> Vec<SpanData> {
    let id = event_id.to_string();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let spans = trace_recorder().spans_of(trace_id).unwrap();
        let has = |name: &str| {
            spans
                .iter()
                .any(|s| s.name == name && attribute(s, "event_id").as_deref() == Some(&id))
        };
        if has("bus.relay.publish") && has("bus.handle") {
            return spans;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relay's and the consumer's spans of {id} never ended: {:#?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_per_table_move_across_grpc_and_nats() {
    let _ = trace_recorder();
    let metrics = Metrics::get();
    let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
    let prefix = fairdeal_testkit::subject_prefix("obs");
    let platform = Platform::start(database.url(), &prefix).await;

    // One player and three bots: sitting starts the match, the bots play until the player
    // must act.
    let player = Uuid::now_v7();
    let token = platform.player_token(player);
    let mut tables = platform.tables.clone();
    let table_id = tables
        .create_table(with(
            &token,
            pb::CreateTableRequest {
                options: None,
                bot_seats: vec![1, 2, 3],
                move_seconds: 0,
                timelock_seconds: 0,
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .table_id;
    tables
        .sit(with(
            &token,
            pb::SitRequest {
                table_id: table_id.clone(),
                seat: 0,
            },
        ))
        .await
        .unwrap();
    let view = tables
        .get_table(with(
            &token,
            pb::GetTableRequest {
                table_id: table_id.clone(),
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap();
    let legal = view.game.as_ref().unwrap().legal.first().cloned();
    let legal = legal.expect("after the bots, the player's turn");

    // The move, under a client span.
    let client_span = tracing::info_span!("e2e.move");
    let trace_id = client_span.context().span().span_context().trace_id();
    let version = tables
        .act(with(
            &token,
            pb::ActRequest {
                table_id: table_id.clone(),
                expected_version: view.version,
                command_id: Uuid::now_v7().to_string(),
                action: fairdeal_client::action_of(&legal),
            },
        ))
        .instrument(client_span.clone())
        .await
        .unwrap()
        .into_inner()
        .version;
    drop(client_span);
    assert!(version > view.version);

    // The move's event, as stored, and its handling by the observer.
    let stream = fairdeal_eventstore::StreamId::of("table", &table_id).unwrap();
    let moved = platform
        .tables_storage
        .events()
        .read_stream(&stream, view.version + 1, 1)
        .await
        .unwrap()
        .pop()
        .expect("the move appended an event");
    let mut handled = platform.handled.clone();
    tokio::time::timeout(
        PATIENCE,
        handled.wait_for(|ids| ids.contains(&moved.event_id)),
    )
    .await
    .expect("the observer handles the move's event")
    .unwrap();

    // One trace, one connected tree.
    let spans = spans_of_move(trace_id, moved.event_id).await;
    let by_id: HashMap<SpanId, &SpanData> = spans
        .iter()
        .map(|span| (span.span_context.span_id(), span))
        .collect();
    let named =
        |name: &str| -> Vec<&SpanData> { spans.iter().filter(|s| s.name == name).collect() };
    let client = named("e2e.move");
    assert_eq!(client.len(), 1, "{spans:#?}");
    let client = client[0];
    for span in &spans {
        assert_eq!(span.span_context.trace_id(), trace_id);
        if span.span_context.span_id() != client.span_context.span_id() {
            assert!(
                by_id.contains_key(&span.parent_span_id),
                "{} has a parent outside the trace",
                span.name
            );
        }
    }
    let server = named("fairdeal.tables.v1.TablesService/Act");
    assert_eq!(server.len(), 1, "one server span for the move");
    let server = server[0];
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    // Whether `span` lies under `ancestor`.
    let descends = |span: &SpanData, ancestor: &SpanData| {
        let mut parent = span.parent_span_id;
        while let Some(up) = by_id.get(&parent) {
            if up.span_context.span_id() == ancestor.span_context.span_id() {
                return true;
            }
            parent = up.parent_span_id;
        }
        false
    };
    let of_event = |name: &str| -> &SpanData {
        let id = moved.event_id.to_string();
        let found: Vec<&SpanData> = spans
            .iter()
            .filter(|s| s.name == name && attribute(s, "event_id").as_deref() == Some(&id))
            .collect();
        assert_eq!(found.len(), 1, "one {name} span of the move's event");
        found[0]
    };
    let publish = of_event("bus.relay.publish");
    let handle = of_event("bus.handle");
    assert!(
        descends(publish, server),
        "the relay continues the move's trace"
    );
    assert_eq!(
        handle.parent_span_id,
        publish.span_context.span_id(),
        "the consumer continues from the relay's hop"
    );
    assert_eq!(attribute(handle, "consumer").as_deref(), Some("observer"));
    let appends: Vec<&SpanData> = named("append")
        .into_iter()
        .filter(|s| descends(s, server))
        .collect();
    assert!(!appends.is_empty(), "the store's append is in the trace");

    // The move's metrics.
    let act = metrics
        .points(fairdeal_kit::metrics::RPC_DURATION)
        .into_iter()
        .filter(|(a, _)| {
            a.get("rpc.service").map(String::as_str) == Some("fairdeal.tables.v1.TablesService")
                && a.get("rpc.method").map(String::as_str) == Some("Act")
                && a.get("rpc.grpc.status_code").map(String::as_str) == Some("0")
        })
        .map(|(_, count)| count)
        .sum::<f64>();
    assert!(act >= 1.0, "the Act call is counted");
    let appended: f64 = metrics
        .points("fairdeal.events.appended")
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert!(appended >= 1.0, "appends are counted");
    let published: f64 = metrics
        .points("fairdeal.bus.relay.published")
        .iter()
        .filter(|(a, _)| a.get("relay").map(String::as_str) == Some("tables"))
        .map(|(_, n)| n)
        .sum();
    assert!(published >= 1.0, "the tables relay's publishes are counted");
    // Gauges are recorded after the hop's span ends (the relay's after its checkpoint, the
    // consumer's after its batch commits, the timer's on its next sample).
    metrics
        .recorded("fairdeal.bus.relay.lag", Some(("relay", "tables")))
        .await;
    metrics
        .recorded("fairdeal.bus.consumer.lag", Some(("consumer", "observer")))
        .await;
    metrics.recorded("fairdeal.tables.active", None).await;

    platform.stop(&prefix).await;
    database.drop().await.unwrap();
}
