//! The ledger over real games ([`fairdeal_e2e::platform::GameStack`] and the rating
//! service, both backends): a match played through gRPC by four players is rated (one
//! `RatingChanged` per seat, SPEC 6), ingested from every service's events, exported, and
//! `fairdeal audit` (the `fairdeal_cli` library the binary runs) passes it offline; a
//! changed byte fails it; a game not finished exports nothing; the archive refuses UPDATE
//! and DELETE; a restarted ledger rebuilds the same tree from its archive.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use fairdeal_cli::audit::audit;
use fairdeal_e2e::platform::{Backend, GameStack, channel};
use fairdeal_ledger::log::CheckpointPolicy;
use fairdeal_ledger::{Application, MIGRATIONS, Parts, SCHEMA, SOURCES};
use fairdeal_platform::Storage;
use fairdeal_proto::fairdeal::ledger::v1 as pb;
use fairdeal_proto::fairdeal::ledger::v1::ledger_service_client::LedgerServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_tlog::export::{Line, decode_bytes, encode_bytes};
use fairdeal_tlog::{Checkpoint, NoteSigner, NoteVerifier, leaf_hash};
use tonic::Code;
use tonic::transport::Channel;

const ORIGIN: &str = "ledger.e2e.fairdeal.test";

fn signer() -> NoteSigner {
    NoteSigner::from_seed(ORIGIN, &[42; 32]).unwrap()
}

async fn start_ledger(stack: &mut GameStack, storage: Storage) -> u16 {
    let app = Application::assemble(
        &stack.common("ledger").unwrap(),
        Parts {
            storage,
            signer: signer(),
            policy: CheckpointPolicy {
                interval: Duration::from_millis(200),
                leaves: 100,
            },
            sources: SOURCES.map(String::from).to_vec(),
        },
    )
    .await
    .unwrap();
    let port = app.port();
    stack.on_stop(app.shutdown());
    tokio::spawn(app.run_until_stopped());
    fairdeal_testkit::wait_until_serving(&format!("http://127.0.0.1:{port}"), "")
        .await
        .unwrap();
    port
}

/// The rating service on `stack`, consuming its tables' `GameFinished`.
async fn start_rating(stack: &mut GameStack) {
    use fairdeal_rating_service::projection::MIGRATIONS as RATING_MIGRATIONS;
    use fairdeal_rating_service::startup::{Application, Parts, SCHEMA};
    let storage = stack.storage(SCHEMA, &[&RATING_MIGRATIONS]).await.unwrap();
    let app = Application::assemble(
        &stack.common("rating").unwrap(),
        Parts {
            storage,
            authn: stack.authenticator(),
            k: fairdeal_rating::DEFAULT_K,
        },
    )
    .await
    .unwrap();
    stack.on_stop(app.shutdown());
    tokio::spawn(app.run_until_stopped());
}

fn client(port: u16) -> LedgerServiceClient<Channel> {
    LedgerServiceClient::new(channel(port).unwrap())
}

async fn export(
    ledger: &mut LedgerServiceClient<Channel>,
    table_id: &str,
    previous: Vec<u64>,
) -> Result<Vec<String>, tonic::Status> {
    let mut stream = ledger
        .export_game(pb::ExportGameRequest {
            table_id: table_id.into(),
            previous_tree_sizes: previous,
        })
        .await?
        .into_inner();
    let mut lines = Vec::new();
    while let Some(chunk) = stream.message().await? {
        lines.extend(chunk.lines);
    }
    Ok(lines)
}

/// The export once the ledger has ingested the game to its seed reveal and `ratings`
/// rating changes. The ledger's and the rating service's consumers run on their own; there
/// is no signal to wait on from outside, so this asks again (every 50 ms, at most 60 s)
/// while the answer is "not finished yet" or lacks rating changes.
async fn export_when_ingested(
    ledger: &mut LedgerServiceClient<Channel>,
    table_id: &str,
    ratings: usize,
) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match export(ledger, table_id, vec![]).await {
            Ok(lines)
                if lines
                    .iter()
                    .filter(|l| l.contains("fairdeal.rating.v1.RatingChanged"))
                    .count()
                    >= ratings =>
            {
                return lines;
            }
            Ok(_) => assert!(
                Instant::now() < deadline,
                "export of {table_id}: fewer than {ratings} rating changes"
            ),
            Err(s)
                if matches!(s.code(), Code::NotFound | Code::FailedPrecondition)
                    && Instant::now() < deadline => {}
            Err(s) => panic!("export of {table_id}: {s:?}"),
        }
        // Not finished yet, or without its rating changes: ask again.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

async fn a_finished_game_exports_and_audits(backend: Backend) {
    let mut stack = GameStack::start(backend).await.unwrap();
    let storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
    let port = start_ledger(&mut stack, storage.clone()).await;
    start_rating(&mut stack).await;
    let mut ledger = client(port);
    let key: NoteVerifier = signer().verifier();

    // A table that never starts: created before the played one, so ingested before it.
    let waiting = stack.player().unwrap();
    let unfinished = waiting
        .create_table(tpb::CreateTableRequest::default())
        .await
        .unwrap()
        .table_id;
    let (_players, view) = stack.play_bot_table().await.unwrap();
    // Four people sat: the game is rated, one change per seat, in the export.
    let lines = export_when_ingested(&mut ledger, &view.table_id, 4).await;

    // The audit passes, having checked everything, the four rating changes recomputed.
    let report = audit(&text(&lines), &key, None);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert!(report.hands >= 1 && report.moves >= 40, "{report:?}");
    assert_eq!(report.ratings, 4, "{report:?}");
    for check in [
        "checkpoint",
        "inclusion",
        "chain",
        "commitment",
        "client_seed",
        "deal",
        "replay",
        "result",
        "rating",
    ] {
        assert!(report.checks[check].checked > 0, "{check} was not checked");
    }
    // The table, the commitment session and the deals are all there.
    for prefix in ["table-", "commitmenttable-", "deals-"] {
        let stream = format!("{prefix}{}", view.table_id);
        assert!(
            lines.iter().any(|l| l.contains(&stream)),
            "{stream} missing"
        );
    }

    // A game not finished exports nothing.
    let refused = export(&mut ledger, &unfinished, vec![]).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    let missing = export(&mut ledger, &uuid::Uuid::now_v7().to_string(), vec![])
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);

    // One changed byte of a proof node, or of the seed, fails the audit.
    let mut parsed: Vec<Line> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    if let Some(Line::Event(e)) = parsed.get_mut(5) {
        let mut node = decode_bytes(&e.proof[0]).unwrap();
        node[7] ^= 1;
        e.proof[0] = encode_bytes(&node);
    }
    let tampered: Vec<String> = parsed
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    let report = audit(&text(&tampered), &key, None);
    assert!(
        report
            .failures
            .iter()
            .any(|f| f.check == "inclusion" && f.line == 6),
        "{:#?}",
        report.failures
    );
    let mut seeded: Vec<Line> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    if let Some(Line::Header(h)) = seeded.get_mut(0) {
        h.server_seed.push('x');
    }
    let seeded: Vec<String> = seeded
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    assert!(audit(&text(&seeded), &key, None).failed("commitment"));

    // Proofs by event id and consistency between checkpoints, over gRPC.
    let checkpoint = ledger
        .get_checkpoint(pb::GetCheckpointRequest {})
        .await
        .unwrap()
        .into_inner();
    let opened = Checkpoint::open(
        checkpoint.checkpoint.as_bytes(),
        ORIGIN,
        std::slice::from_ref(&key),
    )
    .unwrap();
    let Line::Event(first) = serde_json::from_str::<Line>(&lines[1]).unwrap() else {
        panic!("line 2 is not an event");
    };
    let envelope = decode_bytes(&first.envelope).unwrap();
    let event = fairdeal_eventstore::RecordedEvent::decode_envelope(0, &envelope).unwrap();
    let inclusion = ledger
        .get_inclusion_proof(pb::GetInclusionProofRequest {
            event_id: event.event_id.to_string(),
            tree_size: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(inclusion.tree_size, opened.size());
    assert_eq!(inclusion.envelope, envelope);
    let proof: Vec<[u8; 32]> = inclusion
        .proof
        .iter()
        .map(|h| h.as_slice().try_into().unwrap())
        .collect();
    opened
        .verify_inclusion(&leaf_hash(&envelope), inclusion.leaf_index, &proof)
        .unwrap();
    let consistency = ledger
        .get_consistency_proof(pb::GetConsistencyProofRequest {
            old_size: 1,
            new_size: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(consistency.new_size, opened.size());

    // A later export proves that it extends the first one's checkpoint (`--previous`).
    let Line::Header(first_header) = serde_json::from_str::<Line>(&lines[0]).unwrap() else {
        panic!("line 1 is not the header");
    };
    let first_checkpoint = Checkpoint::open(
        first_header.checkpoint.as_bytes(),
        ORIGIN,
        std::slice::from_ref(&key),
    )
    .unwrap();
    let again = export(&mut ledger, &view.table_id, vec![first_checkpoint.size()])
        .await
        .unwrap();
    let report = audit(&text(&again), &key, Some(&first_header.checkpoint));
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert_eq!(report.checks["consistency"].checked, 1);

    // The archive is append-only.
    let db = storage.db();
    for statement in [
        "UPDATE ledger_leaves SET event_type = 'x'",
        "DELETE FROM ledger_leaves",
        "UPDATE ledger_checkpoints SET note = 'x'",
        "DELETE FROM ledger_checkpoints",
    ] {
        let result =
            fairdeal_db::on_db!(db, pool => sqlx::query(statement).execute(pool).await.map(|_| ()));
        let error = result.unwrap_err().to_string();
        assert!(error.contains("append-only"), "{statement}: {error}");
    }

    // A second ledger over the same archive rebuilds the same tree: the stored
    // checkpoint is its root (it refuses to start otherwise) and proofs still verify.
    let second = start_ledger(&mut stack, storage.clone()).await;
    let mut ledger2 = client(second);
    let status = ledger2
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(status.tree_size >= opened.size(), "{status:?}");
    assert_eq!(status.halted_streams, 0);
    let inclusion = ledger2
        .get_inclusion_proof(pb::GetInclusionProofRequest {
            event_id: event.event_id.to_string(),
            tree_size: opened.size(),
        })
        .await
        .unwrap()
        .into_inner();
    let proof: Vec<[u8; 32]> = inclusion
        .proof
        .iter()
        .map(|h| h.as_slice().try_into().unwrap())
        .collect();
    opened
        .verify_inclusion(&leaf_hash(&envelope), inclusion.leaf_index, &proof)
        .unwrap();
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_finished_game_exports_and_audits_embedded() {
    a_finished_game_exports_and_audits(Backend::Embedded).await;
}

#[tokio::test]
async fn a_finished_game_exports_and_audits_postgres_nats() {
    a_finished_game_exports_and_audits(Backend::PostgresNats).await;
}
