//! `up` as a user runs it: the platform on a fresh data directory, the demo to the seed
//! check, the printed grpcurl examples, then a restart on the same directory that keeps
//! every account, key and table.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The test says on stderr whether grpcurl ran the examples or the Rust client did.
#![allow(clippy::print_stderr)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use fairdeal_demo::{Demo, Output, STEPS, authed, wait_for_mail};
use fairdeal_proto::fairdeal::auth::v1 as apb;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_server::examples::{self, EMAIL, PASSWORD, USERNAME};
use fairdeal_server::platform::reachable;
use fairdeal_server::{Platform, UpOptions};

fn options(dir: &Path) -> UpOptions {
    UpOptions {
        data_dir: dir.join("data"),
        listen: "127.0.0.1:0".parse().unwrap(),
        handle_signals: false,
        moderators: Vec::new(),
    }
}

/// Starts the platform and serves it in the background.
async fn start(
    dir: &Path,
) -> (
    String,
    std::path::PathBuf,
    std::net::SocketAddr,
    fairdeal_kit::Shutdown,
    tokio::task::JoinHandle<Result<(), fairdeal_kit::ServeError>>,
) {
    start_with(options(dir)).await
}

/// [`start`] with `options`.
async fn start_with(
    options: UpOptions,
) -> (
    String,
    std::path::PathBuf,
    std::net::SocketAddr,
    fairdeal_kit::Shutdown,
    tokio::task::JoinHandle<Result<(), fairdeal_kit::ServeError>>,
) {
    let platform = Platform::start(&options).await.unwrap();
    let url = platform.url().to_owned();
    let data_dir = platform.data_dir().to_owned();
    let addr = reachable(platform.local_addr());
    let shutdown = platform.shutdown();
    let server = tokio::spawn(platform.run_until_stopped());
    fairdeal_testkit_like_wait(&url).await;
    (url, data_dir, addr, shutdown, server)
}

/// Waits until the whole server answers SERVING on the health protocol.
async fn fairdeal_testkit_like_wait(url: &str) {
    use tonic_health::pb::health_client::HealthClient;
    let channel = tonic::transport::Channel::from_shared(url.to_owned())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let status = HealthClient::new(channel)
        .check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
}

/// The grpcurl binary: `$GRPCURL`, else `grpcurl` on the PATH.
fn grpcurl() -> Option<String> {
    let candidate = std::env::var("GRPCURL").unwrap_or_else(|_| "grpcurl".to_owned());
    Command::new(&candidate)
        .arg("-version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| candidate)
}

/// Runs shell `lines` (grpcurl named `grpcurl` through an alias function when `$GRPCURL` is
/// elsewhere) and returns their standard output.
fn shell(grpcurl: &str, lines: &[String]) -> String {
    let script = format!(
        "set -e\ngrpcurl() {{ \"{grpcurl}\" \"$@\"; }}\n{}\n",
        lines.join("\n")
    );
    let output = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "script failed:\n{script}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The printed examples, run as printed when grpcurl is installed; otherwise the same calls
/// with the same values through the Rust client.
async fn examples_work(url: &str, addr: &str, data_dir: &Path) {
    let examples = examples::grpcurl(addr, data_dir);
    let commands: Vec<String> = examples.iter().map(|e| e.command.clone()).collect();
    let mailbox = data_dir.join(fairdeal_server::platform::MAILBOX_DIR);
    if let Some(grpcurl) = grpcurl() {
        // Up to Register; the mail is sent in the background, so wait for it as a user would.
        let first = shell(&grpcurl, &commands[..3]);
        assert!(
            first.contains("fairdeal.tables.v1.TablesService"),
            "{first}"
        );
        assert!(first.contains("SERVING"), "{first}");
        assert!(first.contains("userId"), "{first}");
        wait_for_mail(&mailbox, EMAIL, "Confirm").await.unwrap();
        let mut rest = commands[3..].to_vec();
        rest.push(r#"test -n "$CODE" && test -n "$TOKEN" && test -n "$TABLE""#.to_owned());
        let out = shell(&grpcurl, &rest);
        assert!(out.contains("\"mySeat\""), "{out}");
        assert!(out.contains("\"myHand\""), "{out}");
        eprintln!("the printed grpcurl examples ran with {grpcurl}");
        return;
    }
    eprintln!("grpcurl not installed: the examples' calls run through the Rust client");
    let channel = tonic::transport::Channel::from_shared(url.to_owned())
        .unwrap()
        .connect()
        .await
        .unwrap();
    // The examples' account, as the printed lines make it.
    assert_eq!(format!("{USERNAME}@example.com"), EMAIL);
    let (_, token) = signed_up(&channel, &mailbox, USERNAME).await;
    let mut tables = pb::tables_service_client::TablesServiceClient::new(channel);
    tables
        .list_tables(authed(&token, pb::ListTablesRequest::default()).unwrap())
        .await
        .unwrap();
    let created = tables
        .create_table(
            authed(
                &token,
                pb::CreateTableRequest {
                    bot_seats: vec![1, 2, 3],
                    ..Default::default()
                },
            )
            .unwrap(),
        )
        .await
        .unwrap()
        .into_inner();
    tables
        .sit(
            authed(
                &token,
                pb::SitRequest {
                    table_id: created.table_id.clone(),
                    seat: 0,
                },
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let view = tables
        .get_table(
            authed(
                &token,
                pb::GetTableRequest {
                    table_id: created.table_id,
                },
            )
            .unwrap(),
        )
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap();
    let game = view.game.unwrap();
    assert_eq!(game.my_seat, Some(0));
    assert!(!game.my_hand.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_plays_the_demo_serves_the_examples_and_keeps_state_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (url, data_dir, addr, shutdown, server) = start(dir.path()).await;

    // Keys and database are the owner's only.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data_dir), 0o700);
    assert_eq!(mode(&data_dir.join("secrets.toml")), 0o600);
    assert_eq!(mode(&data_dir.join("fairdeal.db")), 0o600);
    let secrets = std::fs::read_to_string(data_dir.join("secrets.toml")).unwrap();

    // The demo, as `up` runs it, to the end of its last step.
    let (out, printed) = Output::buffer();
    let log_key = fairdeal_server::secrets::Secrets::load_or_create(&data_dir, std::iter::empty())
        .unwrap()
        .log_key()
        .unwrap()
        .to_string();
    let mailbox = data_dir.join(fairdeal_server::platform::MAILBOX_DIR);
    let exports = data_dir.join(fairdeal_server::platform::EXPORTS_DIR);
    // An export holds a whole game: its directory is the owner's only.
    let mode = std::fs::metadata(&exports).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let mut demo = Demo::connect(&url, &exports, &mailbox, &log_key, out)
        .await
        .unwrap();
    demo.run(STEPS).await.unwrap();
    let printed = String::from_utf8(printed.lock().unwrap().clone()).unwrap();
    let finished = demo.finished.clone().unwrap();
    assert_eq!(finished.reason, pb::FinishReason::Completed as i32);
    assert_eq!(demo.deals_verified, finished.hands_played);
    assert!(demo.deals_verified >= 1);
    assert_eq!(demo.shown.len() as u32, 4 * finished.hands_played);
    for (seat, player) in finished.players.iter().enumerate() {
        assert_eq!(player.player_id, demo.players[seat].user_id);
    }
    // The rating service rated the game from the tables' events, in process: one change
    // per seat, winners up, losers down, E and S as SPEC 6 has them.
    assert_eq!(demo.ratings.len(), 4);
    let table_id = demo.table.clone().unwrap().id;
    for (seat, change) in demo.ratings.iter().enumerate() {
        assert_eq!(change.table_id, table_id);
        assert_eq!(change.player_id, demo.players[seat].user_id);
        assert_eq!(change.seat as usize, seat);
        assert_eq!(change.k, 32.0);
        let won = (seat as u32 % 2) == finished.winner;
        assert_eq!(change.score, if won { 1.0 } else { 0.0 });
        assert!((change.expectation - 0.5).abs() < 1e-9, "{change:?}");
        let delta = change.rating_after - change.rating_before;
        assert!((delta - change.k * (change.score - change.expectation)).abs() < 1e-9);
    }
    // Each player's line came through north's subscription to the table's channel, in
    // order, from its author.
    assert_eq!(demo.chat.len(), 4);
    for (seat, message) in demo.chat.iter().enumerate() {
        assert_eq!(message.channel, format!("table-{table_id}"));
        assert_eq!(message.author_id, demo.players[seat].user_id);
        assert!(printed.contains(&format!(
            "{}: {}",
            demo.players[seat].username, message.text
        )));
    }
    assert!(demo.chat.windows(2).all(|w| w[0].seq < w[1].seq));
    // The ledger's export of the game, written under the data directory, passed the
    // auditor's checks: every hand re-dealt, every move replayed, every rating recomputed.
    let (export, report) = demo.audit.as_ref().unwrap();
    assert!(export.starts_with(data_dir.join("exports")));
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.hands, u64::from(finished.hands_played));
    assert_eq!(report.ratings, 4);
    assert!(report.moves >= 40);
    for check in [
        "checkpoint",
        "inclusion",
        "chain",
        "deal",
        "replay",
        "rating",
    ] {
        assert!(report.checks[check].checked > 0, "{check}: {report:?}");
    }
    // The printed command names the file as written and the log key; what it runs
    // (`fairdeal audit`'s check) passes on that file with that key, read back from there.
    let command = printed
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("cargo run -q -p fairdeal-cli -- audit "))
        .unwrap();
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words.len(), 10, "{command}");
    assert_eq!(Path::new(words[7]), export.as_path());
    assert_eq!(words[8], "--log-key");
    assert_eq!(words[9], log_key);
    assert!(printed.contains(&format!("log key: {log_key}")));
    let again = fairdeal_cli::audit::audit(
        &std::fs::read_to_string(words[7]).unwrap(),
        &words[9].parse().unwrap(),
        None,
    );
    assert!(again.failures.is_empty());
    assert_eq!(again.events, report.events);
    for expected in [
        "audit verdict: passed",
        "cargo run -q -p fairdeal-cli -- audit ",
        "[chat #",
        "rated in jeu-du-10/dix",
        " -> ",
        "registered, confirmed with the code mailed to mailbox/",
        "contract",
        "trick  0:",
        "game over after",
        "server seed revealed",
        "fairness check passed",
    ] {
        assert!(
            printed.contains(expected),
            "missing {expected:?} in:\n{printed}"
        );
    }
    // No seat's hand is printed before the game but by the demo's own clients, and no
    // password ever.
    for player in &demo.players {
        assert!(!printed.contains(&player.password));
    }

    examples_work(&url, &addr.to_string(), &data_dir).await;

    let revealed = demo.revealed.clone().unwrap();
    let north = demo.players[0].clone();
    shutdown.trigger();
    server.await.unwrap().unwrap();

    // Restart on the same directory: same keys, accounts and tables.
    let (url, data_dir2, _, shutdown, server) = start(dir.path()).await;
    assert_eq!(data_dir2, data_dir);
    assert_eq!(
        std::fs::read_to_string(data_dir.join("secrets.toml")).unwrap(),
        secrets
    );
    let channel = tonic::transport::Channel::from_shared(url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let token = apb::auth_service_client::AuthServiceClient::new(channel.clone())
        .login(apb::LoginRequest {
            username: north.username.clone(),
            password: north.password.clone().into_bytes(),
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap()
        .access_token;
    // The token signed before the restart still verifies (the signing key was kept).
    let mut tables = pb::tables_service_client::TablesServiceClient::new(channel);
    for token in [&token, &north.access_token] {
        let view = tables
            .get_table(
                authed(
                    token,
                    pb::GetTableRequest {
                        table_id: table_id.clone(),
                    },
                )
                .unwrap(),
            )
            .await
            .unwrap()
            .into_inner()
            .table
            .unwrap();
        assert_eq!(view.status, pb::TableStatus::Finished as i32);
        assert_eq!(view.server_seed, revealed.server_seed);
    }
    shutdown.trigger();
    server.await.unwrap().unwrap();
}

/// Registers `username`, confirms it from its mail and logs in: (user id, access token).
async fn signed_up(
    channel: &tonic::transport::Channel,
    mailbox: &Path,
    username: &str,
) -> (String, String) {
    let mut auth = apb::auth_service_client::AuthServiceClient::new(channel.clone());
    let email = format!("{username}@example.com");
    let user_id = auth
        .register(apb::RegisterRequest {
            username: username.into(),
            email: email.clone(),
            password: PASSWORD.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .user_id;
    let (_, code) = wait_for_mail(mailbox, &email, "Confirm").await.unwrap();
    auth.confirm_email(apb::ConfirmEmailRequest { token: code })
        .await
        .unwrap();
    let token = auth
        .login(apb::LoginRequest {
            username: username.into(),
            password: PASSWORD.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap()
        .access_token;
    (user_id, token)
}

/// `up --moderators` gives those logins the moderator role, so chat moderation can be tried
/// on the embedded platform; and whatever `up` is given, what it prints names the ledger's
/// log key (without which no export can be checked) and the secrets file, and says how to
/// name a moderator or who they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_names_moderators_and_prints_the_log_key_and_the_secrets_file() {
    use fairdeal_proto::fairdeal::chat::v1 as cpb;

    // No moderator: the banner says how to name one, and nobody may mute.
    let dir = tempfile::tempdir().unwrap();
    let platform = Platform::start(&options(dir.path())).await.unwrap();
    let banner = examples::banner(&platform).join("\n");
    assert!(banner.contains(platform.log_key()), "{banner}");
    assert!(
        banner.contains(
            &platform
                .data_dir()
                .join("secrets.toml")
                .display()
                .to_string()
        ),
        "{banner}"
    );
    assert!(banner.contains("up --moderators alice"), "{banner}");
    drop(platform);

    let dir = tempfile::tempdir().unwrap();
    let mut with_moderator = options(dir.path());
    // Caseless, as logins are.
    with_moderator.moderators = vec!["Alice".to_owned()];
    let platform = Platform::start(&with_moderator).await.unwrap();
    let banner = examples::banner(&platform).join("\n");
    assert!(
        banner.contains("moderators (their logins may RemoveMessage and Mute): Alice"),
        "{banner}"
    );
    assert!(
        banner.contains("fairdeal.chat.v1.ChatService/Mute"),
        "{banner}"
    );
    assert!(banner.contains(platform.log_key()), "{banner}");
    let url = platform.url().to_owned();
    let mailbox = platform
        .data_dir()
        .join(fairdeal_server::platform::MAILBOX_DIR);
    let shutdown = platform.shutdown();
    let server = tokio::spawn(platform.run_until_stopped());
    fairdeal_testkit_like_wait(&url).await;
    let channel = tonic::transport::Channel::from_shared(url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let (alice, alice_token) = signed_up(&channel, &mailbox, "alice").await;
    let (bob, bob_token) = signed_up(&channel, &mailbox, "bob").await;
    let mut chat = cpb::chat_service_client::ChatServiceClient::new(channel);
    let mute = |user_id: &str| cpb::MuteRequest {
        user_id: user_id.to_owned(),
        channel: "lobby".to_owned(),
        duration_seconds: 600,
        reason: "spam".to_owned(),
    };
    // Bob is no moderator; alice is.
    let refused = chat
        .mute(authed(&bob_token, mute(&alice)).unwrap())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    let muted = chat
        .mute(authed(&alice_token, mute(&bob)).unwrap())
        .await
        .unwrap()
        .into_inner();
    assert!(muted.until.is_some(), "{muted:?}");
    shutdown.trigger();
    server.await.unwrap().unwrap();
}

/// `up --demo-game tarot` (issue 34): the demo table plays French Tarot for four, every
/// deal re-derived from the revealed seed (the chien included), the four players rated in
/// `tarot/4` with SPEC 6's form for several opponents, the export audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_plays_a_tarot_demo_table() {
    let dir = tempfile::tempdir().unwrap();
    let (url, data_dir, _, shutdown, server) = start(dir.path()).await;
    let (out, printed) = Output::buffer();
    let log_key = fairdeal_server::secrets::Secrets::load_or_create(&data_dir, std::iter::empty())
        .unwrap()
        .log_key()
        .unwrap()
        .to_string();
    let mailbox = data_dir.join(fairdeal_server::platform::MAILBOX_DIR);
    let exports = data_dir.join(fairdeal_server::platform::EXPORTS_DIR);
    let mut demo = Demo::connect(&url, &exports, &mailbox, &log_key, out)
        .await
        .unwrap()
        .playing(fairdeal_demo::DemoGame::Tarot);
    demo.run(STEPS).await.unwrap();
    let printed = String::from_utf8(printed.lock().unwrap().clone()).unwrap();
    let finished = demo.finished.clone().unwrap();
    assert_eq!(finished.reason, pb::FinishReason::Completed as i32);
    assert_eq!(finished.hands_played, 4, "one round: a deal per seat");
    assert_eq!(finished.final_scores.iter().sum::<i32>(), 0);
    assert_eq!(demo.deals_verified, 4);
    assert_eq!(demo.ratings.len(), 4);
    for change in &demo.ratings {
        assert_eq!(change.game_kind, "tarot/4");
        let delta = change.rating_after - change.rating_before;
        assert!((delta - change.k * (change.score - change.expectation)).abs() < 1e-9);
    }
    let scores: f64 = demo.ratings.iter().map(|c| c.score).sum();
    assert!(
        (scores - 2.0).abs() < 1e-9,
        "placings' scores sum to seats / 2"
    );
    let (_, report) = demo.audit.as_ref().unwrap();
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert!(printed.contains("rated in tarot/4"), "{printed}");
    shutdown.trigger();
    server.await.unwrap().unwrap();
}
