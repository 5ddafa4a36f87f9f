//! What the service logs for ordinary caller mistakes: nothing at WARN or ERROR (those are for
//! faults of the server), a DEBUG line per refusal, and never a password or a token.
//!
//! A test binary of its own: the capturing subscriber is process-wide, and the API tests in
//! the other binary log server faults on purpose (an unreachable mail server).
// Test helpers outside #[test] functions may unwrap too: a failure is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "api/helpers.rs"]
mod helpers;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use fairdeal_proto::fairdeal::auth::v1 as pb;
use helpers::*;
use tonic::Code;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt as _};

/// Every event logged in this process: its level and its fields, rendered.
#[derive(Default)]
struct Captured(Mutex<Vec<(tracing::Level, String)>>);

struct Render(String);

impl Visit for Render {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

struct Capture(Arc<Captured>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut text = Render(format!("{}:", event.metadata().target()));
        event.record(&mut text);
        self.0
            .0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), text.0));
    }
}

fn captured() -> Arc<Captured> {
    static CAPTURED: OnceLock<Arc<Captured>> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Arc::new(Captured::default());
            let subscriber = tracing_subscriber::registry().with(Capture(captured.clone()));
            tracing::subscriber::set_global_default(subscriber).unwrap();
            captured
        })
        .clone()
}

/// The ordinary mistakes of a day: malformed fields, a taken name, wrong and unknown
/// credentials up to a lockout, bad tokens of every kind, a missing access token; and an
/// account deleted, logged by its id only.
async fn ordinary_mistakes(backend: Backend) {
    let log = captured();
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let (_, username, email) = app.confirmed_user().await;
    let tokens = app.login(&username, PASSWORD).await.unwrap();
    let (gone_id, gone_name, gone_email) = app.confirmed_user().await;
    let gone = app.login(&gone_name, PASSWORD).await.unwrap();
    log.0.lock().unwrap().clear();

    let wrong_password = "wrong horse battery staple";
    let forged = "A".repeat(43);
    let mut refusals = 0;
    let mut expect = |result: Result<(), tonic::Status>, code: Code| {
        assert_eq!(result.unwrap_err().code(), code);
        refusals += 1;
    };
    let mut c = app.client.clone();
    for (name, address, password) in [
        ("bad name", "new@example.com", PASSWORD),
        ("freshname", "not-an-address", PASSWORD),
        ("freshname", "new@example.com", "password123"),
    ] {
        let r = c
            .register(pb::RegisterRequest {
                username: name.into(),
                email: address.into(),
                password: password.into(),
            })
            .await;
        expect(r.map(|_| ()), Code::InvalidArgument);
    }
    let r = app.register(&username, "other@example.com").await;
    expect(r.map(|_| ()), Code::AlreadyExists);
    for _ in 0..5 {
        let r = app.login(&username, wrong_password).await;
        expect(r.map(|_| ()), Code::Unauthenticated);
    }
    let r = app.login(&username, wrong_password).await;
    expect(r.map(|_| ()), Code::ResourceExhausted);
    let r = app.login("nobody-here", wrong_password).await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    let r = app.refresh("short").await;
    expect(r.map(|_| ()), Code::InvalidArgument);
    let r = app.refresh(&forged).await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    let r = c
        .confirm_email(pb::ConfirmEmailRequest {
            token: forged.clone(),
        })
        .await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    let r = c
        .reset_password(pb::ResetPasswordRequest {
            token: forged.clone(),
            new_password: "purple elephants juggle quietly".into(),
        })
        .await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    let r = c
        .change_password(pb::ChangePasswordRequest {
            current_password: PASSWORD.into(),
            new_password: "purple elephants juggle quietly".into(),
        })
        .await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    let mut req = tonic::Request::new(pb::ChangePasswordRequest {
        current_password: wrong_password.into(),
        new_password: "purple elephants juggle quietly".into(),
    });
    fairdeal_authn::attach_bearer(
        &mut req,
        &fairdeal_authn::AccessToken::new(format!("{}x", tokens.access_token)),
    )
    .unwrap();
    expect(
        c.change_password(req).await.map(|_| ()),
        Code::Unauthenticated,
    );
    let r = c
        .issue_service_token(pb::IssueServiceTokenRequest {
            service_name: "dealing".into(),
            secret: wrong_password.into(),
        })
        .await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    let delete = |password: &str, confirm: &str, token: Option<&str>| {
        let mut req = tonic::Request::new(pb::DeleteAccountRequest {
            password: password.into(),
            confirm_username: confirm.into(),
        });
        if let Some(token) = token {
            fairdeal_authn::attach_bearer(
                &mut req,
                &fairdeal_authn::AccessToken::new(token.to_owned()),
            )
            .unwrap();
        }
        req
    };
    let r = c.delete_account(delete(PASSWORD, &gone_name, None)).await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    let r = c
        .delete_account(delete(PASSWORD, &username, Some(&gone.access_token)))
        .await;
    expect(r.map(|_| ()), Code::InvalidArgument);
    let r = c
        .delete_account(delete(wrong_password, &gone_name, Some(&gone.access_token)))
        .await;
    expect(r.map(|_| ()), Code::Unauthenticated);
    assert_eq!(refusals, 21);
    c.delete_account(delete(PASSWORD, &gone_name, Some(&gone.access_token)))
        .await
        .unwrap();

    let events = log.0.lock().unwrap().clone();
    let loud: Vec<_> = events
        .iter()
        // The lines of the request path: the service, the kit's error mapping, the token
        // verifier and the pool guard. Third-party lines are left out: sqlx may warn of a
        // slow statement on a loaded machine.
        .filter(|(level, text)| {
            *level <= tracing::Level::WARN
                && [
                    "fairdeal_auth",
                    "fairdeal_kit",
                    "fairdeal_authn",
                    "fairdeal_db",
                ]
                .iter()
                .any(|target| text.starts_with(&format!("{target}:")))
        })
        .collect();
    assert!(
        loud.is_empty(),
        "caller mistakes logged as faults: {loud:#?}"
    );
    let refused = events
        .iter()
        .filter(|(level, text)| *level >= tracing::Level::INFO && text.contains("request refused"))
        .count();
    assert_eq!(refused, 21, "one line per refusal: {events:#?}");
    assert!(
        events
            .iter()
            .any(|(_, text)| text.contains("account deleted") && text.contains(&gone_id)),
        "the deletion is logged with the account's id: {events:#?}"
    );
    for (_, text) in &events {
        for secret in [
            PASSWORD,
            wrong_password,
            forged.as_str(),
            tokens.refresh_token.as_str(),
            tokens.access_token.as_str(),
            email.as_str(),
            gone_name.as_str(),
            gone_email.as_str(),
            gone.access_token.as_str(),
        ] {
            assert!(!text.contains(secret), "a log line holds a secret: {text}");
        }
    }
}

// One test per backend, run one after the other: the captured log is process-wide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_mistakes_are_not_logged_as_faults() {
    ordinary_mistakes(Backend::Embedded).await;
    ordinary_mistakes(Backend::Real).await;
}
