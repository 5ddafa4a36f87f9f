//! Two replicas of the tables service over one PostgreSQL database (and NATS): players act
//! through either, the same command reaches both at once, watchers on one replica see the
//! other's appends (woken by LISTEN/NOTIFY), and every step of the table is appended once.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::table_event::Event as E;
use tokio::sync::watch;

use crate::harness::{Db, Player, TestApp, clock_of};
use crate::moves;
use crate::play::{check_watched, watch_to_the_end};

#[tokio::test]
async fn two_replicas_play_one_match_postgres_nats() {
    // Each replica holds half the partitions (`spawn_replicas` waits for it): the table is
    // born on A (the creator's), and B forwards the calls it gets for it.
    let app = TestApp::spawn_replicas(Db::Postgres, 2).await;
    let (a, b) = (&app.replicas[0], &app.replicas[1]);
    // Seats 0 and 2 call replica A, seats 1 and 3 replica B; the spectator watches on B.
    let players: Vec<Player> = (0..4)
        .map(|seat| app.player().on(if seat % 2 == 0 { a } else { b }))
        .collect();
    let spectator = app.player().on(b);
    let id = players[0]
        .create(pb::CreateTableRequest::default())
        .await
        .table_id;
    let watchers = vec![
        watch_to_the_end(&players[0].on(b), &id),
        watch_to_the_end(&players[1].on(a), &id),
        watch_to_the_end(&spectator, &id),
    ];
    for (seat, p) in players.iter().enumerate() {
        p.sit(&id, seat as u32).await.unwrap();
    }
    let mut moves = 0;
    loop {
        let table = spectator.view(&id).await;
        if table.status == pb::TableStatus::Finished as i32 && !table.server_seed.is_empty() {
            break;
        }
        let turn = table.game.unwrap().turn.expect("a player's turn") as usize;
        let player = &players[turn];
        let view = player.view(&id).await;
        let action = moves::choose(&view, 99).unwrap();
        let command_id = format!("m{moves}");
        // The same command through both replicas at once: one append, one answer.
        let (on_a, on_b) = (player.on(a), player.on(b));
        let (first, second) = tokio::join!(
            on_a.act(&id, view.version, &command_id, action.clone()),
            on_b.act(&id, view.version, &command_id, action),
        );
        assert_eq!(first.unwrap(), second.unwrap());
        moves += 1;
        assert!(moves < 5_000);
    }
    let end = spectator.view(&id).await;
    for (w, viewer) in watchers.into_iter().zip([Some(0), Some(1), None]) {
        let messages = tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .unwrap()
            .unwrap();
        check_watched(&messages, viewer);
        assert_eq!(messages.len() as u64, end.version);
        if viewer.is_none() {
            let mut commands = BTreeSet::new();
            let mut hands = Vec::new();
            let (mut finished, mut revealed) = (0, 0);
            for m in &messages {
                match m.event.as_ref().unwrap().event.as_ref().unwrap() {
                    E::BidPlaced(pb::BidPlaced { command, .. })
                    | E::PlayerPassed(pb::PlayerPassed { command, .. })
                    | E::TrumpNamed(pb::TrumpNamed { command, .. })
                    | E::CardPlayed(pb::CardPlayed { command, .. }) => {
                        let id = command.as_ref().unwrap().command_id.clone();
                        assert!(commands.insert(id), "a command appended twice");
                    }
                    E::HandStarted(h) => hands.push(h.hand),
                    E::GameFinished(_) => finished += 1,
                    E::TableSeedRevealed(_) => revealed += 1,
                    _ => {}
                }
            }
            assert_eq!(commands.len(), moves);
            assert_eq!(hands, (0..hands.len() as u32).collect::<Vec<_>>());
            assert_eq!((finished, revealed), (1, 1));
        }
    }
    app.stop().await;
}

/// Reads `stream` until `stop` picks a message (within 60 s); returns everything read.
async fn read_until(
    stream: &mut tonic::Streaming<pb::WatchResponse>,
    stop: impl Fn(&E) -> bool,
) -> Vec<pb::WatchResponse> {
    let mut got = Vec::new();
    loop {
        let message = tokio::time::timeout(Duration::from_secs(60), stream.message())
            .await
            .expect("a message in time")
            .unwrap()
            .expect("the stream goes on");
        let done = stop(message.event.as_ref().unwrap().event.as_ref().unwrap());
        got.push(message);
        if done {
            return got;
        }
    }
}

#[tokio::test]
async fn two_replicas_act_on_each_timeout_once_postgres_nats() {
    use fairdeal_tables::clock::TableClock;

    let app = TestApp::spawn_replicas(Db::Postgres, 2).await;
    let (a, b) = (&app.replicas[0], &app.replicas[1]);
    let me = app.player().on(a);
    let id = me.create_against_bots(10).await;
    let mut stream = me.on(b).watch(&id, 0).await;
    me.sit(&id, 0).await.unwrap();
    let mut all = read_until(&mut stream, |e| clock_of(e).is_some()).await;
    for round in 1..=3u32 {
        // Only the replica holding the table's partition keeps its clock: one timer fires
        // when the shared clock passes the deadline (the other replica's never does).
        let (me_a, me_b) = (me.on(a), me.on(b));
        let (on_a, on_b) = tokio::join!(me_a.view(&id), me_b.view(&id));
        assert_eq!(on_a.turn_deadline_ms, on_b.turn_deadline_ms);
        let due = on_a.turn_deadline_ms.unwrap();
        app.clock
            .advance(Duration::from_millis((due - app.clock.now_ms()) as u64));
        // Up to the next deadline (or the end, once abandoned): one timeout in between.
        let got = read_until(&mut stream, |e| {
            clock_of(e).is_some() || matches!(e, E::TableSeedRevealed(_))
        })
        .await;
        let timeouts: Vec<u32> = got
            .iter()
            .filter_map(|m| match m.event.as_ref()?.event.as_ref()? {
                E::TurnTimedOut(t) => Some(t.consecutive),
                _ => None,
            })
            .collect();
        assert_eq!(
            timeouts,
            vec![round],
            "round {round}: one timeout, acted on once"
        );
        all.extend(got);
    }
    let ended = all.last().unwrap();
    assert!(matches!(
        ended.event.as_ref().unwrap().event,
        Some(E::TableSeedRevealed(_))
    ));
    let abandoned = all
        .iter()
        .filter(|m| matches!(m.event.as_ref().unwrap().event, Some(E::SeatAbandoned(_))))
        .count();
    assert_eq!(abandoned, 1);
    // Every service move (bot or timeout) once: no step appended twice.
    let mut ids = BTreeSet::new();
    for m in &all {
        if let Some(
            E::BidPlaced(pb::BidPlaced { command, .. })
            | E::PlayerPassed(pb::PlayerPassed { command, .. })
            | E::TrumpNamed(pb::TrumpNamed { command, .. })
            | E::CardPlayed(pb::CardPlayed { command, .. }),
        ) = m.event.as_ref().unwrap().event.as_ref()
        {
            let c = command.as_ref().unwrap();
            assert!(ids.insert(c.command_id.clone()), "{} twice", c.command_id);
        }
    }
    for (n, m) in all.iter().enumerate() {
        assert_eq!(m.version, n as u64 + 1);
    }
    app.stop().await;
}

/// The partitions' owners and how many each holds, from the lease table.
async fn owners(app: &TestApp) -> std::collections::BTreeMap<String, usize> {
    let fairdeal_db::Db::Postgres { pool, schema } = app.tables_storage().db() else {
        panic!("replicas run on PostgreSQL");
    };
    let sql = format!(
        "SELECT owner FROM {}.partition_leases WHERE expires_at > now()",
        schema.quoted()
    );
    let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_all(pool)
        .await
        .unwrap();
    let mut owners = std::collections::BTreeMap::new();
    for owner in rows {
        *owners.entry(owner).or_insert(0) += 1;
    }
    owners
}

/// Polls `owners` until `done` holds of them (30 s at most).
async fn owners_until(
    app: &TestApp,
    done: impl Fn(&std::collections::BTreeMap<String, usize>) -> bool,
) -> std::collections::BTreeMap<String, usize> {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = owners(app).await;
        if done(&now) {
            return now;
        }
        assert!(
            std::time::Instant::now() < until,
            "leases never settled: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn two_replicas_share_the_partitions_and_one_takes_all_when_the_other_drains_postgres_nats() {
    let partitions = fairdeal_tables::startup::PARTITIONS as usize;
    let mut app = TestApp::spawn_replicas(Db::Postgres, 2).await;
    // Every partition held, half by each replica.
    let shared = owners_until(&app, |o| {
        o.len() == 2 && o.values().all(|n| *n == partitions / 2)
    })
    .await;
    assert_eq!(shared.values().sum::<usize>(), partitions);
    // The first replica drains (shutdown): the second holds everything at once, without
    // waiting for the drained replica's leases to expire.
    app.stop_replica(0).await;
    let alone = owners_until(&app, |o| {
        o.len() == 1 && o.values().all(|n| *n == partitions)
    })
    .await;
    assert!(shared.contains_key(alone.keys().next().unwrap()));
    app.stop().await;
}

/// Every answer for a table names its owner (`fairdeal-table-owner`, its `advertise_url`),
/// whichever replica the call reached: the owner's own answers at once, a forwarded call's
/// and a relayed watch's as soon as the replica has read the owner's route (once a keeper
/// round). When the owner drains, the replica taking its tables names itself.
#[tokio::test]
async fn every_answer_names_the_table_s_owner_postgres_nats() {
    let mut app = TestApp::spawn_replicas(Db::Postgres, 2).await;
    let named: Vec<(Option<String>, Option<String>)> = app
        .replica_ports
        .iter()
        .map(|port| {
            let address = Some(format!("http://127.0.0.1:{port}"));
            (address.clone(), address)
        })
        .collect();
    let player = app.player();
    let (a, b) = (player.on(&app.replicas[0]), player.on(&app.replicas[1]));
    // A table is born on the replica that creates it, which owns it.
    let on_a = a.create(pb::CreateTableRequest::default()).await.table_id;
    let on_b = b.create(pb::CreateTableRequest::default()).await.table_id;
    assert_eq!(a.owner_named(&on_a).await, named[0]);
    assert_eq!(b.owner_named(&on_b).await, named[1]);
    // The other replica, once its keeper has read the owner's route (two rounds at most).
    let rounds = fairdeal_tables::startup::LEASE_ROUND * 2;
    let address = |port: u16| format!("http://127.0.0.1:{port}");
    let [port_a, port_b] = [app.replica_ports[0], app.replica_ports[1]];
    app.routed(1, &on_a, &address(port_a), rounds).await;
    assert_eq!(b.owner_named(&on_a).await, named[0]);
    app.routed(0, &on_b, &address(port_b), rounds).await;
    assert_eq!(a.owner_named(&on_b).await, named[1]);
    // A drains: B takes its partitions and names itself for A's table.
    app.stop_replica(0).await;
    app.routed(1, &on_a, &address(port_b), Duration::from_secs(20))
        .await;
    assert_eq!(b.owner_named(&on_a).await, named[1]);
    assert_eq!(b.owner_named(&on_b).await, named[1]);
    app.stop().await;
}

/// A client that follows the owner header (`fairdeal_client::Player::following`, for a
/// backend that can reach the replicas' addresses) sends a table's calls to its owner once
/// an answer has named it: given replica A, it plays a whole match on B after A has stopped.
/// And when the owner it follows goes away, its next call goes through its own replica
/// again, which serves the table now and is followed from then on.
#[tokio::test]
async fn a_client_following_the_owner_plays_there_and_comes_back_when_it_goes_postgres_nats() {
    use fairdeal_client::{Owners, Player as Client};

    let mut app = TestApp::spawn_replicas(Db::Postgres, 3).await;
    let address = |port: u16| format!("http://127.0.0.1:{port}");
    let [a, b, c] = [0, 1, 2].map(|i| app.replica_ports[i]);
    // Tables against the engine's bots, one born on (owned by) B, one on C.
    let on_b = app
        .player()
        .on(&app.replicas[1])
        .create_against_bots(0)
        .await;
    let on_c = app
        .player()
        .on(&app.replicas[2])
        .create_against_bots(0)
        .await;
    let rounds = fairdeal_tables::startup::LEASE_ROUND * 2;
    app.routed(0, &on_b, &address(b), rounds).await;
    app.routed(1, &on_c, &address(c), rounds).await;
    let client = |port: u16| {
        let id = uuid::Uuid::now_v7();
        Client::new(id, app.player_token(id), fairdeal_harness::lazy(port))
    };
    let owners = Owners::new();
    let (given_a, given_b) = (
        client(a).following(owners.clone()),
        client(b).following(owners.clone()),
    );
    // Sitting through A and B, forwarded to the owners, the answers name them.
    given_a.sit(&on_b, 0).await.unwrap();
    given_b.sit(&on_c, 0).await.unwrap();
    assert_eq!(owners.owner_of(&on_b), Some(address(b)));
    assert_eq!(owners.owner_of(&on_c), Some(address(c)));

    // A stops (its partitions drain to B and C): the client given A plays on at B, where
    // its calls have gone since the first answer.
    app.stop_replica(0).await;
    let end = fairdeal_client::play_to_the_end(&on_b, std::slice::from_ref(&given_a), 5, |_, _| {})
        .await
        .unwrap();
    assert!(fairdeal_client::is_over(&end));

    // C stops: its tables drain to B. The client given B finds nobody at C, and its call
    // goes through B, which owns the table now and names itself.
    app.stop_replica(2).await;
    app.routed(1, &on_c, &address(b), Duration::from_secs(20))
        .await;
    let view = given_b.view(&on_c).await.unwrap();
    assert_eq!(view.table_id, on_c);
    assert_eq!(owners.owner_of(&on_c), Some(address(b)));
    app.stop().await;
}

/// Plays table `id` against the bots as `player` (seat 0) to its seed reveal, each call sent
/// once: a refusal fails the test (a view read a moment before the bots moved is read
/// again, as a client does). Waits for the bots on the player's watch of the table; counts
/// each move made in `moved`. Returns the moves made.
async fn play_strictly(player: Player, id: String, moved: Arc<watch::Sender<usize>>) -> usize {
    let mut watch = player.watch(&id, 0).await;
    let mut watched = 0;
    let mut moves = 0;
    let mut salt = 0;
    loop {
        let view = player.try_view(&id).await.expect("a view");
        if view.status == pb::TableStatus::Finished as i32 && !view.server_seed.is_empty() {
            return moves;
        }
        salt += 1;
        let Some(action) = moves::choose(&view, salt) else {
            // The bots' turn, or between two hands: the owner steps the table, and the watch
            // tells when it has.
            while watched <= view.version {
                let message = tokio::time::timeout(Duration::from_secs(60), watch.message())
                    .await
                    .expect("the table moves on within a minute")
                    .expect("the watch goes on")
                    .expect("the watch goes on");
                watched = message.version;
            }
            continue;
        };
        let command_id = uuid::Uuid::now_v7().to_string();
        match player
            .act_once(&id, view.version, &command_id, action)
            .await
        {
            Ok(_) => {
                moves += 1;
                moved.send_modify(|n| *n += 1);
            }
            Err(status) if status.code() == tonic::Code::Aborted => {}
            Err(status) => {
                panic!("a move at {id} refused while the replicas rebalance: {status:?}")
            }
        }
    }
}

/// A second replica joins while tables are played and created through the first: the first
/// drains half the partitions to it, and the commands in flight for the tables that move,
/// and the tables created meanwhile, are all answered: a command fenced as its table left is
/// handed over to the new owner, a creation whose partition left is made again under a new
/// id. No call is refused, no move lost or doubled.
#[tokio::test]
async fn a_scale_up_answers_every_command_in_flight_postgres_nats() {
    let mut app = TestApp::spawn_replicas(Db::Postgres, 1).await;
    let a = app.replicas[0].clone();
    // Tables in both halves of the partitions: the first replica keeps the lower half and
    // drains the upper one to the newcomer.
    let partitions = fairdeal_tables::startup::PARTITIONS;
    let moves_away = |id: &String| {
        fairdeal_platform::ownership::partition_of(&id.parse().unwrap(), partitions)
            >= partitions / 2
    };
    let moved = Arc::new(watch::channel(0).0);
    let mut games = Vec::new();
    let mut tables: Vec<String> = Vec::new();
    while tables.iter().filter(|id| moves_away(id)).count() < 3
        || tables.iter().filter(|id| !moves_away(id)).count() < 2
    {
        let player = app.player().on(&a);
        let id = player.create_against_bots(0).await;
        player.sit(&id, 0).await.unwrap();
        tables.push(id.clone());
        games.push(tokio::spawn(play_strictly(player, id, moved.clone())));
    }
    // Tables created through the first replica all along the join.
    let creating = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let creator = {
        let (player, creating) = (app.player().on(&a), creating.clone());
        tokio::spawn(async move {
            let mut created = 0;
            while creating.load(std::sync::atomic::Ordering::Relaxed) {
                let mut client = player.client.clone();
                let request = crate::harness::with(
                    &player.token,
                    pb::CreateTableRequest {
                        bot_seats: vec![1, 2, 3],
                        ..Default::default()
                    },
                );
                client
                    .create_table(request)
                    .await
                    .expect("a table created while the replicas rebalance");
                created += 1;
            }
            created
        })
    };
    // The games are under way when the second replica joins.
    tokio::time::timeout(
        Duration::from_secs(60),
        moved.subscribe().wait_for(|n| *n >= 12),
    )
    .await
    .expect("moves are made")
    .unwrap();
    app.start_replica().await;
    app.partitions_settled().await;
    creating.store(false, std::sync::atomic::Ordering::Relaxed);
    assert!(creator.await.unwrap() > 0);
    let mut moves = 0;
    for game in games {
        moves += tokio::time::timeout(Duration::from_secs(120), game)
            .await
            .expect("every game finishes")
            .unwrap();
    }
    assert!(moves > 0);
    // The upper half's tables are served by the newcomer now, the others where they were.
    let b = app.replicas[1].clone();
    let mut owners = std::collections::BTreeMap::new();
    for id in &tables {
        let owner = app.player().on(&b).owner_of(id).await.expect("an owner");
        owners
            .entry(moves_away(id))
            .or_insert_with(BTreeSet::new)
            .insert(owner);
    }
    assert_eq!(owners.len(), 2, "{owners:?}");
    assert!(owners.values().all(|o| o.len() == 1), "{owners:?}");
    assert_ne!(owners[&true], owners[&false]);
    app.stop().await;
}
