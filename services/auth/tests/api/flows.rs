//! The account life cycle: register, confirm, login, refresh, logout, reset, change.

use fairdeal_proto::fairdeal::auth::v1 as pb;
use tonic::Code;

use crate::helpers::*;
use crate::on_both_backends;

async fn register_confirm_login_refresh_logout(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let username = unique_name();
    let email = format!("{username}@example.com");
    let user_id = app.register(&username, &email).await.unwrap();

    // Not confirmed yet: denied, with the very same answer as a wrong password.
    let early = app.login(&username, PASSWORD).await.unwrap_err();
    assert_eq!(
        (early.code(), early.message()),
        (Code::Unauthenticated, "access denied")
    );

    let code = app.code_from_mail(&email, "Confirm").await;
    let confirmed = app
        .client
        .confirm_email(pb::ConfirmEmailRequest {
            token: code.clone(),
        })
        .await
        .unwrap();
    assert_eq!(confirmed.into_inner().user_id, user_id);
    // Single use.
    let again = app
        .client
        .confirm_email(pb::ConfirmEmailRequest { token: code })
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::Unauthenticated);

    // Any case and width of the username logs in.
    let tokens = app.login(&username.to_uppercase(), PASSWORD).await.unwrap();
    assert_eq!(tokens.user_id, user_id);
    assert!(!tokens.access_token.is_empty());

    let next = app.refresh(&tokens.refresh_token).await.unwrap();
    assert_ne!(next.refresh_token, tokens.refresh_token);
    assert_eq!(next.user_id, user_id);

    app.client
        .logout(pb::LogoutRequest {
            refresh_token: next.refresh_token.clone(),
        })
        .await
        .unwrap();
    let after = app.refresh(&next.refresh_token).await.unwrap_err();
    assert_eq!(after.code(), Code::Unauthenticated);
}
on_both_backends!(full_flow, register_confirm_login_refresh_logout);

async fn refresh_token_reuse_revokes_the_family(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let (_, username, _) = app.confirmed_user().await;
    let first = app.login(&username, PASSWORD).await.unwrap();
    let second = app.refresh(&first.refresh_token).await.unwrap();
    // The thief replays the spent first token: refused, and the family dies...
    assert_eq!(
        app.refresh(&first.refresh_token).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    // ...so the legitimate holder of the newest token is out too.
    assert_eq!(
        app.refresh(&second.refresh_token).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    // Another login (another family) is unaffected.
    let other = app.login(&username, PASSWORD).await.unwrap();
    app.refresh(&other.refresh_token).await.unwrap();
}
on_both_backends!(refresh_reuse, refresh_token_reuse_revokes_the_family);

async fn duplicates_are_refused_case_insensitively(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let username = unique_name();
    let email = format!("{username}@example.com");
    app.register(&username, &email).await.unwrap();
    // Full-width upper case is the same name.
    let wide: String = username
        .to_uppercase()
        .chars()
        .map(|c| char::from_u32(c as u32 + 0xFEE0).unwrap_or(c))
        .collect();
    let dup = app
        .register(&wide, &format!("other-{email}"))
        .await
        .unwrap_err();
    assert_eq!(dup.code(), Code::AlreadyExists);
    let dup = app
        .register(&format!("{username}x"), &email.to_uppercase())
        .await
        .unwrap_err();
    assert_eq!(dup.code(), Code::AlreadyExists);
}
on_both_backends!(duplicates, duplicates_are_refused_case_insensitively);

/// Letters of other scripts that look like Latin ones cannot make a second `paypal`: the
/// refusal is INVALID_ARGUMENT naming `username` and the rule, without the value.
async fn look_alike_usernames_are_refused(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let suffix = unique_name();
    let paypal = format!("paypal{suffix}");
    let google = format!("google{suffix}");
    app.register(&paypal, &format!("{paypal}@example.com"))
        .await
        .unwrap();
    app.register(&google, &format!("{google}@example.com"))
        .await
        .unwrap();
    for fake in [
        format!("p\u{430}ypal{suffix}"),
        format!("g\u{3bf}ogle{suffix}"),
        format!("\u{440}aypal{suffix}"),
    ] {
        let status = app
            .register(&fake, &format!("other-{suffix}@example.com"))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(
            status.message().starts_with("username:") && status.message().contains("ASCII"),
            "names the field and the rule: {}",
            status.message()
        );
        assert!(!status.message().contains(&suffix), "no echo of the value");
    }
    // Full-width and upper-case forms are the ASCII name, hence taken.
    let wide: String = paypal
        .to_uppercase()
        .chars()
        .map(|c| char::from_u32(c as u32 + 0xFEE0).unwrap_or(c))
        .collect();
    let dup = app
        .register(&wide, &format!("third-{suffix}@example.com"))
        .await
        .unwrap_err();
    assert_eq!(dup.code(), Code::AlreadyExists);
}
on_both_backends!(look_alikes, look_alike_usernames_are_refused);

async fn password_reset_and_change_revoke_sessions(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let (_, username, email) = app.confirmed_user().await;
    let session = app.login(&username, PASSWORD).await.unwrap();

    // Unknown addresses get the same empty success.
    app.client
        .request_password_reset(pb::RequestPasswordResetRequest {
            email: "nobody@example.com".into(),
        })
        .await
        .unwrap();
    app.client
        .request_password_reset(pb::RequestPasswordResetRequest {
            email: email.clone(),
        })
        .await
        .unwrap();
    let code = app.code_from_mail(&email, "Reset").await;
    let new_password = "purple elephants juggle quietly";
    let weak = app
        .client
        .reset_password(pb::ResetPasswordRequest {
            token: code.clone(),
            new_password: b"password1".to_vec(),
        })
        .await;
    assert_eq!(weak.unwrap_err().code(), Code::InvalidArgument);
    app.client
        .reset_password(pb::ResetPasswordRequest {
            token: code.clone(),
            new_password: new_password.into(),
        })
        .await
        .unwrap();
    // Single use, old sessions gone, old password gone.
    let reuse = app
        .client
        .reset_password(pb::ResetPasswordRequest {
            token: code,
            new_password: new_password.into(),
        })
        .await;
    assert_eq!(reuse.unwrap_err().code(), Code::Unauthenticated);
    assert_eq!(
        app.refresh(&session.refresh_token)
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    assert_eq!(
        app.login(&username, PASSWORD).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    let tokens = app.login(&username, new_password).await.unwrap();

    // ChangePassword needs the access token and the current password.
    let third = "seventeen quiet violins tuning";
    let mut req = tonic::Request::new(pb::ChangePasswordRequest {
        current_password: PASSWORD.into(),
        new_password: third.into(),
    });
    fairdeal_authn::attach_bearer(
        &mut req,
        &fairdeal_authn::AccessToken::new(tokens.access_token.clone()),
    )
    .unwrap();
    assert_eq!(
        app.client.change_password(req).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    let no_token = app.client.change_password(pb::ChangePasswordRequest {
        current_password: new_password.into(),
        new_password: third.into(),
    });
    assert_eq!(no_token.await.unwrap_err().code(), Code::Unauthenticated);
    let mut req = tonic::Request::new(pb::ChangePasswordRequest {
        current_password: new_password.into(),
        new_password: third.into(),
    });
    fairdeal_authn::attach_bearer(
        &mut req,
        &fairdeal_authn::AccessToken::new(tokens.access_token),
    )
    .unwrap();
    app.client.change_password(req).await.unwrap();
    assert_eq!(
        app.refresh(&tokens.refresh_token).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    app.login(&username, third).await.unwrap();
}
on_both_backends!(reset_and_change, password_reset_and_change_revoke_sessions);

async fn resend_confirmation_replaces_the_link(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let username = unique_name();
    let email = format!("{username}@example.com");
    app.register(&username, &email).await.unwrap();
    let first = app.code_from_mail(&email, "Confirm").await;
    app.client
        .resend_confirmation(pb::ResendConfirmationRequest {
            email: email.clone(),
        })
        .await
        .unwrap();
    let second = app.code_from_mail(&email, "Confirm").await;
    assert_ne!(first, second);
    assert_eq!(
        app.client
            .confirm_email(pb::ConfirmEmailRequest { token: first })
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    app.client
        .confirm_email(pb::ConfirmEmailRequest { token: second })
        .await
        .unwrap();
    app.login(&username, PASSWORD).await.unwrap();
}
on_both_backends!(resend, resend_confirmation_replaces_the_link);

/// A mail server that is down neither fails nor slows a registration, and the mail waits in
/// the outbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_survives_an_unreachable_mail_server() {
    let res = Resources::new(Backend::Embedded).await;
    let clock = std::sync::Arc::new(fairdeal_authn::ManualClock::starting_now());
    // Port 9 on loopback: nothing listens, connections are refused.
    let mut app = spawn_with(&res, clock, &["--smtp-url", "smtp://127.0.0.1:9"]).await;
    let username = unique_name();
    app.register(&username, &format!("{username}@example.com"))
        .await
        .unwrap();
    assert_eq!(app.dispatcher.send_due().await.unwrap(), 0);
    assert_eq!(app.app_accounts.store.unsent_mail_count().await.unwrap(), 1);
}

/// The event log tells the story without a password, hash, token or email in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_carry_no_secrets() {
    let res = Resources::new(Backend::Embedded).await;
    let mut app = spawn_app(&res).await;
    let (user_id, username, email) = app.confirmed_user().await;
    let tokens = app.login(&username, PASSWORD).await.unwrap();
    let next = app.refresh(&tokens.refresh_token).await.unwrap();
    app.client
        .logout(pb::LogoutRequest {
            refresh_token: next.refresh_token.clone(),
        })
        .await
        .unwrap();
    drop(app);

    let path = res.database_url.trim_start_matches("sqlite://");
    let store = fairdeal_eventstore::SqliteEventStore::open(path)
        .await
        .unwrap();
    use fairdeal_eventstore::EventStore as _;
    let events = store.read_all(1, 1000).await.unwrap();
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "fairdeal.auth.v1.UserRegistered",
            "fairdeal.auth.v1.EmailConfirmed",
            "fairdeal.auth.v1.LoggedIn",
            "fairdeal.auth.v1.RefreshFamilyRevoked"
        ]
    );
    for event in &events {
        assert_eq!(event.stream_id.as_str(), format!("user-{user_id}"));
        let bytes = event.encode_envelope();
        for secret in [
            email.as_bytes(),
            PASSWORD.as_bytes(),
            tokens.refresh_token.as_bytes(),
            next.refresh_token.as_bytes(),
            b"argon2",
        ] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret),
                "an event holds a secret"
            );
        }
    }
}

/// With NATS configured, the account's events reach JetStream through the outbox relay, in
/// order, each with `Nats-Msg-Id` = its event id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_jetstream() {
    use futures::StreamExt as _;
    let res = Resources::new(Backend::Real).await;
    let mut app = spawn_app(&res).await;
    let (user_id, username, _) = app.confirmed_user().await;
    app.login(&username, PASSWORD).await.unwrap();

    let js = async_nats::jetstream::new(
        async_nats::connect(fairdeal_testkit::nats_url())
            .await
            .unwrap(),
    );
    let streams = fairdeal_bus::JetStreamConfig::new(format!("{}.auth", res.prefix)).unwrap();
    let stream = js.get_stream(streams.stream_name()).await.unwrap();
    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::Config::default())
        .await
        .unwrap();
    // The server holds the pull request until the relay has delivered all three events
    // (bounded: it ends early when they do not come).
    let mut messages = consumer
        .batch()
        .max_messages(3)
        .expires(std::time::Duration::from_secs(30))
        .messages()
        .await
        .unwrap();
    let mut types = Vec::new();
    while let Some(message) = messages.next().await {
        let message = message.unwrap();
        let event =
            fairdeal_eventstore::RecordedEvent::decode_envelope(0, &message.payload).unwrap();
        assert_eq!(event.stream_id.as_str(), format!("user-{user_id}"));
        let msg_id = message
            .headers
            .as_ref()
            .unwrap()
            .get("Nats-Msg-Id")
            .unwrap()
            .to_string();
        assert_eq!(msg_id, event.event_id.to_string());
        types.push(event.event_type);
    }
    assert_eq!(
        types,
        [
            "fairdeal.auth.v1.UserRegistered",
            "fairdeal.auth.v1.EmailConfirmed",
            "fairdeal.auth.v1.LoggedIn"
        ]
    );
}

/// The role claim of an access token (its payload, base64url JSON).
fn role_of(access_token: &str) -> String {
    use base64::Engine as _;
    let payload = access_token.split('.').nth(1).unwrap();
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&json).unwrap();
    claims["role"].as_str().unwrap().to_owned()
}

async fn listed_moderators_get_the_moderator_role(backend: Backend) {
    let res = Resources::new(backend).await;
    let moderator = unique_name();
    // Listed in another case: names compare caselessly, as at login.
    let listed = format!("{},someone-else", moderator.to_uppercase());
    let mut app = spawn_with(
        &res,
        std::sync::Arc::new(fairdeal_authn::ManualClock::starting_now()),
        &["--moderators", &listed],
    )
    .await;
    let email = format!("{moderator}@example.com");
    let user_id = app.register(&moderator, &email).await.unwrap();
    let code = app.code_from_mail(&email, "Confirm").await;
    app.client
        .confirm_email(pb::ConfirmEmailRequest { token: code })
        .await
        .unwrap();
    let tokens = app.login(&moderator, PASSWORD).await.unwrap();
    assert_eq!(tokens.user_id, user_id);
    assert_eq!(role_of(&tokens.access_token), "moderator");
    // Kept on refresh.
    let next = app.refresh(&tokens.refresh_token).await.unwrap();
    assert_eq!(role_of(&next.access_token), "moderator");
    // Everyone else is a player.
    let (_, player, _) = app.confirmed_user().await;
    let tokens = app.login(&player, PASSWORD).await.unwrap();
    assert_eq!(role_of(&tokens.access_token), "player");
    let next = app.refresh(&tokens.refresh_token).await.unwrap();
    assert_eq!(role_of(&next.access_token), "player");
}
on_both_backends!(moderators, listed_moderators_get_the_moderator_role);

#[test]
fn a_moderator_list_with_an_invalid_name_is_refused() {
    use fairdeal_auth::config::AuthSettings;
    use fairdeal_kit::config::Config;
    let args = ["auth", "--moderators", "alice,not a name"];
    let error = Config::<AuthSettings>::load_from("auth", args, []).unwrap_err();
    assert!(error.to_string().contains("moderators"), "{error}");
}
