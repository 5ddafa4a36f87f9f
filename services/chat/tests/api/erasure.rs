//! A line's text is sealed in its event and erased for good: by a moderator's removal, and
//! with every line of an account when the auth service records its deletion. "Nowhere" is
//! checked where the text could be: the SQLite file and its WAL (embedded), a `pg_dump` of
//! the database (PostgreSQL) and every message of the chat's JetStream streams.

use std::time::Duration;

use fairdeal_bus::JetStreamConfig;
use fairdeal_chat::events::open_text;
use fairdeal_eventstore::{RecordedEvent, StreamId};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_shred::SubjectKey;
use fairdeal_testkit::residue::{holds, pg_dump, sqlite_files};
use tonic::Code;
use uuid::Uuid;

use crate::harness::{Db, TestChat};

/// A text found nowhere else: a fresh UUID in it.
fn distinctive(what: &str) -> String {
    format!("{what} {}", Uuid::now_v7().simple())
}

/// The stored key of message `id`, if any.
async fn key_of(chat: &TestChat, id: &str) -> Option<SubjectKey> {
    let stored: Option<Vec<u8>> = fairdeal_db::on_db!(chat.storage.db(), pool => {
        sqlx::query_scalar("SELECT subject_key FROM chat_message_keys WHERE message_id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await
            .unwrap()
    });
    stored.map(|bytes| SubjectKey::from_bytes(&bytes).unwrap())
}

/// The `MessagePosted` of message `id` in `channel`'s stream, read back from the chat's store.
async fn posted(chat: &TestChat, channel: &str, id: &str) -> pb::MessagePosted {
    let stream = StreamId::parse(format!("chat-{channel}").as_str()).unwrap();
    let events = chat
        .storage
        .events()
        .read_stream(&stream, 1, 1000)
        .await
        .unwrap();
    let event = events
        .iter()
        .find(|e| e.event_id.to_string() == id)
        .expect("the message's event");
    event.decode_payload().unwrap()
}

/// Checks the event of message `id` holds no plaintext and opens to `text` with its key.
#[allow(deprecated)]
async fn sealed_in_its_event(chat: &TestChat, channel: &str, id: &str, text: &str) {
    let event = posted(chat, channel, id).await;
    assert!(event.text.is_empty(), "the plain field stays empty");
    assert!(!holds(&event.sealed_text, text));
    let key = key_of(chat, id).await.expect("the message's key");
    let opened = open_text(&key, id.parse().unwrap(), &event.sealed_text).unwrap();
    assert_eq!(opened.as_str(), text);
}

/// Whether `text` is anywhere in the chat's database: the SQLite file and its WAL, or a
/// `pg_dump` of the PostgreSQL database (where a bytea holding it would show in hex).
async fn in_database(chat: &TestChat, text: &str) -> bool {
    let bytes = match (&chat.sqlite_file, &chat.database) {
        (Some(file), _) => sqlite_files(file).unwrap(),
        (None, Some(database)) => pg_dump(database.url()).await.unwrap(),
        (None, None) => unreachable!("a backend"),
    };
    holds(&bytes, text)
}

/// Waits (at most 20 s) until `text` is nowhere in the database: an account's erasure is
/// scrubbed from the files after its consumer commits.
async fn until_gone_from_database(chat: &TestChat, text: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while in_database(chat, text).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the text stays in the database"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every message of the chat's JetStream streams (events and dead letters), raw; `None` on
/// the embedded backend. Waits (at most 20 s) until the events stream holds `at_least`.
async fn jetstream_messages(chat: &TestChat, at_least: u64) -> Option<Vec<Vec<u8>>> {
    chat.database.as_ref()?;
    let js = async_nats::jetstream::new(
        async_nats::connect(fairdeal_testkit::nats_url())
            .await
            .unwrap(),
    );
    let config = JetStreamConfig::new(format!("{}.chat", chat.common.subject_prefix)).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut events = js.get_stream(config.stream_name()).await.unwrap();
    while events.info().await.unwrap().state.messages < at_least {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relay never published"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut all = Vec::new();
    for name in [config.stream_name(), config.dead_letter_stream_name()] {
        let Ok(mut stream) = js.get_stream(name).await else {
            continue;
        };
        let state = stream.info().await.unwrap().state.clone();
        for sequence in state.first_sequence..=state.last_sequence {
            if let Ok(message) = stream.get_raw_message(sequence).await {
                all.push(message.payload.to_vec());
            }
        }
    }
    Some(all)
}

/// The posted events among raw JetStream `messages`, by message id.
fn posted_on_jetstream(messages: &[Vec<u8>], id: &str) -> Option<pb::MessagePosted> {
    messages
        .iter()
        .filter_map(|bytes| RecordedEvent::decode_envelope(1, bytes).ok())
        .find(|e| e.event_id.to_string() == id)
        .map(|e| e.decode_payload().unwrap())
}

/// Checks `text` is in no message of the chat's JetStream streams (holding at least `count`).
async fn not_on_jetstream(chat: &TestChat, count: u64, text: &str) {
    if let Some(messages) = jetstream_messages(chat, count).await {
        assert!(!messages.iter().any(|m| holds(m, text)));
    }
}

async fn removal_erases(db: Db) {
    let chat = TestChat::spawn(db).await;
    let (alice, bob, moderator) = (chat.player(), chat.player(), chat.moderator());
    let _alice_sub = alice.subscribe("lobby").await.unwrap();
    let mut bob_sub = bob.subscribe("lobby").await.unwrap();
    let secret = distinctive("call me on the blue phone");
    let kept = distinctive("good game all");
    let bad = alice.post("lobby", &secret).await.unwrap();
    let good = bob.post("lobby", &kept).await.unwrap();
    // Delivered in plain to subscribers (opened with the key), sealed in the log.
    assert_eq!(bob_sub.message().await, bad);
    assert_eq!(bob_sub.message().await, good);
    sealed_in_its_event(&chat, "lobby", &bad.message_id, &secret).await;
    sealed_in_its_event(&chat, "lobby", &good.message_id, &kept).await;
    if let Some(messages) = jetstream_messages(&chat, 2).await {
        let relayed = posted_on_jetstream(&messages, &bad.message_id).expect("relayed");
        let key = key_of(&chat, &bad.message_id).await.unwrap();
        let opened = open_text(&key, bad.message_id.parse().unwrap(), &relayed.sealed_text);
        assert_eq!(opened.unwrap().as_str(), secret);
        assert!(!messages.iter().any(|m| holds(m, &secret)));
    }
    // History reads its own rows: both texts are in the database until the removal.
    assert!(in_database(&chat, &secret).await);
    assert!(in_database(&chat, &kept).await);

    moderator.remove("lobby", &bad.message_id).await.unwrap();
    let history = bob.history("lobby", "", 10).await.unwrap();
    let removed = history
        .messages
        .iter()
        .find(|m| m.message_id == bad.message_id)
        .unwrap();
    assert!(removed.removed && removed.text.is_empty());
    assert_eq!(history.messages[0], good);
    assert!(key_of(&chat, &bad.message_id).await.is_none());
    assert!(key_of(&chat, &good.message_id).await.is_some());
    // Scrubbed before the removal answered: nowhere now, the other line untouched.
    assert!(!in_database(&chat, &secret).await);
    assert!(in_database(&chat, &kept).await);
    not_on_jetstream(&chat, 3, &secret).await;
    // The event is whole, its sealed bytes there, but nothing opens them any more.
    let event = posted(&chat, "lobby", &bad.message_id).await;
    assert!(!event.sealed_text.is_empty());
    chat.finish().await;
}

#[tokio::test]
async fn a_removed_line_is_erased_for_good_sqlite() {
    removal_erases(Db::Sqlite).await;
}

#[tokio::test]
async fn a_removed_line_is_erased_for_good_postgres() {
    removal_erases(Db::Postgres).await;
}

/// Waits (at most 20 s) until every line of `ids` reads as removed in `channel`'s history.
async fn until_erased(reader: &crate::harness::User, channel: &str, ids: &[&str]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let history = reader.history(channel, "", 100).await.unwrap();
        let erased = ids.iter().all(|id| {
            history
                .messages
                .iter()
                .any(|m| m.message_id == *id && m.removed && m.text.is_empty())
        });
        if erased {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the account's lines were never erased"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `chat-accounts` consumer's processed event ids and dead letters.
async fn accounts_rows(chat: &TestChat) -> (i64, i64) {
    let consumer = fairdeal_chat::accounts::CONSUMER;
    fairdeal_db::on_db!(chat.storage.db(), pool => {
        let processed: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM bus_processed_events WHERE consumer = $1")
                .bind(consumer)
                .fetch_one(pool)
                .await
                .unwrap();
        let dead: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM bus_dead_letters WHERE consumer = $1")
                .bind(consumer)
                .fetch_one(pool)
                .await
                .unwrap();
        (processed, dead)
    })
}

/// Sets the `chat-accounts` consumer back to the start of the auth events (the chat is
/// stopped): on NATS its durable consumer is deleted too, so the stream comes again.
async fn redeliver_account_events(chat: &TestChat) {
    fairdeal_db::on_db!(chat.storage.db(), pool => {
        sqlx::query("UPDATE bus_consumer_positions SET position = 0 WHERE consumer = $1")
            .bind(fairdeal_chat::accounts::CONSUMER)
            .execute(pool)
            .await
            .unwrap();
    });
    if chat.database.is_some() {
        let js = async_nats::jetstream::new(
            async_nats::connect(fairdeal_testkit::nats_url())
                .await
                .unwrap(),
        );
        let config = JetStreamConfig::new(format!("{}.auth", chat.common.subject_prefix)).unwrap();
        let stream = js.get_stream(config.stream_name()).await.unwrap();
        stream
            .delete_consumer(fairdeal_chat::accounts::CONSUMER)
            .await
            .unwrap();
    }
}

async fn account_deletion_erases(db: Db) {
    let mut chat = TestChat::spawn(db).await;
    let (alice, bob, carol) = (chat.player(), chat.player(), chat.player());
    let table = Uuid::now_v7();
    let table_channel = format!("table-{table}");
    chat.sit(table, 0, &alice).await;
    chat.sit(table, 1, &bob).await;
    let _alice_lobby = alice.subscribe("lobby").await.unwrap();
    let _alice_table = alice.subscribe_when_member(&table_channel).await;
    let _bob_lobby = bob.subscribe("lobby").await.unwrap();
    let _carol_lobby = carol.subscribe("lobby").await.unwrap();
    let (a1, a2) = (
        distinctive("alice in the lobby"),
        distinctive("alice at her table"),
    );
    let (b1, c1) = (distinctive("bob stays"), distinctive("carol goes later"));
    let alice_lobby = alice.post("lobby", &a1).await.unwrap();
    let alice_table = alice.post(&table_channel, &a2).await.unwrap();
    let bob_line = bob.post("lobby", &b1).await.unwrap();
    let carol_line = carol.post("lobby", &c1).await.unwrap();
    sealed_in_its_event(&chat, &table_channel, &alice_table.message_id, &a2).await;
    assert!(in_database(&chat, &a1).await && in_database(&chat, &a2).await);

    let deleted = chat.delete_account(alice.id).await;
    until_erased(&bob, "lobby", &[&alice_lobby.message_id]).await;
    until_erased(&bob, &table_channel, &[&alice_table.message_id]).await;
    for id in [&alice_lobby.message_id, &alice_table.message_id] {
        assert!(key_of(&chat, id).await.is_none());
    }
    until_gone_from_database(&chat, &a1).await;
    until_gone_from_database(&chat, &a2).await;
    not_on_jetstream(&chat, 4, &a1).await;
    not_on_jetstream(&chat, 4, &a2).await;
    // Other authors' lines untouched.
    let history = bob.history("lobby", "", 100).await.unwrap();
    assert!(history.messages.contains(&bob_line));
    assert!(history.messages.contains(&carol_line));
    assert!(key_of(&chat, &bob_line.message_id).await.is_some());
    assert!(in_database(&chat, &b1).await);
    // The deleted account's token still verifies until it expires: its posts are refused
    // and nothing is appended.
    let streams = ["chat-lobby".to_owned()];
    let before = chat.chat_events(&streams).await;
    let refused = alice.post("lobby", "still here?").await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(
        refused.message().contains("deleted"),
        "{}",
        refused.message()
    );
    assert_eq!(chat.chat_events(&streams).await, before);
    // The table channel lost her: the membership went with the account.
    assert_eq!(
        alice
            .history(&table_channel, "", 1)
            .await
            .unwrap_err()
            .code(),
        Code::PermissionDenied
    );

    // Exactly once under redelivery: the consumer is set back to the start of the auth
    // events (and on NATS its durable consumer deleted, so they all come again); the
    // deletion already applied is acknowledged, not applied again, and the consumer goes on
    // to the next one.
    chat.stop().await;
    redeliver_account_events(&chat).await;
    chat.start(false).await;
    // The server listens on a new port: a new reader.
    let reader = chat.player();
    let later = chat.delete_account(carol.id).await;
    until_erased(&reader, "lobby", &[&carol_line.message_id]).await;
    until_gone_from_database(&chat, &c1).await;
    assert_ne!(later, deleted);
    assert_eq!(accounts_rows(&chat).await, (2, 0));
    let history = reader.history("lobby", "", 100).await.unwrap();
    assert!(history.messages.contains(&bob_line));
    let alice_row = history
        .messages
        .iter()
        .find(|m| m.message_id == alice_lobby.message_id)
        .unwrap();
    assert!(alice_row.removed && alice_row.text.is_empty());
    assert!(in_database(&chat, &b1).await);
    assert!(!in_database(&chat, &a1).await);
    chat.finish().await;
}

#[tokio::test]
async fn a_deleted_account_s_lines_are_erased_once_sqlite() {
    account_deletion_erases(Db::Sqlite).await;
}

#[tokio::test]
async fn a_deleted_account_s_lines_are_erased_once_postgres() {
    account_deletion_erases(Db::Postgres).await;
}
