//! Brute force: indistinguishable failures, lockout and recovery, shared limits.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_authn::ManualClock;
use fairdeal_proto::fairdeal::auth::v1 as pb;
use tonic::Code;

use crate::helpers::*;
use crate::on_both_backends;

async fn wrong_password_and_unknown_user_look_the_same(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let (_, username, _) = app.confirmed_user().await;
    let wrong = app
        .login(&username, "not the password at all")
        .await
        .unwrap_err();
    let unknown = app
        .login(&unique_name(), "not the password at all")
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), Code::Unauthenticated);
    assert_eq!(
        (wrong.code(), wrong.message()),
        (unknown.code(), unknown.message())
    );
    assert_eq!(wrong.message(), "access denied");
    let keys = |s: &tonic::Status| {
        let mut k: Vec<String> = s.metadata().keys().map(|k| format!("{k:?}")).collect();
        k.sort();
        k
    };
    assert_eq!(keys(&wrong), keys(&unknown));
}
on_both_backends!(
    indistinguishable,
    wrong_password_and_unknown_user_look_the_same
);

async fn lockout_after_failures_then_recovery(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let (_, username, _) = app.confirmed_user().await;
    for _ in 0..5 {
        assert_eq!(
            app.login(&username, "wrong password!!")
                .await
                .unwrap_err()
                .code(),
            Code::Unauthenticated
        );
    }
    // Locked: even the right password is refused, with a retry-after.
    let locked = app.login(&username, PASSWORD).await.unwrap_err();
    assert_eq!(locked.code(), Code::ResourceExhausted);
    assert_eq!(
        locked
            .metadata()
            .get("retry-after")
            .unwrap()
            .to_str()
            .unwrap(),
        "60"
    );
    // Unknown users are limited the same way (the limiter says nothing about existence).
    let ghost = unique_name();
    for _ in 0..5 {
        app.login(&ghost, "wrong password!!").await.unwrap_err();
    }
    assert_eq!(
        app.login(&ghost, "wrong password!!")
            .await
            .unwrap_err()
            .code(),
        Code::ResourceExhausted
    );

    app.advance(Duration::from_secs(61));
    app.login(&username, PASSWORD).await.unwrap();

    // After the success the count starts over; a second lockout doubles.
    for _ in 0..5 {
        app.login(&username, "wrong password!!").await.unwrap_err();
    }
    app.advance(Duration::from_secs(61));
    for _ in 0..5 {
        app.login(&username, "wrong password!!").await.unwrap_err();
    }
    let locked = app.login(&username, PASSWORD).await.unwrap_err();
    assert_eq!(
        locked
            .metadata()
            .get("retry-after")
            .unwrap()
            .to_str()
            .unwrap(),
        "120"
    );
}
on_both_backends!(lockout, lockout_after_failures_then_recovery);

/// A burst of concurrent guesses cannot all pass the lock check before the first failure
/// is counted: attempts in flight use up the failures left, so exactly five are checked.
async fn a_burst_of_guesses_gets_five_checks(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let (_, username, _) = app.confirmed_user().await;
    let guesses: Vec<_> = (0..16)
        .map(|_| {
            let mut client = app.client.clone();
            let username = username.clone();
            tokio::spawn(async move {
                client
                    .login(pb::LoginRequest {
                        username,
                        password: "wrong password!!".into(),
                    })
                    .await
                    .unwrap_err()
                    .code()
            })
        })
        .collect();
    let mut checked = 0;
    for guess in guesses {
        match guess.await.unwrap() {
            Code::Unauthenticated => checked += 1,
            Code::ResourceExhausted => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(checked, 5, "one check per failure left");
}
on_both_backends!(burst, a_burst_of_guesses_gets_five_checks);

/// Two replicas on one database and one Redis: failures through either count together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_the_limit() {
    let res = Resources::new(Backend::Real).await;
    let clock = Arc::new(ManualClock::starting_now());
    let mut a = spawn_with(&res, clock.clone(), &[]).await;
    let mut b = spawn_with(&res, clock.clone(), &[]).await;
    let (_, username, _) = a.confirmed_user().await;
    for i in 0..5 {
        let replica = if i % 2 == 0 { &mut a } else { &mut b };
        assert_eq!(
            replica
                .login(&username, "wrong password!!")
                .await
                .unwrap_err()
                .code(),
            Code::Unauthenticated
        );
    }
    assert_eq!(
        a.login(&username, PASSWORD).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    assert_eq!(
        b.login(&username, PASSWORD).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    clock.advance(Duration::from_secs(61));
    b.login(&username, PASSWORD).await.unwrap();
    // And tokens from one replica refresh on the other (shared keys and families).
    let tokens = a.login(&username, PASSWORD).await.unwrap();
    b.refresh(&tokens.refresh_token).await.unwrap();
}
