//! kill -9: the `fairdeal-tables` binary runs as a child process (configured through
//! environment variables and flags, as in production) over PostgreSQL + NATS or the
//! embedded SQLite file. Tables are played part way into a hand, one move is still in flight,
//! and the process is killed with SIGKILL. A new process over the same database serves every
//! table at the same version with the same deadline, the in-flight move's retry answers
//! once, and watchers reconnect from the last version they received with no gap and no
//! duplicate.

use std::process::Stdio;
use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use tokio::process::{Child, Command};

use crate::harness::{Db, Player, TestApp};
use crate::moves;

/// A `fairdeal-tables` process of `app`'s backend, serving.
pub(crate) async fn start(app: &TestApp, dir: &std::path::Path, run: usize) -> (Child, u16) {
    let port = crate::harness::free_port();
    let (env, flags) = app.tables_args(port);
    let log = std::fs::File::create(dir.join(format!("tables-{run}.log"))).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_fairdeal-tables"))
        .args(flags)
        .envs(env)
        .env("FAIRDEAL_LOG_FORMAT", "json")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    fairdeal_harness::serving(port).await;
    (child, port)
}

pub(crate) fn client(port: u16) -> TablesServiceClient<tonic::transport::Channel> {
    TablesServiceClient::new(fairdeal_harness::lazy(port))
}

/// Reads `stream` up to `version` (within 30 s).
async fn read_to(
    stream: &mut tonic::Streaming<pb::WatchResponse>,
    seen: &mut Vec<pb::WatchResponse>,
    version: u64,
) {
    while seen.last().map_or(0, |m| m.version) < version {
        let message = tokio::time::timeout(Duration::from_secs(30), stream.message())
            .await
            .expect("a message in time")
            .unwrap()
            .expect("the stream goes on");
        seen.push(message);
    }
}

/// One move of whichever of `players` must act; returns the version after it.
async fn play_one(players: &[Player], id: &str, salt: u64) -> u64 {
    for p in players {
        let view = p.view(id).await;
        if let Some(action) = moves::choose(&view, salt) {
            return p
                .act(id, view.version, &uuid::Uuid::now_v7().to_string(), action)
                .await
                .unwrap();
        }
    }
    panic!("nobody at {id} could move");
}

async fn kill_and_resume(db: Db) {
    let app = TestApp::spawn_with(db, 0, true).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, port) = start(&app, dir.path(), 1).await;
    let first = client(port);

    // Two tables: two players with two bots, and one player with three bots; long
    // deadlines, so nothing times out on the real clock.
    let (a, b, c) = (
        app.player_on(&first),
        app.player_on(&first),
        app.player_on(&first),
    );
    let mut tables = Vec::new();
    for (players, bots) in [
        (vec![a.clone(), b.clone()], vec![1, 3]),
        (vec![c], vec![1, 2, 3]),
    ] {
        let id = players[0]
            .create(pb::CreateTableRequest {
                bot_seats: bots,
                move_seconds: 600,
                ..Default::default()
            })
            .await
            .table_id;
        let seats = [0u32, 2];
        for (p, seat) in players.iter().zip(seats) {
            p.sit(&id, seat).await.unwrap();
        }
        tables.push((id, players));
    }
    // Part of the first hand: a few moves at each table, each player watching.
    let mut watched = Vec::new();
    for (id, players) in &tables {
        for i in 0..6 {
            play_one(players, id, i).await;
        }
        let version = players[0].view(id).await.version;
        let mut stream = players[0].watch(id, 0).await;
        let mut seen = Vec::new();
        read_to(&mut stream, &mut seen, version).await;
        watched.push(seen);
    }
    let before: Vec<pb::TableView> =
        futures::future::join_all(tables.iter().map(|(id, players)| players[0].view(id))).await;
    for view in &before {
        let game = view.game.as_ref().unwrap();
        assert!(
            game.tricks_played > 0 || !game.auction.is_empty(),
            "mid-hand"
        );
        assert!(view.turn_deadline_ms.is_some(), "a player must act");
    }

    // A move in flight at the first table, and kill -9.
    let (id0, players0) = &tables[0];
    let mover = players0
        .iter()
        .find(|p| before[0].game.as_ref().unwrap().turn == Some(if p.id == a.id { 0 } else { 2 }))
        .expect("a player's turn")
        .clone();
    let mine = mover.view(id0).await;
    let action = moves::choose(&mine, 42).unwrap();
    let in_flight = {
        let (mover, id, action) = (mover.clone(), id0.clone(), action.clone());
        tokio::spawn(async move { mover.act(&id, mine.version, "in-flight", action).await })
    };
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert!(!status.success(), "killed, not stopped: {status:?}");
    let _ = in_flight.await;

    // A new process over the same database.
    let (mut child, port) = start(&app, dir.path(), 2).await;
    let second = client(port);
    let mover = mover.on(&second);
    // Every table as it was: the second untouched since the kill, the first too unless the
    // in-flight move was recorded before the kill (then it is further on, by that move and
    // the bots' answers).
    let mut resumed = Vec::new();
    for (id, players) in &tables {
        resumed.push(players[0].on(&second).view(id).await);
    }
    assert_eq!(
        resumed[1], before[1],
        "the same table, version and deadline"
    );
    if resumed[0].version == before[0].version {
        assert_eq!(resumed[0], before[0]);
    }
    // The in-flight move, retried with its id: answered once, whether it was recorded
    // before the kill or not.
    let after_retry = mover
        .act(id0, before[0].version, "in-flight", action.clone())
        .await
        .unwrap();
    assert_eq!(
        mover
            .act(id0, before[0].version, "in-flight", action)
            .await
            .unwrap(),
        after_retry
    );
    for (i, ((id, players), view)) in tables.iter().zip(&before).enumerate() {
        let p = players[0].on(&second);
        // The watcher reconnects from the last version it received: no gap, no duplicate.
        let seen = &mut watched[i];
        let last = seen.last().unwrap().version;
        assert_eq!(last, view.version);
        let mut stream = p.watch(id, last).await;
        let moved = play_one(
            &players.iter().map(|p| p.on(&second)).collect::<Vec<_>>(),
            id,
            9,
        )
        .await;
        read_to(&mut stream, seen, moved).await;
        for (n, m) in seen.iter().enumerate() {
            assert_eq!(m.version, n as u64 + 1, "no gap, no duplicate");
        }
        if i == 0 {
            let recorded: Vec<_> = seen
                .iter()
                .filter_map(|m| {
                    crate::harness::command_of(m.event.as_ref()?.event.as_ref()?)
                        .filter(|c| c.command_id == "in-flight")
                })
                .collect();
            assert_eq!(recorded.len(), 1, "the in-flight move is recorded once");
            assert_eq!(recorded[0].version_after, after_retry);
        }
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    app.stop().await;
}

#[tokio::test]
async fn kill_9_mid_hand_then_every_table_resumes_embedded() {
    kill_and_resume(Db::Sqlite).await;
}

#[tokio::test]
async fn kill_9_mid_hand_then_every_table_resumes_postgres_nats() {
    kill_and_resume(Db::Postgres).await;
}
