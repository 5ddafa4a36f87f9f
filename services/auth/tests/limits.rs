//! Conformance of the two limiters: the same scenario on the in-memory one and on Redis (a
//! unique key namespace per test, deleted at the end), and two Redis limiters (two replicas)
//! sharing one count.
// Test helpers outside #[test] functions may unwrap too: a failure is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_auth::domain::PENDING_TTL_SECS;
use fairdeal_auth::domain::{LockoutPolicy, RetryAfter};
use fairdeal_auth::limits::{
    AttemptLimiter, MemoryLimiter, Policies, RedisLimiter, Subject, redis::delete_namespace,
};
use uuid::Uuid;

/// The Redis server (`FAIRDEAL_TEST_REDIS_URL`).
fn redis() -> String {
    fairdeal_testkit::redis_url()
}

fn namespace() -> String {
    fairdeal_testkit::redis_namespace("limits")
}

/// Failures lock at the fifth, the lock doubles, time ends it, a quiet day resets the level,
/// success clears a username but not an address.
async fn scenario(limiter: &dyn AttemptLimiter) {
    let user = Subject::Username("carol".into());
    let addr = Subject::address("192.0.2.7".parse().unwrap());
    let t0 = 1_700_000_000;
    for i in 0..4 {
        assert_eq!(
            limiter
                .record_failure(&user, Uuid::now_v7(), t0 + i)
                .await
                .unwrap(),
            None
        );
    }
    assert_eq!(
        limiter
            .record_failure(&user, Uuid::now_v7(), t0 + 4)
            .await
            .unwrap(),
        Some(RetryAfter(60))
    );
    assert_eq!(
        limiter.check(&user, t0 + 30).await.unwrap(),
        Some(RetryAfter(34))
    );
    assert_eq!(limiter.check(&user, t0 + 64).await.unwrap(), None);
    for i in 0..5 {
        limiter
            .record_failure(&user, Uuid::now_v7(), t0 + 64 + i)
            .await
            .unwrap();
    }
    assert_eq!(
        limiter.check(&user, t0 + 68).await.unwrap(),
        Some(RetryAfter(120))
    );
    let next_day = t0 + 68 + LockoutPolicy::USERNAME.level_reset_secs;
    for i in 0..5 {
        limiter
            .record_failure(&user, Uuid::now_v7(), next_day + i)
            .await
            .unwrap();
    }
    assert_eq!(
        limiter.check(&user, next_day + 4).await.unwrap(),
        Some(RetryAfter(60)),
        "level was reset"
    );
    limiter
        .record_success(&user, Uuid::now_v7(), next_day + 100)
        .await
        .unwrap();
    assert_eq!(
        limiter.check(&user, next_day + 4).await.unwrap(),
        None,
        "success clears a username"
    );

    for _ in 0..30 {
        limiter
            .record_failure(&addr, Uuid::now_v7(), t0)
            .await
            .unwrap();
    }
    limiter
        .record_success(&addr, Uuid::now_v7(), t0)
        .await
        .unwrap();
    assert_eq!(
        limiter.check(&addr, t0).await.unwrap(),
        Some(RetryAfter(60)),
        "success keeps an address lock"
    );
    // An account deletion forgets its username's state, lock and all.
    for _ in 0..5 {
        limiter
            .record_failure(&user, Uuid::now_v7(), next_day + 200)
            .await
            .unwrap();
    }
    assert!(
        limiter
            .check(&user, next_day + 200)
            .await
            .unwrap()
            .is_some()
    );
    limiter.forget(&user).await.unwrap();
    assert_eq!(
        limiter.check(&user, next_day + 200).await.unwrap(),
        None,
        "a forgotten subject starts afresh"
    );
}

/// Attempts in flight use up the failures left: a burst cannot outrun the count.
async fn admission(limiter: &dyn AttemptLimiter) {
    let user = Subject::Username("erin".into());
    let t0 = 1_700_000_000;
    let ids: Vec<Uuid> = (0..8).map(|_| Uuid::now_v7()).collect();
    for id in &ids[..5] {
        assert_eq!(limiter.admit(&user, *id, t0).await.unwrap(), None);
    }
    assert_eq!(
        limiter.admit(&user, ids[5], t0).await.unwrap(),
        Some(RetryAfter(1)),
        "five in flight use up the five failures left"
    );
    // A released attempt frees its slot.
    limiter.release(&user, ids[0]).await.unwrap();
    assert_eq!(limiter.admit(&user, ids[5], t0).await.unwrap(), None);
    // Four of them fail: four failures, one still in flight, nothing left.
    for id in &ids[1..5] {
        assert_eq!(limiter.record_failure(&user, *id, t0).await.unwrap(), None);
    }
    assert_eq!(
        limiter.admit(&user, ids[6], t0).await.unwrap(),
        Some(RetryAfter(1))
    );
    // The last one fails too: locked.
    assert_eq!(
        limiter.record_failure(&user, ids[5], t0).await.unwrap(),
        Some(RetryAfter(60))
    );
    assert_eq!(
        limiter.admit(&user, ids[6], t0 + 10).await.unwrap(),
        Some(RetryAfter(50))
    );

    // An attempt never settled (its replica died) stops counting after the TTL.
    let frank = Subject::Username("frank".into());
    for _ in 0..5 {
        assert_eq!(
            limiter.admit(&frank, Uuid::now_v7(), t0).await.unwrap(),
            None
        );
    }
    assert_eq!(
        limiter
            .admit(&frank, Uuid::now_v7(), t0 + PENDING_TTL_SECS - 1)
            .await
            .unwrap(),
        Some(RetryAfter(1))
    );
    assert_eq!(
        limiter
            .admit(&frank, Uuid::now_v7(), t0 + PENDING_TTL_SECS)
            .await
            .unwrap(),
        None
    );

    // A success clears a username's failures but not the other attempts in flight.
    let gina = Subject::Username("gina".into());
    let first = Uuid::now_v7();
    limiter
        .record_failure(&gina, Uuid::now_v7(), t0)
        .await
        .unwrap();
    limiter.admit(&gina, first, t0).await.unwrap();
    limiter.admit(&gina, Uuid::now_v7(), t0).await.unwrap();
    limiter.record_success(&gina, first, t0).await.unwrap();
    for _ in 0..4 {
        assert_eq!(
            limiter.admit(&gina, Uuid::now_v7(), t0).await.unwrap(),
            None
        );
    }
    assert_eq!(
        limiter.admit(&gina, Uuid::now_v7(), t0).await.unwrap(),
        Some(RetryAfter(1))
    );
}

#[tokio::test]
async fn memory_limiter_follows_the_rules() {
    scenario(&MemoryLimiter::new(Policies::default())).await;
    admission(&MemoryLimiter::new(Policies::default())).await;
}

#[tokio::test]
async fn redis_limiter_admits_as_the_memory_one() {
    let ns = namespace();
    let limiter = RedisLimiter::connect(&redis(), &ns, Policies::default())
        .await
        .unwrap();
    admission(&limiter).await;
    delete_namespace(&redis(), &ns).await.unwrap();
}

/// A burst of concurrent attempts through two replicas: exactly as many are admitted as
/// the failures left, whatever the interleaving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_through_two_replicas_admits_only_the_failures_left() {
    let ns = namespace();
    let a = RedisLimiter::connect(&redis(), &ns, Policies::default())
        .await
        .unwrap();
    let b = RedisLimiter::connect(&redis(), &ns, Policies::default())
        .await
        .unwrap();
    let user = Subject::Username("hal".into());
    let now = 1_700_000_000;
    a.record_failure(&user, Uuid::now_v7(), now).await.unwrap();
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let limiter = if i % 2 == 0 { a.clone() } else { b.clone() };
            let user = user.clone();
            tokio::spawn(async move { limiter.admit(&user, Uuid::now_v7(), now).await.unwrap() })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        if task.await.unwrap().is_none() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 4);
    delete_namespace(&redis(), &ns).await.unwrap();
}

#[tokio::test]
async fn redis_limiter_follows_the_same_rules() {
    let ns = namespace();
    let limiter = RedisLimiter::connect(&redis(), &ns, Policies::default())
        .await
        .unwrap();
    scenario(&limiter).await;
    delete_namespace(&redis(), &ns).await.unwrap();
}

#[tokio::test]
async fn two_redis_replicas_share_one_count() {
    let ns = namespace();
    let a = RedisLimiter::connect(&redis(), &ns, Policies::default())
        .await
        .unwrap();
    let b = RedisLimiter::connect(&redis(), &ns, Policies::default())
        .await
        .unwrap();
    let user = Subject::Username("dave".into());
    let now = 1_700_000_000;
    // Concurrent failures through both replicas: the script is atomic, none is lost.
    let mut tasks = Vec::new();
    for i in 0..4 {
        let limiter = if i % 2 == 0 { a.clone() } else { b.clone() };
        let user = user.clone();
        tasks.push(tokio::spawn(async move {
            limiter
                .record_failure(&user, Uuid::now_v7(), now)
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), None);
    }
    assert_eq!(
        a.record_failure(&user, Uuid::now_v7(), now).await.unwrap(),
        Some(RetryAfter(60))
    );
    assert_eq!(b.check(&user, now).await.unwrap(), Some(RetryAfter(60)));
    delete_namespace(&redis(), &ns).await.unwrap();
}

/// The request quota's sliding window, the same on both adapters: `limit` requests per key
/// within the window, each leaving it `window` seconds after it was made.
async fn quota_scenario(quota: &dyn fairdeal_auth::limits::RequestQuota) {
    let t0 = 1_700_000_000;
    for i in 0..3 {
        assert!(quota.take("e:x", 3, t0 + i).await.unwrap());
    }
    assert!(!quota.take("e:x", 3, t0 + 10).await.unwrap());
    assert!(quota.take("a:192.0.2.1", 3, t0 + 10).await.unwrap());
    assert!(!quota.take("e:x", 3, t0 + 3599).await.unwrap());
    assert!(quota.take("e:x", 3, t0 + 3600).await.unwrap());
    assert!(!quota.take("e:x", 3, t0 + 3600).await.unwrap());
    assert!(quota.take("e:x", 3, t0 + 3601).await.unwrap());
}

#[tokio::test]
async fn memory_quota_conforms() {
    quota_scenario(&fairdeal_auth::limits::MemoryQuota::new(3600)).await;
}

#[tokio::test]
async fn redis_quota_conforms_and_replicas_share_it() {
    let ns = namespace();
    let a = fairdeal_auth::limits::RedisQuota::connect(&redis(), &ns, 3600)
        .await
        .unwrap();
    quota_scenario(&a).await;
    // Two replicas, concurrent requests: exactly `limit` are admitted.
    let b = fairdeal_auth::limits::RedisQuota::connect(&redis(), &ns, 3600)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let quota = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            use fairdeal_auth::limits::RequestQuota as _;
            quota.take("e:shared", 5, 1_700_000_000).await.unwrap()
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 5);
    delete_namespace(&redis(), &ns).await.unwrap();
}
