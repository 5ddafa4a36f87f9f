//! Other services' view: a gRPC service guarded by `fairdeal_authn::AuthLayer`, verifying the
//! auth service's tokens with keys fetched from its `GetPublicKeys`.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_authn::{
    AccessToken, AuthLayer, Authenticator, AuthenticatorOptions, Claims, Clock, GrpcKeySource,
    KeyId, ManualClock, SigningKey, attach_bearer,
};
use fairdeal_proto::fairdeal::auth::v1 as pb;
use sha2::Digest;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::helpers::*;

/// Serves the standard health service behind an `AuthLayer` on port 0; returns its client.
async fn guarded_service(
    auth_endpoint: &str,
    clock: Arc<ManualClock>,
) -> HealthClient<tonic::transport::Channel> {
    let source = Arc::new(GrpcKeySource::lazy(auth_endpoint).unwrap());
    let authn = Authenticator::new(
        source,
        AuthenticatorOptions {
            clock,
            leeway: Duration::ZERO,
            ..Default::default()
        },
    );
    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(AuthLayer::new(authn).wrap(health))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    HealthClient::new(channel)
}

async fn check(
    client: &mut HealthClient<tonic::transport::Channel>,
    token: Option<&str>,
) -> Result<(), tonic::Status> {
    let mut request = tonic::Request::new(HealthCheckRequest {
        service: String::new(),
    });
    if let Some(t) = token {
        attach_bearer(&mut request, &AccessToken::new(t.to_owned())).unwrap();
    }
    client.check(request).await.map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_verified_locally_and_bad_ones_refused() {
    let res = Resources::new(Backend::Embedded).await;
    let clock = Arc::new(ManualClock::starting_now());
    let secret = "dealing-secret-0123456789abcdef0123456789";
    let credential = format!(
        "dealing:{}",
        hex::encode(sha2::Sha256::digest(secret.as_bytes()))
    );
    let mut app = spawn_with(&res, clock.clone(), &["--service-credentials", &credential]).await;
    let mut guarded = guarded_service(&app.endpoint, clock.clone()).await;
    let (_, username, _) = app.confirmed_user().await;
    let tokens = app.login(&username, PASSWORD).await.unwrap();

    assert_eq!(
        check(&mut guarded, None).await.unwrap_err().code(),
        Code::Unauthenticated,
        "missing"
    );
    check(&mut guarded, Some(&tokens.access_token))
        .await
        .unwrap();
    assert_eq!(
        check(&mut guarded, Some("not.a.token"))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated,
        "malformed"
    );

    // Tampered: one character of the payload changed.
    let mut parts: Vec<String> = tokens.access_token.split('.').map(str::to_owned).collect();
    let flipped = if parts[1].ends_with('A') { 'B' } else { 'A' };
    parts[1].pop();
    parts[1].push(flipped);
    assert_eq!(
        check(&mut guarded, Some(&parts.join(".")))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated,
        "tampered"
    );

    // Wrong key: a key the auth service never published, under a fresh id and under the
    // real key's id.
    let real_kid = tokens.access_token.split('.').next().map(|h| {
        use base64::Engine as _;
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(h)
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&header).unwrap()["kid"]
            .as_str()
            .unwrap()
            .to_owned()
    });
    let now = clock.unix_seconds();
    let user = uuid::Uuid::parse_str(&tokens.user_id).unwrap();
    for kid in [
        KeyId::generate().unwrap(),
        KeyId::parse(&real_kid.unwrap()).unwrap(),
    ] {
        let forged = SigningKey::from_secret(kid, &[42u8; 32])
            .sign(&Claims::player(user, now, 600))
            .unwrap();
        assert_eq!(
            check(&mut guarded, Some(forged.as_str()))
                .await
                .unwrap_err()
                .code(),
            Code::Unauthenticated,
            "wrong key"
        );
    }

    // A service token from the configured credential passes too; a wrong secret gets none.
    let service = app
        .client
        .issue_service_token(pb::IssueServiceTokenRequest {
            service_name: "dealing".into(),
            secret: secret.into(),
        })
        .await
        .unwrap()
        .into_inner();
    check(&mut guarded, Some(&service.access_token))
        .await
        .unwrap();
    let refused = app
        .client
        .issue_service_token(pb::IssueServiceTokenRequest {
            service_name: "dealing".into(),
            secret: b"guess".to_vec(),
        });
    assert_eq!(refused.await.unwrap_err().code(), Code::Unauthenticated);

    // Expired: 15 minutes later the same token is refused (the verifier shares the clock).
    clock.advance(Duration::from_secs(15 * 60));
    assert_eq!(
        check(&mut guarded, Some(&tokens.access_token))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated,
        "expired"
    );
    // A refreshed token works again.
    let fresh = app.refresh(&tokens.refresh_token).await.unwrap();
    check(&mut guarded, Some(&fresh.access_token))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_keys_are_served() {
    let res = Resources::new(Backend::Embedded).await;
    let mut app = spawn_app(&res).await;
    let keys = app
        .client
        .get_public_keys(pb::GetPublicKeysRequest {})
        .await
        .unwrap()
        .into_inner()
        .keys;
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].algorithm, "EdDSA");
    assert_eq!(keys[0].public_key.len(), 32);
}
