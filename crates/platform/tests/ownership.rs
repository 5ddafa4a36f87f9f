//! Partition leases on a real PostgreSQL: one owner at a time, a takeover only after the
//! lease expires (or is released) and at a higher epoch, a stale owner fenced out of its
//! writes, and a takeover waiting for a write already past its fence.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use fairdeal_db::{DatabaseUrl, Db, Schema};
use fairdeal_event::{NewEvent, StreamId};
use fairdeal_eventstore::{AppendRequest, EventStore, ExpectedVersion, PgEventStore, StoreError};
use fairdeal_platform::ownership::{
    Keeper, Lease, LeaseError, Leases, MIGRATIONS, Owned, partition_of,
};
use fairdeal_testkit::TestDatabase;
use sqlx::PgPool;
use uuid::Uuid;

struct Fixture {
    database: TestDatabase,
    pool: PgPool,
    schema: Schema,
}

async fn fixture() -> Fixture {
    let database = TestDatabase::create().await.unwrap();
    let schema = Schema::new("tables").unwrap();
    let url: DatabaseUrl = database.url().parse().unwrap();
    let db = Db::open(&url, &schema).await.unwrap();
    db.migrate(&MIGRATIONS).await.unwrap();
    let Db::Postgres { pool, .. } = db else {
        panic!("a PostgreSQL URL opens PostgreSQL");
    };
    Fixture {
        database,
        pool,
        schema,
    }
}

impl Fixture {
    fn owner(&self, name: &str, ttl: Duration) -> Leases {
        Leases::new(self.pool.clone(), &self.schema, name, ttl)
            .serving_at(format!("http://{name}:50051"))
    }

    async fn done(self) {
        self.pool.close().await;
        self.database.drop().await.unwrap();
    }
}

#[tokio::test]
async fn one_owner_at_a_time_and_a_takeover_raises_the_epoch_and_fences_the_old_owner() {
    let f = fixture().await;
    let a = f.owner("replica-a", Duration::from_millis(400));
    let b = f.owner("replica-b", Duration::from_secs(30));

    let held = a
        .acquire(7)
        .await
        .unwrap()
        .expect("a free partition is taken");
    assert_eq!(
        (held.partition, held.owner.as_str(), held.epoch),
        (7, "replica-a", 1)
    );
    assert_eq!(
        b.acquire(7).await.unwrap(),
        None,
        "a running lease is another's"
    );
    // Renewing keeps the epoch; acquiring again as the holder renews too.
    let renewed = a.renew(&held).await.unwrap();
    assert_eq!(renewed.epoch, 1);
    assert!(renewed.expires_at_ms >= held.expires_at_ms);
    assert_eq!(a.acquire(7).await.unwrap().map(|l| l.epoch), Some(1));
    let mut tx = f.pool.begin().await.unwrap();
    a.fence(&mut tx, &held).await.unwrap();
    tx.commit().await.unwrap();

    // A's lease runs out: B takes the partition at a higher epoch, and A is fenced out.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let taken = b
        .acquire(7)
        .await
        .unwrap()
        .expect("an expired lease is taken over");
    assert_eq!((taken.owner.as_str(), taken.epoch), ("replica-b", 2));
    let mut tx = f.pool.begin().await.unwrap();
    let fenced = a.fence(&mut tx, &held).await.unwrap_err();
    assert!(
        matches!(
            fenced,
            LeaseError::Fenced {
                partition: 7,
                epoch: 1
            }
        ),
        "{fenced}"
    );
    tx.rollback().await.unwrap();
    assert!(matches!(
        a.renew(&held).await,
        Err(LeaseError::Fenced { .. })
    ));
    assert!(
        !a.release(&held).await.unwrap(),
        "nothing of A's to release"
    );

    // A drain: B releases, A takes it back at once, at epoch 3.
    assert!(b.release(&taken).await.unwrap());
    let back = a
        .acquire(7)
        .await
        .unwrap()
        .expect("a released partition is free");
    assert_eq!(back.epoch, 3);
    let all = a.all().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!((all[0].owner.as_str(), all[0].epoch), ("replica-a", 3));
    f.done().await;
}

#[tokio::test]
async fn a_takeover_waits_for_a_write_already_past_its_fence() {
    let f = fixture().await;
    let a = f.owner("replica-a", Duration::from_millis(300));
    let b = f.owner("replica-b", Duration::from_secs(30));
    let held = a.acquire(1).await.unwrap().unwrap();

    // A's write passes its fence and holds its transaction open past the lease's expiry.
    let mut tx = f.pool.begin().await.unwrap();
    a.fence(&mut tx, &held).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let takeover = tokio::spawn(async move { b.acquire(1).await });
    // The takeover's statement waits on the row lock the fence holds (seen by the server).
    let waiting = "SELECT count(*) FROM pg_stat_activity \
                   WHERE datname = current_database() AND wait_event_type = 'Lock'";
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while sqlx::query_scalar::<_, i64>(waiting)
        .fetch_one(&f.pool)
        .await
        .unwrap()
        == 0
    {
        assert!(
            tokio::time::Instant::now() < until,
            "the takeover never waited on the lock"
        );
        tokio::task::yield_now().await;
    }
    assert!(
        !takeover.is_finished(),
        "the takeover waits for the write that passed the fence"
    );
    tx.commit().await.unwrap();
    let taken = takeover
        .await
        .unwrap()
        .unwrap()
        .expect("then it takes over");
    assert_eq!(taken.epoch, 2);

    // From then on A is fenced.
    let mut tx = f.pool.begin().await.unwrap();
    assert!(a.fence(&mut tx, &held).await.is_err());
    tx.rollback().await.unwrap();
    f.done().await;
}

#[tokio::test]
async fn a_stale_owners_append_fails_and_writes_nothing_and_the_new_owners_goes_on() {
    let f = fixture().await;
    let store = PgEventStore::new(f.pool.clone(), f.schema.as_str()).unwrap();
    store.migrate().await.unwrap();
    let table = Uuid::now_v7();
    let stream = StreamId::of("table", table).unwrap();
    let partition = partition_of(&table, 16);
    let a = f.owner("replica-a", Duration::from_millis(300));
    let b = f.owner("replica-b", Duration::from_secs(30));
    let event = |n: u8| NewEvent::new("test.v1.Moved", vec![n]);

    let held_a = a.acquire(partition).await.unwrap().unwrap();
    let appended = store
        .append_fenced(
            &stream,
            ExpectedVersion::Exact(0),
            vec![event(1)],
            &held_a.fence(),
        )
        .await
        .unwrap();
    assert_eq!(appended.version, 1);

    tokio::time::sleep(Duration::from_millis(500)).await;
    // Expired and not yet taken: fenced already (the database's clock judges).
    let expired = store
        .append_fenced(
            &stream,
            ExpectedVersion::Exact(1),
            vec![event(9)],
            &held_a.fence(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(expired, StoreError::Fenced { partition: p, .. } if p == partition),
        "{expired}"
    );
    let held_b = b.acquire(partition).await.unwrap().unwrap();
    // A still believes it owns the table and its expected version is right: fenced anyway.
    let stale = store
        .append_fenced(
            &stream,
            ExpectedVersion::Exact(1),
            vec![event(2)],
            &held_a.fence(),
        )
        .await
        .unwrap_err();
    assert!(matches!(stale, StoreError::Fenced { .. }), "{stale}");
    assert_eq!(store.read_stream(&stream, 1, 10).await.unwrap().len(), 1);
    // The new owner goes on from where the stream stands.
    let appended = store
        .append_fenced(
            &stream,
            ExpectedVersion::Exact(1),
            vec![event(3)],
            &held_b.fence(),
        )
        .await
        .unwrap();
    assert_eq!(appended.version, 2);
    let stored = store.read_stream(&stream, 1, 10).await.unwrap();
    assert_eq!(
        stored.iter().map(|e| e.payload.clone()).collect::<Vec<_>>(),
        [vec![1], vec![3]]
    );
    // A fence naming the right owner at an older epoch is refused too: a lease taken back
    // after it expired is a new lease.
    b.release(&held_b).await.unwrap();
    let again_a = a.acquire(partition).await.unwrap().unwrap();
    assert!(again_a.epoch > held_a.epoch);
    let old_epoch = store
        .append_fenced(
            &stream,
            ExpectedVersion::Exact(2),
            vec![event(4)],
            &held_a.fence(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(old_epoch, StoreError::Fenced { .. }),
        "{old_epoch}"
    );
    store
        .append_fenced(
            &stream,
            ExpectedVersion::Exact(2),
            vec![event(5)],
            &again_a.fence(),
        )
        .await
        .unwrap();
    f.done().await;
}

/// A group commit holding appends under several fences, one of them lost: only the appends
/// of the lost lease fail; the others are written, each with its own answer, whether the
/// batch is written at once or concurrent callers are gathered by the store.
#[tokio::test]
async fn a_group_commit_fails_only_the_appends_of_a_lost_lease() {
    let f = fixture().await;
    let store = PgEventStore::new(f.pool.clone(), f.schema.as_str()).unwrap();
    store.migrate().await.unwrap();
    let a = f.owner("replica-a", Duration::from_secs(30));
    let b = f.owner("replica-b", Duration::from_secs(30));
    let held = a.acquire(1).await.unwrap().unwrap();
    let lost = a.acquire(2).await.unwrap().unwrap();
    a.release(&lost).await.unwrap();
    let taken = b.acquire(2).await.unwrap().unwrap();
    let event = |n: u8| NewEvent::new("test.v1.Moved", vec![n]);
    let stream = |n: u32| StreamId::of("table", format!("t{n}")).unwrap();
    let request = |n: u32, fence: &Lease| AppendRequest {
        stream_id: stream(n),
        expected: ExpectedVersion::NoStream,
        events: vec![event(u8::try_from(n).unwrap())],
        fence: Some(fence.fence()),
    };

    // One batch, written now.
    let results = store
        .append_batch(vec![
            request(1, &held),
            request(2, &lost),
            request(3, &held),
            request(4, &taken),
        ])
        .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert!(
        matches!(&results[1], Err(StoreError::Fenced { partition: 2, .. })),
        "{:?}",
        results[1]
    );
    assert!(results[2].is_ok() && results[3].is_ok(), "{results:?}");
    for (n, written) in [(1, 1), (2, 0), (3, 1), (4, 1)] {
        assert_eq!(store.stream_version(&stream(n)).await.unwrap(), written);
    }

    // Many callers at once through the store's own group commit.
    let mut calls = tokio::task::JoinSet::new();
    for n in 10..50u32 {
        let store = store.clone();
        let fence = if n % 3 == 0 {
            lost.fence()
        } else {
            held.fence()
        };
        let stream = stream(n);
        let events = vec![event(u8::try_from(n).unwrap())];
        calls.spawn(async move {
            let result = store
                .append_fenced(&stream, ExpectedVersion::NoStream, events, &fence)
                .await;
            (n, result)
        });
    }
    for (n, result) in calls.join_all().await {
        if n % 3 == 0 {
            assert!(
                matches!(result, Err(StoreError::Fenced { .. })),
                "{n}: {result:?}"
            );
            assert_eq!(store.stream_version(&stream(n)).await.unwrap(), 0);
        } else {
            assert_eq!(result.unwrap().version, 1, "{n}");
        }
    }
    f.done().await;
}

/// Every partition of `0..partitions` held by exactly one of `holdings`.
fn disjoint_and_covering(holdings: &[&Owned], partitions: u32) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    for held in holdings {
        for partition in held.keys() {
            if !seen.insert(*partition) {
                return false;
            }
        }
    }
    seen.len() == partitions as usize
}

#[tokio::test]
async fn keepers_share_the_partitions_hand_them_to_a_newcomer_take_a_dead_ones_and_drain() {
    let f = fixture().await;
    // Long enough that a round of every keeper never outlasts it, even on a loaded machine.
    let ttl = Duration::from_secs(2);
    let a = Keeper::new(f.owner("replica-a", ttl), 8);
    let b = Keeper::new(f.owner("replica-b", ttl), 8);
    // Rounds until the keepers' holdings settle (each round: every keeper ticks once).
    async fn settle(keepers: &[&Keeper]) -> Vec<Owned> {
        let mut last = Vec::new();
        for _ in 0..6 {
            last.clear();
            for k in keepers {
                last.push(k.tick().await.unwrap());
            }
        }
        last
    }

    // A alone takes everything; B's heartbeat makes A drain half to it.
    let held = settle(&[&a]).await;
    assert_eq!(held[0].len(), 8);
    let held = settle(&[&a, &b]).await;
    assert_eq!((held[0].len(), held[1].len()), (4, 4));
    assert!(disjoint_and_covering(&[&held[0], &held[1]], 8));
    assert_eq!(
        *a.owned().borrow(),
        held[0],
        "what a keeper holds is published"
    );
    // Each keeper's routes name every partition's holder, wherever it is.
    for keeper in [&a, &b] {
        let routes = keeper.routes().borrow().clone();
        assert_eq!(routes.len(), 8, "{routes:?}");
        for (partition, route) in &routes {
            let holder = if held[0].contains_key(partition) {
                "replica-a"
            } else {
                "replica-b"
            };
            assert_eq!(route.owner, holder);
            assert_eq!(route.address, format!("http://{holder}:50051"));
        }
    }

    // A third joins: 3, 3 and 2.
    let c = Keeper::new(f.owner("replica-c", ttl), 8);
    let held = settle(&[&a, &b, &c]).await;
    let mut sizes: Vec<usize> = held.iter().map(Owned::len).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [2, 3, 3]);
    assert!(disjoint_and_covering(&[&held[0], &held[1], &held[2]], 8));

    // C dies (no drain): once its heartbeat and leases expire, A and B take its partitions,
    // each at a higher epoch than C held.
    let dead = held[2].clone();
    let kept = (held[0].clone(), held[1].clone());
    let until = tokio::time::Instant::now() + ttl + Duration::from_millis(200);
    while tokio::time::Instant::now() < until {
        a.tick().await.unwrap();
        b.tick().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held = settle(&[&a, &b]).await;
    // The survivors kept what they held, at the same epochs (renewed, never lost).
    for (partition, lease) in kept.0.iter().chain(&kept.1) {
        let now = held[0]
            .get(partition)
            .or_else(|| held[1].get(partition))
            .unwrap();
        assert_eq!(
            (now.owner.as_str(), now.epoch),
            (lease.owner.as_str(), lease.epoch)
        );
    }
    assert_eq!((held[0].len(), held[1].len()), (4, 4));
    assert!(disjoint_and_covering(&[&held[0], &held[1]], 8));
    for (partition, lease) in &dead {
        let now = held[0]
            .get(partition)
            .or_else(|| held[1].get(partition))
            .unwrap();
        assert!(now.epoch > lease.epoch);
    }

    // B drains on shutdown: it leaves and releases at once, and A takes everything on its
    // next rounds without waiting for B's leases to expire.
    let stop = tokio_util::sync::CancellationToken::new();
    let b_owned = b.owned();
    let running = tokio::spawn(b.run(Duration::from_secs(60), stop.clone()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.cancel();
    running.await.unwrap();
    assert!(b_owned.borrow().is_empty());
    let held = settle(&[&a]).await;
    assert_eq!(held[0].len(), 8);
    f.done().await;
}

#[tokio::test]
async fn a_keeper_cut_off_from_the_database_gives_up_its_partitions_once_a_ttl_has_passed() {
    let f = fixture().await;
    let keeper = Keeper::new(f.owner("replica-a", Duration::from_millis(500)), 4);
    assert_eq!(keeper.tick().await.unwrap().len(), 4);
    // The database goes away: a round within the ttl keeps what is held...
    f.pool.close().await;
    assert!(keeper.tick().await.is_err());
    assert_eq!(keeper.owned().borrow().len(), 4);
    // ...one after it gives everything up: the leases may be another replica's by now.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(keeper.tick().await.is_err());
    assert!(keeper.owned().borrow().is_empty());
    f.done().await;
}

/// Nothing polls (issue 33): a keeper marks where each epoch it takes starts in the store,
/// after the takeover committed and before it publishes the partition; a projection that
/// reaches an event written under an earlier epoch, after the new owner loaded its rows,
/// wakes that owner on commit, and only for such events.
#[tokio::test]
async fn a_takeover_marks_where_its_epoch_starts_and_a_late_projection_wakes_the_new_owner() {
    use fairdeal_platform::Shutdown;
    use fairdeal_platform::ownership::{Wake, Waking, Woken};

    let f = fixture().await;
    let store = PgEventStore::new(f.pool.clone(), f.schema.as_str()).unwrap();
    store.migrate().await.unwrap();
    let store: std::sync::Arc<dyn EventStore> = std::sync::Arc::new(store);
    let partitions = 2;
    let table_in = |partition: u32| loop {
        let id = Uuid::now_v7();
        if partition_of(&id, partitions) == partition {
            return id;
        }
    };
    let (early, late) = (table_in(0), table_in(0));
    let event = |n: u8| NewEvent::new("test.v1.Moved", vec![n]);
    let append = async |table: Uuid, fence: &fairdeal_eventstore::Fence| {
        store
            .append_fenced(
                &StreamId::of("table", table).unwrap(),
                ExpectedVersion::Any,
                vec![event(1)],
                fence,
            )
            .await
            .unwrap()
            .events[0]
            .position
    };

    let a = Keeper::new(f.owner("replica-a", Duration::from_millis(300)), partitions)
        .marking_starts(store.clone());
    let held = a.tick().await.unwrap();
    let start_a = since(&f, 0).await.expect("marked when taken");
    let written_by_a = append(early, &held[&0].fence()).await;
    assert!(written_by_a > start_a);

    // A dies (no more rounds); B takes its partitions once the leases expire.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let b = Keeper::new(f.owner("replica-b", Duration::from_secs(30)), partitions)
        .marking_starts(store.clone());
    let held = b.tick().await.unwrap();
    assert_eq!(held.len(), 2);
    let start_b = since(&f, 0).await.expect("marked when taken");
    assert!(start_b >= written_by_a, "{start_b} < {written_by_a}");
    let written_by_b = append(late, &held[&0].fence()).await;

    // The process's one listening connection: appends and owners' wake-ups.
    let (wakes, mut heard) = tokio::sync::broadcast::channel(16);
    let shutdown = Shutdown::new();
    fairdeal_platform::wake::spawn_listener(
        f.pool.clone(),
        f.schema.clone(),
        hearers(wakes),
        &shutdown,
    );
    let next = async |heard: &mut tokio::sync::broadcast::Receiver<Woken>| {
        tokio::time::timeout(Duration::from_secs(2), heard.recv())
            .await
            .ok()
            .and_then(Result::ok)
    };
    assert_eq!(next(&mut heard).await, Some(Woken::Missed), "first, a load");

    let wake = Wake::new(&f.schema, partitions);
    let rows = [(early, written_by_a), (late, written_by_b)];
    // Rolled back: nobody is woken.
    let mut conn = f.pool.begin().await.unwrap();
    assert_eq!((*conn).wake_owners(&wake, &rows).await.unwrap(), 1);
    conn.rollback().await.unwrap();
    // Committed: the owner hears of the event A wrote, not of B's own.
    let mut conn = f.pool.begin().await.unwrap();
    assert_eq!((*conn).wake_owners(&wake, &rows).await.unwrap(), 1);
    conn.commit().await.unwrap();
    assert_eq!(next(&mut heard).await, Some(Woken::Aggregate(early)));
    assert_eq!(next(&mut heard).await, None);

    // A renewal keeps the mark.
    b.tick().await.unwrap();
    assert_eq!(since(&f, 0).await, Some(start_b));
    shutdown.trigger();
    shutdown.stop_background();
    f.done().await;
}

/// Partition `partition`'s epoch start, as recorded.
async fn since(f: &Fixture, partition: i32) -> Option<u64> {
    let sql = format!(
        "SELECT since_position FROM {}.partition_leases WHERE partition = $1",
        f.schema.quoted()
    );
    let since: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(partition)
        .fetch_one(&f.pool)
        .await
        .unwrap();
    since.map(|s| u64::try_from(s).unwrap())
}

/// What a listener tells, wake-ups to `wakes`.
fn hearers(
    wakes: tokio::sync::broadcast::Sender<fairdeal_platform::ownership::Woken>,
) -> fairdeal_platform::wake::Hearers {
    fairdeal_platform::wake::Hearers {
        appends: fairdeal_bus::AppendSignal::new(),
        owner_wakes: wakes,
        lease_changes: std::sync::Arc::new(tokio::sync::watch::Sender::new(0)),
    }
}

/// Waits until `what` holds of `watched`'s value; false after `within`.
async fn until<T>(
    watched: &mut tokio::sync::watch::Receiver<T>,
    within: Duration,
    what: impl FnMut(&T) -> bool,
) -> bool {
    tokio::time::timeout(within, watched.wait_for(what))
        .await
        .is_ok_and(|seen| seen.is_ok())
}

/// Nothing polls (issue 33): a keeper that joins, takes or gives up partitions announces it,
/// and a running keeper hearing that runs a round at once. Here the keepers' own rounds are
/// a minute apart, so everything they do within seconds they do because they heard each
/// other: A drains half to B when B joins, B takes them when A announces the drain, A's
/// routes name B's partitions when B announces its takeover, and A takes everything back
/// when B drains.
#[tokio::test]
async fn a_keeper_hears_the_others_join_take_and_drain_and_answers_at_once() {
    use fairdeal_platform::Shutdown;

    let f = fixture().await;
    let (ttl, every) = (Duration::from_secs(90), Duration::from_secs(60));
    let within = Duration::from_secs(10);
    let hearers = hearers(tokio::sync::broadcast::channel(16).0);
    let shutdown = Shutdown::new();
    fairdeal_platform::wake::spawn_listener(
        f.pool.clone(),
        f.schema.clone(),
        hearers.clone(),
        &shutdown,
    );
    let keeper =
        |name: &str| Keeper::new(f.owner(name, ttl), 8).hearing(hearers.lease_changes.subscribe());
    let a = keeper("replica-a");
    let (mut a_owned, mut a_routes) = (a.owned(), a.routes());
    let stop_a = tokio_util::sync::CancellationToken::new();
    let running_a = tokio::spawn(a.run(every, stop_a.clone()));
    assert!(until(&mut a_owned, within, |held| held.len() == 8).await);

    // B joins: its first round takes nothing (A holds all) and announces it.
    let b = keeper("replica-b");
    let mut b_owned = b.owned();
    let stop_b = tokio_util::sync::CancellationToken::new();
    let running_b = tokio::spawn(b.run(every, stop_b.clone()));
    assert!(
        until(&mut b_owned, within, |held| held.len() == 4).await,
        "A drained half to B on hearing it join, and B took it on hearing the drain"
    );
    assert!(
        until(&mut a_routes, within, |routes| {
            routes.len() == 8 && routes.values().filter(|r| r.owner == "replica-b").count() == 4
        })
        .await,
        "A routes to B once B announced its takeover"
    );
    let held = [a_owned.borrow().clone(), b_owned.borrow().clone()];
    assert!(disjoint_and_covering(&[&held[0], &held[1]], 8));

    // B drains: it leaves, releases and announces; A takes everything without waiting for
    // B's leases to expire or for its own next round.
    stop_b.cancel();
    running_b.await.unwrap();
    assert!(
        until(&mut a_owned, within, |held| held.len() == 8).await,
        "A took B's partitions on hearing it drain"
    );
    stop_a.cancel();
    running_a.await.unwrap();
    shutdown.trigger();
    shutdown.stop_background();
    f.done().await;
}
