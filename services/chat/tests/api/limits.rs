//! The rate limit under concurrency, the profanity filter and bad input.

use std::time::Duration;

use fairdeal_chat::service::ChatLimits;
use fairdeal_proto::fairdeal::chat::v1 as pb;
use tonic::Code;

use crate::harness::{BOTH, Db, TestChat, with};

async fn fifty_concurrent_posts(db: Db) {
    let chat = TestChat::spawn(db).await;
    let alice = chat.player();
    let _sub = alice.subscribe("lobby").await.unwrap();
    let posts = (0..50).map(|i| {
        let alice = &alice;
        async move { alice.post("lobby", &format!("flood {i}")).await }
    });
    let results = futures::future::join_all(posts).await;
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(
        accepted,
        5,
        "{db:?}: exactly the allowed number; first refusal {:?}",
        results.iter().find_map(|r| r.as_ref().err())
    );
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
        let retry: u64 = refused
            .metadata()
            .get("retry-after")
            .expect("retry-after")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=10).contains(&retry), "{retry}");
    }
    let history = alice.history("lobby", "", 100).await.unwrap();
    assert_eq!(history.messages.len(), 5);
    // Another user has their own allowance.
    let bob = chat.player();
    let _bob_sub = bob.subscribe("lobby").await.unwrap();
    bob.post("lobby", "me too").await.unwrap();
    // The window slides.
    chat.clock.advance(Duration::from_secs(10));
    alice.post("lobby", "again").await.unwrap();
    chat.finish().await;
}

#[tokio::test]
async fn fifty_concurrent_posts_sqlite() {
    fifty_concurrent_posts(Db::Sqlite).await;
}

#[tokio::test]
async fn fifty_concurrent_posts_postgres() {
    fifty_concurrent_posts(Db::Postgres).await;
}

#[tokio::test]
async fn the_profanity_filter_masks_words_when_on() {
    let chat = TestChat::spawn_with(Db::Sqlite, ChatLimits::default(), true).await;
    let alice = chat.player();
    let _sub = alice.subscribe("lobby").await.unwrap();
    let posted = alice.post("lobby", "what the fuck").await.unwrap();
    assert!(!posted.text.contains("fuck"), "{}", posted.text);
    assert!(posted.text.starts_with("what the "), "{}", posted.text);
    let clean = alice.post("lobby", "good game, well played").await.unwrap();
    assert_eq!(clean.text, "good game, well played");
    chat.finish().await;
    // Off by default.
    let chat = TestChat::spawn(Db::Sqlite).await;
    let alice = chat.player();
    let _sub = alice.subscribe("lobby").await.unwrap();
    assert_eq!(
        alice.post("lobby", "what the fuck").await.unwrap().text,
        "what the fuck"
    );
    chat.finish().await;
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    for db in BOTH {
        let chat = TestChat::spawn(db).await;
        let alice = chat.player();
        let moderator = chat.moderator();
        let _sub = alice.subscribe("lobby").await.unwrap();
        let streams = ["chat-lobby".to_owned(), format!("chatmute-{}", alice.id)];
        let before = chat.chat_events(&streams).await;
        let long = "x".repeat(501);
        let cases: Vec<(&str, String, &str)> = vec![
            ("lobby", long.clone(), "text"),
            ("lobby", "a\u{0}b".into(), "text"),
            ("lobby", "line\nbreak".into(), "text"),
            ("lobby", "   ".into(), "text"),
            ("lobby", String::new(), "text"),
            ("general", "hi".into(), "channel"),
            ("", "hi".into(), "channel"),
            ("table-42", "hi".into(), "channel"),
            (&long, "hi".into(), "channel"),
        ];
        for (channel, text, field) in &cases {
            let status = alice.post(channel, text).await.unwrap_err();
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "{db:?} {channel:?} {text:?}"
            );
            assert!(status.message().starts_with(field), "{}", status.message());
            assert!(status.message().len() < 300);
        }
        // 500 characters after trimming pass.
        let max = format!("  {}  ", "é".repeat(500));
        alice.post("lobby", &max).await.unwrap();
        let after_ok = chat.chat_events(&streams).await;
        assert_eq!(after_ok, before + 1);
        for (status, field) in [
            (alice.subscribe("nope").await.err().unwrap(), "channel"),
            (
                alice.history("lobby", "not-a-uuid", 10).await.unwrap_err(),
                "before_message_id",
            ),
            (alice.history("lobby", "", 101).await.unwrap_err(), "limit"),
            (
                moderator.mute(alice.id, "lobby", 0).await.unwrap_err(),
                "duration_seconds",
            ),
            (
                moderator
                    .mute(alice.id, "lobby", 31 * 86_400)
                    .await
                    .unwrap_err(),
                "duration_seconds",
            ),
            (
                moderator.mute(alice.id, "nope", 60).await.unwrap_err(),
                "channel",
            ),
            (
                moderator.remove("lobby", &long).await.unwrap_err(),
                "message_id",
            ),
        ] {
            assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
            assert!(status.message().starts_with(field), "{}", status.message());
        }
        // A long reason.
        let (mut client, token) = moderator.raw();
        let status = client
            .mute(with(
                token,
                pb::MuteRequest {
                    user_id: alice.id.to_string(),
                    channel: String::new(),
                    duration_seconds: 60,
                    reason: "r".repeat(201),
                },
            ))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().starts_with("reason"),
            "{}",
            status.message()
        );
        assert_eq!(chat.chat_events(&streams).await, after_ok);
        chat.finish().await;
    }
}
