//! Refusals: each one's status and message, and that none of them changes the table.

use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::act_request::Action;
use tonic::Code;

use crate::harness::{Db, Player, TestApp, with};
use crate::moves;

/// `result` failed with `code` and a message containing `words`.
#[track_caller]
fn refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, code: Code, words: &str) {
    let status = result.expect_err("refused");
    assert_eq!(status.code(), code, "{}", status.message());
    assert!(
        status.message().contains(words),
        "{:?} does not say {words:?}",
        status.message()
    );
}

fn points(n: u32) -> Action {
    Action::Bid(pb::Bid {
        kind: Some(pb::bid::Kind::Points(n)),
    })
}

/// Seat 0 and 2 are players, 1 and 3 bots: a player's move is followed by a bot's, then it
/// is the other player's turn.
async fn setup(app: &TestApp) -> (String, Player, Player, Player) {
    let (a, b, stranger) = (app.player(), app.player(), app.player());
    let id = a
        .create(pb::CreateTableRequest {
            options: None,
            bot_seats: vec![1, 3],
            move_seconds: 20,
            timelock_seconds: 0,
        })
        .await
        .table_id;
    (id, a, b, stranger)
}

#[tokio::test]
async fn seats_before_and_after_the_start_embedded() {
    seats_before_and_after_the_start(Db::Sqlite).await;
}

#[tokio::test]
async fn seats_before_and_after_the_start_postgres() {
    seats_before_and_after_the_start(Db::Postgres).await;
}

async fn seats_before_and_after_the_start(db: Db) {
    let app = TestApp::spawn(db).await;
    let (id, a, b, stranger) = setup(&app).await;
    let v = |p: &Player| {
        let p = p.clone();
        let id = id.clone();
        async move { p.view(&id).await.version }
    };
    let version = v(&a).await;

    refused(a.sit(&id, 4).await, Code::InvalidArgument, "seat");
    refused(
        a.sit("not-a-table", 0).await,
        Code::InvalidArgument,
        "table_id",
    );
    refused(
        a.sit(&uuid::Uuid::now_v7().to_string(), 0).await,
        Code::NotFound,
        "not found",
    );
    // A seat held by a bot is taken, as the proto says of a taken seat.
    refused(a.sit(&id, 1).await, Code::AlreadyExists, "taken by a bot");
    refused(a.leave(&id).await, Code::PermissionDenied, "not seated");
    refused(
        a.contribute(&id, "x").await,
        Code::PermissionDenied,
        "not seated",
    );
    assert_eq!(v(&a).await, version, "refusals append nothing");

    let sat = a.sit(&id, 0).await.unwrap();
    assert_eq!(sat.version, version + 1);
    // Sitting again where one sits: the same answer, nothing appended.
    assert_eq!(a.sit(&id, 0).await.unwrap().version, sat.version);
    refused(b.sit(&id, 0).await, Code::AlreadyExists, "taken");
    refused(a.sit(&id, 2).await, Code::FailedPrecondition, "already sit");
    refused(
        a.contribute(&id, "").await,
        Code::InvalidArgument,
        "contribution",
    );
    refused(
        a.contribute(&id, &"x".repeat(129)).await,
        Code::InvalidArgument,
        "contribution",
    );
    refused(
        a.act(&id, sat.version, "c1", Action::Pass(pb::PassAction {}))
            .await,
        Code::FailedPrecondition,
        "has not started",
    );
    assert_eq!(v(&a).await, sat.version);

    // Leave and sit again.
    let left = a.leave(&id).await.unwrap();
    assert_eq!(left.version, sat.version + 1);
    a.sit(&id, 0).await.unwrap();
    a.contribute(&id, "alpha").await.unwrap();
    refused(
        a.contribute(&id, "beta").await,
        Code::FailedPrecondition,
        "already contributed",
    );
    // The fourth seat starts the match and the first hand is dealt.
    b.sit(&id, 2).await.unwrap();
    let started = a.view(&id).await;
    assert_eq!(started.status, pb::TableStatus::Playing as i32);
    assert_eq!(started.game.as_ref().unwrap().my_hand.len(), 10);
    refused(a.leave(&id).await, Code::FailedPrecondition, "started");
    refused(
        stranger.sit(&id, 0).await,
        Code::FailedPrecondition,
        "started",
    );
    refused(
        b.contribute(&id, "late").await,
        Code::FailedPrecondition,
        "client seed is fixed",
    );
    assert_eq!(v(&a).await, started.version);

    // Callers: none, and a service, are refused.
    let mut client = app.tables.clone();
    let status = client
        .get_table(pb::GetTableRequest {
            table_id: id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let status = client
        .get_table(with(
            &app.service_token("dealing"),
            pb::GetTableRequest {
                table_id: id.clone(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    app.stop().await;
}

#[tokio::test]
async fn illegal_moves_are_refused_and_change_nothing() {
    let app = TestApp::spawn(Db::Sqlite).await;
    let (id, a, b, stranger) = setup(&app).await;
    a.sit(&id, 0).await.unwrap();
    b.sit(&id, 2).await.unwrap();
    let players = [&a, &b];
    let mut checked_not_in_hand = false;
    let mut checked_follow = false;
    let mut checked_auction = false;
    let mut moves = 0;
    loop {
        let spectator = stranger.view(&id).await;
        let game = spectator.game.clone().unwrap();
        if spectator.status == pb::TableStatus::Finished as i32 {
            break;
        }
        let turn = game.turn.expect("a player's turn (bots have played)");
        assert!(turn == 0 || turn == 2, "bots play at once");
        let (me, other) = if turn == 0 { (&a, &b) } else { (&b, &a) };
        let view = me.view(&id).await;
        let version = view.version;
        let my = view.game.clone().unwrap();

        // Refusals at every turn, none of which may change the table.
        let out_of_turn = match my.phase.as_str() {
            "auction" => Action::Pass(pb::PassAction {}),
            "naming_trump" => Action::NameTrump(1),
            _ => {
                let theirs = other.view(&id).await;
                Action::PlayCard(theirs.game.unwrap().my_hand[0].clone())
            }
        };
        refused(
            other.act(&id, version, "o1", out_of_turn).await,
            Code::FailedPrecondition,
            "not your turn",
        );
        refused(
            stranger
                .act(&id, version, "s1", Action::Pass(pb::PassAction {}))
                .await,
            Code::PermissionDenied,
            "not seated",
        );
        let stale = me
            .act(&id, version - 1, "st", Action::Pass(pb::PassAction {}))
            .await
            .unwrap_err();
        assert_eq!(stale.code(), Code::Aborted);
        assert!(stale.message().contains(&format!("at version {version}")));
        assert_eq!(
            stale.metadata().get("fairdeal-table-version").unwrap(),
            version.to_string().as_str()
        );
        refused(
            me.act(&id, version, "", Action::Pass(pb::PassAction {}))
                .await,
            Code::InvalidArgument,
            "command_id",
        );
        refused(
            me.act(&id, version, "bad id!", Action::Pass(pb::PassAction {}))
                .await,
            Code::InvalidArgument,
            "command_id",
        );
        refused(
            me.act(&id, version, "x", Action::PlayCard("ZZ".into()))
                .await,
            Code::InvalidArgument,
            "play_card",
        );
        refused(
            me.act(&id, version, "x", Action::NameTrump(9)).await,
            Code::InvalidArgument,
            "name_trump",
        );
        let mut no_action = a.client.clone();
        refused(
            no_action
                .act(with(
                    &me.token,
                    pb::ActRequest {
                        table_id: id.clone(),
                        expected_version: version,
                        command_id: "x".into(),
                        action: None,
                    },
                ))
                .await,
            Code::InvalidArgument,
            "action",
        );
        match my.phase.as_str() {
            "auction" => {
                refused(
                    me.act(&id, version, "x", points(52)).await,
                    Code::FailedPrecondition,
                    "not a multiple of 5",
                );
                refused(
                    me.act(&id, version, "x", points(45)).await,
                    Code::FailedPrecondition,
                    "too low",
                );
                refused(
                    me.act(&id, version, "x", points(105)).await,
                    Code::FailedPrecondition,
                    "too high",
                );
                refused(
                    me.act(&id, version, "x", Action::PlayCard(my.my_hand[0].clone()))
                        .await,
                    Code::FailedPrecondition,
                    "auction is on",
                );
                checked_auction = true;
            }
            "playing" => {
                let deck: Vec<String> = "SHDC"
                    .chars()
                    .flat_map(|s| "AKQJT98765".chars().map(move |r| format!("{r}{s}")))
                    .collect();
                let missing = deck.iter().find(|c| !my.my_hand.contains(c)).unwrap();
                refused(
                    me.act(&id, version, "x", Action::PlayCard(missing.clone()))
                        .await,
                    Code::FailedPrecondition,
                    "not in your hand",
                );
                checked_not_in_hand = true;
                if let Some(led) = my.trick.first() {
                    let suit = led.card.chars().nth(1).unwrap();
                    let follows = |c: &String| c.ends_with(suit);
                    if my.my_hand.iter().any(follows)
                        && let Some(off) = my.my_hand.iter().find(|c| !follows(c))
                    {
                        refused(
                            me.act(&id, version, "x", Action::PlayCard(off.clone()))
                                .await,
                            Code::FailedPrecondition,
                            "must follow suit",
                        );
                        checked_follow = true;
                    }
                }
            }
            _ => {}
        }
        assert_eq!(
            me.view(&id).await.version,
            version,
            "refusals append nothing"
        );

        // A legal move, then its retry: the first answer, nothing appended.
        let action = moves::choose(&view, 11).unwrap();
        let command_id = format!("move-{moves}");
        let after = me
            .act(&id, version, &command_id, action.clone())
            .await
            .unwrap();
        let now = me.view(&id).await.version;
        assert_eq!(
            me.act(&id, version, &command_id, action).await.unwrap(),
            after,
            "a retried command id gets its first answer"
        );
        assert_eq!(me.view(&id).await.version, now, "a retry appends nothing");
        moves += 1;
        if checked_auction && checked_not_in_hand && checked_follow {
            break;
        }
        assert!(moves < 3_000);
    }
    assert!(checked_auction && checked_not_in_hand, "phases reached");
    for p in players {
        assert!(p.view(&id).await.version > 0);
    }
    app.stop().await;
}

/// A seed contribution is 1 to 128 characters, as tables.proto promises, checked by the one
/// rule both the tables and the commitment service apply: 100 euro signs (300 bytes) and
/// 128 playing cards (512 bytes) are accepted end to end (before, the commitment service
/// refused them in bytes), 129 characters and hidden characters are refused naming the
/// field, in characters or by code point, and change nothing.
async fn contributions_are_counted_in_characters(db: Db) {
    let app = TestApp::spawn(db).await;
    let players: Vec<Player> = (0..4).map(|_| app.player()).collect();
    let id = players[0]
        .create(pb::CreateTableRequest {
            options: None,
            bot_seats: vec![],
            move_seconds: 20,
            timelock_seconds: 0,
        })
        .await
        .table_id;
    for (seat, p) in (0u32..3).zip(&players) {
        p.sit(&id, seat).await.unwrap();
    }
    let before = players[0].view(&id).await.version;
    refused(
        players[2].contribute(&id, &"\u{1F0A1}".repeat(129)).await,
        Code::InvalidArgument,
        "contribution: is 129 characters, at most 128 allowed",
    );
    for (hidden, code_point) in [
        ("lucky\u{202E}7", "U+202E"),
        ("\u{2066}seven\u{2069}", "U+2066"),
        ("a\u{200B}b", "U+200B"),
        ("tagged\u{E0041}", "U+E0041"),
    ] {
        refused(
            players[2].contribute(&id, hidden).await,
            Code::InvalidArgument,
            &format!("contribution: must not contain {code_point}"),
        );
    }
    assert_eq!(
        players[0].view(&id).await.version,
        before,
        "refusals append nothing"
    );
    let euros = "€".repeat(100);
    let cards = "\u{1F0A1}".repeat(128);
    players[0].contribute(&id, &euros).await.unwrap();
    players[1].contribute(&id, &cards).await.unwrap();
    // An emoji sequence with a joiner and a variation selector is text.
    players[2]
        .contribute(&id, "\u{1F469}\u{200D}\u{1F4BB}\u{2764}\u{FE0F}")
        .await
        .unwrap();
    players[3].sit(&id, 3).await.unwrap();
    let started = players[0].view(&id).await;
    assert_eq!(started.status, pb::TableStatus::Playing as i32);
    assert_eq!(started.game.as_ref().unwrap().my_hand.len(), 10);
    app.stop().await;
}

/// A contribution the commitment service recorded while the table's own append did not go
/// in (fenced as the table moved, or the replica stopped between the two) is given to the
/// table when the player sends it again, as commitment.proto's "read the table to see
/// whether the first one went in" says; another text for that seat stays refused.
async fn a_contribution_recorded_only_by_the_commitment_goes_in_when_sent_again(db: Db) {
    let app = TestApp::spawn(db).await;
    let player = app.player();
    // One seat taken of four: the table waits, and takes contributions.
    let id = player
        .create(pb::CreateTableRequest {
            move_seconds: 20,
            ..Default::default()
        })
        .await
        .table_id;
    player.sit(&id, 0).await.unwrap();
    let before = player.view(&id).await.version;
    // The first half of a contribution: recorded by the commitment service only.
    let mut commitment = app.commitment();
    commitment
        .contribute_seed(with(
            &app.service_token("tables"),
            fairdeal_proto::fairdeal::commitment::v1::ContributeSeedRequest {
                table_id: id.clone(),
                seat: 0,
                player_id: player.id.to_string(),
                contribution: "lucky seven".into(),
            },
        ))
        .await
        .unwrap();
    assert_eq!(player.view(&id).await.version, before);
    // Another text for the seat: the commitment service's refusal stands.
    refused(
        player.contribute(&id, "another").await,
        Code::FailedPrecondition,
        "already contributed",
    );
    assert_eq!(player.view(&id).await.version, before, "nothing appended");
    // The same one: it goes in, once.
    let version = player.contribute(&id, "lucky seven").await.unwrap();
    assert_eq!(version, before + 1);
    refused(
        player.contribute(&id, "lucky seven").await,
        Code::FailedPrecondition,
        "",
    );
    assert_eq!(player.view(&id).await.version, before + 1);
    app.stop().await;
}

#[tokio::test]
async fn a_contribution_recorded_only_by_the_commitment_goes_in_when_sent_again_embedded() {
    a_contribution_recorded_only_by_the_commitment_goes_in_when_sent_again(Db::Sqlite).await;
}

#[tokio::test]
async fn a_contribution_recorded_only_by_the_commitment_goes_in_when_sent_again_postgres() {
    a_contribution_recorded_only_by_the_commitment_goes_in_when_sent_again(Db::Postgres).await;
}

#[tokio::test]
async fn contributions_are_counted_in_characters_embedded() {
    contributions_are_counted_in_characters(Db::Sqlite).await;
}

#[tokio::test]
async fn contributions_are_counted_in_characters_postgres() {
    contributions_are_counted_in_characters(Db::Postgres).await;
}
