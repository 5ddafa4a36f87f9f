//! Issue 35's evidence that a drand table audits offline: the commitment service runs with
//! drand on, its relay a local test beacon (a test chain with its own key over drand's HTTP
//! API: **not drand**). A table created without a delayed source of its own gets a round of
//! that chain at commit; the service fetches, verifies and binds it; the game is played to
//! its end, exported from the ledger and `fairdeal audit` (the `fairdeal_cli` library the
//! binary runs) passes it against the chain given by its info JSON, as `--drand-chain` reads
//! it. Against quicknet (the default) the same export fails: the key is the auditor's, never
//! the log's. A changed round, signature or randomness in the export fails the named check.
//! A table whose round stalled (the beacon down past the round's time) is bound with its
//! fallback round and audits too, the stall checked (`drand_fallback`).

use std::sync::Arc;
use std::time::Duration;

use fairdeal_cli::audit::{audit, audit_with_chain};
use fairdeal_commitment::drand::Drand;
use fairdeal_drand_client::{BeaconClient, FetchPolicy, Relay};
use fairdeal_e2e::platform::{Backend, GameStack, channel};
use fairdeal_harness::drand::{BeaconMode, TestBeacon, test_chain};
use fairdeal_ledger::{MIGRATIONS, SCHEMA};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::ledger::v1::ledger_service_client::LedgerServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_tlog::NoteVerifier;
use tonic::transport::Channel;

use crate::{client, export_when_ingested, signer, start_ledger, start_rating, tampered, text};

/// The commitment service's drand over the test beacon: a round one period after the first
/// round at or after the commit (the beacon's chain has 1 s rounds), fallback 3 rounds later.
fn drand(beacon: &TestBeacon) -> Drand {
    let chain = Arc::new(beacon.chain().chain().unwrap());
    let policy = FetchPolicy {
        request_timeout: Duration::from_secs(2),
        passes: 3,
        backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
    };
    Drand {
        client: BeaconClient::new(chain, vec![Relay::parse(&beacon.url()).unwrap()], policy)
            .unwrap(),
        margin_rounds: 1,
        fallback_rounds: 3,
        stall_after: Duration::from_secs(30),
        deal_wait: Duration::from_secs(20),
    }
}

/// A platform with drand on, the ledger and the rating service running, and the key its
/// checkpoints verify with.
struct DrandStack {
    stack: GameStack,
    ledger: LedgerServiceClient<Channel>,
    key: NoteVerifier,
}

impl DrandStack {
    async fn start(backend: Backend, drand: Drand) -> Self {
        let mut stack = GameStack::start_with_drand(backend, drand).await.unwrap();
        let storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
        let port = start_ledger(&mut stack, storage).await;
        start_rating(&mut stack).await;
        Self {
            stack,
            ledger: client(port),
            key: signer().verifier(),
        }
    }
}

/// Seats `players` at `table_id`, plays the game to its end and returns its export once the
/// ledger has ingested it (the four rating changes included).
async fn play_and_export(
    ledger: &mut LedgerServiceClient<Channel>,
    table_id: &str,
    players: &[fairdeal_client::Player],
) -> Vec<String> {
    fairdeal_client::seat_players(table_id, players, "seed of seat")
        .await
        .unwrap();
    fairdeal_client::play_to_the_end(table_id, players, 0x5eed, |_, _| {})
        .await
        .unwrap();
    export_when_ingested(ledger, table_id, 4).await
}

/// `report` fails `check` at export line `line`.
fn failed(report: &fairdeal_cli::audit::Report, check: &str, line: usize) -> bool {
    report
        .failures
        .iter()
        .any(|f| f.check == check && f.line == line)
}

/// The watch's next message, within `within`; `awaited` says what was awaited if none came.
async fn next_within(
    watch: &mut tonic::Streaming<tpb::WatchResponse>,
    within: Duration,
    awaited: &str,
) -> tpb::WatchResponse {
    tokio::time::timeout(within, watch.message())
        .await
        .unwrap_or_else(|_| panic!("{awaited}"))
        .unwrap()
        .expect("the watch stays open")
}

/// The first event line of `event_type` (1-based) and its message.
fn first<M: prost::Message + Default>(lines: &[String], event_type: &str) -> (usize, M) {
    use fairdeal_tlog::export::{Line, decode_bytes};
    lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| match serde_json::from_str::<Line>(l).unwrap() {
            Line::Event(e) if e.event_type == event_type => {
                let bytes = decode_bytes(e.envelope.as_deref()?).unwrap();
                let envelope =
                    <fairdeal_event::Envelope as prost::Message>::decode(bytes.as_slice()).unwrap();
                Some((i + 1, M::decode(envelope.payload.as_slice()).unwrap()))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {event_type} disclosed in full"))
}

async fn a_drand_table_exports_and_audits(backend: Backend) {
    let beacon = TestBeacon::start(test_chain(35, 1, 50)).await;
    let DrandStack {
        stack,
        mut ledger,
        key,
    } = DrandStack::start(backend, drand(&beacon)).await;

    let (_players, view) = stack.play_bot_table().await.unwrap();
    let lines = export_when_ingested(&mut ledger, &view.table_id, 4).await;

    // The round fixed at commit is the one bound, and it is the test chain's.
    let published = "fairdeal.commitment.v1.TableCommitmentPublished";
    let bound = "fairdeal.commitment.v1.DelayedValueBound";
    let (published_line, commitment) = first::<cpb::TableCommitmentPublished>(&lines, published);
    let (bound_line, binding) = first::<cpb::DelayedValueBound>(&lines, bound);
    assert_ne!(commitment.drand_round, 0, "{commitment:?}");
    assert_eq!(binding.drand_round, commitment.drand_round, "{binding:?}");
    assert_eq!(
        commitment.drand_chain_hash,
        hex::encode(beacon.chain().info().chain_hash())
    );

    // The auditor's chain: the beacon's info JSON, read as `--drand-chain FILE` reads it.
    let chain = fairdeal_cli::drand_chain::parse(&beacon.info_json()).unwrap();
    let report = audit_with_chain(&text(&lines), &key, None, &chain);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    for check in [
        "commitment",
        "client_seed",
        "deal",
        "replay",
        "rating",
        "drand_chain",
        "drand_round",
        "drand_signature",
        "drand_randomness",
    ] {
        assert!(report.checks[check].checked > 0, "{check} was not checked");
    }
    assert_eq!(report.checks["drand_fallback"].checked, 0, "no stall");

    // Quicknet, the default: the test chain's round is not quicknet's.
    let report = audit(&text(&lines), &key, None);
    assert!(
        failed(&report, "drand_chain", published_line),
        "{report:#?}"
    );
    assert!(
        failed(&report, "drand_signature", bound_line),
        "{report:#?}"
    );

    // A changed round, signature or randomness in the export: the named check fails there.
    let round = binding.drand_round;
    let (changed, at) =
        tampered::<cpb::DelayedValueBound>(&lines, bound, |m| m.drand_round = round + 1);
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(failed(&report, "drand_round", at), "{:#?}", report.failures);
    assert!(
        failed(&report, "drand_signature", at),
        "{:#?}",
        report.failures
    );
    let other = beacon.chain().sign(round + 1).unwrap().signature().to_hex();
    let (changed, at) = tampered::<cpb::DelayedValueBound>(&lines, bound, |m| {
        m.drand_signature = other.clone();
    });
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(
        failed(&report, "drand_signature", at),
        "{:#?}",
        report.failures
    );
    let (changed, at) = tampered::<cpb::DelayedValueBound>(&lines, bound, |m| {
        m.drand_randomness = "ab".repeat(32);
    });
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(
        failed(&report, "drand_randomness", at),
        "{:#?}",
        report.failures
    );
    let (changed, at) = tampered::<cpb::TableCommitmentPublished>(&lines, published, |m| {
        m.drand_round -= 1;
    });
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(
        failed(&report, "drand_round", bound_line),
        "{:#?}",
        report.failures
    );
    assert_eq!(at, published_line);
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_drand_table_exports_and_audits_embedded() {
    a_drand_table_exports_and_audits(Backend::Embedded).await;
}

#[tokio::test]
async fn a_drand_table_exports_and_audits_postgres_nats() {
    a_drand_table_exports_and_audits(Backend::PostgresNats).await;
}

/// The beacon is down when the table is created: the commitment service declares the round
/// stalled (1 s after its time), the beacon comes back, the first deal binds the fallback
/// round, the game is played to its end and the export audits, the stall included. A stall
/// naming another round fails `drand_fallback` at its line.
async fn a_stalled_drand_table_exports_and_audits(backend: Backend) {
    let beacon = TestBeacon::start(test_chain(36, 1, 50)).await;
    beacon.set_mode(BeaconMode::Down);
    let drand = Drand {
        stall_after: Duration::from_secs(1),
        ..drand(&beacon)
    };
    let DrandStack {
        stack,
        mut ledger,
        key,
    } = DrandStack::start(backend, drand).await;

    let players: Vec<_> = (0..4).map(|_| stack.player().unwrap()).collect();
    let table_id = players[0]
        .create_table(tpb::CreateTableRequest::default())
        .await
        .unwrap()
        .table_id;
    let mut commitment = CommitmentServiceClient::new(channel(stack.ports().0).unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let committed = loop {
        let table = commitment
            .get_table_commitment(cpb::GetTableCommitmentRequest {
                table_id: table_id.clone(),
            })
            .await
            .unwrap()
            .into_inner()
            .table
            .unwrap();
        if table.drand_stalled {
            break table;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the round was never declared stalled: {table:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    beacon.set_mode(BeaconMode::Honest);
    let lines = play_and_export(&mut ledger, &table_id, &players).await;

    let (_, binding) =
        first::<cpb::DelayedValueBound>(&lines, "fairdeal.commitment.v1.DelayedValueBound");
    assert_eq!(binding.drand_round, committed.drand_fallback_round);
    let chain = fairdeal_cli::drand_chain::parse(&beacon.info_json()).unwrap();
    let report = audit_with_chain(&text(&lines), &key, None, &chain);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert_eq!(report.checks["drand_fallback"].checked, 1, "{report:?}");
    assert!(report.checks["drand_signature"].checked > 0);

    let stalled = "fairdeal.commitment.v1.DrandRoundStalled";
    let (changed, at) = tampered::<cpb::DrandRoundStalled>(&lines, stalled, |m| m.round += 1);
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(
        failed(&report, "drand_fallback", at),
        "{:#?}",
        report.failures
    );
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_stalled_drand_table_exports_and_audits_embedded() {
    a_stalled_drand_table_exports_and_audits(Backend::Embedded).await;
}

#[tokio::test]
async fn a_stalled_drand_table_exports_and_audits_postgres_nats() {
    a_stalled_drand_table_exports_and_audits(Backend::PostgresNats).await;
}

/// Issue 35's timelocked seed: a table created with a latest end 120 s away gets, at commit,
/// its server seed encrypted to the first round of the beacon's chain at or after that end
/// (plus the margin); it is played to its end, exported and audited: the ciphertext names
/// that round and chain, no hand was dealt after the latest end (`timelock_seed`), and with
/// the round's beacon it decrypts to the committed and revealed seed (`timelock_open`).
/// Without the beacon `timelock_open` is not run. A changed timelock round, latest end or
/// ciphertext in the export, or a beacon with another signature or a wrong randomness, fails
/// the named check. A latest end under 60 s is refused by the tables service, naming the
/// field.
async fn a_timelocked_table_exports_and_audits(backend: Backend) {
    let beacon = TestBeacon::start(test_chain(37, 1, 50)).await;
    let DrandStack {
        stack,
        mut ledger,
        key,
    } = DrandStack::start(backend, drand(&beacon)).await;

    let players: Vec<_> = (0..4).map(|_| stack.player().unwrap()).collect();
    let refused = players[0]
        .create_table(tpb::CreateTableRequest {
            timelock_seconds: 59,
            ..Default::default()
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("timelock_seconds"), "{refused}");
    let table_id = players[0]
        .create_table(tpb::CreateTableRequest {
            timelock_seconds: 120,
            ..Default::default()
        })
        .await
        .unwrap()
        .table_id;
    let lines = play_and_export(&mut ledger, &table_id, &players).await;

    let published = "fairdeal.commitment.v1.TableCommitmentPublished";
    let (published_line, commitment) = first::<cpb::TableCommitmentPublished>(&lines, published);
    let (_, revealed) =
        first::<cpb::TableSeedRevealed>(&lines, "fairdeal.commitment.v1.TableSeedRevealed");
    let round = commitment.timelock_round;
    assert!(round > commitment.drand_round, "{commitment:?}");
    let schedule = beacon.chain().info().schedule;
    assert_eq!(
        round,
        schedule
            .round_after(commitment.timelock_latest_end, 1)
            .unwrap()
    );
    assert!(
        !commitment
            .timelock_ciphertext
            .contains(&revealed.server_seed)
    );

    let chain = fairdeal_cli::drand_chain::parse(&beacon.info_json()).unwrap();
    let opening = beacon.chain().sign(round).unwrap();
    let report = fairdeal_cli::audit::audit_with_timelock(
        &text(&lines),
        &key,
        None,
        &chain,
        std::slice::from_ref(&opening),
    );
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    for check in [
        "commitment",
        "client_seed",
        "deal",
        "replay",
        "drand_round",
        "drand_signature",
        "timelock_seed",
        "timelock_open",
    ] {
        assert!(report.checks[check].checked > 0, "{check} was not checked");
    }
    // Before R' nobody has its beacon: the ciphertext is checked, not opened.
    let report = audit_with_chain(&text(&lines), &key, None, &chain);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert!(report.checks["timelock_seed"].checked > 0);
    assert_eq!(report.checks["timelock_open"].checked, 0);

    let audit_opened = |lines: &[String], beacon: &fairdeal_drand::Beacon| {
        fairdeal_cli::audit::audit_with_timelock(
            &text(lines),
            &key,
            None,
            &chain,
            std::slice::from_ref(beacon),
        )
    };
    // A changed round: the ciphertext is not encrypted to it, and R''s beacon is not its.
    let (changed, at) =
        tampered::<cpb::TableCommitmentPublished>(&lines, published, |m| m.timelock_round += 1);
    assert_eq!(at, published_line);
    let report = audit_opened(&changed, &opening);
    assert!(
        failed(&report, "timelock_seed", at),
        "{:#?}",
        report.failures
    );
    assert!(
        failed(&report, "timelock_open", at),
        "{:#?}",
        report.failures
    );
    // Another signature for R' (the next round's), or a randomness that is not its hash.
    let other = beacon.chain().sign(round + 1).unwrap();
    let forged = fairdeal_drand::Beacon::new(round, *other.signature(), None).unwrap();
    let report = audit_opened(&lines, &forged);
    assert!(
        failed(&report, "timelock_open", published_line),
        "{:#?}",
        report.failures
    );
    let wrong_randomness = fairdeal_drand::Beacon::new(
        round,
        *opening.signature(),
        Some(fairdeal_drand::Randomness::from_hex(&"ab".repeat(32)).unwrap()),
    )
    .unwrap();
    let report = audit_opened(&lines, &wrong_randomness);
    assert!(
        failed(&report, "timelock_open", published_line),
        "{:#?}",
        report.failures
    );
    // Another ciphertext to the same round (of another seed), and a damaged one.
    let beacon_chain = beacon.chain().chain().unwrap();
    let another = fairdeal_drand::timelock::encrypt(&beacon_chain, round, b"another seed").unwrap();
    let (changed, at) = tampered::<cpb::TableCommitmentPublished>(&lines, published, |m| {
        m.timelock_ciphertext = another.clone();
    });
    let report = audit_opened(&changed, &opening);
    assert!(
        failed(&report, "timelock_open", at),
        "{:#?}",
        report.failures
    );
    assert!(
        !failed(&report, "timelock_seed", at),
        "{:#?}",
        report.failures
    );
    let (changed, at) = tampered::<cpb::TableCommitmentPublished>(&lines, published, |m| {
        m.timelock_ciphertext = "not a ciphertext".into();
    });
    let report = audit_opened(&changed, &opening);
    assert!(
        failed(&report, "timelock_seed", at),
        "{:#?}",
        report.failures
    );
    assert!(
        failed(&report, "timelock_open", at),
        "{:#?}",
        report.failures
    );
    // A latest end before the hands were dealt.
    let (changed, at) = tampered::<cpb::TableCommitmentPublished>(&lines, published, |m| {
        m.timelock_latest_end = schedule.genesis_time() + 1;
    });
    let report = audit_opened(&changed, &opening);
    assert!(
        failed(&report, "timelock_seed", at),
        "{:#?}",
        report.failures
    );
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_timelocked_table_exports_and_audits_embedded() {
    a_timelocked_table_exports_and_audits(Backend::Embedded).await;
}

#[tokio::test]
async fn a_timelocked_table_exports_and_audits_postgres_nats() {
    a_timelocked_table_exports_and_audits(Backend::PostgresNats).await;
}

/// Issue 35: a timelocked table ends at its latest end. One player sits with three bots,
/// 60 s of latest end (the least) and 600 s per move, and never moves: their turn's
/// deadline is the latest end, not 600 s away, and there the table expires
/// (`TableExpired`) mid-hand instead of waiting for the move. From then on nothing is
/// played (a move is refused, naming the latest end), every seat's cards are public to any
/// watcher (as after `GameFinished`: the seed is anyone's from `R'` on), the seed is
/// revealed, nobody is rated, and the export passes `fairdeal audit` with the timelock
/// opened. An expiry moved after the time it was recorded at, or a move recorded after it,
/// fails `result` at its line.
async fn a_timelocked_table_expires_at_its_latest_end(backend: Backend) {
    use fairdeal_proto::fairdeal::tables::v1::table_event::Event as W;
    use fairdeal_tables::clock::TableClock;

    let beacon = TestBeacon::start(test_chain(38, 1, 50)).await;
    let DrandStack {
        stack,
        mut ledger,
        key,
    } = DrandStack::start(backend, drand(&beacon)).await;
    let player = stack.player().unwrap();
    let timelocked = tpb::CreateTableRequest {
        timelock_seconds: 60,
        move_seconds: 600,
        bot_seats: vec![1, 2, 3],
        ..Default::default()
    };
    // A table nobody sits at, created first: its latest end is no later than the other's.
    let idle = player
        .create_table(timelocked.clone())
        .await
        .unwrap()
        .table_id;
    let table_id = player.create_table(timelocked).await.unwrap().table_id;
    player.sit(&table_id, 0).await.unwrap();
    // The player's watch, with turn views: the bots' cards are placeholders while the hand
    // is played, and seat 0's turn (in the first auction) brings its view, whose deadline is
    // the latest end, not 600 s away.
    let mut watch = player.watch(&table_id, 0, true).await.unwrap();
    let mut hidden = 0;
    let turn = loop {
        let message = next_within(
            &mut watch,
            Duration::from_secs(60),
            "seat 0's turn comes in the first auction",
        )
        .await;
        if let Some(W::Placeholder(_)) = message.event.and_then(|e| e.event) {
            hidden += 1;
        }
        if let Some(view) = message.view {
            break view;
        }
    };
    assert_eq!(turn.game.as_ref().and_then(|g| g.turn), Some(0));
    let latest_end_ms = turn.turn_deadline_ms.unwrap();
    assert_eq!(turn.latest_end_ms, Some(latest_end_ms));
    assert_eq!(latest_end_ms % 1000, 0, "the latest end, in whole seconds");
    let idle_end_ms = player.view(&idle).await.unwrap().latest_end_ms.unwrap();
    assert!(idle_end_ms <= latest_end_ms);
    // The tables' clock is the stack's manual one: it is moved to the latest end once the
    // real time (the events' stamps) is there too.
    let real_now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(
        u64::try_from(latest_end_ms - real_now).unwrap_or(0) + 50,
    ))
    .await;
    let clock = stack.clock();
    clock.advance(Duration::from_millis(
        u64::try_from(latest_end_ms - clock.now_ms()).unwrap_or(0),
    ));
    let expired_at = loop {
        let message = next_within(
            &mut watch,
            Duration::from_secs(120),
            "the table expires within its latest end and a margin",
        )
        .await;
        match message.event.and_then(|e| e.event) {
            Some(W::Placeholder(_)) => hidden += 1,
            Some(W::TableExpired(m)) => break (message.version, m),
            Some(W::GameFinished(_)) => panic!("the game cannot finish without its player"),
            _ => {}
        }
    };
    assert_eq!(hidden, 3, "the bots' hands, hidden from seat 0 during play");
    assert_eq!(expired_at.1.hands_dealt, 1);
    let view = player.view(&table_id).await.unwrap();
    assert_eq!(view.status, tpb::TableStatus::Expired as i32);
    assert!(view.turn_deadline_ms.is_none());
    // Nothing is played after it.
    let refused = player
        .act(
            &table_id,
            view.version,
            tpb::act_request::Action::Pass(tpb::PassAction {}),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("latest end"), "{refused}");
    // A new watch from the start shows every seat's cards.
    let mut watch = player.watch(&table_id, 0, false).await.unwrap();
    let mut shown = 0;
    loop {
        let message = next_within(
            &mut watch,
            Duration::from_secs(30),
            "the reveal follows the expiry",
        )
        .await;
        match message.event.and_then(|e| e.event) {
            Some(W::Placeholder(_)) => panic!("a placeholder after the table expired"),
            Some(W::CardsDealt(_)) => shown += 1,
            Some(W::TableSeedRevealed(_)) => break,
            _ => {}
        }
    }
    assert_eq!(shown, 4);
    // The idle table expired too. Nothing was dealt there: its seed is not revealed (the
    // timelock opens it at R' all the same).
    let mut watch = player.watch(&idle, 0, false).await.unwrap();
    loop {
        let message = next_within(
            &mut watch,
            Duration::from_secs(30),
            "the idle table expires",
        )
        .await;
        if let Some(W::TableExpired(m)) = message.event.and_then(|e| e.event) {
            assert_eq!((m.latest_end_ms, m.hands_dealt), (idle_end_ms, 0));
            break;
        }
    }
    let view = player.view(&idle).await.unwrap();
    assert_eq!(view.status, tpb::TableStatus::Expired as i32);
    assert!(view.server_seed.is_empty());
    let refused = player.sit(&idle, 0).await.unwrap_err().to_string();
    assert!(refused.contains("latest end"), "{refused}");

    let lines = export_when_ingested(&mut ledger, &table_id, 0).await;
    assert!(!lines.iter().any(|l| l.contains("RatingChanged")));
    let published = "fairdeal.commitment.v1.TableCommitmentPublished";
    let (_, commitment) = first::<cpb::TableCommitmentPublished>(&lines, published);
    assert_eq!(
        expired_at.1.latest_end_ms,
        i64::try_from(commitment.timelock_latest_end).unwrap() * 1000
    );
    let chain = fairdeal_cli::drand_chain::parse(&beacon.info_json()).unwrap();
    let opening = beacon.chain().sign(commitment.timelock_round).unwrap();
    let audit_opened = |lines: &[String]| {
        fairdeal_cli::audit::audit_with_timelock(
            &text(lines),
            &key,
            None,
            &chain,
            std::slice::from_ref(&opening),
        )
    };
    let report = audit_opened(&lines);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    for check in ["deal", "replay", "result", "timelock_seed", "timelock_open"] {
        assert!(report.checks[check].checked > 0, "{check} was not checked");
    }
    // An expiry claimed a minute later than it was recorded: before its latest end.
    let expired = "fairdeal.tables.v1.TableExpired";
    let (changed, at) = tampered::<tpb::TableExpired>(&lines, expired, |m| {
        m.latest_end_ms += 60_000;
    });
    let report = audit_opened(&changed);
    assert!(failed(&report, "result", at), "{:#?}", report.failures);
    // A table that had no latest end cannot expire.
    let (changed, _) =
        tampered::<tpb::TableCreated>(&lines, "fairdeal.tables.v1.TableCreated", |m| {
            m.latest_end_ms = 0;
        });
    let report = audit_opened(&changed);
    let (expired_line, _) = first::<tpb::TableExpired>(&lines, expired);
    assert!(
        failed(&report, "result", expired_line),
        "{:#?}",
        report.failures
    );
    stack.stop().await.unwrap();
}

/// Both backends in one test, side by side: each waits a minute of real time for its latest
/// end (the shortest timelock), and two tests would hold two of the test threads idle for
/// that minute.
#[tokio::test]
async fn a_timelocked_table_expires_at_its_latest_end_embedded_and_postgres_nats() {
    tokio::join!(
        a_timelocked_table_expires_at_its_latest_end(Backend::Embedded),
        a_timelocked_table_expires_at_its_latest_end(Backend::PostgresNats),
    );
}
