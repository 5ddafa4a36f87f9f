//! The layer over a plain tower service: what reaches the service, what is refused.
// Test helpers outside #[test] functions may unwrap too: a failure is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fairdeal_authn::{
    AuthLayer, Authenticator, AuthenticatorOptions, Caller, Claims, Clock, KeyId, KeySet,
    ManualClock, SigningKey, StaticKeySource,
};
use tower::{Service, ServiceExt};

/// Answers 200 with the caller it found in the extensions as a header.
fn echo_caller()
-> impl Service<http::Request<()>, Response = http::Response<String>, Error = Infallible, Future: Send>
+ Clone
+ Send
+ 'static {
    tower::service_fn(|req: http::Request<()>| async move {
        let caller = req
            .extensions()
            .get::<Caller>()
            .map(|c| format!("{c:?}"))
            .unwrap_or_default();
        Ok::<_, Infallible>(http::Response::new(caller))
    })
}

fn request(path: &str, token: Option<&str>) -> http::Request<()> {
    let mut b = http::Request::builder().uri(path);
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    b.body(()).unwrap()
}

fn grpc_status(resp: &http::Response<String>) -> Option<String> {
    resp.headers()
        .get("grpc-status")
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn layer_puts_the_caller_in_extensions_and_refuses_the_rest() {
    let key = SigningKey::from_secret(KeyId::parse("k").unwrap(), &[5u8; 32]);
    let clock = Arc::new(ManualClock::new(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
    ));
    let authn = Authenticator::new(
        Arc::new(StaticKeySource::new(KeySet::new([key.public_key()]))),
        AuthenticatorOptions {
            clock: clock.clone(),
            leeway: Duration::ZERO,
            ..Default::default()
        },
    );
    let svc = AuthLayer::new(authn)
        .allow_anonymous("/pkg.Svc/Public")
        .wrap(echo_caller());
    let user = uuid::Uuid::now_v7();
    let token = key
        .sign(&Claims::player(user, clock.unix_seconds(), 60))
        .unwrap();

    let ok = svc
        .clone()
        .oneshot(request("/pkg.Svc/M", Some(token.as_str())))
        .await
        .unwrap();
    assert_eq!(grpc_status(&ok), None);
    assert_eq!(ok.body(), &format!("{:?}", Caller::Player(user)));

    let missing = svc
        .clone()
        .oneshot(request("/pkg.Svc/M", None))
        .await
        .unwrap();
    assert_eq!(
        grpc_status(&missing).as_deref(),
        Some("16"),
        "UNAUTHENTICATED"
    );

    let public = svc
        .clone()
        .oneshot(request("/pkg.Svc/Public", None))
        .await
        .unwrap();
    assert_eq!(grpc_status(&public), None);
    assert_eq!(public.body(), "");

    clock.advance(Duration::from_secs(60));
    let expired = svc
        .clone()
        .oneshot(request("/pkg.Svc/M", Some(token.as_str())))
        .await
        .unwrap();
    assert_eq!(grpc_status(&expired).as_deref(), Some("16"));
}
