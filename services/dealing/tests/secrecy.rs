//! The server seed never appears before its reveal: every log line (at TRACE, with span
//! fields), every stored event (payload and envelope, in both services' logs) and every
//! error message captured during a full table flow and a seed-pair flow is scanned for the
//! seed once it is revealed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/mod.rs"]
mod common;

use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use uuid::Uuid;

use common::{Db, LogBuffer, TestApp, with};

/// Everything stored in a service's event log, as text (envelope fields and raw payload).
async fn all_events(app: &TestApp, dealing: bool) -> String {
    let storage = if dealing {
        &app.dealing_storage
    } else {
        &app.commitment_storage
    };
    let events = storage.events().read_all(1, 100_000).await.unwrap();
    assert!(!events.is_empty());
    events
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {} {:?} {}",
                e.stream_id,
                e.event_type,
                e.correlation_id,
                e.causation_id,
                e.trace_context,
                String::from_utf8_lossy(&e.payload)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_absent(seed: &str, haystack: &str, what: &str) {
    assert_eq!(seed.len(), 64);
    assert!(
        !haystack.contains(seed),
        "the server seed appears in {what}"
    );
    // Also no half of it (a truncated or split leak).
    assert!(
        !haystack.contains(&seed[..32]),
        "half the seed appears in {what}"
    );
    assert!(
        !haystack.contains(&seed[32..]),
        "half the seed appears in {what}"
    );
}

#[tokio::test]
async fn the_server_seed_never_appears_before_its_reveal() {
    let logs = LogBuffer::default();
    tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .with_ansi(false)
        .init();

    let mut app = TestApp::spawn(Db::Sqlite).await;
    let tables = app.service_token("tables");
    let t = Uuid::now_v7().to_string();
    let mut errors = Vec::new();
    app.create_table(&tables, &t, "beacon round 77")
        .await
        .unwrap();
    for seat in 0..4u32 {
        app.commitment
            .contribute_seed(with(
                &tables,
                cpb::ContributeSeedRequest {
                    table_id: t.clone(),
                    seat,
                    player_id: Uuid::now_v7().to_string(),
                    contribution: format!("c{seat}"),
                },
            ))
            .await
            .unwrap();
    }
    let deal = |hand| dpb::DealHandRequest {
        table_id: t.clone(),
        deck: "bridge".into(),
        hand,
    };
    errors.push(
        app.dealing
            .deal_hand(with(&tables, deal(0)))
            .await
            .unwrap_err(),
    );
    app.bind_delayed_value(&tables, &t, "0xfeed").await.unwrap();
    for hand in 0..4 {
        app.dealing
            .deal_hand(with(&tables, deal(hand)))
            .await
            .unwrap();
    }
    // Failures of every kind along the way.
    errors.push(
        app.dealing
            .deal_hand(with(&tables, deal(9)))
            .await
            .unwrap_err(),
    );
    errors.push(
        app.commitment
            .get_table_dealing_seeds(with(
                &tables,
                cpb::GetTableDealingSeedsRequest {
                    table_id: t.clone(),
                },
            ))
            .await
            .unwrap_err(),
    );
    errors.push(
        app.bind_delayed_value(&tables, &t, "again")
            .await
            .unwrap_err(),
    );
    let user = Uuid::now_v7();
    let me = app.player_token(user);
    for game in ["dice", "crash", "tower"] {
        app.dealing
            .place_bet(with(
                &me,
                dpb::PlaceBetRequest {
                    options: Some(dpb::GameOptions {
                        game: game.into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ))
            .await
            .unwrap();
    }
    errors.push(
        app.dealing
            .place_bet(with(
                &me,
                dpb::PlaceBetRequest {
                    options: Some(dpb::GameOptions {
                        game: "mines".into(),
                        mines: Some(99),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err(),
    );

    // Everything captured before the reveals.
    let logs_before = logs.text();
    let commitment_events = all_events(&app, false).await;
    let dealing_events = all_events(&app, true).await;
    let error_text: String = errors
        .iter()
        .map(|e| format!("{:?} {} {:?}", e.code(), e.message(), e.metadata()))
        .collect();
    // The capture works: the requests' spans and ids are in it.
    assert!(logs_before.contains(&t), "table id not logged");
    assert!(logs_before.contains("deal_hand"), "spans not captured");
    assert_eq!(errors.len(), 5);

    let table = app.reveal(&tables, &t, "", "").await.unwrap();
    let pair = app
        .commitment
        .rotate_seed_pair(with(&me, cpb::RotateSeedPairRequest::default()))
        .await
        .unwrap()
        .into_inner()
        .revealed
        .unwrap();
    for seed in [&table.server_seed, &pair.server_seed] {
        assert_absent(seed, &logs_before, "the logs");
        assert_absent(seed, &commitment_events, "the commitment events");
        assert_absent(seed, &dealing_events, "the dealing events");
        assert_absent(seed, &error_text, "an error message");
    }
    // The reveal events hold them (a positive control for the scan).
    let after = all_events(&app, false).await;
    assert!(after.contains(&table.server_seed));
    assert!(after.contains(&pair.server_seed));
    // The dealing log never holds a seed, even after the reveal.
    let dealing_after = all_events(&app, true).await;
    assert_absent(&table.server_seed, &dealing_after, "the dealing events");
    app.stop().await;
}
