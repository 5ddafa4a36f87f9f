//! The `fairdeal-admin dead-letters` commands, run as an operator would, on a SQLite file
//! holding a dead letter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use fairdeal_db::{DatabaseUrl, Db, Schema};
use fairdeal_eventstore::{ExpectedVersion, NewEvent, StreamId};
use serde_json::Value;

fn admin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairdeal-admin"))
        .args(args)
        .env_remove("FAIRDEAL_DATABASE_URL")
        .output()
        .unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn fails(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err}");
}

#[tokio::test]
async fn list_show_and_redrive_a_dead_letter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("service.db");
    let db = Db::open(&DatabaseUrl::sqlite(&path), &Schema::new("x").unwrap())
        .await
        .unwrap();
    let store = fairdeal_eventstore::AnyEventStore::open(&db).await.unwrap();
    db.migrate(&fairdeal_bus::db::MIGRATIONS).await.unwrap();
    let appended = store
        .into_dyn()
        .append(
            &StreamId::parse("table-1").unwrap(),
            ExpectedVersion::NoStream,
            vec![NewEvent::new("t.v1.Poison", vec![1, 2, 3])],
        )
        .await
        .unwrap();
    let event = &appended.events[0];
    let Db::Sqlite { pool } = &db else {
        unreachable!()
    };
    sqlx::query(
        "INSERT INTO bus_dead_letters (consumer, position, event_id, stream_id, event_type, \
         attempts, reason, payload) VALUES ('ratings', 1, $1, 'table-1', 't.v1.Poison', 3, \
         'handler failed: no such player', $2)",
    )
    .bind(event.event_id.to_string())
    .bind(event.encode_envelope())
    .execute(pool)
    .await
    .unwrap();
    db.close().await;

    let url = format!("sqlite://{}", path.display());
    let listed = lines(&admin(&["dead-letters", "list", "--database-url", &url]));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["consumer"], "ratings");
    assert_eq!(listed[0]["event_id"], event.event_id.to_string());
    assert_eq!(listed[0]["redrive"], "none");
    let id = listed[0]["id"].as_i64().unwrap().to_string();
    let none = lines(&admin(&[
        "dead-letters",
        "list",
        "--database-url",
        &url,
        "--consumer",
        "chat",
    ]));
    assert!(none.is_empty());

    let shown = lines(&admin(&[
        "dead-letters",
        "show",
        &id,
        "--database-url",
        &url,
    ]));
    assert_eq!(shown[0]["envelope"]["stream_id"], "table-1");
    assert_eq!(shown[0]["envelope"]["payload_hex"], "010203");

    let redriven = lines(&admin(&[
        "dead-letters",
        "redrive",
        &id,
        "--database-url",
        &url,
    ]));
    assert_eq!(redriven[0]["redrive"], "requested");
    let listed = lines(&admin(&["dead-letters", "list", "--database-url", &url]));
    assert_eq!(listed[0]["redrive"], "requested");

    fails(
        &admin(&["dead-letters", "redrive", "999", "--database-url", &url]),
        "dead letter 999 not found",
    );
    fails(
        &admin(&[
            "dead-letters",
            "list",
            "--database-url",
            "mysql://root:pw@h/db",
        ]),
        "--database-url",
    );
    let out = admin(&[
        "dead-letters",
        "list",
        "--database-url",
        "mysql://root:pw@h/db",
    ]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("pw"));
}
