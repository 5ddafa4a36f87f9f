//! Crypto-shredding and DeleteAccount: the username goes into the event log sealed under the
//! account's own key, and deleting the account deletes that key with everything else that
//! held the username or the email address, while every event and its hash chain stay.
//! "Found nowhere" is checked on the bytes: the SQLite file and its WAL, `pg_dump` of the
//! PostgreSQL database, every message of the JetStream stream, the mailbox directory and
//! the Redis login-limit key.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_auth::domain::Username;
use fairdeal_auth::events::open_username;
use fairdeal_auth::limits::Subject;
use fairdeal_eventstore::{AnyEventStore, ChainVerifier, EventStore as _, RecordedEvent, StreamId};
use fairdeal_proto::fairdeal::auth::v1 as pb;
use fairdeal_shred::SubjectKey;
use fairdeal_testkit::residue::{holds, pg_dump, sqlite_files, sqlite_path};
use tonic::Code;
use uuid::Uuid;

use crate::helpers::*;
use crate::on_both_backends;

/// A username no other test, nor chance, writes: mixed case, so that its caseless key (what
/// uniqueness and login use) differs from it and both can be searched for.
fn distinctive_username(tag: &str) -> String {
    format!("{tag}{}", &Uuid::now_v7().simple().to_string()[18..])
}

/// The strings that must vanish with an account: the username as typed and as keyed, the
/// address as typed and as keyed.
fn personal(username: &str, email: &str) -> Vec<String> {
    vec![
        username.to_owned(),
        Username::key_of(username),
        email.to_owned(),
        email.to_lowercase(),
    ]
}

/// The auth service's event store, opened beside the running service.
async fn event_store(res: &Resources) -> (fairdeal_db::Db, AnyEventStore) {
    let url: fairdeal_db::DatabaseUrl = res.database_url.parse().unwrap();
    let db = fairdeal_db::Db::open(&url, &fairdeal_db::Schema::new("auth").unwrap())
        .await
        .unwrap();
    let store = AnyEventStore::open(&db).await.unwrap();
    (db, store)
}

/// The account's stream, every event, its hash chain checked link by link.
async fn account_stream(store: &AnyEventStore, user_id: Uuid) -> Vec<RecordedEvent> {
    let stream = StreamId::of("user", user_id).unwrap();
    let events = store.read_stream(&stream, 1, 1000).await.unwrap();
    let mut chain = ChainVerifier::new(stream);
    for event in &events {
        chain.check(event).unwrap();
    }
    events
}

/// `UserRegistered` holds the username only sealed, and it opens with `key`.
fn assert_sealed(event: &RecordedEvent, user_id: Uuid, username: &str, key: &SubjectKey) {
    assert!(event.is::<pb::UserRegistered>(), "{}", event.event_type);
    let envelope = event.encode_envelope();
    for plain in [username.to_owned(), Username::key_of(username)] {
        assert!(!holds(&envelope, &plain), "the event holds the username");
    }
    let registered: pb::UserRegistered = event.decode_payload().unwrap();
    assert_eq!(registered.user_id, user_id.to_string());
    #[allow(deprecated)]
    let plain = registered.username;
    assert!(plain.is_empty(), "the deprecated field is never written");
    assert_eq!(
        open_username(key, user_id, &registered.sealed_username).unwrap(),
        username
    );
}

/// Every message of the service's JetStream stream, read from the start until one satisfies
/// `last` (the relay publishes in order, so everything stored before it is there too).
async fn jetstream_until(
    res: &Resources,
    last: impl Fn(&RecordedEvent) -> bool,
) -> Vec<async_nats::jetstream::Message> {
    use futures::StreamExt as _;
    let js = async_nats::jetstream::new(
        async_nats::connect(fairdeal_testkit::nats_url())
            .await
            .unwrap(),
    );
    let streams = fairdeal_bus::JetStreamConfig::new(format!("{}.auth", res.prefix)).unwrap();
    // The relay creates the stream with its first publish.
    let stream = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(stream) = js.get_stream(streams.stream_name()).await {
                return stream;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the auth stream within 30 s");
    let mut messages = stream
        .create_consumer(async_nats::jetstream::consumer::pull::OrderedConfig::default())
        .await
        .unwrap()
        .messages()
        .await
        .unwrap();
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(message) = messages.next().await {
            let message = message.unwrap();
            let event = RecordedEvent::decode_envelope(0, &message.payload).unwrap();
            let done = last(&event);
            seen.push(message);
            if done {
                return;
            }
        }
    })
    .await
    .expect("the awaited event reached JetStream within 30 s");
    seen
}

async fn registration_seals_the_username(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let username = distinctive_username("SealMe");
    let email = format!("{}@Seal.example", username.to_lowercase());
    let user_id: Uuid = app
        .register(&username, &email)
        .await
        .unwrap()
        .parse()
        .unwrap();

    let key = app
        .app_accounts
        .store
        .subject_key(user_id)
        .await
        .unwrap()
        .expect("the account's key");
    let (db, store) = event_store(&res).await;
    let events = account_stream(&store, user_id).await;
    assert_eq!(events.len(), 1);
    assert_sealed(&events[0], user_id, &username, &key);
    // The email address is in no event at all.
    for event in &events {
        assert!(!holds(&event.encode_envelope(), &email.to_lowercase()));
    }

    if backend == Backend::Real {
        let messages = jetstream_until(&res, |e| e.is::<pb::UserRegistered>()).await;
        let published =
            RecordedEvent::decode_envelope(0, &messages.last().unwrap().payload).unwrap();
        assert_eq!(published.stream_id.as_str(), format!("user-{user_id}"));
        assert_sealed(&published, user_id, &username, &key);
        for message in &messages {
            for plain in personal(&username, &email) {
                assert!(!holds(&message.payload, &plain), "JetStream holds {plain}");
            }
        }
    }
    db.close().await;
}
on_both_backends!(sealed_username, registration_seals_the_username);

/// DeleteAccount with `token` as bearer (none: `None`).
async fn delete(
    app: &mut TestApp,
    token: Option<&str>,
    password: &str,
    confirm_username: &str,
) -> Result<(), tonic::Status> {
    let mut request = tonic::Request::new(pb::DeleteAccountRequest {
        password: password.into(),
        confirm_username: confirm_username.into(),
    });
    if let Some(token) = token {
        fairdeal_authn::attach_bearer(
            &mut request,
            &fairdeal_authn::AccessToken::new(token.to_owned()),
        )
        .unwrap();
    }
    app.client.delete_account(request).await.map(|_| ())
}

/// The account is still whole: its row, its key, no `AccountDeleted`.
async fn assert_intact(app: &TestApp, store: &AnyEventStore, user_id: Uuid) {
    let accounts = &app.app_accounts.store;
    assert!(accounts.account_by_id(user_id).await.unwrap().is_some());
    assert!(accounts.subject_key(user_id).await.unwrap().is_some());
    let events = account_stream(store, user_id).await;
    assert!(!events.iter().any(|e| e.is::<pb::AccountDeleted>()));
}

/// Every mail file in the mailbox directory.
fn mailbox_bytes(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries {
            bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
        }
    }
    bytes
}

/// The Redis key of the username's login-limit state.
fn lockout_key(res: &Resources, username: &str) -> String {
    let subject = Subject::Username(Username::key_of(username));
    format!("{}:auth:lockout:{}", res.prefix, subject.storage_id())
}

async fn redis_has(key: &str) -> bool {
    let client = redis::Client::open(fairdeal_testkit::redis_url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let exists: i64 = redis::cmd("EXISTS")
        .arg(key)
        .query_async(&mut con)
        .await
        .unwrap();
    exists == 1
}

async fn delete_account_erases_everything_personal(backend: Backend) {
    let res = Resources::new(backend).await;
    let service_secret = "tables-secret-erasure-test";
    let credential = {
        use sha2::Digest as _;
        format!(
            "tables:{}",
            hex::encode(sha2::Sha256::digest(service_secret.as_bytes()))
        )
    };
    let mut app = spawn_with(
        &res,
        Arc::new(fairdeal_authn::ManualClock::starting_now()),
        &["--service-credentials", &credential],
    )
    .await;
    let username = distinctive_username("EraseMe");
    let email = format!("{}.Inbox@Erase-Test.example", username.to_lowercase());
    let user_id: Uuid = app
        .register(&username, &email)
        .await
        .unwrap()
        .parse()
        .unwrap();
    let code = app.code_from_mail(&email, "Confirm").await;
    app.client
        .confirm_email(pb::ConfirmEmailRequest { token: code })
        .await
        .unwrap();
    let tokens = app.login(&username, PASSWORD).await.unwrap();
    let access = tokens.access_token.clone();
    // A reset mail and its token too: both go with the account.
    app.client
        .request_password_reset(pb::RequestPasswordResetRequest {
            email: email.clone(),
        })
        .await
        .unwrap();
    app.code_from_mail(&email, "Reset").await;
    let key = app
        .app_accounts
        .store
        .subject_key(user_id)
        .await
        .unwrap()
        .unwrap();
    let (db, store) = event_store(&res).await;

    // Refusals, each deleting nothing.
    let no_token = delete(&mut app, None, PASSWORD, &username)
        .await
        .unwrap_err();
    assert_eq!(no_token.code(), Code::Unauthenticated, "{no_token:?}");
    let service_token = app
        .client
        .issue_service_token(pb::IssueServiceTokenRequest {
            service_name: "tables".into(),
            secret: service_secret.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .access_token;
    let service = delete(&mut app, Some(&service_token), PASSWORD, &username)
        .await
        .unwrap_err();
    assert_eq!(service.code(), Code::PermissionDenied, "{service:?}");
    let other_name = distinctive_username("Someone");
    let wrong_confirmation = delete(&mut app, Some(&access), PASSWORD, &other_name)
        .await
        .unwrap_err();
    assert_eq!(wrong_confirmation.code(), Code::InvalidArgument);
    assert!(
        wrong_confirmation
            .message()
            .starts_with("confirm_username:"),
        "names the field: {}",
        wrong_confirmation.message()
    );
    assert!(!wrong_confirmation.message().contains(&other_name));
    let empty_confirmation = delete(&mut app, Some(&access), PASSWORD, "")
        .await
        .unwrap_err();
    assert_eq!(empty_confirmation.code(), Code::InvalidArgument);
    let wrong_password = delete(&mut app, Some(&access), "not my password at all", &username)
        .await
        .unwrap_err();
    assert_eq!(
        (wrong_password.code(), wrong_password.message()),
        (Code::Unauthenticated, "access denied")
    );
    assert_intact(&app, &store, user_id).await;
    if backend == Backend::Real {
        assert!(redis_has(&lockout_key(&res, &username)).await);
    }

    // Wrong passwords count toward the lockout like failed logins: four more make five, and
    // then even the right password waits, at login as here.
    for _ in 0..4 {
        let status = delete(&mut app, Some(&access), "still not my password", &username)
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
    }
    let locked = delete(&mut app, Some(&access), PASSWORD, &username)
        .await
        .unwrap_err();
    assert_eq!(locked.code(), Code::ResourceExhausted, "{locked:?}");
    assert_eq!(
        app.login(&username, PASSWORD).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    assert_intact(&app, &store, user_id).await;
    app.advance(Duration::from_secs(61));

    // The right password and the username in another case (compared as at login).
    delete(&mut app, Some(&access), PASSWORD, &username.to_uppercase())
        .await
        .unwrap();

    // One more event, the chain whole; the sealed username can no longer be opened.
    let events = account_stream(&store, user_id).await;
    let last = events.last().unwrap();
    assert!(last.is::<pb::AccountDeleted>(), "{}", last.event_type);
    let deleted: pb::AccountDeleted = last.decode_payload().unwrap();
    assert_eq!(deleted.user_id, user_id.to_string());
    assert_eq!(
        events
            .iter()
            .filter(|e| e.is::<pb::AccountDeleted>())
            .count(),
        1
    );
    let accounts = &app.app_accounts.store;
    assert!(accounts.subject_key(user_id).await.unwrap().is_none());
    assert!(accounts.account_by_id(user_id).await.unwrap().is_none());
    // (The key read before the deletion still opens it: only copies of the key are the
    // danger, which is why the key never leaves the database.)
    assert_sealed(&events[0], user_id, &username, &key);

    // Found nowhere (looked at before anything else happens: a failed login of the name
    // starts a login-limit state again, as for any unknown name).
    let needles = personal(&username, &email);
    let mut places: Vec<(&str, Vec<u8>)> = vec![("the mailbox", mailbox_bytes(&app.mailbox))];
    match backend {
        Backend::Embedded => {
            let bytes = sqlite_files(&sqlite_path(&res.database_url)).unwrap();
            assert!(holds(&bytes, "AccountDeleted"), "the service's database");
            places.push(("the SQLite file and WAL", bytes));
        }
        Backend::Real => {
            let dump = pg_dump(&res.database_url).await.unwrap();
            assert!(holds(&dump, "AccountDeleted"), "a dump of the database");
            places.push(("pg_dump", dump));
            let messages = jetstream_until(&res, |e| e.is::<pb::AccountDeleted>()).await;
            for message in messages {
                places.push(("JetStream", message.payload.to_vec()));
                if let Some(headers) = &message.headers {
                    places.push(("JetStream headers", format!("{headers:?}").into_bytes()));
                }
            }
            assert!(
                !redis_has(&lockout_key(&res, &username)).await,
                "the username's login-limit key is gone"
            );
        }
    }
    for (place, bytes) in &places {
        for needle in &needles {
            assert!(!holds(bytes, needle), "{place} still holds {needle}");
        }
    }

    // Login, the refresh token and the access token are dead.
    let login = app.login(&username, PASSWORD).await.unwrap_err();
    assert_eq!(
        (login.code(), login.message()),
        (Code::Unauthenticated, "access denied")
    );
    assert_eq!(
        app.refresh(&tokens.refresh_token).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    let again = delete(&mut app, Some(&access), PASSWORD, &username)
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::Unauthenticated);

    // The name and the address are free again.
    let second = app.register(&username, &email).await.unwrap();
    assert_ne!(second, user_id.to_string());
    db.close().await;
}
on_both_backends!(delete_account, delete_account_erases_everything_personal);
