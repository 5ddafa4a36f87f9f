//! Load: many tables of four bot clients playing Jeu du 10 through the gRPC API (commitment,
//! dealing and tables in this process, as the end-to-end tests run them), then the event
//! store's raw append rate on the same storage, in the same run.
//!
//! `cargo bench -p fairdeal-tables --bench load` (env: `LOAD_BACKEND=embedded|postgres|both`
//! (default both), `LOAD_TABLES` concurrent tables (default 64), `LOAD_SECONDS` per backend
//! (default 20), `LOAD_CONNECTIONS=shared|player` (default shared: every client on one
//! HTTP/2 connection, as behind one gateway; `player`: a connection per player),
//! `LOAD_REPLICAS` tables replicas over the one PostgreSQL database (default 1): with 2,
//! each seat sends its moves to one replica and watches through the other (`LOAD_WATCH=same`:
//! through the same one), so half the moves and half the watches reach a replica that does
//! not own the table and are forwarded to the owner; `LOAD_ROUTE=owner`: every seat on the
//! replica owning its table, nothing forwarded; `LOAD_DB_WRITERS=n`: the replicas'
//! `--db-writers`, default the service's own; `LOAD_PEER_DELAY_MS=d`: what passes between
//! replicas, forwarded calls and relayed watches, is held d ms each way by a
//! `cargo xtask delay-proxy` (`LOAD_XTASK`, default `../../target/release/xtask`) in front
//! of each replica, the address it announces to the others); `LOAD_STATEMENTS=<the
//! PostgreSQL server's log file>`: the window's statements per 1,000 moves, by kind, from
//! the server's statement log ([`statements`]; `cargo xtask services` prints the servers'
//! directory, the log is `postgres/server.log` there). `LOAD_COMPARE=1,2,2:owner,3:owner`
//! runs those shapes (replicas, and `:owner`, `:moves`, `:watches` or `:spread` as
//! `LOAD_ROUTE`) in turn, `LOAD_ROUNDS` times (default 3), on PostgreSQL + NATS, and ends
//! with each shape's means and their ratios to the first shape's, measured in the same run.
//! `LOAD_THINK_MS=t`: each seat waits t ms before sending the move its view brings (a
//! player's thinking), so the tables offer a fixed load below what the replicas can carry
//! and every shape runs at the same moves/s: CPU per move at an operating point, not at
//! saturation (default 0: as fast as the replicas answer).
//!
//! Each seat's client watches the table (`Watch` with turn views): when a message brings its
//! view (its seat is to act), it chooses with the engine's bot and sends `Act`.
//! `LOAD_CLIENT=get_table` plays as the previous client did: a driver per table reads the
//! acting seat's view (`GetTable`) before each move. Latency is from the `Act` sent to the
//! command's first event arriving on all four seats' streams. A table that finishes is
//! replaced by a new one. Moves/s counts accepted `Act`s. On PostgreSQL + NATS it also
//! reports how far the relay to JetStream stood behind the store at the window's end, and
//! when its checkpoint reached that point. Every run reports what the window cost per 1,000
//! moves ([`spent`]): CPU seconds of this process, PostgreSQL and NATS, WAL bytes and
//! transactions, JetStream messages stored and delivered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[allow(dead_code)]
#[path = "../tests/api/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "../tests/api/moves.rs"]
mod moves;
#[path = "load/spent.rs"]
mod spent;
#[path = "load/statements.rs"]
mod statements;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fairdeal_eventstore::{ExpectedVersion, NewEvent, StreamId};

/// As the service binaries do.
#[global_allocator]
static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use harness::{Db, Player, TestApp};
use prost::{Message, Name};
use tokio::sync::watch;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// How many tables replicas a run has and which calls go to a table's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    /// Tables replicas sharing the database (PostgreSQL only).
    replicas: usize,
    /// What goes to the table's owner: the moves, the watches ([`route_owned`]).
    owned: Option<(bool, bool)>,
}

impl Shape {
    /// `LOAD_REPLICAS` (default 1) and `LOAD_ROUTE`.
    fn from_env() -> Self {
        Shape {
            replicas: env("LOAD_REPLICAS", 1usize).max(1),
            owned: route_owned(),
        }
    }

    /// One of `LOAD_COMPARE`'s shapes: `N` (calls spread), `N:spread`, `N:owner`,
    /// `N:moves` or `N:watches` (as `LOAD_ROUTE`).
    fn parse(text: &str) -> Self {
        let (replicas, route) = text
            .trim()
            .split_once(':')
            .unwrap_or((text.trim(), "spread"));
        let replicas: usize = replicas.parse().ok().filter(|&r| r > 0).unwrap_or_else(|| {
            panic!("LOAD_COMPARE: {text:?}: a count of replicas first (1, 2:owner)")
        });
        let owned = match route {
            "spread" => None,
            other => Some(routed(other).unwrap_or_else(|| {
                panic!("LOAD_COMPARE: {text:?}: spread, owner, moves or watches after ':'")
            })),
        };
        Shape { replicas, owned }
    }

    /// As the reports name it.
    fn label(&self) -> String {
        let route = match self.owned {
            _ if self.replicas == 1 => return "one replica".to_owned(),
            Some((true, true)) => "owner-routed",
            Some((true, false)) => "moves to the owner, watches spread",
            Some((false, true)) => "watches through the owner, moves spread",
            None | Some((false, false)) => "calls spread",
        };
        format!("{} replicas, {route}", self.replicas)
    }
}

/// `LOAD_WATCH=same`: with replicas, each seat watches through the replica it acts on
/// (default: through the next one), to tell the relayed watches' cost from the forwarded
/// moves'.
fn watch_same() -> bool {
    std::env::var("LOAD_WATCH").is_ok_and(|w| w == "same")
}

/// `LOAD_DB_WRITERS=n`: the replicas' `--db-writers` (default: the service's own, 1).
fn db_writers() -> Option<u32> {
    std::env::var("LOAD_DB_WRITERS")
        .ok()
        .and_then(|w| w.parse().ok())
}

/// What goes to the table's owner (`LOAD_ROUTE`). `owner`: with replicas, every seat acts
/// and watches through the replica the `fairdeal-table-owner` header of the first answer
/// names (the table's owner), as a client told where its table lives does (like a Colyseus
/// seat reservation): nothing is forwarded; `moves` or `watches`: only those (the other
/// spread as by default), to tell the forwarded moves' cost from the relayed watches'.
/// `None`: nothing (spread, as above).
fn route_owned() -> Option<(bool, bool)> {
    routed(&std::env::var("LOAD_ROUTE").ok()?)
}

/// What a route's name sends to the owner: the moves, the watches.
fn routed(route: &str) -> Option<(bool, bool)> {
    match route {
        "owner" => Some((true, true)),
        "moves" => Some((true, false)),
        "watches" => Some((false, true)),
        _ => None,
    }
}

/// `LOAD_CONNECTIONS=player`: each player on a connection of its own (as separate devices);
/// default `shared`: every client on one HTTP/2 connection (as behind one gateway).
fn own_connections() -> bool {
    std::env::var("LOAD_CONNECTIONS").is_ok_and(|c| c == "player")
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// `LOAD_THINK_MS`: how long a seat thinks before sending its move (default none).
fn think() -> Option<Duration> {
    let ms: u64 = env("LOAD_THINK_MS", 0);
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// [`think`] as the reports name it.
fn thinking() -> String {
    think().map_or(String::new(), |t| {
        format!(", each move after {} ms of thought", t.as_millis())
    })
}

/// `LOAD_PEER_DELAY_MS`: the latency added each way between replicas.
fn peer_delay() -> Option<f64> {
    std::env::var("LOAD_PEER_DELAY_MS").ok()?.parse().ok()
}

/// The delaying proxies started for the replicas, killed when the bench ends.
static PROXIES: Mutex<Vec<std::process::Child>> = Mutex::new(Vec::new());

/// The address a replica serving at `port` announces to the others with
/// `LOAD_PEER_DELAY_MS`: a `cargo xtask delay-proxy` in front of it, started here (a process
/// of its own, so its CPU is not counted as this one's).
fn delayed(port: u16) -> String {
    let delay = peer_delay().unwrap_or(0.0);
    let xtask =
        std::env::var("LOAD_XTASK").unwrap_or_else(|_| "../../target/release/xtask".to_owned());
    let listen = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = listen.local_addr().unwrap().port();
    drop(listen);
    let proxy = std::process::Command::new(&xtask)
        .args([
            "delay-proxy".to_owned(),
            format!("127.0.0.1:{at}"),
            format!("127.0.0.1:{port}"),
            delay.to_string(),
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("LOAD_XTASK {xtask}: {e}"));
    PROXIES.lock().unwrap().push(proxy);
    // Listening before the replica announces it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", at)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the delay proxy at {at} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    format!("http://127.0.0.1:{at}")
}

/// Moves sent and not yet seen by every seat: first event version -> (sent, seats left).
type Pending = Arc<Mutex<HashMap<u64, (Instant, u8)>>>;

/// What the run measured.
#[derive(Default)]
struct Tally {
    /// Accepted moves.
    moves: u64,
    /// Latencies, command sent -> its first event on all four watch streams.
    latencies: Vec<Duration>,
    /// Tables played to the end.
    finished: u64,
}

/// How the bot clients find their move: from the view their Watch stream brings when their
/// seat is to act (`turn_views`, default), or by reading `GetTable` before each move
/// (`LOAD_CLIENT=get_table`, the previous client).
fn turn_views() -> bool {
    std::env::var("LOAD_CLIENT").map_or(true, |c| c != "get_table")
}

/// Marks the move at `version` seen by one more seat; when all four have, its latency.
fn seen(pending: &Pending, tally: &Mutex<Tally>, version: u64) {
    let latency = {
        let mut pending = pending.lock().unwrap();
        match pending.get_mut(&version) {
            Some((sent, left)) => {
                *left -= 1;
                let (sent, left) = (*sent, *left);
                (left == 0).then(|| {
                    pending.remove(&version);
                    sent.elapsed()
                })
            }
            None => None,
        }
    };
    if let Some(latency) = latency {
        tally.lock().unwrap().latencies.push(latency);
    }
}

/// Sends `action`, decided on the view at `version`, as `player`; counts it if accepted (a
/// stale version, ABORTED, is a move the table outran).
async fn act(
    player: &Player,
    id: &str,
    version: u64,
    command: u64,
    action: pb::act_request::Action,
    pending: &Pending,
    tally: &Mutex<Tally>,
) {
    let first = version + 1;
    pending.lock().unwrap().insert(first, (Instant::now(), 4));
    match player
        .act(id, version, &format!("m{command}"), action)
        .await
    {
        Ok(_) => tally.lock().unwrap().moves += 1,
        Err(status) => {
            pending.lock().unwrap().remove(&first);
            assert_eq!(status.code(), tonic::Code::Aborted, "{status:?}");
        }
    }
}

/// One seat's client: marks each pending move seen, and with turn views plays its seat
/// whenever a message brings its view (sending `Act` from a task of its own, so the stream
/// is read on meanwhile). `watcher` is the same player, on the replica it watches through.
/// Ends at the seed reveal (`true`) or on `stop`.
async fn play_seat(
    player: Player,
    watcher: Player,
    id: String,
    pending: Pending,
    tally: Arc<Mutex<Tally>>,
    mut stop: watch::Receiver<bool>,
) -> bool {
    let views = turn_views();
    let mut stream = if views {
        watcher.watch_turns(&id, 0).await
    } else {
        watcher.watch(&id, 0).await
    };
    let mut command = 0u64;
    loop {
        let message = tokio::select! {
            m = stream.message() => match m { Ok(Some(m)) => m, _ => return false },
            _ = stop.changed() => return false,
        };
        seen(&pending, &tally, message.version);
        if matches!(
            message.event.as_ref().and_then(|e| e.event.as_ref()),
            Some(pb::table_event::Event::TableSeedRevealed(_))
        ) {
            return true;
        }
        let Some(view) = message.view else { continue };
        let Some(action) = moves::choose(&view, command) else {
            continue;
        };
        command += 1;
        let (player, id, pending, tally) =
            (player.clone(), id.clone(), pending.clone(), tally.clone());
        tokio::spawn(async move {
            if let Some(think) = think() {
                tokio::time::sleep(think).await;
            }
            act(
                &player,
                &id,
                view.version,
                command,
                action,
                &pending,
                &tally,
            )
            .await;
        });
    }
}

/// Without turn views: the driver reads the view of the seat it guesses is to act
/// (`GetTable`, once more when the guess was wrong) and sends its move, one at a time.
async fn play_by_reading(
    players: &[Player],
    id: &str,
    pending: &Pending,
    tally: &Mutex<Tally>,
    stop: &watch::Receiver<bool>,
) {
    let mut guess = 1usize;
    let mut command = 0u64;
    while !*stop.borrow() {
        let mut view = players[guess].view(id).await;
        if view.status == pb::TableStatus::Finished as i32 {
            return;
        }
        let Some(turn) = view.game.as_ref().and_then(|g| g.turn) else {
            continue;
        };
        if turn as usize != guess {
            guess = turn as usize;
            view = players[guess].view(id).await;
        }
        let Some(action) = moves::choose(&view, command) else {
            continue;
        };
        command += 1;
        act(
            &players[guess],
            id,
            view.version,
            command,
            action,
            pending,
            tally,
        )
        .await;
        guess = (guess + 1) % 4;
    }
}

/// Sits `player` at `seat`, again after an UNAVAILABLE (a replica that has not yet read
/// the table's new owner refuses the call, writing nothing, and says to retry), as a client
/// does ([`fairdeal_client::while_unavailable`]); each refusal is counted.
async fn sit(player: &Player, id: &str, seat: u32) {
    let sat = fairdeal_client::while_unavailable(|| async {
        let answer = player.sit(id, seat).await;
        if answer
            .as_ref()
            .is_err_and(|s| s.code() == tonic::Code::Unavailable)
        {
            UNAVAILABLE.fetch_add(1, Ordering::Relaxed);
        }
        answer
    })
    .await;
    if let Err(status) = sat {
        panic!("sit: {status:?}");
    }
}

/// Calls refused UNAVAILABLE and sent again.
static UNAVAILABLE: AtomicUsize = AtomicUsize::new(0);

/// Tables created so far (which seat's player creates the next).
static CREATED: AtomicUsize = AtomicUsize::new(0);

/// Plays tables one after another until `stop`.
async fn drive(
    app: Arc<TestApp>,
    shape: Shape,
    tally: Arc<Mutex<Tally>>,
    stop: watch::Receiver<bool>,
) {
    while !*stop.borrow() {
        // Tables are created through each replica in turn, as a Service spreads the calls:
        // a table is born on (and owned by) the replica that creates it.
        let creator_seat = CREATED.fetch_add(1, Ordering::Relaxed) % 4;
        let replica = |seat: usize| &app.replicas[seat % app.replicas.len()];
        let players: Vec<Player> = (0..4)
            .map(|seat| {
                if own_connections() {
                    app.player_with_own_connection()
                } else {
                    app.player().on(replica(seat))
                }
            })
            .collect();
        // With replicas, each seat watches through the next one after the one it acts on.
        let watchers: Vec<Player> = players
            .iter()
            .enumerate()
            .map(|(seat, p)| {
                if own_connections() {
                    p.clone()
                } else {
                    let shift = usize::from(!watch_same());
                    p.on(replica(seat + shift))
                }
            })
            .collect();
        let creator = &players[creator_seat];
        let id = creator
            .create(pb::CreateTableRequest::default())
            .await
            .table_id;
        // Told where the table lives (the `fairdeal-table-owner` header), every seat calls
        // and watches there.
        let (players, watchers) = if shape.owned.is_some() && app.replicas.len() > 1 {
            let owner = creator.owner_of(&id).await.expect("the owner names itself");
            let at = app
                .replica_urls
                .iter()
                .position(|url| owner == *url)
                .expect("a replica's address");
            let home = |p: &Player| p.on(&app.replicas[at]);
            let (moves, watches) = shape.owned.unwrap_or((true, true));
            (
                if moves {
                    players.iter().map(home).collect()
                } else {
                    players
                },
                if watches {
                    watchers.iter().map(home).collect()
                } else {
                    watchers
                },
            )
        } else {
            (players, watchers)
        };
        let pending: Pending = Arc::default();
        let seats: Vec<_> = players
            .iter()
            .zip(&watchers)
            .map(|(p, w)| {
                tokio::spawn(play_seat(
                    p.clone(),
                    w.clone(),
                    id.clone(),
                    pending.clone(),
                    tally.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        for (seat, p) in players.iter().enumerate() {
            sit(p, &id, seat as u32).await;
        }
        if !turn_views() {
            play_by_reading(&players, &id, &pending, &tally, &stop).await;
        }
        let mut revealed = false;
        for seat in seats {
            revealed |= seat.await.unwrap_or(false);
        }
        if revealed {
            tally.lock().unwrap().finished += 1;
        }
    }
}

/// How many events up to `head` the relay's checkpoint (the last event acknowledged by
/// JetStream) stands behind; `None` on the embedded default, which relays nothing.
async fn relay_behind(app: &TestApp, head: u64) -> Option<u64> {
    let fairdeal_db::Db::Postgres { pool, schema } = app.tables_storage().db() else {
        return None;
    };
    let db = fairdeal_bus::BusDb::postgres(pool.clone(), schema.as_str()).unwrap();
    let mut from = u64::try_from(db.relay_checkpoint("tables").await.unwrap()).unwrap() + 1;
    let store = app.tables_storage().events();
    let mut behind = 0;
    while from <= head {
        let page = store.read_all(from, 1000).await.unwrap();
        let Some(last) = page.last() else { break };
        behind += page.iter().filter(|e| e.position <= head).count() as u64;
        from = last.position + 1;
    }
    Some(behind)
}

/// `writers` tasks appending one table-sized event per call to their own streams for
/// `run`: events/s.
async fn raw_appends(app: &TestApp, writers: usize, run: Duration) -> (f64, f64, f64) {
    let store = app.tables_storage().events();
    let event = pb::CardPlayed {
        table_id: uuid::Uuid::now_v7().to_string(),
        seat: 1,
        card: "TH".into(),
        command: Some(pb::CommandRef {
            command_id: uuid::Uuid::now_v7().to_string(),
            version_after: 40,
            next_turn: Some(pb::Turn {
                seat: 2,
                deadline_ms: 1_764_000_000_000,
            }),
        }),
    };
    let payload = event.encode_to_vec();
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let store = store.clone();
            let payload = payload.clone();
            tokio::spawn(async move {
                let s = StreamId::of("rawbench", uuid::Uuid::now_v7()).unwrap();
                let mut latencies = Vec::new();
                let mut version = 0u64;
                while start.elapsed() < run {
                    let t = Instant::now();
                    let new = NewEvent::new(pb::CardPlayed::full_name(), payload.clone())
                        .with_correlation_id("bench");
                    store
                        .append(&s, ExpectedVersion::Exact(version), vec![new])
                        .await
                        .unwrap();
                    latencies.push(t.elapsed());
                    version += 1;
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let rate = all.len() as f64 / start.elapsed().as_secs_f64();
    all.sort();
    (rate, percentile(&all, 0.5), percentile(&all, 0.99))
}

/// What one run measured, for `LOAD_COMPARE`'s summary.
#[derive(Debug, Clone, Copy)]
struct Figures {
    moves_per_second: f64,
    p99_ms: f64,
    /// CPU seconds of all processes per 1,000 moves.
    cpu: f64,
    /// PostgreSQL transactions per 1,000 moves.
    transactions: f64,
    /// Raw appends, events/s.
    raw: f64,
}

async fn run(db: Db, tables: usize, seconds: u64, shape: Shape) -> Figures {
    let replicas = shape.replicas;
    let unavailable_before = UNAVAILABLE.load(Ordering::Relaxed);
    let app = if peer_delay().is_some() {
        TestApp::spawn_replicas_advertising(db, replicas, db_writers(), delayed).await
    } else {
        TestApp::spawn_replicas_writing(db, replicas, db_writers()).await
    };
    let app = Arc::new(app);
    // The replicas share the partitions once `spawn_replicas_writing` returns: the window
    // measures the shape they run in, not the handover...
    // ...and every replica's routes have been read again since (a keeper's round).
    tokio::time::sleep(fairdeal_tables::startup::LEASE_ROUND * 2).await;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let (stop_tx, stop) = watch::channel(false);
    let pool = match app.tables_storage().db() {
        fairdeal_db::Db::Postgres { pool, .. } => Some(pool.clone()),
        _ => None,
    };
    let nats_url = pool.as_ref().map(|_| fairdeal_testkit::nats_url());
    let before = spent::Spent::now(pool.as_ref(), nats_url.as_deref()).await;
    let statement_log = statements::StatementLog::start(pool.as_ref()).await;
    let start = Instant::now();
    let drivers: Vec<_> = (0..tables)
        .map(|_| tokio::spawn(drive(app.clone(), shape, tally.clone(), stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let (moves, mut latencies, finished) = {
        let t = tally.lock().unwrap();
        (t.moves, t.latencies.clone(), t.finished)
    };
    let elapsed = start.elapsed().as_secs_f64();
    let after = spent::Spent::now(pool.as_ref(), nats_url.as_deref()).await;
    let census = match (statement_log, pool.as_ref()) {
        (Some(log), Some(pool)) => Some(log.finish(pool, moves).await),
        _ => None,
    };
    let head = app.tables_storage().events().head_position().await.unwrap();
    let behind = relay_behind(&app, head).await;
    stop_tx.send(true).unwrap();
    let stopped = Instant::now();
    // A driver that died (a client's call failed) stopped its table: the figures would
    // measure fewer tables than asked for, so the run says so and fails.
    let mut died = 0;
    for d in drivers {
        if let Err(error) = d.await {
            died += 1;
            println!("a table's driver died: {error}");
        }
    }
    assert!(
        died == 0 && moves > 0,
        "{died} of {tables} tables' drivers died, {moves} moves: the figures would not measure {tables} tables"
    );
    latencies.sort();
    let connections = if own_connections() {
        "a connection each"
    } else {
        "one connection"
    };
    let client = if turn_views() {
        "turn views"
    } else {
        "GetTable per move"
    };
    let between = peer_delay().map_or(String::new(), |d| format!(", {d} ms each way between them"));
    let thinking = thinking();
    let replicas = if replicas > 1 {
        format!(", {}", shape.label())
    } else {
        String::new()
    };
    println!(
        "{db:?}: {tables} tables x 4 clients ({connections}, {client}{replicas}{between}{thinking}), {seconds} s: {moves} moves, {:.0} moves/s, \
         latency to all four watchers p50 {:.1} ms p99 {:.1} ms ({} samples), {finished} tables finished, \
         {} calls sent again after UNAVAILABLE",
        moves as f64 / elapsed,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.len(),
        UNAVAILABLE.load(Ordering::Relaxed) - unavailable_before,
    );
    println!("{db:?}: {}", after.per_thousand_moves(&before, moves));
    if let Some(census) = census {
        println!("{db:?}: {census}");
    }
    if let Some(behind) = behind {
        // The checkpoint trails the acknowledged publishes by up to its 250 ms interval.
        let mut caught_up = relay_behind(&app, head).await;
        while caught_up.is_some_and(|b| b > 0) && stopped.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            caught_up = relay_behind(&app, head).await;
        }
        println!(
            "{db:?}: relay to JetStream: {behind} events behind the store at the window's end; \
             checkpointed up to there {:.0} ms later",
            stopped.elapsed().as_secs_f64() * 1000.0
        );
    }
    let (rate, p50, p99) = raw_appends(&app, 64, Duration::from_secs(5)).await;
    println!(
        "{db:?}: event store raw append, 64 writers, one event per call: {rate:.0} events/s \
         (p50 {p50:.1} ms, p99 {p99:.1} ms)"
    );
    match Arc::try_unwrap(app) {
        Ok(app) => app.stop().await,
        Err(_) => println!("(the app is still shared; its database is left)"),
    }
    Figures {
        moves_per_second: moves as f64 / elapsed,
        p99_ms: percentile(&latencies, 0.99),
        cpu: after.cpu_per_thousand_moves(&before, moves),
        transactions: after.transactions_per_thousand_moves(&before, moves),
        raw: rate,
    }
}

/// `LOAD_COMPARE=1,2,2:owner,...`: the shapes run in turn, `LOAD_ROUNDS` times (default
/// 3), on PostgreSQL + NATS, then each shape's means and their ratios to the first
/// shape's: a baseline measured in the same run, alternated with the others, so that the
/// machine's drift between rounds falls on every shape alike.
async fn compare(shapes: &[Shape], rounds: usize, tables: usize, seconds: u64) {
    let mut figures: Vec<Vec<Figures>> = vec![Vec::new(); shapes.len()];
    for round in 1..=rounds {
        for (shape, runs) in shapes.iter().zip(&mut figures) {
            println!("round {round} of {rounds}: {}", shape.label());
            runs.push(run(Db::Postgres, tables, seconds, *shape).await);
        }
    }
    let mean = |runs: &[Figures], f: fn(&Figures) -> f64| {
        runs.iter().map(f).sum::<f64>() / runs.len().max(1) as f64
    };
    let range = |runs: &[Figures], f: fn(&Figures) -> f64| {
        let low = runs.iter().map(f).fold(f64::INFINITY, f64::min);
        let high = runs.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
        (low, high)
    };
    let base = &figures[0];
    let (base_moves, base_cpu) = (mean(base, |f| f.moves_per_second), mean(base, |f| f.cpu));
    let thinking = thinking();
    println!(
        "\n{tables} tables, {seconds} s a run, {rounds} rounds{thinking}; means, and ratios to {}:",
        shapes[0].label()
    );
    println!(
        "| shape | moves/s (range) | ratio | CPU ms per move, all | ratio | p99 | transactions per move |\n|---|---|---|---|---|---|---|"
    );
    for (shape, runs) in shapes.iter().zip(&figures) {
        let moves = mean(runs, |f| f.moves_per_second);
        let (low, high) = range(runs, |f| f.moves_per_second);
        let cpu = mean(runs, |f| f.cpu);
        let (p99_low, p99_high) = range(runs, |f| f.p99_ms);
        println!(
            "| {} | {moves:.0} ({low:.0}-{high:.0}) | {:.2}x | {cpu:.3} | {:.2}x | {p99_low:.1}-{p99_high:.1} ms | {:.2} |",
            shape.label(),
            moves / base_moves,
            cpu / base_cpu,
            mean(runs, |f| f.transactions) / 1000.0,
        );
    }
    let (raw_low, raw_high) = range(&figures.concat(), |f| f.raw);
    println!("raw appends, 64 writers, in the same runs: {raw_low:.0}-{raw_high:.0} events/s");
}

/// Kills the delaying proxies when the bench ends, a failed run included.
struct Proxies;

impl Drop for Proxies {
    fn drop(&mut self) {
        let mut proxies = PROXIES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for mut proxy in proxies.drain(..) {
            let _ = proxy.kill();
            let _ = proxy.wait();
        }
    }
}

#[tokio::main]
async fn main() {
    let _proxies = Proxies;
    let backend: String = env("LOAD_BACKEND", "both".to_owned());
    let tables = env("LOAD_TABLES", 64usize);
    let seconds = env("LOAD_SECONDS", 20u64);
    if let Ok(shapes) = std::env::var("LOAD_COMPARE") {
        let shapes: Vec<Shape> = shapes.split(',').map(Shape::parse).collect();
        compare(&shapes, env("LOAD_ROUNDS", 3usize).max(1), tables, seconds).await;
        return;
    }
    let shape = Shape::from_env();
    if backend == "both" || backend == "postgres" {
        run(Db::Postgres, tables, seconds, shape).await;
    }
    if (backend == "both" || backend == "embedded") && shape.replicas == 1 {
        run(Db::Sqlite, tables, seconds, shape).await;
    }
}
