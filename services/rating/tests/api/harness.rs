//! The rating service on port 0 over a fresh backend, and a stand-in for the tables service:
//! - SQLite (the embedded default): one file and one `Storage` shared by the "tables" appends
//!   and the rating service, whose in-process consumer tails the shared log;
//! - PostgreSQL + NATS: a unique database; the "tables" events are appended to the `tables`
//!   schema and published by that storage's relay to `<prefix>.tables`, which the rating
//!   service consumes through its durable JetStream consumer.
//!
//! Tests wait on the rating storage's append signal (fired by the consumer's commits and, on
//! PostgreSQL, by the store's notifications), never on sleeps.

use std::future::Future;
use std::time::Duration;

use fairdeal_authn::{AccessToken, KeySet, SigningKey};
use fairdeal_eventstore::{NewEvent, RecordedEvent, StreamId};
use fairdeal_harness::{authenticator, common, lazy};
use fairdeal_kit::{CommonConfig, Shutdown};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::rating::v1::rating_service_client::RatingServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating::DEFAULT_K;
use fairdeal_rating_service::projection::MIGRATIONS;
use fairdeal_rating_service::startup::{Parts, SCHEMA};
use sqlx::Row;
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use uuid::Uuid;

pub(crate) use fairdeal_harness::with;

pub(crate) use fairdeal_harness::{Db, TestStore};

/// The longest a test waits for the consumer before failing (a guard, not a pace).
const PATIENCE: Duration = Duration::from_secs(60);

pub(crate) struct TestApp {
    pub(crate) client: RatingServiceClient<Channel>,
    /// The rating service's storage.
    pub(crate) storage: Storage,
    /// Where "tables" events are appended (the same storage on SQLite).
    pub(crate) tables: Storage,
    pub(crate) common: CommonConfig,
    signing: SigningKey,
    server: Option<(Shutdown, JoinHandle<()>)>,
    tables_shutdown: Option<Shutdown>,
    database: Option<fairdeal_testkit::TestDatabase>,
    prefix: Option<String>,
    _dir: tempfile::TempDir,
}

impl TestApp {
    /// The rating service and a "tables" log on `db`.
    pub(crate) async fn spawn(db: Db) -> TestApp {
        let mut app = Self::storage_only(db).await;
        app.start().await;
        app
    }

    /// The storages of [`TestApp::spawn`] without the rating service (a test runs it, e.g.
    /// as a separate process).
    pub(crate) async fn storage_only(db: Db) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let store = TestStore::new(db, dir.path(), "rating").await;
        let url = store.url("fairdeal.db");
        let TestStore {
            database, prefix, ..
        } = store;
        let common = common("rating", &url, prefix.as_deref());
        let storage = Storage::open(&common, SCHEMA, &[&MIGRATIONS])
            .await
            .unwrap();
        let (tables, tables_shutdown) = match db {
            Db::Sqlite => (storage.clone(), None),
            Db::Postgres => {
                let tables_common = self::common("tables", &url, prefix.as_deref());
                let tables = Storage::open(&tables_common, "tables", &[]).await.unwrap();
                let shutdown = Shutdown::new();
                Bus::start(&tables_common, &tables, "tables", &shutdown)
                    .await
                    .unwrap();
                (tables, Some(shutdown))
            }
        };
        TestApp {
            client: RatingServiceClient::new(lazy(1)),
            storage,
            tables,
            common,
            signing: SigningKey::generate().unwrap(),
            server: None,
            tables_shutdown,
            database,
            prefix,
            _dir: dir,
        }
    }

    /// The public keys in the configuration form (`kid:64hex`).
    pub(crate) fn keys_setting(&self) -> String {
        let key = self.signing.public_key();
        let hex: String = key.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
        format!("{}:{hex}", key.kid().as_str())
    }

    /// The public keys tokens are checked with.
    pub(crate) fn keys(&self) -> KeySet {
        KeySet::new([self.signing.public_key()])
    }

    /// Starts the rating service (again, after [`TestApp::stop`]).
    pub(crate) async fn start(&mut self) {
        let authn = authenticator(self.keys());
        let app = fairdeal_rating_service::Application::assemble(
            &self.common,
            Parts {
                storage: self.storage.clone(),
                authn,
                k: DEFAULT_K,
            },
        )
        .await
        .unwrap();
        let port = app.port();
        let shutdown = app.shutdown();
        let server = tokio::spawn(async move { app.run_until_stopped().await.unwrap() });
        fairdeal_harness::serving(port).await;
        self.client = RatingServiceClient::new(lazy(port));
        self.server = Some((shutdown, server));
    }

    /// Stops the rating service and waits until it has drained.
    pub(crate) async fn stop(&mut self) {
        if let Some((shutdown, server)) = self.server.take() {
            shutdown.trigger();
            server.await.unwrap();
        }
    }

    /// A player's token.
    pub(crate) fn player_token(&self, user: Uuid) -> AccessToken {
        fairdeal_harness::player_token(&self.signing, user)
    }

    /// A service's token.
    pub(crate) fn service_token(&self, name: &str) -> AccessToken {
        fairdeal_harness::service_token(&self.signing, name)
    }

    /// Appends `event` to `stream` of the "tables" log.
    pub(crate) async fn append(&self, stream: &str, event: NewEvent) -> RecordedEvent {
        let stream = StreamId::parse(stream).unwrap();
        let mut appended = self
            .tables
            .events()
            .append(
                &stream,
                fairdeal_eventstore::ExpectedVersion::Any,
                vec![event],
            )
            .await
            .unwrap();
        appended.events.pop().unwrap()
    }

    /// Appends `game` as the tables service does (stream `table-<id>`, correlation id the
    /// table id).
    pub(crate) async fn finish(&self, game: &tpb::GameFinished) -> RecordedEvent {
        self.append(
            &format!("table-{}", game.table_id),
            NewEvent::from_message(game).with_correlation_id(game.table_id.clone()),
        )
        .await
    }

    /// Waits until `check` holds, re-checking whenever the rating storage signals.
    pub(crate) async fn wait_until<F, Fut>(&self, what: &str, mut check: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let mut waiter = self.storage.signal().subscribe();
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if check().await {
                return;
            }
            if tokio::time::timeout_at(deadline, waiter.changed())
                .await
                .is_err()
            {
                panic!("gave up waiting for {what}");
            }
        }
    }

    /// One SQL count on the rating database.
    pub(crate) async fn count(&self, sql: &str, bind: &str) -> i64 {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        fairdeal_db::on_db!(self.storage.db(), pool => {
            sqlx::query(sql).bind(bind).fetch_one(pool).await.unwrap().try_get::<i64, _>(0).unwrap()
        })
    }

    /// History rows of `table`.
    pub(crate) async fn rated_rows(&self, table: &str) -> i64 {
        self.count(
            "SELECT COUNT(*) FROM rating_history WHERE table_id = $1",
            table,
        )
        .await
    }

    /// Dead letters of the rating consumer.
    pub(crate) async fn parked(&self) -> i64 {
        self.count(
            "SELECT COUNT(*) FROM bus_dead_letters WHERE consumer = $1",
            fairdeal_rating_service::projection::CONSUMER,
        )
        .await
    }

    /// Why the rating consumer parked what it parked.
    pub(crate) async fn parked_reasons(&self) -> Vec<String> {
        fairdeal_db::on_db!(self.storage.db(), pool => {
            sqlx::query_scalar::<_, String>("SELECT reason FROM bus_dead_letters WHERE consumer = $1")
                .bind(fairdeal_rating_service::projection::CONSUMER)
                .fetch_all(pool)
                .await
                .unwrap()
        })
    }

    /// Waits until `table` is rated (four history rows).
    pub(crate) async fn until_rated(&self, table: &str) {
        self.until_rated_seats(table, 4).await;
    }

    /// Waits until `table` is rated (`seats` history rows).
    pub(crate) async fn until_rated_seats(&self, table: &str, seats: i64) {
        self.wait_until(&format!("table {table} rated"), || async {
            self.rated_rows(table).await == seats
        })
        .await;
    }

    /// Stops everything, deletes the JetStream streams and drops the database.
    pub(crate) async fn close(mut self) {
        self.stop().await;
        if let Some(shutdown) = &self.tables_shutdown {
            shutdown.trigger();
            shutdown.wait_for_tasks().await;
        }
        if let Some(prefix) = &self.prefix {
            fairdeal_harness::delete_streams(prefix, ["tables", "rating"]).await;
        }
        if let Some(database) = &self.database {
            self.storage.db().close().await;
            self.tables.db().close().await;
            database.drop().await.unwrap();
        }
    }
}

/// A finished game of `players` (by seat) won by `winner`, all four seated from the start.
pub(crate) fn game(players: [Uuid; 4], winner: u32, deck: tpb::Deck) -> tpb::GameFinished {
    tpb::GameFinished {
        table_id: Uuid::now_v7().to_string(),
        players: players
            .iter()
            .enumerate()
            .map(|(seat, p)| tpb::SeatPlayer {
                seat: seat as u32,
                player_id: p.to_string(),
                bot: false,
                abandoned: false,
            })
            .collect(),
        teams: vec![
            tpb::TeamSeats {
                team: 0,
                seats: vec![0, 2],
            },
            tpb::TeamSeats {
                team: 1,
                seats: vec![1, 3],
            },
        ],
        final_scores: if winner == 0 {
            vec![505, 320]
        } else {
            vec![320, 505]
        },
        winner,
        variant: Some(tpb::TableOptions {
            deck: deck as i32,
            ..Default::default()
        }),
        hands_played: 9,
        reason: tpb::FinishReason::Completed as i32,
    }
}

/// A finished French Tarot game of `players` (by seat; 3, 4 or 5 of them) with these final
/// scores (by seat), all seated from the start, as the tables service writes it: one side
/// per seat, the winner the first seat with the highest score.
pub(crate) fn tarot_game(players: &[Uuid], scores: &[i32]) -> tpb::GameFinished {
    let seats = players.len() as u32;
    let top = scores.iter().max().copied().unwrap_or(0);
    tpb::GameFinished {
        table_id: Uuid::now_v7().to_string(),
        players: (0..seats)
            .zip(players)
            .map(|(seat, p)| tpb::SeatPlayer {
                seat,
                player_id: p.to_string(),
                bot: false,
                abandoned: false,
            })
            .collect(),
        teams: (0..seats)
            .map(|seat| tpb::TeamSeats {
                team: seat,
                seats: vec![seat],
            })
            .collect(),
        final_scores: scores.to_vec(),
        winner: scores.iter().position(|s| *s == top).unwrap_or(0) as u32,
        variant: Some(tpb::TableOptions {
            tarot: Some(tpb::TarotOptions { seats, rounds: 1 }),
            ..Default::default()
        }),
        hands_played: seats,
        reason: tpb::FinishReason::Completed as i32,
    }
}

/// Four new players.
pub(crate) fn four() -> [Uuid; 4] {
    [(); 4].map(|()| Uuid::now_v7())
}
