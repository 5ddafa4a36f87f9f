//! Delivery and history.

use std::collections::HashSet;

use fairdeal_proto::fairdeal::chat::v1 as pb;
use uuid::Uuid;

use crate::harness::{BOTH, Db, TestChat};

async fn two_subscribers_see_the_same_order(db: Db) {
    let chat = TestChat::spawn(db).await;
    let table = Uuid::now_v7();
    let channel = format!("table-{table}");
    let (alice, bob) = (chat.player(), chat.player());
    chat.sit(table, 0, &alice).await;
    chat.sit(table, 2, &bob).await;
    let mut a = alice.subscribe_when_member(&channel).await;
    let mut b = bob.subscribe_when_member(&channel).await;
    // Posts from both at once; each subscription gets all of them in one order.
    let posts = (0..4).map(|i| {
        let (alice, bob, channel) = (&alice, &bob, channel.clone());
        async move {
            let who = if i % 2 == 0 { alice } else { bob };
            who.post(&channel, &format!("message {i}")).await.unwrap()
        }
    });
    let posted = futures::future::join_all(posts).await;
    let mut seen_a = Vec::new();
    let mut seen_b = Vec::new();
    for _ in 0..posted.len() {
        seen_a.push(a.message().await);
        seen_b.push(b.message().await);
    }
    assert_eq!(seen_a, seen_b);
    // Nothing from before the subscription: the first message follows the connected seq.
    assert_eq!(seen_a[0].seq, a.seq + 1);
    let seqs: Vec<u64> = seen_a.iter().map(|m| m.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let ids: HashSet<_> = seen_a.iter().map(|m| m.message_id.clone()).collect();
    let posted_ids: HashSet<_> = posted.iter().map(|m| m.message_id.clone()).collect();
    assert_eq!(ids, posted_ids);
    // Nothing more (exactly once): a later message is the next item.
    let last = alice.post(&channel, "last").await.unwrap();
    assert_eq!(a.message().await, last);
    assert_eq!(b.message().await, last);
    // The lobby is another stream.
    let mut lobby = alice.subscribe("lobby").await.unwrap();
    let in_lobby = bob.post("lobby", "hi").await;
    assert_eq!(
        in_lobby.unwrap_err().code(),
        tonic::Code::FailedPrecondition,
        "bob is not connected to the lobby"
    );
    let _bob_lobby = bob.subscribe("lobby").await.unwrap();
    let hi = bob.post("lobby", "hi all").await.unwrap();
    assert_eq!(lobby.message().await, hi);
    assert_eq!(hi.channel, "lobby");
    chat.finish().await;
}

#[tokio::test]
async fn two_subscribers_see_the_same_order_sqlite() {
    two_subscribers_see_the_same_order(Db::Sqlite).await;
}

#[tokio::test]
async fn two_subscribers_see_the_same_order_postgres() {
    two_subscribers_see_the_same_order(Db::Postgres).await;
}

#[tokio::test]
async fn history_pages_across_1000_messages() {
    for db in BOTH {
        let chat = TestChat::spawn_with(
            db,
            fairdeal_chat::service::ChatLimits {
                messages: 2000,
                ..Default::default()
            },
            false,
        )
        .await;
        let alice = chat.player();
        let _sub = alice.subscribe("lobby").await.unwrap();
        let mut posted = Vec::new();
        for i in 0..1050 {
            posted.push(alice.post("lobby", &format!("m{i}")).await.unwrap());
        }
        // Newest first, pages of 100, each starting before the previous page's last.
        let mut read: Vec<pb::ChatMessage> = Vec::new();
        let mut before = String::new();
        loop {
            let page = alice.history("lobby", &before, 100).await.unwrap();
            assert!(page.messages.len() <= 100);
            read.extend(page.messages.iter().cloned());
            if !page.more {
                break;
            }
            before = page.messages.last().unwrap().message_id.clone();
        }
        read.reverse();
        assert_eq!(read, posted, "{db:?}");
        // The default page is 50, newest first.
        let page = alice.history("lobby", "", 0).await.unwrap();
        assert_eq!(page.messages.len(), 50);
        assert_eq!(page.messages[0], posted[1049]);
        assert!(page.more);
        chat.finish().await;
    }
}
