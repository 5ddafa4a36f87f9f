//! Who may read and post: members only, connected only, never in a finished game's
//! channel, never with a service token.

use std::time::Duration;

use tonic::Code;
use uuid::Uuid;

use crate::harness::{Db, TestChat, User};

/// Waits (at most 20 s) until `user` is refused from `channel`: the membership projection
/// is eventually consistent.
async fn until_refused(user: &User, channel: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match user.history(channel, "", 1).await {
            Err(s) if s.code() == Code::PermissionDenied => return,
            Ok(_) => {
                assert!(tokio::time::Instant::now() < deadline, "never refused");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("history: {s:?}"),
        }
    }
}

async fn refusals(db: Db) {
    let chat = TestChat::spawn(db).await;
    let table = Uuid::now_v7();
    let channel = format!("table-{table}");
    let (alice, bob, carol, dave) = (chat.player(), chat.player(), chat.player(), chat.player());
    chat.sit(table, 0, &alice).await;
    chat.sit(table, 1, &bob).await;
    chat.spectate(table, &dave).await;
    let mut alice_sub = alice.subscribe_when_member(&channel).await;
    let _bob_sub = bob.subscribe_when_member(&channel).await;
    let _dave_sub = dave.subscribe_when_member(&channel).await;
    // A spectator reads and posts.
    let hello = dave.post(&channel, "watching").await.unwrap();
    assert_eq!(alice_sub.message().await, hello);

    // Never there: refused everywhere, nothing appended.
    let streams = [
        format!("chat-{channel}"),
        "chat-lobby".to_owned(),
        format!("chatmute-{}", carol.id),
    ];
    let before = chat.chat_events(&streams).await;
    let refused = carol.subscribe(&channel).await.err().unwrap();
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(
        refused.message().contains("not a member"),
        "{}",
        refused.message()
    );
    assert_eq!(
        carol.post(&channel, "hi").await.unwrap_err().code(),
        Code::PermissionDenied
    );
    assert_eq!(
        carol.history(&channel, "", 10).await.unwrap_err().code(),
        Code::PermissionDenied
    );

    // A member not connected: FAILED_PRECONDITION.
    chat.sit(table, 3, &carol).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let unconnected = loop {
        let status = carol.post(&channel, "hi").await.unwrap_err();
        if status.code() != Code::PermissionDenied || tokio::time::Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(unconnected.code(), Code::FailedPrecondition);
    assert!(
        unconnected.message().contains("Subscribe"),
        "{}",
        unconnected.message()
    );
    // A service token is refused.
    let service = chat.service();
    assert_eq!(
        service.subscribe("lobby").await.err().unwrap().code(),
        Code::PermissionDenied
    );
    assert_eq!(
        service.post("lobby", "x").await.unwrap_err().code(),
        Code::PermissionDenied
    );
    // None of the refusals appended anything.
    assert_eq!(chat.chat_events(&streams).await, before);
    // Connected, then the stream ends: not connected any more.
    let sub = carol.subscribe(&channel).await.unwrap();
    drop(sub);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        // The server notices the closed stream and clears the presence.
        match carol.post(&channel, "still here?").await {
            Err(s) if s.code() == Code::FailedPrecondition => break,
            Ok(m) => {
                // Posted before the server saw the stream end; it reached the others.
                assert_eq!(alice_sub.message().await, m);
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "presence never cleared"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("post: {s:?}"),
        }
    }

    // A departed player: refused to read, subscribe and post.
    chat.leave(table, 1, &bob).await;
    until_refused(&bob, &channel).await;
    assert_eq!(
        bob.post(&channel, "bye").await.unwrap_err().code(),
        Code::PermissionDenied
    );
    assert_eq!(
        bob.subscribe(&channel).await.err().unwrap().code(),
        Code::PermissionDenied
    );

    // The game finishes: the channel is read-only, history still readable.
    chat.finish_game(table).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let read_only = loop {
        match alice.post(&channel, "gg").await {
            // Not read-only yet (that check comes before the rate limit's).
            Err(s) if s.code() == Code::ResourceExhausted => {
                assert!(tokio::time::Instant::now() < deadline, "never read-only");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => break s,
            Ok(m) => {
                assert_eq!(alice_sub.message().await, m);
                assert!(tokio::time::Instant::now() < deadline, "never read-only");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert_eq!(read_only.code(), Code::FailedPrecondition);
    assert!(
        read_only.message().contains("read-only"),
        "{}",
        read_only.message()
    );
    let history = alice.history(&channel, "", 100).await.unwrap();
    assert!(history.messages.iter().any(|m| m.text == "watching"));
    chat.finish().await;
}

#[tokio::test]
async fn refusals_sqlite() {
    refusals(Db::Sqlite).await;
}

#[tokio::test]
async fn refusals_postgres() {
    refusals(Db::Postgres).await;
}
