//! Issue 33's evidence that scale-out leaves every game auditable: three tables replicas
//! over one PostgreSQL database and NATS share the tables' partitions; tables are created
//! through each replica in turn (each born on its creator), every player's calls go to the
//! first two replicas (a call for a table another replica owns is forwarded there, watches
//! relayed), and mid-game the third replica is drained, as a scale-down does: its tables
//! move to the other two while their hands are being played. Every game still plays to its
//! end, and every game's export from the ledger passes `fairdeal audit`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fairdeal_client::Player;
use fairdeal_e2e::platform::{Backend, GameStack, channel};
use fairdeal_ledger::{MIGRATIONS, SCHEMA};
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use sqlx::Connection as _;
use uuid::Uuid;

use crate::{client, export_when_ingested, signer, start_ledger, text};

const TABLES: usize = 6;

/// Waits until `replicas` tables replicas each hold their share of the partitions, and a
/// keeper round more (so every replica's routes show them).
async fn partitions_shared(stack: &GameStack, replicas: usize) {
    let mut db = sqlx::PgConnection::connect(stack.postgres_url().unwrap())
        .await
        .unwrap();
    let sql = format!(
        "SELECT count(*) FROM \"{}\".partition_leases WHERE expires_at > now() GROUP BY owner",
        fairdeal_tables::startup::SCHEMA
    );
    let partitions = fairdeal_tables::startup::PARTITIONS;
    let share = i64::from(partitions.div_ceil(replicas as u32));
    let partitions = i64::from(partitions);
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let held: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_all(&mut db)
            .await
            .unwrap();
        if held.len() == replicas
            && held.iter().sum::<i64>() == partitions
            && held.iter().all(|n| *n <= share)
        {
            break;
        }
        assert!(Instant::now() < until, "partitions never shared: {held:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    db.close().await.unwrap();
    tokio::time::sleep(fairdeal_tables::startup::LEASE_ROUND * 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn games_across_tables_replicas_and_a_drain_export_and_audit_postgres_nats() {
    let mut stack = GameStack::start(Backend::PostgresNats).await.unwrap();
    let storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
    let mut ledger = client(start_ledger(&mut stack, storage).await);
    let key = signer().verifier();
    let (_, _, first) = stack.ports();
    let (second, _) = stack.start_tables_replica().await.unwrap();
    let (third, drain) = stack.start_tables_replica().await.unwrap();
    partitions_shared(&stack, 3).await;

    let on = |id: Uuid, port: u16| {
        Player::new(id, stack.player_token(id).unwrap(), channel(port).unwrap())
    };
    let moved = Arc::new(AtomicUsize::new(0));
    let mut games = tokio::task::JoinSet::new();
    let mut ids = Vec::new();
    for n in 0..TABLES {
        let players: Vec<Player> = (0..4)
            .map(|seat| on(Uuid::now_v7(), [first, second][seat % 2]))
            .collect();
        // Created through each replica in turn: a third of the tables are born on the third.
        let id = on(players[0].id, [first, second, third][n % 3])
            .create_table(tpb::CreateTableRequest::default())
            .await
            .unwrap()
            .table_id;
        ids.push(id.clone());
        let moved = moved.clone();
        games.spawn(async move {
            fairdeal_client::seat_players(&id, &players, "seed of seat").await?;
            fairdeal_client::play_to_the_end(&id, &players, 0x5eed, |_, _| {
                moved.fetch_add(1, Ordering::Relaxed);
            })
            .await
        });
    }

    // Mid-game (about a dozen moves at each table): the third replica drains.
    while moved.load(Ordering::Relaxed) < TABLES * 12 {
        assert!(!games.is_empty());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drain.trigger();
    let at_drain = moved.load(Ordering::Relaxed);
    for result in games.join_all().await {
        let view = result.unwrap();
        assert_eq!(view.status, tpb::TableStatus::Finished as i32, "{view:?}");
        assert!(!view.server_seed.is_empty());
    }
    let total = moved.load(Ordering::Relaxed);
    assert!(
        total > at_drain,
        "moves after the drain: {at_drain} of {total}"
    );

    // Every game's export audits: deals, moves, scores, chained and included.
    for id in &ids {
        let lines = export_when_ingested(&mut ledger, id, 0).await;
        let report = fairdeal_cli::audit::audit(&text(&lines), &key, None);
        assert!(report.failures.is_empty(), "{id}: {:#?}", report.failures);
        assert!(report.hands >= 1 && report.moves >= 40, "{id}: {report:?}");
        for check in ["chain", "commitment", "deal", "replay", "result"] {
            assert!(
                report.checks[check].checked > 0,
                "{id}: {check} not checked"
            );
        }
    }
    println!(
        "{TABLES} games over three tables replicas, {at_drain} of {total} moves before the drain: every export audited"
    );
    stack.stop().await.unwrap();
}
