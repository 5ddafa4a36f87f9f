//! Scale-out (issue 33): three `fairdeal-tables` processes over PostgreSQL + NATS, as in
//! production, sharing the tables' partitions. 32 tables are played to the end, each by two
//! players and two of the engine's bots (which the table's owner moves), every player's call
//! (views, moves, watches) sent to a replica drawn at random among those running: a call
//! reaching a replica that does not own the table is forwarded to the owner. Mid-hand, the
//! owner of one table is killed (SIGKILL); later another replica is stopped (SIGTERM: a
//! drain, as a scale-down does). Callers retry a failed call on another replica with the
//! same command id, and watchers reconnect from the last version they received; a replica
//! still taking calls never refuses a move because its table is changing hands (one whose
//! table's owner has died waits for the next owner). In the end every accepted move is in
//! its table's log once, and no other move is; every watcher saw every version once; every
//! table's log re-decides to its end and every deal re-derives from the revealed seed, as
//! the auditor checks them.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use pb::table_event::Event as E;
use tokio::process::Child;
use tonic::Code;
use tonic::transport::Channel;

use crate::crash::{client, start};
use crate::harness::{Db, Player, TestApp, command_of};
use crate::moves;

const TABLES: usize = 32;
const REPLICAS: usize = 3;

/// The replicas, and which of them take calls.
struct Cluster {
    clients: Vec<TablesServiceClient<Channel>>,
    ports: Vec<u16>,
    live: Mutex<Vec<bool>>,
    draws: AtomicU64,
    random: std::hash::RandomState,
    /// Moves a replica still taking calls refused UNAVAILABLE, with the reason (a survivor
    /// that could not reach a dead owner waits for the next one instead).
    refused: Mutex<Vec<String>>,
}

impl Cluster {
    /// A replica drawn at random among the live ones.
    fn any(&self) -> TablesServiceClient<Channel> {
        self.drawn().1
    }

    /// A replica drawn at random among the live ones, and its index.
    fn drawn(&self) -> (usize, TablesServiceClient<Channel>) {
        let live: Vec<usize> = {
            let live = self.live.lock().unwrap();
            (0..live.len()).filter(|&i| live[i]).collect()
        };
        let draw = self
            .random
            .hash_one(self.draws.fetch_add(1, Ordering::Relaxed));
        let at = live[(draw % live.len() as u64) as usize];
        (at, self.clients[at].clone())
    }

    fn is_live(&self, index: usize) -> bool {
        self.live.lock().unwrap()[index]
    }

    fn stop_calling(&self, index: usize) {
        self.live.lock().unwrap()[index] = false;
    }
}

/// Whether a failed call is the replica's going away (retried on another).
fn gone(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::Cancelled | Code::Unknown
    )
}

/// `player`'s view through a random replica, retried while replicas go away.
async fn view(cluster: &Cluster, player: &Player, id: &str) -> pb::TableView {
    loop {
        match player.on(&cluster.any()).try_view(id).await {
            Ok(view) => return view,
            Err(status) if gone(&status) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(status) => panic!("view of {id}: {status:?}"),
        }
    }
}

/// Plays table `id` to the end (its seed revealed); returns each accepted move's command id
/// and the version it answered.
async fn play(
    cluster: Arc<Cluster>,
    players: Vec<Option<Player>>,
    id: String,
    moved: Arc<AtomicUsize>,
) -> BTreeMap<String, u64> {
    let mut accepted = BTreeMap::new();
    let mut salt = 0;
    'turns: loop {
        let table = view(&cluster, players[0].as_ref().unwrap(), &id).await;
        if table.status == pb::TableStatus::Finished as i32 && !table.server_seed.is_empty() {
            return accepted;
        }
        let turn = table.game.as_ref().and_then(|g| g.turn);
        let Some(player) = turn.and_then(|seat| players[seat as usize].as_ref()) else {
            // A bot's turn, or between a hand's end and the next deal: the owner advances.
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let mine = view(&cluster, player, &id).await;
        salt += 1;
        let Some(action) = moves::choose(&mine, salt) else {
            continue;
        };
        let command_id = uuid::Uuid::now_v7().to_string();
        // The same command, on another replica while replicas go away: answered once.
        let version = loop {
            let (at, replica) = cluster.drawn();
            match player
                .on(&replica)
                .act_once(&id, mine.version, &command_id, action.clone())
                .await
            {
                Ok(version) => break version,
                Err(status) if gone(&status) => {
                    if status.code() == Code::Unavailable && cluster.is_live(at) {
                        let refusal = format!("{id}: {}", status.message());
                        cluster.refused.lock().unwrap().push(refusal);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // The view was behind the table (read during a handover): nothing was
                // applied under this command id; read again and decide again, as a client
                // does.
                Err(status) if status.code() == Code::Aborted => continue 'turns,
                Err(status) => panic!("move at {id}: {status:?}"),
            }
        };
        accepted.insert(command_id, version);
        moved.fetch_add(1, Ordering::Relaxed);
    }
}

/// Watches table `id` through random replicas to its seed reveal, reconnecting from the last
/// version received whenever a stream fails or ends; returns every message.
async fn watch(cluster: Arc<Cluster>, watcher: Player, id: String) -> Vec<pb::WatchResponse> {
    let mut seen: Vec<pb::WatchResponse> = Vec::new();
    loop {
        let last = seen.last().map_or(0, |m| m.version);
        let mut stream = match watcher.on(&cluster.any()).try_watch(&id, last, false).await {
            Ok(stream) => stream,
            Err(status) if gone(&status) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            Err(status) => panic!("watch of {id}: {status:?}"),
        };
        loop {
            match tokio::time::timeout(Duration::from_secs(120), stream.message()).await {
                Ok(Ok(Some(message))) => {
                    let revealed = matches!(
                        message.event.as_ref().and_then(|e| e.event.as_ref()),
                        Some(E::TableSeedRevealed(_))
                    );
                    seen.push(message);
                    if revealed {
                        return seen;
                    }
                }
                Ok(Ok(None)) => break,
                Ok(Err(status)) if gone(&status) => break,
                Ok(Err(status)) => panic!("watch of {id}: {status:?}"),
                Err(_) => panic!("watch of {id}: nothing for 120 s after version {last}"),
            }
        }
    }
}

/// Leases now: partition -> (owner, the owner's address).
async fn leases(pool: &sqlx::PgPool, schema: &fairdeal_db::Schema) -> BTreeMap<u32, String> {
    let sql = format!(
        "SELECT l.partition, o.address FROM {s}.partition_leases l \
         JOIN {s}.lease_owners o ON o.owner = l.owner \
         WHERE l.expires_at > now() AND o.expires_at > now()",
        s = schema.quoted()
    );
    let rows: Vec<(i32, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .fetch_all(pool)
        .await
        .unwrap();
    rows.into_iter().map(|(p, a)| (p as u32, a)).collect()
}

/// Waits (60 s at most) until every partition is held by one of the replicas at `ports`;
/// how long that took.
async fn held_by(pool: &sqlx::PgPool, schema: &fairdeal_db::Schema, ports: &[u16]) -> Duration {
    let started = Instant::now();
    let addresses: BTreeSet<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    loop {
        let now = leases(pool, schema).await;
        let partitions = fairdeal_tables::startup::PARTITIONS as usize;
        let share = partitions.div_ceil(addresses.len());
        let held = |address: &String| now.values().filter(|a| *a == address).count();
        if now.len() == partitions
            && now.values().all(|a| addresses.contains(a))
            && addresses.iter().all(|a| (1..=share).contains(&held(a)))
        {
            let settled = started.elapsed();
            // A keeper round more, so every replica's routes show it.
            tokio::time::sleep(fairdeal_tables::startup::LEASE_ROUND * 2).await;
            return settled;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "partitions never settled: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `moved` reaches `count`.
async fn moves_reach(moved: &AtomicUsize, count: usize) {
    while moved.load(Ordering::Relaxed) < count {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops `child` with SIGTERM (a drain) and waits for it to exit on its own.
async fn drain(child: &mut Child) {
    // By a system call: a bare machine (a fresh Debian image) has no `kill(1)`.
    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).expect("a running child");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("a drain ends")
        .unwrap();
    assert!(status.success(), "a drain exits cleanly: {status:?}");
}

#[tokio::test]
async fn three_replicas_play_32_tables_through_random_replicas_through_a_kill_and_a_drain_postgres_nats()
 {
    let mut app = TestApp::spawn_with(Db::Postgres, 0, true).await;
    let storage = app.open_tables_storage().await;
    let fairdeal_db::Db::Postgres { pool, schema } = storage.db() else {
        unreachable!("replicas run on PostgreSQL");
    };
    let dir = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    let mut ports = Vec::new();
    for run in 0..REPLICAS {
        let (child, port) = start(&app, dir.path(), run).await;
        children.push(child);
        ports.push(port);
    }
    held_by(pool, schema, &ports).await;
    let cluster = Arc::new(Cluster {
        clients: ports.iter().map(|&p| client(p)).collect(),
        ports: ports.clone(),
        live: Mutex::new(vec![true; REPLICAS]),
        draws: AtomicU64::new(0),
        random: std::hash::RandomState::new(),
        refused: Mutex::new(Vec::new()),
    });

    // 32 tables, each created and sat at through random replicas: players at seats 0 and
    // 2, bots at 1 and 3, a long turn clock (nothing times out on the real clock).
    let mut tables = Vec::new();
    for _ in 0..TABLES {
        let players: Vec<Option<Player>> = (0..4)
            .map(|seat| (seat % 2 == 0).then(|| app.player()))
            .collect();
        let id = players[0]
            .as_ref()
            .unwrap()
            .on(&cluster.any())
            .create(pb::CreateTableRequest {
                bot_seats: vec![1, 3],
                move_seconds: 600,
                ..Default::default()
            })
            .await
            .table_id;
        for (seat, p) in players.iter().enumerate() {
            if let Some(p) = p {
                p.on(&cluster.any()).sit(&id, seat as u32).await.unwrap();
            }
        }
        tables.push((id, players));
    }
    let moved = Arc::new(AtomicUsize::new(0));
    let mut games = Vec::new();
    for (id, players) in &tables {
        let watcher = tokio::spawn(watch(cluster.clone(), app.player(), id.clone()));
        let player = tokio::spawn(play(
            cluster.clone(),
            players.clone(),
            id.clone(),
            moved.clone(),
        ));
        games.push((id.clone(), player, watcher));
    }

    // Mid-hand at every table: the owner of the first table is killed.
    moves_reach(&moved, TABLES * 6).await;
    let first = fairdeal_platform::ownership::partition_of(
        &uuid::Uuid::parse_str(&tables[0].0).unwrap(),
        fairdeal_tables::startup::PARTITIONS,
    );
    let owner = leases(pool, schema).await[&first].clone();
    let killed = ports
        .iter()
        .position(|p| owner == format!("http://127.0.0.1:{p}"))
        .expect("the owner is one of the replicas");
    cluster.stop_calling(killed);
    children[killed].start_kill().unwrap();
    let status = children[killed].wait().await.unwrap();
    assert!(!status.success(), "killed, not stopped: {status:?}");
    let survivors: Vec<u16> = (0..REPLICAS)
        .filter(|&i| i != killed)
        .map(|i| ports[i])
        .collect();
    let failover = held_by(pool, schema, &survivors).await;
    println!("after the kill, every partition held by the survivors in {failover:?}");
    assert!(
        failover <= Duration::from_secs(5),
        "the killed owner's partitions moved in {failover:?}"
    );

    // Later, a scale-down: one survivor drains.
    moves_reach(&moved, TABLES * 20).await;
    let drained = (0..REPLICAS).find(|&i| i != killed).unwrap();
    cluster.stop_calling(drained);
    drain(&mut children[drained]).await;
    let last: Vec<u16> = (0..REPLICAS)
        .filter(|&i| i != killed && i != drained)
        .map(|i| ports[i])
        .collect();
    let handed = held_by(pool, schema, &last).await;
    println!("after the drain, every partition held by the last replica in {handed:?}");

    // Every table to its end.
    for (id, player, watcher) in games {
        let accepted = tokio::time::timeout(Duration::from_secs(600), player)
            .await
            .expect("the table finishes")
            .unwrap();
        let watched = tokio::time::timeout(Duration::from_secs(120), watcher)
            .await
            .expect("the watcher reaches the end")
            .unwrap();
        // After the end everything is public: a replay from 0 shows every deal.
        let mut replay = app.player().on(&cluster.any()).watch(&id, 0).await;
        let mut replayed = Vec::new();
        while replayed.len() < watched.len() {
            replayed.push(replay.message().await.unwrap().unwrap());
        }
        check_table(&storage, &id, &accepted, &watched, &replayed).await;
    }
    println!(
        "{} players' moves over {TABLES} tables, {} calls drawn",
        moved.load(Ordering::Relaxed),
        cluster.draws.load(Ordering::Relaxed)
    );
    // Through the kill and the drain, a move reaching a replica that takes calls waited for
    // its table's next owner rather than being refused as the table changed hands (the
    // event store's `Fenced` refusal). Any other refusal (a dependency briefly unavailable
    // on a loaded machine) is retried as clients do, and counted here.
    let refused = cluster.refused.lock().unwrap().clone();
    println!(
        "{} moves refused UNAVAILABLE by live replicas",
        refused.len()
    );
    let handed: Vec<&String> = refused
        .iter()
        .filter(|m| m.contains("whose lease this replica does not hold"))
        .collect();
    assert!(
        handed.is_empty(),
        "moves refused by live replicas as their tables changed hands: {handed:?}"
    );
    assert_eq!(cluster.ports.len(), REPLICAS);
    for mut child in children {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    app.stop().await;
}

/// The table's log: every accepted move once and no other, every version watched once,
/// the game re-decided to its end, every deal (in `replayed`, read after the end) re-derived
/// from the revealed seed.
async fn check_table(
    storage: &fairdeal_platform::Storage,
    id: &str,
    accepted: &BTreeMap<String, u64>,
    watched: &[pb::WatchResponse],
    replayed: &[pb::WatchResponse],
) {
    let stream = fairdeal_eventstore::StreamId::of("table", id).unwrap();
    let stored = storage
        .events()
        .read_stream(&stream, 1, 100_000)
        .await
        .unwrap();
    for (n, m) in watched.iter().enumerate() {
        assert_eq!(
            m.version,
            n as u64 + 1,
            "{id}: no gap, no duplicate watched"
        );
    }
    assert_eq!(watched.len(), stored.len(), "{id}: watched to the end");
    let mut recorded = BTreeMap::new();
    let mut seed = String::new();
    for m in watched {
        let event = m.event.as_ref().unwrap().event.as_ref().unwrap();
        if let Some(command) = command_of(event) {
            // A bot's move is recorded as `bot:<version>`, once like any other.
            let before = recorded.insert(command.command_id.clone(), command.version_after);
            assert!(before.is_none(), "{id}: a move recorded twice");
        }
        if let E::TableSeedRevealed(r) = event {
            seed = r.server_seed.clone();
        }
    }
    recorded.retain(|command, _| !command.starts_with("bot:"));
    assert_eq!(
        &recorded, accepted,
        "{id}: the players' accepted moves, once each"
    );
    // As the auditor: the stored log decoded back to the engine's events re-decides to the
    // end, and every deal is the generator's from the revealed seed.
    let decoded: Vec<_> = stored
        .iter()
        .map(|e| fairdeal_tables::events::from_recorded::<fairdeal_tables::Game>(e).unwrap())
        .collect();
    let log = fairdeal_tables::domain::engine_log(&decoded);
    let game = match <fairdeal_tables::Game as fairdeal_table_game::TableGame>::verify(&log)
        .expect("the log re-decides")
    {
        fairdeal_games_wire::any::AnyGame::JeuDu10(game) => game,
        other => panic!("a Jeu du 10 table replays as Jeu du 10, not {other:?}"),
    };
    assert_eq!(game.phase(), fairdeal_games::Phase::Finished);
    let mut current = None;
    let mut deals = 0;
    for m in replayed {
        match m.event.as_ref().unwrap().event.as_ref().unwrap() {
            E::HandStarted(h) => {
                current = Some(Deal::from_seeds(Deck::Dix, &seed, &h.client_seed, &h.salt));
                deals += 1;
            }
            E::CardsDealt(c) => {
                let deal = current.as_ref().unwrap();
                assert_eq!(c.cards, deal.codes(&deal.hands[c.position as usize]));
            }
            _ => {}
        }
    }
    assert!(deals > 0);
}
