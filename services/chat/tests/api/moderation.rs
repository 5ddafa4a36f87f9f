//! Moderators remove messages and mute users; players cannot.

use std::time::Duration;

use fairdeal_proto::fairdeal::chat::v1 as pb;
use tonic::Code;
use uuid::Uuid;

use crate::harness::{Db, TestChat};

async fn moderation(db: Db) {
    let chat = TestChat::spawn(db).await;
    let (alice, bob, moderator) = (chat.player(), chat.player(), chat.moderator());
    let mut alice_sub = alice.subscribe("lobby").await.unwrap();
    let _bob_sub = bob.subscribe("lobby").await.unwrap();
    let bad = bob
        .post("lobby", "buy gold at example.invalid")
        .await
        .unwrap();
    let good = bob.post("lobby", "good game").await.unwrap();
    assert_eq!(alice_sub.message().await, bad);
    assert_eq!(alice_sub.message().await, good);

    // A player is not a moderator.
    let refused = alice.remove("lobby", &bad.message_id).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert_eq!(
        alice.mute(bob.id, "", 60).await.unwrap_err().code(),
        Code::PermissionDenied
    );

    // Removal: a tombstone to subscribers, history without the text.
    moderator.remove("lobby", &bad.message_id).await.unwrap();
    match alice_sub.next().await.unwrap() {
        pb::subscribe_response::Item::Removed(r) => {
            assert_eq!(r.message_id, bad.message_id);
            assert!(r.seq > good.seq);
        }
        other => panic!("expected a removal, got {other:?}"),
    }
    let history = alice.history("lobby", "", 10).await.unwrap();
    assert_eq!(history.messages.len(), 2);
    assert_eq!(history.messages[0], good);
    let removed = &history.messages[1];
    assert!(removed.removed);
    assert!(removed.text.is_empty());
    assert_eq!(removed.message_id, bad.message_id);
    // Again: the same answer, nothing appended.
    let streams = ["chat-lobby".to_owned()];
    let events = chat.chat_events(&streams).await;
    moderator.remove("lobby", &bad.message_id).await.unwrap();
    assert_eq!(chat.chat_events(&streams).await, events);
    // Unknown message, or another channel's.
    let unknown = moderator
        .remove("lobby", &Uuid::now_v7().to_string())
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let elsewhere = moderator
        .remove(&format!("table-{}", Uuid::now_v7()), &good.message_id)
        .await
        .unwrap_err();
    assert_eq!(elsewhere.code(), Code::NotFound);

    // A mute in the lobby only.
    let table = Uuid::now_v7();
    let table_channel = format!("table-{table}");
    chat.sit(table, 0, &bob).await;
    let _bob_table = bob.subscribe_when_member(&table_channel).await;
    let until = moderator.mute(bob.id, "lobby", 60).await.unwrap();
    let muted = bob.post("lobby", "hello?").await.unwrap_err();
    assert_eq!(muted.code(), Code::PermissionDenied);
    assert!(
        muted.message().contains("muted until"),
        "{}",
        muted.message()
    );
    bob.post(&table_channel, "still at my table").await.unwrap();
    // Everywhere.
    moderator.mute(bob.id, "", 120).await.unwrap();
    assert_eq!(
        bob.post(&table_channel, "and here?")
            .await
            .unwrap_err()
            .code(),
        Code::PermissionDenied
    );
    // The lobby mute ends first; the one everywhere still holds; then both are over.
    // (Connections are refreshed on the stream's own schedule; jumping the clock ahead
    // needs fresh ones.)
    chat.clock.advance(Duration::from_secs(61));
    let _bob_lobby = bob.subscribe("lobby").await.unwrap();
    assert!(until.seconds > 0);
    assert_eq!(
        bob.post("lobby", "now?").await.unwrap_err().code(),
        Code::PermissionDenied
    );
    chat.clock.advance(Duration::from_secs(60));
    let _bob_lobby = bob.subscribe("lobby").await.unwrap();
    let back = bob.post("lobby", "back").await.unwrap();
    assert_eq!(alice_sub.message().await, back);
    chat.finish().await;
}

#[tokio::test]
async fn moderation_sqlite() {
    moderation(Db::Sqlite).await;
}

#[tokio::test]
async fn moderation_postgres() {
    moderation(Db::Postgres).await;
}
