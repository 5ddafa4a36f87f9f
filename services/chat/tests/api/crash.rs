//! A chat replica killed with SIGKILL loses no acknowledged message: the real binary runs
//! as a child process, posts are acknowledged by it, it is killed mid-stream, and a new
//! replica's history holds every acknowledged message.

use std::process::Stdio;
use std::sync::Arc;

use fairdeal_authn::SigningKey;
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use std::sync::Mutex;
use tokio::process::{Child, Command};
use tokio_stream::StreamExt;
use uuid::Uuid;

use crate::harness::{Db, with};

fn free_port() -> u16 {
    fairdeal_testkit::free_port().unwrap()
}

/// Starts the `fairdeal-chat` binary on `port` over `database_url` (with NATS and Redis
/// under `prefix` when given).
fn start(port: u16, database_url: &str, prefix: Option<&str>, signing: &SigningKey) -> Child {
    let keys = format!(
        "{}:{}",
        signing.kid(),
        hex_of(&signing.public_key().to_bytes())
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_fairdeal-chat"));
    command
        .env("FAIRDEAL_LISTEN_ADDR", format!("127.0.0.1:{port}"))
        .env("FAIRDEAL_DATABASE_URL", database_url)
        .env("FAIRDEAL_AUTH_PUBLIC_KEYS", keys)
        .env("FAIRDEAL_RATE_LIMIT_MESSAGES", "1000")
        .env("FAIRDEAL_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(prefix) = prefix {
        command
            .env("FAIRDEAL_NATS_URL", fairdeal_testkit::nats_url())
            .env("FAIRDEAL_REDIS_URL", fairdeal_testkit::redis_url())
            .env("FAIRDEAL_SUBJECT_PREFIX", prefix);
    }
    command.spawn().unwrap()
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn client(port: u16) -> ChatServiceClient<tonic::transport::Channel> {
    fairdeal_harness::serving(port).await;
    ChatServiceClient::new(fairdeal_harness::lazy(port))
}

async fn kill_loses_nothing(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let (url, database) = match db {
        Db::Postgres => {
            let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
            (database.url().to_owned(), Some(database))
        }
        Db::Sqlite => (
            format!("sqlite://{}", dir.path().join("chat.db").display()),
            None,
        ),
    };
    let prefix = database
        .is_some()
        .then(|| fairdeal_testkit::subject_prefix("chatkill"));
    let signing = SigningKey::generate().unwrap();
    let port = free_port();
    let mut child = start(port, &url, prefix.as_deref(), &signing);
    let chat = client(port).await;

    // Eight writers, each connected, posting until the replica dies.
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    let (enough_tx, mut enough) = tokio::sync::mpsc::channel::<()>(64);
    for w in 0..8 {
        let token = fairdeal_harness::player_token(&signing, Uuid::now_v7());
        let mut chat = chat.clone();
        let acknowledged = acknowledged.clone();
        let enough_tx = enough_tx.clone();
        let mut connection = chat
            .subscribe(with(
                &token,
                pb::SubscribeRequest {
                    channel: "lobby".into(),
                },
            ))
            .await
            .unwrap()
            .into_inner();
        connection.next().await.unwrap().unwrap();
        writers.push(tokio::spawn(async move {
            let _connection = connection;
            for i in 0.. {
                let posted = chat
                    .post(with(
                        &token,
                        pb::PostRequest {
                            channel: "lobby".into(),
                            text: format!("writer {w} message {i}"),
                        },
                    ))
                    .await;
                match posted {
                    Ok(r) => {
                        acknowledged
                            .lock()
                            .unwrap()
                            .push(r.into_inner().message.unwrap().message_id);
                        let _ = enough_tx.try_send(());
                    }
                    // The replica is gone.
                    Err(_) => return,
                }
            }
        }));
    }
    drop(enough_tx);
    // Kill once 200 posts were acknowledged, while the writers keep going.
    for _ in 0..200 {
        enough.recv().await.unwrap();
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= 200);

    // A new replica over the same database reads them all back.
    let port = free_port();
    let mut child = start(port, &url, prefix.as_deref(), &signing);
    let mut chat = client(port).await;
    let reader = fairdeal_harness::player_token(&signing, Uuid::now_v7());
    let mut stored = std::collections::HashSet::new();
    let mut before = String::new();
    loop {
        let page = chat
            .history(with(
                &reader,
                pb::HistoryRequest {
                    channel: "lobby".into(),
                    before_message_id: before.clone(),
                    limit: 100,
                },
            ))
            .await
            .unwrap()
            .into_inner();
        stored.extend(page.messages.iter().map(|m| m.message_id.clone()));
        if !page.more {
            break;
        }
        before = page.messages.last().unwrap().message_id.clone();
    }
    let lost: Vec<_> = acknowledged
        .iter()
        .filter(|id| !stored.contains(*id))
        .collect();
    assert!(
        lost.is_empty(),
        "{db:?}: {} acknowledged messages lost",
        lost.len()
    );
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    if let Some(database) = database {
        database.drop().await.unwrap();
    }
}

#[tokio::test]
async fn a_killed_replica_loses_no_acknowledged_message_sqlite() {
    kill_loses_nothing(Db::Sqlite).await;
}

#[tokio::test]
async fn a_killed_replica_loses_no_acknowledged_message_postgres() {
    kill_loses_nothing(Db::Postgres).await;
}
