//! Logins per second at the OWASP Argon2id parameters (m = 19 MiB, t = 2, p = 1).
//!
//! - `argon2id_raw`: the argon2 crate hashing one password into 32 bytes, nothing else: the
//!   baseline measured in the same run.
//! - `verify_known_user` / `verify_unknown_user`: the login's password check for an existing
//!   account and for an unknown name (checked against the dummy hash). Their ratio is the
//!   timing difference an attacker could use to enumerate accounts: it should be ~1.
//! - `login_embedded`: the whole use case (limits, lookup, verification, refresh family,
//!   event append, token signing) on the embedded default (SQLite file, in-memory limits).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fairdeal_auth::domain::{HashParams, Password, PasswordHasher};
use fairdeal_auth::startup::Overrides;
use fairdeal_kit::config::{Config, Loaded};

fn bench(c: &mut Criterion) {
    let params = HashParams::OWASP;
    let hasher = PasswordHasher::new(params).unwrap();
    let password = Password::candidate("correct horse battery staple").unwrap();
    let stored = hasher.hash(&password).unwrap();

    let mut group = c.benchmark_group("login");
    group.sample_size(20);
    group.throughput(Throughput::Elements(1));

    let argon = argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon2::Params::new(
            params.memory_kib,
            params.iterations,
            params.parallelism,
            None,
        )
        .unwrap(),
    );
    group.bench_function("argon2id_raw", |b| {
        let mut out = [0u8; 32];
        b.iter(|| {
            argon
                .hash_password_into(
                    b"correct horse battery staple",
                    b"0123456789abcdef",
                    &mut out,
                )
                .unwrap()
        })
    });
    group.bench_function("verify_known_user", |b| {
        b.iter(|| assert!(hasher.verify(&password, Some(&stored))))
    });
    group.bench_function("verify_unknown_user", |b| {
        b.iter(|| assert!(!hasher.verify(&password, None)))
    });

    // The full use case on the embedded default.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/bench.db", dir.path().display());
    let mail = dir.path().join("mail");
    let args = [
        "auth",
        "--listen-addr",
        "127.0.0.1:0",
        "--database-url",
        &db,
        "--mailbox-dir",
        mail.to_str().unwrap(),
    ];
    let Loaded::Run(config) = Config::load_from("auth", args, []).unwrap() else {
        panic!("config")
    };
    let app = runtime
        .block_on(fairdeal_auth::startup::build_with(
            config,
            Overrides {
                handle_signals: false,
                ..Overrides::default()
            },
        ))
        .unwrap();
    let accounts = app.handles().accounts.clone();
    let user = runtime
        .block_on(accounts.register(
            "benchuser",
            "bench@example.com",
            b"correct horse battery staple",
        ))
        .unwrap();
    // Confirm with the code from the mail. The background dispatcher may be writing it
    // already: deliver, wait for the outbox to be empty, then read the .eml file.
    while runtime.block_on(async {
        app.handles().dispatcher.send_due().await.unwrap();
        accounts.store.unsent_mail_count().await.unwrap() > 0
    }) {
        // The dispatcher signals nothing when it has written a mail: poll.
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let code = fairdeal_testkit::code_in_mail(&mail, "bench@example.com", "Confirm").unwrap();
    assert_eq!(
        runtime.block_on(accounts.confirm_email(&code)).unwrap(),
        user
    );
    let accounts = Arc::clone(&accounts);
    group.bench_function("login_embedded", |b| {
        b.iter(|| {
            runtime
                .block_on(accounts.login("benchuser", b"correct horse battery staple", None))
                .unwrap()
        })
    });
    group.finish();
    app.shutdown().trigger();
}

criterion_group!(benches, bench);
criterion_main!(benches);
