//! Turn clocks on an injected clock: a deadline is recorded for every player's turn; when
//! the test moves the clock past it, the service plays for the seat and records the
//! timeout; a move of the player's own resets the count; the third timeout in a row
//! abandons the seat to the bot, which plays it to the end. The same walk runs at a French
//! Tarot table (`tarot.rs`), through [`timeouts_play_for_seat_0_then_abandon_it`].

use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::table_event::Event as E;

use fairdeal_tables::clock::TableClock;

use crate::harness::{Db, Player, TestApp, clock_of, command_of};
use crate::moves;

/// Reads `stream` until `found` picks a message (within 60 s); returns what it picked.
pub(crate) async fn until<T>(
    stream: &mut tonic::Streaming<pb::WatchResponse>,
    mut found: impl FnMut(&pb::WatchResponse, &E) -> Option<T>,
) -> T {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(60), stream.message())
            .await
            .expect("a message in time")
            .unwrap()
            .expect("the stream goes on");
        let event = message.event.as_ref().unwrap().event.as_ref().unwrap();
        if let Some(t) = found(&message, event) {
            return t;
        }
    }
}

/// The next deadline of seat 0.
pub(crate) async fn deadline(stream: &mut tonic::Streaming<pb::WatchResponse>) -> i64 {
    until(stream, |_, e| match clock_of(e) {
        Some((0, deadline_ms)) => Some(deadline_ms),
        _ => None,
    })
    .await
}

#[tokio::test]
async fn timeouts_play_for_the_seat_then_abandon_it_embedded() {
    let app = TestApp::spawn(Db::Sqlite).await;
    let me = app.player();
    let id = me.create_against_bots(20).await;
    timeouts_play_for_seat_0_then_abandon_it(&app, &me, &id, 4).await;
    app.stop().await;
}

/// At table `id` of `seats` seats, created with 20 s a move and the engine's bot at every
/// seat but 0, which `me` takes: the deadline passes and the service plays for seat 0 and
/// counts a timeout; `me`'s own move in time resets the count; three timeouts in a row
/// abandon the seat to the bot, which plays it to the end of the game.
pub(crate) async fn timeouts_play_for_seat_0_then_abandon_it(
    app: &TestApp,
    me: &Player,
    id: &str,
    seats: usize,
) {
    let mut stream = me.watch(id, 0).await;
    me.sit(id, 0).await.unwrap();
    let first = deadline(&mut stream).await;
    let view = me.view(id).await;
    assert_eq!(view.turn_deadline_ms, Some(first));
    assert_eq!(first, app.clock.now_ms() + 20_000);

    // One second short: nothing happens (the player may still act).
    app.clock.advance(Duration::from_millis(19_999));
    assert_eq!(me.view(id).await.version, view.version);
    // The deadline passes: a timeout, and the bot's move for seat 0.
    app.clock.advance(Duration::from_millis(1));
    let consecutive = until(&mut stream, |_, e| match e {
        E::TurnTimedOut(t) => Some((t.seat, t.consecutive)),
        _ => None,
    })
    .await;
    assert_eq!(consecutive, (0, 1));
    let command = until(&mut stream, |_, e| command_of(e).cloned()).await;
    assert!(command.command_id.starts_with("timeout:"));
    // The bot's move for seat 0 may give it the turn again (it won the trick).
    let next = match command.next_turn {
        Some(pb::Turn {
            seat: 0,
            deadline_ms,
        }) => deadline_ms,
        _ => deadline(&mut stream).await,
    };
    assert_eq!(me.view(id).await.seats[0].timeouts, 1);

    // The player acts in time: the count goes back to 0.
    let view = me.view(id).await;
    assert_eq!(view.turn_deadline_ms, Some(next));
    let action = moves::choose(&view, 1).unwrap();
    me.act(id, view.version, "mine-1", action).await.unwrap();
    assert_eq!(me.view(id).await.seats[0].timeouts, 0);

    // Three timeouts in a row abandon the seat.
    for round in 1..=3 {
        let due = deadline(&mut stream).await;
        app.clock
            .advance(Duration::from_millis((due - app.clock.now_ms()) as u64));
        let (seat, consecutive) = until(&mut stream, |_, e| match e {
            E::TurnTimedOut(t) => Some((t.seat, t.consecutive)),
            _ => None,
        })
        .await;
        assert_eq!((seat, consecutive), (0, round));
    }
    let abandoned = until(&mut stream, |_, e| match e {
        E::SeatAbandoned(a) => Some(a.clone()),
        _ => None,
    })
    .await;
    assert_eq!(abandoned.seat, 0);
    assert_eq!(abandoned.player_id, me.id.to_string());

    // The bot plays the seat to the end; no more deadlines.
    let finished = until(&mut stream, |_, e| match e {
        e if clock_of(e).is_some() => panic!("a deadline after the abandonment"),
        E::GameFinished(f) => Some(f.clone()),
        _ => None,
    })
    .await;
    assert_eq!(finished.reason, pb::FinishReason::Abandoned as i32);
    // Who abandoned is on record for rating: seat 0 only.
    let flags: Vec<bool> = finished.players.iter().map(|p| p.abandoned).collect();
    let only_seat_0: Vec<bool> = (0..seats).map(|seat| seat == 0).collect();
    assert_eq!(flags, only_seat_0);
    let end = me.view(id).await;
    assert!(end.seats[0].abandoned);
    assert_eq!(end.turn_deadline_ms, None);
}

#[tokio::test]
async fn a_restarted_replica_waits_for_the_deadlines_in_the_log_embedded() {
    let mut app = TestApp::spawn(Db::Sqlite).await;
    let me = app.player();
    let id = me.create_against_bots(0).await;
    me.sit(&id, 0).await.unwrap();
    let before = me.view(&id).await;
    let due = before.turn_deadline_ms.unwrap();
    // The replica goes; a new one starts, and no request advances the table (a watch only
    // reads): the deadline comes from the projection.
    app.stop_replica(0).await;
    let replica = app.start_replica().await;
    let me = me.on(&replica);
    let mut stream = me.watch(&id, before.version).await;
    assert_eq!(timed_out_at(&app, &mut stream, due).await, (0, 1));
    app.stop().await;
}

/// A replica whose leases lapse (its renewal came too late: a slow database, a starved
/// process) takes its partitions again at new epochs in its next round, and nothing it owed
/// meanwhile is lost: a turn deadline that fired while the leases had lapsed (its step
/// fenced, refused as moved away) is taken once the partition is held again, and a move
/// or a new table sent while they had lapsed is answered then, not refused.
#[tokio::test]
async fn a_lapsed_lease_loses_no_step_and_refuses_no_move_postgres() {
    let app = TestApp::spawn(Db::Postgres).await;
    app.partitions_settled().await;
    let me = app.player();
    let id = me.create_against_bots(20).await;
    let mut stream = me.watch(&id, 0).await;
    me.sit(&id, 0).await.unwrap();
    let first = deadline(&mut stream).await;

    // The deadline passes while the leases have lapsed (the keeper runs once a second).
    lapse(&app).await;
    assert_eq!(timed_out_at(&app, &mut stream, first).await, (0, 1));

    // Seat 0's turn again; the leases lapse, and the player's move, sent once, is answered.
    deadline(&mut stream).await;
    let view = me.view(&id).await;
    assert_eq!(view.game.as_ref().and_then(|g| g.my_seat), Some(0));
    let action = moves::choose(&view, 7).unwrap();
    lapse(&app).await;
    let version = me
        .act_once(&id, view.version, "while-lapsed", action)
        .await
        .unwrap();
    assert!(version > view.version);

    // A table created while they have lapsed is created once they are taken again.
    lapse(&app).await;
    let created = me.create(pb::CreateTableRequest::default()).await;
    assert_eq!(me.view(&created.table_id).await.version, created.version);
    app.stop().await;
}

/// Moves the clock to `due` (a turn's deadline) and reads `stream` until the timeout it
/// causes: its seat and count.
async fn timed_out_at(
    app: &TestApp,
    stream: &mut tonic::Streaming<pb::WatchResponse>,
    due: i64,
) -> (u32, u32) {
    app.clock
        .advance(Duration::from_millis((due - app.clock.now_ms()) as u64));
    until(stream, |_, e| match e {
        E::TurnTimedOut(t) => Some((t.seat, t.consecutive)),
        _ => None,
    })
    .await
}

/// Ends every lease of the tables' partitions now, as a renewal that came too late finds
/// them.
async fn lapse(app: &TestApp) {
    let fairdeal_db::Db::Postgres { pool, schema } = app.tables_storage().db() else {
        panic!("leases are PostgreSQL's");
    };
    let sql = format!(
        "UPDATE {}.partition_leases SET expires_at = now() WHERE expires_at > now()",
        schema.quoted()
    );
    let lapsed = sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(pool)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(lapsed, u64::from(fairdeal_tables::startup::PARTITIONS));
}
