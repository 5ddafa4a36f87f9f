//! The ledger over real games ([`fairdeal_e2e::platform::GameStack`] and the rating
//! service, both backends): a match played through gRPC by four players is rated (one
//! `RatingChanged` per seat, SPEC 6), ingested from every service's events, exported, and
//! `fairdeal audit` (the `fairdeal_cli` library the binary runs) passes it offline; a
//! changed byte fails it; a game not finished exports nothing, and its private events (the
//! hands, the deal, at Tarot the chien and the taker's écart) are withheld by id; the
//! archive refuses UPDATE and DELETE; a restarted ledger rebuilds the same tree from its
//! archive. Games played across three tables replicas, one drained mid-game, audit the same
//! (`replicas`). A table whose delayed value is a round of a local test beacon audits with
//! its drand checks (`drand`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod drand;
mod replicas;

use std::time::{Duration, Instant};

use fairdeal_cli::audit::audit;
use fairdeal_e2e::platform::{Backend, GameStack, channel};
use fairdeal_ledger::log::CheckpointPolicy;
use fairdeal_ledger::{MIGRATIONS, SCHEMA};
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
    let policy = CheckpointPolicy {
        interval: Duration::from_millis(200),
        leaves: 100,
    };
    stack.start_ledger(storage, signer(), policy).await.unwrap()
}

/// The ledger's latest checkpoint, opened with the log's key.
async fn latest_checkpoint(ledger: &mut LedgerServiceClient<Channel>) -> Checkpoint {
    let note = ledger
        .get_checkpoint(pb::GetCheckpointRequest {})
        .await
        .unwrap()
        .into_inner()
        .checkpoint;
    Checkpoint::open(note.as_bytes(), ORIGIN, &[signer().verifier()]).unwrap()
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
    let opened = latest_checkpoint(&mut ledger).await;
    let Line::Event(first) = serde_json::from_str::<Line>(&lines[1]).unwrap() else {
        panic!("line 2 is not an event");
    };
    let envelope = decode_bytes(first.envelope.as_deref().unwrap()).unwrap();
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
    assert_eq!(inclusion.disclosure, pb::Disclosure::Full as i32);
    let leaf = inclusion.leaf.clone();
    let proof: Vec<[u8; 32]> = inclusion
        .proof
        .iter()
        .map(|h| h.as_slice().try_into().unwrap())
        .collect();
    opened
        .verify_inclusion(&leaf_hash(&leaf), inclusion.leaf_index, &proof)
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
        // Only an erasure (content and salts gone, stamped) may change a leaf's row.
        "UPDATE ledger_leaves SET envelope = NULL",
        "UPDATE ledger_leaves SET body_salt = NULL, chain_salt = NULL, envelope = NULL, \
         erased_at_ms = 1, leaf = NULL",
        "DELETE FROM ledger_leaves",
        "DELETE FROM ledger_finished",
        "UPDATE ledger_checkpoints SET note = 'x'",
        "DELETE FROM ledger_checkpoints",
    ] {
        let result =
            fairdeal_db::on_db!(db, pool => sqlx::query(statement).execute(pool).await.map(|_| ()));
        let error = result.unwrap_err().to_string();
        // Refused by the trigger, or (SQLite checks a row's constraint first) by the
        // constraint that a leaf is always whole.
        assert!(
            error.contains("append-only") || error.contains("CHECK constraint"),
            "{statement}: {error}"
        );
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
        .verify_inclusion(&leaf_hash(&leaf), inclusion.leaf_index, &proof)
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

/// The events of one table's game streams (table, commitment session, deals), read from the
/// services' own stores, as anyone who learnt their ids (logs, traces, NATS) knows them.
async fn game_events(
    stack: &mut GameStack,
    table_id: &str,
) -> Vec<fairdeal_eventstore::RecordedEvent> {
    let mut events = Vec::new();
    for (schema, stream) in [
        (
            fairdeal_tables::startup::SCHEMA,
            format!("table-{table_id}"),
        ),
        (
            fairdeal_commitment::startup::SCHEMA,
            format!("commitmenttable-{table_id}"),
        ),
        (
            fairdeal_dealing::startup::SCHEMA,
            format!("deals-{table_id}"),
        ),
    ] {
        let storage = stack.storage(schema, &[]).await.unwrap();
        let stream = fairdeal_eventstore::StreamId::parse(stream).unwrap();
        events.extend(
            storage
                .events()
                .read_stream(&stream, 1, 100_000)
                .await
                .unwrap(),
        );
    }
    events
}

/// The inclusion answer for `event` once the ledger has it under a checkpoint (asked again
/// every 50 ms while it has not, at most 60 s).
async fn inclusion_when_ingested(
    ledger: &mut LedgerServiceClient<Channel>,
    event: &fairdeal_eventstore::RecordedEvent,
) -> pb::GetInclusionProofResponse {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match ledger
            .get_inclusion_proof(pb::GetInclusionProofRequest {
                event_id: event.event_id.to_string(),
                tree_size: 0,
            })
            .await
        {
            Ok(answer) => return answer.into_inner(),
            Err(s)
                if matches!(s.code(), Code::NotFound | Code::FailedPrecondition)
                    && Instant::now() < deadline => {}
            Err(s) => panic!("inclusion of {}: {s:?}", event.event_id),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

async fn a_running_games_private_events_stay_private(backend: Backend, game: Game) {
    use fairdeal_tlog::Entry;
    let mut stack = GameStack::start(backend).await.unwrap();
    let storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
    let port = start_ledger(&mut stack, storage).await;
    let mut ledger = client(port);
    let key: NoteVerifier = signer().verifier();

    // Four players sit: the match starts and the first hand is dealt. At Jeu du 10 nobody
    // moves (the tables' clock is manual, so no move is forced either); at Tarot the first
    // taker makes an écart, which only the taker sees, and the game stops there. The game is
    // in play.
    let players: Vec<_> = (0..4).map(|_| stack.player().unwrap()).collect();
    let options = match game {
        Game::Dix => None,
        Game::Tarot => Some(tpb::TableOptions {
            tarot: Some(tpb::TarotOptions {
                seats: 4,
                rounds: 1,
            }),
            ..Default::default()
        }),
    };
    let table_id = players[0]
        .create_table(tpb::CreateTableRequest {
            options,
            ..Default::default()
        })
        .await
        .unwrap()
        .table_id;
    fairdeal_client::seat_players(&table_id, &players, "contribution")
        .await
        .unwrap();
    if game == Game::Tarot {
        play_to_the_first_ecart(&table_id, &players).await;
    }
    let events = game_events(&mut stack, &table_id).await;
    let private: Vec<_> = events.iter().filter(|e| is_private(e)).collect();
    let count = |kind: &str| private.iter().filter(|e| e.event_type == kind).count();
    match game {
        Game::Dix => assert_eq!(private.len(), 5, "four seats' cards and the deal"),
        Game::Tarot => {
            // Four seats' cards, the chien and the deal, for each deal dealt (one annulled
            // for a petit sec is dealt again), and the six cards of the écart.
            let deals = count("fairdeal.dealing.v1.HandDealt");
            assert!(deals >= 1);
            assert_eq!(count("fairdeal.tables.v1.CardsDealt"), 4 * deals);
            assert_eq!(count("fairdeal.tables.v1.TalonDealt"), deals);
            assert_eq!(
                count("fairdeal.tables.v1.TarotCardDiscarded"),
                6,
                "the écart"
            );
        }
    }

    // Every read of every event of the game, as anyone may ask, by id, once all are in:
    // proven against one checkpoint.
    for event in &events {
        inclusion_when_ingested(&mut ledger, event).await;
    }
    let opened = latest_checkpoint(&mut ledger).await;
    let mut answers = Vec::new();
    for event in &events {
        let answer = ledger
            .get_inclusion_proof(pb::GetInclusionProofRequest {
                event_id: event.event_id.to_string(),
                tree_size: opened.size(),
            })
            .await
            .unwrap()
            .into_inner();
        answers.push((event, answer));
    }
    for (event, answer) in &answers {
        // Proofs verify for everyone: the leaf is given whatever is withheld.
        let proof: Vec<[u8; 32]> = answer
            .proof
            .iter()
            .map(|h| h.as_slice().try_into().unwrap())
            .collect();
        assert_eq!(answer.tree_size, opened.size());
        assert_eq!(answer.leaf_format, 2);
        assert_eq!(answer.leaf_hash, leaf_hash(&answer.leaf).to_vec());
        opened
            .verify_inclusion(&leaf_hash(&answer.leaf), answer.leaf_index, &proof)
            .unwrap();
        let entry = Entry::parse(&answer.leaf).unwrap();
        if is_private(event) {
            assert_eq!(
                answer.disclosure,
                pb::Disclosure::WithheldGame as i32,
                "{}",
                event.event_type
            );
            assert!(answer.envelope.is_empty() && answer.body.is_empty());
            assert!(answer.body_salt.is_empty() && answer.chain_salt.is_empty());
        } else {
            // A public event of a game in play: its body, never its chain link.
            assert_eq!(
                answer.disclosure,
                pb::Disclosure::Body as i32,
                "{}",
                event.event_type
            );
            assert!(answer.envelope.is_empty() && answer.chain_salt.is_empty());
            assert_eq!(
                answer.body,
                fairdeal_event::body_bytes(&event.to_envelope())
            );
            let salt: [u8; 32] = answer.body_salt.as_slice().try_into().unwrap();
            assert!(entry.opens_body(&salt, &answer.body));
        }
    }
    // Nothing any answer holds is a digest of a private event from which its content could
    // be found by trying every hand: not its chain hash (the next event's prev_hash), not the
    // hash of its envelope or of its payload, not its format 1 leaf hash.
    for secret in &private {
        let envelope = secret.encode_envelope();
        let digests: [Vec<u8>; 4] = [
            secret.hash.to_vec(),
            leaf_hash(&envelope).to_vec(),
            <sha2::Sha256 as sha2::Digest>::digest(&envelope).to_vec(),
            <sha2::Sha256 as sha2::Digest>::digest(&secret.payload).to_vec(),
        ];
        for (event, answer) in &answers {
            let mut seen: Vec<&[u8]> = vec![
                &answer.leaf,
                &answer.leaf_hash,
                &answer.envelope,
                &answer.body,
                &answer.body_salt,
                &answer.chain_salt,
            ];
            seen.extend(answer.proof.iter().map(Vec::as_slice));
            for digest in &digests {
                assert!(
                    !seen.iter().any(|bytes| contains(bytes, digest)),
                    "the answer for {} holds a digest of the private {}",
                    event.event_type,
                    secret.event_type
                );
            }
            if event.event_id != secret.event_id {
                assert!(
                    !contains(&answer.body, &secret.payload),
                    "{}",
                    event.event_type
                );
            }
        }
    }
    // The export waits for the end.
    let refused = export(&mut ledger, &table_id, vec![]).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");

    // The game plays to its end: now every event of it is disclosed whole and audits.
    fairdeal_client::play_to_the_end(&table_id, &players, 7, |_, _| {})
        .await
        .unwrap();
    let lines = export_when_ingested(&mut ledger, &table_id, 0).await;
    let report = audit(&text(&lines), &key, None);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    for secret in &private {
        let answer = inclusion_when_ingested(&mut ledger, secret).await;
        assert_eq!(answer.disclosure, pb::Disclosure::Full as i32);
        assert_eq!(answer.envelope, secret.encode_envelope());
        let entry = Entry::parse(&answer.leaf).unwrap();
        let body_salt: [u8; 32] = answer.body_salt.as_slice().try_into().unwrap();
        let chain_salt: [u8; 32] = answer.chain_salt.as_slice().try_into().unwrap();
        assert!(entry.opens_body(
            &body_salt,
            &fairdeal_event::body_bytes(&secret.to_envelope())
        ));
        assert!(entry.opens_chain(&chain_salt, &secret.prev_hash, &secret.hash));
    }
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_running_games_private_events_stay_private_embedded() {
    a_running_games_private_events_stay_private(Backend::Embedded, Game::Dix).await;
}

#[tokio::test]
async fn a_running_games_private_events_stay_private_postgres_nats() {
    a_running_games_private_events_stay_private(Backend::PostgresNats, Game::Dix).await;
}

#[tokio::test]
async fn a_running_tarot_games_ecart_stays_private_embedded() {
    a_running_games_private_events_stay_private(Backend::Embedded, Game::Tarot).await;
}

#[tokio::test]
async fn a_running_tarot_games_ecart_stays_private_postgres_nats() {
    a_running_games_private_events_stay_private(Backend::PostgresNats, Game::Tarot).await;
}

/// The game a privacy test plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Game {
    /// Jeu du 10, the default table.
    Dix,
    /// French Tarot for four.
    Tarot,
}

/// Whether an event of a game is private until the game ends: a seat's cards, the deal, the
/// chien as dealt, a card of the taker's écart.
fn is_private(event: &fairdeal_eventstore::RecordedEvent) -> bool {
    use fairdeal_proto::fairdeal::dealing::v1 as dpb;
    event.is::<tpb::CardsDealt>()
        || event.is::<dpb::HandDealt>()
        || event.is::<tpb::TalonDealt>()
        || event.is::<tpb::TarotCardDiscarded>()
}

/// Plays a four-seat Tarot table from its players' watch streams until its first écart is
/// made: seat 0 takes with a garde (the chien is shown and taken), the others pass, and every
/// other move is the seat's first legal one.
async fn play_to_the_first_ecart(table_id: &str, players: &[fairdeal_client::Player]) {
    use tpb::legal_action::Action as Legal;
    fairdeal_client::play(table_id, players, |view, seat| {
        let game = view.game.clone().unwrap_or_default();
        if game.tarot.as_ref().is_some_and(|t| t.ecart_len == 6) {
            return Ok(None);
        }
        let bidding = game
            .legal
            .iter()
            .any(|l| matches!(l.action, Some(Legal::TarotBid(_))));
        let wanted = |l: &&tpb::LegalAction| match &l.action {
            Some(Legal::TarotBid(b)) => seat == 0 && b.contract == tpb::TarotContract::Garde as i32,
            Some(Legal::Pass(_)) => seat != 0,
            _ => false,
        };
        let choice = if bidding {
            game.legal.iter().find(wanted).or(game.legal.first())
        } else {
            game.legal.first()
        };
        Ok(choice.and_then(fairdeal_client::action_of))
    })
    .await
    .unwrap();
}

/// A C2SP signed note checked from the spec alone (not with `fairdeal-tlog`): the verifier
/// key `<name>+<key id hex>+<base64(0x01 || Ed25519 key)>`, the signed text up to the blank
/// line, the signature line `— <name> <base64(key id || signature)>`. Answers the tree
/// size and root hash of the checkpoint.
fn independently_verified_checkpoint(note: &str, log_key: &str) -> (u64, [u8; 32]) {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    let mut key_parts = log_key.splitn(3, '+');
    let (name, key_id, key) = (
        key_parts.next().unwrap(),
        key_parts.next().unwrap(),
        STANDARD.decode(key_parts.next().unwrap()).unwrap(),
    );
    assert_eq!(key[0], 0x01, "an Ed25519 key");
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key[1..].try_into().unwrap()).unwrap();
    let blank = note.find("\n\n").unwrap();
    let text = &note[..=blank];
    let signature_line = note[blank + 2..]
        .lines()
        .find(|line| line.starts_with(&format!("— {name} ")))
        .unwrap();
    let signed = STANDARD
        .decode(signature_line.rsplit(' ').next().unwrap())
        .unwrap();
    assert_eq!(hex_of(&signed[..4]), key_id);
    let signature = ed25519_dalek::Signature::from_slice(&signed[4..]).unwrap();
    key.verify_strict(text.as_bytes(), &signature).unwrap();
    let mut lines = text.lines();
    let _origin = lines.next().unwrap();
    let size = lines.next().unwrap().parse().unwrap();
    let root = STANDARD
        .decode(lines.next().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    (size, root)
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every message of the stack's JetStream streams (payloads and headers), as one byte string.
async fn jetstream_bytes(prefix: &str) -> Vec<u8> {
    let js = async_nats::jetstream::new(
        async_nats::connect(fairdeal_testkit::nats_url())
            .await
            .unwrap(),
    );
    let mut bytes = Vec::new();
    for service in [
        "auth",
        "chat",
        "tables",
        "commitment",
        "dealing",
        "rating",
        "ledger",
    ] {
        let config = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.{service}")).unwrap();
        for name in [config.stream_name(), config.dead_letter_stream_name()] {
            let Ok(mut stream) = js.get_stream(name).await else {
                continue;
            };
            let last = stream.info().await.unwrap().state.last_sequence;
            for sequence in 1..=last {
                if let Ok(message) = stream.get_raw_message(sequence).await {
                    bytes.extend_from_slice(&message.payload);
                    bytes.extend_from_slice(format!("{:?}", message.headers).as_bytes());
                }
            }
        }
    }
    bytes
}

/// The ledger's answer for `event_id` once its content is `disclosure` (asked every 50 ms,
/// 60 s at most).
async fn inclusion_once(
    ledger: &mut LedgerServiceClient<Channel>,
    event_id: &str,
    disclosure: pb::Disclosure,
) -> pb::GetInclusionProofResponse {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(answer) = ledger
            .get_inclusion_proof(pb::GetInclusionProofRequest {
                event_id: event_id.to_owned(),
                tree_size: 0,
            })
            .await
        {
            let answer = answer.into_inner();
            if answer.disclosure == disclosure as i32 {
                return answer;
            }
        }
        assert!(Instant::now() < deadline, "{event_id} never {disclosure:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn erasure_keeps_the_log_whole(backend: Backend) {
    use fairdeal_e2e::services::{post, subscribe_as_member, with};
    use fairdeal_proto::fairdeal::auth::v1 as apb;
    use fairdeal_proto::fairdeal::chat::v1 as chpb;
    use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
    use fairdeal_testkit::residue;

    let mut stack = GameStack::start(backend).await.unwrap();
    let storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
    let port = start_ledger(&mut stack, storage).await;
    let mut ledger = client(port);
    let log_key = signer().verifier().to_string();
    let key: NoteVerifier = signer().verifier();
    let chat = ChatServiceClient::new(channel(stack.start_chat().await.unwrap()).unwrap());
    let auth = stack.start_auth().await.unwrap();

    // Four people with real accounts play a table and talk at it.
    let marker = uuid::Uuid::now_v7().simple().to_string();
    let password = "correct horse battery staple, erased";
    let mut people = Vec::new();
    for seat in 0..4 {
        let username = format!("erasure{seat}x{}", &marker[20..]);
        let email = format!("{username}.inbox@erasure.example");
        let (id, tokens) = auth
            .confirmed_account(&username, &email, password)
            .await
            .unwrap();
        people.push((id, username, email, tokens));
    }
    let players: Vec<_> = people
        .iter()
        .map(|(id, ..)| {
            fairdeal_client::Player::new(
                *id,
                stack.player_token(*id).unwrap(),
                stack.tables_channel().unwrap(),
            )
        })
        .collect();
    let tokens: Vec<_> = people
        .iter()
        .map(|(id, ..)| stack.player_token(*id).unwrap())
        .collect();
    let table_id = players[0]
        .create_table(tpb::CreateTableRequest::default())
        .await
        .unwrap()
        .table_id;
    fairdeal_client::seat_players(&table_id, &players, "erasure")
        .await
        .unwrap();
    let table_channel = format!("table-{table_id}");
    let mut subscriptions = Vec::new();
    for token in &tokens {
        subscriptions.push(subscribe_as_member(&chat, token, &table_channel).await);
    }
    let removed_text = format!("a line the moderator removes {marker}");
    let deleted_text = format!("a line whose author leaves {marker}");
    let kept_text = format!("a line that stays {marker}");
    let removed = post(&chat, &tokens[0], &table_channel, &removed_text)
        .await
        .unwrap();
    let deleted = post(&chat, &tokens[1], &table_channel, &deleted_text)
        .await
        .unwrap();
    let kept = post(&chat, &tokens[2], &table_channel, &kept_text)
        .await
        .unwrap();
    fairdeal_client::play_to_the_end(&table_id, &players, 5, |_, _| {})
        .await
        .unwrap();

    // An auditor keeps the checkpoint of an export made before any erasure.
    for line in [&removed, &deleted, &kept] {
        inclusion_once(
            &mut ledger,
            &line.message_id,
            pb::Disclosure::WithheldPersonal,
        )
        .await;
    }
    let first = export_when_ingested(&mut ledger, &table_id, 0).await;
    let Line::Header(first_header) = serde_json::from_str::<Line>(&first[0]).unwrap() else {
        panic!("line 1 is not the header");
    };
    let (first_size, first_root) =
        independently_verified_checkpoint(&first_header.checkpoint, &log_key);

    // A moderator removes one line; another player deletes their account.
    let moderator = stack
        .token(&fairdeal_authn::Claims::moderator(
            uuid::Uuid::now_v7(),
            i64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs(),
            )
            .unwrap(),
            600,
        ))
        .unwrap();
    chat.clone()
        .remove_message(with(
            &moderator,
            chpb::RemoveMessageRequest {
                channel: table_channel.clone(),
                message_id: removed.message_id.clone(),
                reason: "test".into(),
            },
        ))
        .await
        .unwrap();
    let (leaver, leaver_name, leaver_email, leaver_tokens) = &people[1];
    auth.client
        .clone()
        .delete_account(with(
            &fairdeal_authn::AccessToken::new(leaver_tokens.access_token.clone()),
            apb::DeleteAccountRequest {
                password: password.as_bytes().to_vec(),
                confirm_username: leaver_name.clone(),
            },
        ))
        .await
        .unwrap();

    // The ledger erases both lines and every event of the deleted account; the line that
    // stays is still personal, never shown.
    for line in [&removed, &deleted] {
        let answer = inclusion_once(&mut ledger, &line.message_id, pb::Disclosure::Erased).await;
        assert!(answer.envelope.is_empty() && answer.body.is_empty());
        assert!(answer.body_salt.is_empty() && answer.chain_salt.is_empty());
        assert_eq!(answer.leaf.len(), 65, "the leaf stays");
    }
    let auth_storage = stack.storage("auth", &[]).await.unwrap();
    let account_stream = fairdeal_eventstore::StreamId::parse(format!("user-{leaver}")).unwrap();
    let account_events = auth_storage
        .events()
        .read_stream(&account_stream, 1, 100)
        .await
        .unwrap();
    assert!(
        account_events.len() >= 4,
        "registered, confirmed, logged in, deleted"
    );
    for event in &account_events {
        inclusion_once(
            &mut ledger,
            &event.event_id.to_string(),
            pb::Disclosure::Erased,
        )
        .await;
    }
    let still = inclusion_once(
        &mut ledger,
        &kept.message_id,
        pb::Disclosure::WithheldPersonal,
    )
    .await;
    assert!(still.envelope.is_empty());

    // The export after: the audit passes, checks the consistency with the kept checkpoint,
    // and names the erased lines.
    let after = export(&mut ledger, &table_id, vec![first_size])
        .await
        .unwrap();
    let report = audit(&text(&after), &key, Some(&first_header.checkpoint));
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert_eq!(report.checks["consistency"].checked, 1);
    let erased: Vec<_> = report
        .erased
        .iter()
        .filter(|e| e.event_type == "fairdeal.chat.v1.MessagePosted")
        .collect();
    assert_eq!(erased.len(), 2, "{:?}", report.erased);

    // An independent verifier: the checkpoint's signature from the signed-note spec, every
    // line's inclusion and the consistency with the kept checkpoint with ct-merkle.
    let Line::Header(header) = serde_json::from_str::<Line>(&after[0]).unwrap() else {
        panic!("line 1 is not the header");
    };
    let (size, root) = independently_verified_checkpoint(&header.checkpoint, &log_key);
    let tree = ct_merkle::RootHash::<sha2::Sha256>::new(root.into(), size);
    let mut proven = 0;
    for raw in &after[1..] {
        let Line::Event(line) = serde_json::from_str::<Line>(raw).unwrap() else {
            continue;
        };
        let leaf = match (&line.leaf, &line.envelope) {
            (Some(leaf), _) | (None, Some(leaf)) => decode_bytes(leaf).unwrap(),
            (None, None) => panic!("a line without its leaf"),
        };
        let proof: Vec<u8> = line
            .proof
            .iter()
            .flat_map(|h| decode_bytes(h).unwrap())
            .collect();
        tree.verify_inclusion(
            &leaf,
            line.leaf_index,
            &ct_merkle::InclusionProof::from_bytes(proof),
        )
        .unwrap();
        proven += 1;
    }
    assert!(proven > 50, "{proven} lines proven");
    let consistency = ledger
        .get_consistency_proof(pb::GetConsistencyProofRequest {
            old_size: first_size,
            new_size: size,
        })
        .await
        .unwrap()
        .into_inner();
    let proof: Vec<u8> = consistency.proof.concat();
    tree.verify_consistency(
        &ct_merkle::RootHash::<sha2::Sha256>::new(first_root.into(), first_size),
        &ct_merkle::ConsistencyProof::try_from_bytes(proof).unwrap(),
    )
    .unwrap();

    // The erased lines, and the deleted account's username and address, are found nowhere:
    // not in the database's bytes, not in any JetStream message. (Scrubbing the files runs
    // after each erasure commits: asked again for 30 s.)
    let secrets = [
        removed_text.as_str(),
        deleted_text.as_str(),
        leaver_name.as_str(),
        leaver_email.as_str(),
    ];
    let database_url = stack.common("ledger").unwrap().database_url;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let bytes = match backend {
            Backend::Embedded => {
                residue::sqlite_files(&residue::sqlite_path(database_url.expose_secret())).unwrap()
            }
            Backend::PostgresNats => residue::pg_dump(database_url.expose_secret())
                .await
                .unwrap(),
        };
        assert!(
            residue::holds(&bytes, &kept_text),
            "the search finds what is there"
        );
        let found: Vec<_> = secrets
            .iter()
            .filter(|s| residue::holds(&bytes, s))
            .collect();
        if found.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "found in the database: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if backend == Backend::PostgresNats {
        let prefix = stack.common("ledger").unwrap().subject_prefix;
        let bytes = jetstream_bytes(&prefix).await;
        assert!(bytes.len() > 10_000, "the streams were read");
        for secret in secrets.iter().chain([&kept_text.as_str()]) {
            assert!(!residue::holds(&bytes, secret), "JetStream holds {secret}");
        }
    }
    drop(subscriptions);
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn erasure_keeps_the_log_whole_embedded() {
    erasure_keeps_the_log_whole(Backend::Embedded).await;
}

#[tokio::test]
async fn erasure_keeps_the_log_whole_postgres_nats() {
    erasure_keeps_the_log_whole(Backend::PostgresNats).await;
}

/// `lines` with the first fully disclosed event of type `event_type` changed by `change`
/// (its payload decoded as `M`, changed, encoded back into the envelope as stored); the
/// changed line's number (1-based).
fn tampered<M: prost::Message + Default>(
    lines: &[String],
    event_type: &str,
    change: impl FnOnce(&mut M),
) -> (Vec<String>, usize) {
    use prost::Message as _;
    let mut parsed: Vec<Line> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (index, line) = parsed
        .iter_mut()
        .enumerate()
        .find_map(|(i, l)| match l {
            Line::Event(e) if e.event_type == event_type && e.envelope.is_some() => Some((i, e)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {event_type} disclosed in full"));
    let bytes = decode_bytes(line.envelope.as_deref().unwrap()).unwrap();
    let mut envelope = fairdeal_event::Envelope::decode(bytes.as_slice()).unwrap();
    let mut message = M::decode(envelope.payload.as_slice()).unwrap();
    change(&mut message);
    envelope.payload = message.encode_to_vec();
    line.envelope = Some(encode_bytes(&envelope.encode_to_vec()));
    let lines = parsed
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    (lines, index + 1)
}

/// A French Tarot game (issue 34) at `seats` seats, every seat a person playing from its own
/// views, exports from the ledger and passes `fairdeal audit`: the deals re-derived from the
/// seeds (Tarot's decks, the chien included), every move re-decided by Tarot's rules, every
/// deal's score, each player's rating change in the game's own kind. A changed card, score
/// or bid in the export fails it, at that line.
async fn a_tarot_game_exports_and_audits(backend: Backend, seats: u32) {
    let mut stack = GameStack::start(backend).await.unwrap();
    let storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
    let port = start_ledger(&mut stack, storage.clone()).await;
    start_rating(&mut stack).await;
    let mut ledger = client(port);
    let key: NoteVerifier = signer().verifier();
    let players: Vec<_> = (0..seats).map(|_| stack.player().unwrap()).collect();
    let options = tpb::TableOptions {
        tarot: Some(tpb::TarotOptions { seats, rounds: 2 }),
        ..Default::default()
    };
    let view = stack.play_table(&players, Some(options)).await.unwrap();
    let lines = export_when_ingested(&mut ledger, &view.table_id, seats as usize).await;

    let report = audit(&text(&lines), &key, None);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert_eq!(report.hands, u64::from(seats * 2), "{report:?}");
    assert_eq!(report.ratings, u64::from(seats), "{report:?}");
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

    // A changed card, bid or score: the audit fails at that line.
    let played = "fairdeal.tables.v1.TarotCardPlayed";
    let (changed, at) = tampered::<tpb::TarotCardPlayed>(&lines, played, |m| {
        m.card = if m.card == "T21" {
            "T20".into()
        } else {
            "T21".into()
        };
    });
    let failures = audit(&text(&changed), &key, None).failures;
    assert!(failures.iter().any(|f| f.line == at), "{failures:#?}");
    let passed = "fairdeal.tables.v1.TarotPlayerPassed";
    let bid = "fairdeal.tables.v1.TarotBidPlaced";
    if lines.iter().any(|l| l.contains(bid)) {
        let (changed, at) = tampered::<tpb::TarotBidPlaced>(&lines, bid, |m| {
            m.contract = if m.contract == 1 { 2 } else { 1 };
        });
        let failures = audit(&text(&changed), &key, None).failures;
        assert!(failures.iter().any(|f| f.line == at), "{failures:#?}");
    } else {
        assert!(lines.iter().any(|l| l.contains(passed)), "an auction");
    }
    let scored = "fairdeal.tables.v1.TarotDealScored";
    if lines.iter().any(|l| l.contains(scored)) {
        let (changed, at) = tampered::<tpb::TarotDealScored>(&lines, scored, |m| {
            if let Some(score) = m.score.as_mut() {
                score.value += 1;
            }
        });
        let failures = audit(&text(&changed), &key, None).failures;
        assert!(failures.iter().any(|f| f.line == at), "{failures:#?}");
    }
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn tarot_games_at_three_four_and_five_seats_export_and_audit_embedded() {
    for seats in [3, 4, 5] {
        a_tarot_game_exports_and_audits(Backend::Embedded, seats).await;
    }
}

#[tokio::test]
async fn tarot_games_at_three_four_and_five_seats_export_and_audit_postgres_nats() {
    for seats in [3, 4, 5] {
        a_tarot_game_exports_and_audits(Backend::PostgresNats, seats).await;
    }
}
