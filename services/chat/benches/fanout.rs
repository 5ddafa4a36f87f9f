//! Messages posted and fanned out per second, and the time from post to delivery, through
//! the gRPC API end to end (token check, membership, presence, mute and rate-limit checks,
//! the transaction appending the event and the history row, the fan-out, the streams):
//!
//! - one channel (the lobby) with 100 subscribers, 10 posters;
//! - 1,000 table channels of 4 members each (4,000 subscriptions), one poster per table.
//!
//! `cargo bench -p fairdeal-chat --bench fanout` (embedded SQLite; set
//! `FAIRDEAL_BENCH_DB=postgres` for PostgreSQL + NATS + Redis). `FAIRDEAL_BENCH_SCALE`
//! (default 1) multiplies the number of messages.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    dead_code,
    unreachable_pub
)]

#[path = "../tests/api/harness.rs"]
mod harness;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fairdeal_chat::service::ChatLimits;
use futures::future::join_all;
use harness::{Db, Subscription, TestChat, User};
use uuid::Uuid;

/// Send times and delivery times by message text.
#[derive(Default)]
struct Clocks {
    sent: Mutex<HashMap<String, Instant>>,
    delivered: Mutex<Vec<(String, Instant)>>,
}

/// Reads `count` messages from `sub`, noting when each arrived.
fn receive(
    mut sub: Subscription,
    count: usize,
    clocks: Arc<Clocks>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for _ in 0..count {
            let message = sub.message().await;
            let at = Instant::now();
            clocks.delivered.lock().unwrap().push((message.text, at));
        }
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Prints the figures of one phase.
fn report(name: &str, posts: usize, post_time: Duration, clocks: &Clocks, started: Instant) {
    let sent = clocks.sent.lock().unwrap();
    let delivered = clocks.delivered.lock().unwrap();
    let mut latencies: Vec<Duration> = delivered
        .iter()
        .map(|(text, at)| at.duration_since(sent[text]))
        .collect();
    latencies.sort();
    let last = delivered.iter().map(|(_, at)| *at).max().unwrap();
    let span = last.duration_since(started).as_secs_f64();
    println!(
        "{name}: {posts} posts in {:.2} s = {:.0} posts/s; {} deliveries in {span:.2} s = {:.0} deliveries/s; post -> delivery p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        post_time.as_secs_f64(),
        posts as f64 / post_time.as_secs_f64(),
        delivered.len(),
        delivered.len() as f64 / span,
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
    );
}

/// Posts `texts` by `poster` to `channel` one after another, noting send times.
async fn post_all(poster: &User, channel: &str, texts: Vec<String>, clocks: &Clocks) {
    for text in texts {
        clocks
            .sent
            .lock()
            .unwrap()
            .insert(text.clone(), Instant::now());
        poster.post(channel, &text).await.unwrap();
    }
}

async fn one_channel(db: Db, scale: usize) {
    let chat = TestChat::spawn_with(
        db,
        ChatLimits {
            messages: 1000,
            window: Duration::from_secs(1),
            ..ChatLimits::default()
        },
        false,
    )
    .await;
    let posts = 1000 * scale;
    let posters: Vec<User> = (0..10).map(|_| chat.player()).collect();
    let _connections = join_all(posters.iter().map(|p| p.subscribe("lobby"))).await;
    let clocks = Arc::new(Clocks::default());
    // 100 subscribers over 10 connections.
    let mut readers = Vec::new();
    for _ in 0..10 {
        let client = chat.client();
        for _ in 0..10 {
            let reader = chat.player_on(&client);
            let sub = reader.subscribe("lobby").await.unwrap();
            readers.push(receive(sub, posts, clocks.clone()));
        }
    }
    let started = Instant::now();
    join_all(posters.iter().enumerate().map(|(p, poster)| {
        let texts = (0..posts / 10).map(|i| format!("p{p} m{i}")).collect();
        post_all(poster, "lobby", texts, &clocks)
    }))
    .await;
    let post_time = started.elapsed();
    for reader in readers {
        reader.await.unwrap();
    }
    report(
        &format!("{db:?}, 1 channel x 100 subscribers, 10 posters"),
        posts,
        post_time,
        &clocks,
        started,
    );
    chat.finish().await;
}

async fn many_channels(db: Db, scale: usize) {
    let chat = TestChat::spawn_with(
        db,
        ChatLimits {
            messages: 1000,
            window: Duration::from_secs(1),
            ..ChatLimits::default()
        },
        false,
    )
    .await;
    const TABLES: usize = 1000;
    let per_table = 2 * scale;
    // 4 members per table, 100 users per connection.
    let clients: Vec<_> = (0..40).map(|_| chat.client()).collect();
    let mut tables = Vec::new();
    for t in 0..TABLES {
        let table = Uuid::now_v7();
        let members: Vec<User> = (0..4)
            .map(|m| chat.player_on(&clients[(t * 4 + m) % clients.len()]))
            .collect();
        for (seat, member) in members.iter().enumerate() {
            chat.sit(table, seat as u32, member).await;
        }
        tables.push((table, members));
    }
    // The projection applies events in order: once the last seat is in, all are.
    let (last_table, last_members) = tables.last().unwrap();
    let _probe = last_members[3]
        .subscribe_when_member(&format!("table-{last_table}"))
        .await;
    let clocks = Arc::new(Clocks::default());
    let mut readers = Vec::new();
    for (table, members) in &tables {
        let channel = format!("table-{table}");
        for member in members {
            let sub = member.subscribe(&channel).await.unwrap();
            readers.push(receive(sub, per_table, clocks.clone()));
        }
    }
    println!("{db:?}: {} subscriptions open", readers.len());
    let started = Instant::now();
    // One poster per table, 64 tables posting at a time.
    let jobs: Vec<_> = tables
        .iter()
        .map(|(table, members)| {
            let channel = format!("table-{table}");
            let texts: Vec<String> = (0..per_table).map(|i| format!("{table} m{i}")).collect();
            (channel, &members[0], texts)
        })
        .collect();
    for chunk in jobs.chunks(64) {
        join_all(
            chunk
                .iter()
                .map(|(channel, poster, texts)| post_all(poster, channel, texts.clone(), &clocks)),
        )
        .await;
    }
    let post_time = started.elapsed();
    for reader in readers {
        reader.await.unwrap();
    }
    report(
        &format!("{db:?}, {TABLES} channels x 4 subscribers, 64 posting at once"),
        TABLES * per_table,
        post_time,
        &clocks,
        started,
    );
    chat.finish().await;
}

fn main() {
    let db = match std::env::var("FAIRDEAL_BENCH_DB").as_deref() {
        Ok("postgres") => Db::Postgres,
        _ => Db::Sqlite,
    };
    let scale = std::env::var("FAIRDEAL_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        one_channel(db, scale).await;
        many_channels(db, scale).await;
    });
}
