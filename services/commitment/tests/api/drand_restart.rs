//! Binders restarted at the service's start, on both backends: a table and a tournament are
//! committed with drand, the service stops before their round is out (its binders stop with
//! it), a new one starts over the same database, and both rounds get bound with no deal or
//! board generation asking for them; the index of commitments awaiting a round is empty then.

use std::time::Duration;

use fairdeal_commitment::pending::pending_store;

use crate::drand::{beacons, create, drand_with_margin, randomness, table};
use crate::drand_tournament::{commit, tournament, tournament_until};
use crate::harness::{Db, TestApp};

/// Rounds (seconds, on the 1 s test chain) between the commit and the round: room for the
/// restart to happen before it.
const MARGIN: u64 = 8;

async fn binders_restarted_at_start(db: Db) {
    let b = beacons(1).await;
    let mut app = TestApp::spawn_with(db, Some(drand_with_margin(&b, MARGIN))).await;
    let created = create(&mut app, "").await;
    let committed = commit(&mut app, "dix", "").await.unwrap();
    assert_ne!(created.drand_round, 0);
    assert_ne!(committed.drand_round, 0);
    let pending = pending_store(app.storage().db());
    assert_eq!(pending.list().await.unwrap().len(), 2);

    // Stopped (its binders with it) before either round is out, then started again.
    let mut app = app.restart(Some(drand_with_margin(&b, MARGIN))).await;
    let schedule = b[0].chain().info().schedule;
    let first_due = schedule
        .round_time(created.drand_round.min(committed.drand_round))
        .unwrap();
    let now = fairdeal_harness::drand::unix_now();
    assert!(
        now < first_due,
        "the restart took until the round ({now} >= {first_due}): raise MARGIN"
    );
    // Not bound by the first process: its binders slept until the rounds' time.
    assert!(
        table(&mut app, &created.table_id)
            .await
            .delayed_value
            .is_empty()
    );
    assert!(
        tournament(&mut app, &committed.tournament_id)
            .await
            .delayed_value
            .is_empty()
    );

    // Bound by the new process's binders, with no deal or generation asking.
    let bound = tournament_until(&mut app, &committed.tournament_id, 30, |t| {
        !t.delayed_value.is_empty()
    })
    .await;
    assert_eq!(bound.drand_bound_round, committed.drand_round);
    assert_eq!(
        bound.delayed_value,
        randomness(&b[0], committed.drand_round)
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let bound_table = loop {
        let t = table(&mut app, &created.table_id).await;
        if !t.delayed_value.is_empty() {
            break t;
        }
        assert!(tokio::time::Instant::now() < deadline, "never bound: {t:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(bound_table.drand_bound_round, created.drand_round);
    assert_eq!(
        bound_table.delayed_value,
        randomness(&b[0], created.drand_round)
    );
    assert!(bound_table.client_seed.is_empty(), "no deal was made");

    // Nothing left to bind: the index is emptied by the binders.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !pending.list().await.unwrap().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "still listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A start with nothing pending restarts nothing and binds nothing twice.
    let mut app = app.restart(Some(drand_with_margin(&b, MARGIN))).await;
    let again = tournament(&mut app, &committed.tournament_id).await;
    assert_eq!(again.delayed_value, bound.delayed_value);
    app.stop().await;
}

#[tokio::test]
async fn drand_binders_restarted_at_start_sqlite() {
    binders_restarted_at_start(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_binders_restarted_at_start_postgres() {
    binders_restarted_at_start(Db::Postgres).await;
}
