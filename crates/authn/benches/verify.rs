//! Token verifications per second: the bare Ed25519 signature check (baseline, same run), the
//! full parse-and-verify, the synchronous interceptor, and a request through [`AuthLayer`].
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::convert::Infallible;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ed25519_dalek::{Signer, Verifier};
use fairdeal_authn::{
    AccessToken, AuthLayer, Authenticator, AuthenticatorOptions, Claims, Clock, KeyId, KeySet,
    SigningKey, StaticKeySource, SystemClock, attach_bearer,
};
use tower::{Service, ServiceExt};

fn bench(c: &mut Criterion) {
    let key = SigningKey::from_secret(KeyId::parse("bench").unwrap(), &[9u8; 32]);
    let now = SystemClock.unix_seconds();
    let token = key
        .sign(&Claims::player(uuid::Uuid::now_v7(), now, 900))
        .unwrap();
    let keys = KeySet::new([key.public_key()]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let authn = Authenticator::new(
        Arc::new(StaticKeySource::new(keys.clone())),
        AuthenticatorOptions::default(),
    );
    runtime.block_on(authn.refresh()).unwrap();

    let mut group = c.benchmark_group("verify");
    group.throughput(Throughput::Elements(1));

    // Baseline: one strict Ed25519 verification of a message of the same length.
    let dalek = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let msg = vec![b'x'; token.as_str().len() - 87];
    let sig = dalek.sign(&msg);
    let vk = dalek.verifying_key();
    group.bench_function("ed25519_verify_baseline", |b| {
        b.iter(|| vk.verify(&msg, &sig).unwrap())
    });

    group.bench_function("keyset_verify", |b| {
        b.iter(|| keys.verify(token.as_str(), now, 30).unwrap())
    });

    let mut interceptor = authn.interceptor();
    let mut request = tonic::Request::new(());
    attach_bearer(&mut request, &token).unwrap();
    let metadata = request.metadata().clone();
    group.bench_function("interceptor", |b| {
        b.iter(|| {
            let req = tonic::Request::from_parts(metadata.clone(), Default::default(), ());
            interceptor(req).unwrap()
        })
    });

    let inner = tower::service_fn(|_req: http::Request<()>| async {
        Ok::<_, Infallible>(http::Response::new(()))
    });
    let svc = AuthLayer::new(authn.clone()).wrap(inner);
    let header = format!("Bearer {}", AccessToken::as_str(&token));
    group.bench_function("auth_layer_request", |b| {
        b.iter(|| {
            let req = http::Request::builder()
                .uri("/x.Y/Z")
                .header("authorization", &header)
                .body(())
                .unwrap();
            let mut svc = svc.clone();
            runtime.block_on(async { svc.ready().await.unwrap().call(req).await.unwrap() })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
