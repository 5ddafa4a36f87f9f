//! The decisions' unit tests, on tables built by [`super::testing`].

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_games::{Phase, TableOptions};
use fairdeal_table_game::TableGame;
use uuid::Uuid;

use super::testing::{bots_play, dealt, fold, jeu_du_10, seat, table, table_ending};
use super::*;
use crate::{Game, TableError, TableEvent};

#[test]
fn fourth_seat_starts_the_match_and_the_deal_is_private_per_seat() {
    let mut t = table([false, true, false, true]);
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let events = t.sit(a, seat(0), 0).unwrap().events;
    t = fold(Some(t), &events);
    assert_eq!(t.sit(b, seat(1), 0), Err(TableError::BotSeat(seat(1))));
    assert_eq!(t.sit(b, seat(0), 0), Err(TableError::SeatTaken(seat(0))));
    let d = t.sit(b, seat(2), 0).unwrap();
    assert_eq!(d.events.len(), 2, "seat taken + match started");
    t = fold(Some(t), &d.events);
    assert!(t.started());
    assert_eq!(t.next(0), Next::Deal { hand: 0 });
    let d = t.deal(&dealt(0), 0).unwrap();
    assert_eq!(d.events.len(), 5);
    for e in &d.events {
        if let TableEvent::CardsDealt { seat, .. } = e {
            assert!(e.visible_to(Viewer::Seat(*seat), false));
            assert!(!e.visible_to(Viewer::Seat(seat.offset(1, 4)), false));
            assert!(!e.visible_to(Viewer::Spectator, false));
            assert!(e.visible_to(Viewer::Spectator, true));
        }
    }
    t = fold(Some(t), &d.events);
    assert_eq!(jeu_du_10(&t.game).phase(), Phase::Auction);
    assert_eq!(
        jeu_du_10(&t.game)
            .hand_of(fairdeal_games::Seat::ALL[0])
            .len(),
        10
    );
    // Seat 1 (a bot) bids first: the dealer is seat 0.
    assert_eq!(t.next(0), Next::Bot(seat(1)));
}

#[test]
fn retry_stale_and_not_seated() {
    let mut t = table([false, true, true, true]);
    let a = Uuid::now_v7();
    let events = t.sit(a, seat(0), 0).unwrap().events;
    t = fold(Some(t), &events);
    let events = t.deal(&dealt(0), 0).unwrap().events;
    t = fold(Some(t), &events);
    // Bots play until seat 0's turn.
    t = bots_play(t, 0);
    assert_eq!(TableGame::turn(&t.game), Some(seat(0)));
    let legal = TableGame::legal_commands(&t.game, seat(0));
    let v = t.version;
    assert_eq!(
        t.act(a, v - 1, "x", &legal[0], 0).unwrap_err(),
        TableError::Stale {
            expected: v - 1,
            current: v
        }
    );
    assert_eq!(
        t.act(Uuid::now_v7(), v, "x", &legal[0], 0).unwrap_err(),
        TableError::NotSeated
    );
    let d = t.act(a, v, "x", &legal[0], 0).unwrap();
    let after = d.version;
    t = fold(Some(t), &d.events);
    assert_eq!(t.version, after);
    let again = t.act(a, v, "x", &legal[0], 0).unwrap();
    assert!(again.events.is_empty());
    assert_eq!(again.version, after);
}

#[test]
fn a_player_who_lets_the_clock_run_out_is_played_for_then_abandoned() {
    let mut t = table([false, true, true, true]);
    let a = Uuid::now_v7();
    let events = t.sit(a, seat(0), 0).unwrap().events;
    t = fold(Some(t), &events);
    let mut now = 1_000_000;
    let events = t.deal(&dealt(0), now).unwrap().events;
    t = fold(Some(t), &events);
    let me = seat(0);
    for round in 1..=MAX_TIMEOUTS {
        t = bots_play(t, now);
        if t.finished.is_some() {
            return;
        }
        let (seat, deadline) = t.deadline.expect("a player's turn has a deadline");
        assert_eq!((seat, deadline), (me, now + 30_000));
        assert_eq!(t.next(deadline - 1), Next::Wait);
        assert!(t.time_out(me, deadline - 1).unwrap().events.is_empty());
        now = deadline;
        assert_eq!(t.next(now), Next::Timeout(me));
        let d = t.time_out(me, now).unwrap();
        assert_eq!(
            d.events[0],
            TableEvent::TurnTimedOut {
                seat: me,
                consecutive: round
            }
        );
        t = fold(Some(t), &d.events);
        assert_eq!(t.timeouts[0], round);
        assert_eq!(t.abandoned[0], round == MAX_TIMEOUTS);
    }
    // Abandoned: the bot plays the seat, no more deadlines.
    while let Next::Bot(seat) = t.next(now) {
        let events = t.bot_move(seat, now).unwrap().events;
        assert!(!events.iter().any(|e| e.turn_clock().is_some()));
        t = fold(Some(t), &events);
    }
    assert_eq!(t.next(now), Next::Deal { hand: 1 });
}

#[test]
fn spectators_join_once_leave_when_they_sit_and_never_make_a_move_stale() {
    let mut t = table([false, true, true, false]);
    let (a, watcher) = (Uuid::now_v7(), Uuid::now_v7());
    let events = t.sit(a, seat(0), 0).unwrap().events;
    t = fold(Some(t), &events);
    assert_eq!(t.spectate(a), Err(TableError::SeatedSpectator(seat(0))));
    let d = t.spectate(watcher).unwrap();
    assert_eq!(
        d.events,
        vec![TableEvent::SpectatorJoined { user: watcher }]
    );
    t = fold(Some(t), &d.events);
    assert!(t.spectators.contains(&watcher));
    let again = t.spectate(watcher).unwrap();
    assert!(again.events.is_empty());
    assert_eq!(again.version, t.version);
    // Leaving and coming back.
    let events = t.stop_spectating(watcher).events;
    t = fold(Some(t), &events);
    assert!(t.spectators.is_empty());
    assert!(t.stop_spectating(watcher).events.is_empty());
    let events = t.spectate(watcher).unwrap().events;
    t = fold(Some(t), &events);
    // Sitting down ends spectating, first; the fourth seat starts the match.
    let d = t.sit(watcher, seat(3), 0).unwrap();
    assert_eq!(d.events[0], TableEvent::SpectatorLeft { user: watcher });
    assert_eq!(
        d.events[1],
        TableEvent::SeatTaken {
            seat: seat(3),
            player: watcher
        }
    );
    t = fold(Some(t), &d.events);
    assert!(t.spectators.is_empty() && t.started());
    let events = t.deal(&dealt(0), 0).unwrap().events;
    t = fold(Some(t), &events);
    t = bots_play(t, 0);
    // A spectator arriving between a player's read and their move: still their move.
    let seat = TableGame::turn(&t.game).unwrap();
    let player = t.player_at(seat).unwrap();
    let seen = t.version;
    let other = Uuid::now_v7();
    let events = t.spectate(other).unwrap().events;
    t = fold(Some(t), &events);
    assert_eq!(t.version, seen + 1);
    let legal = TableGame::legal_commands(&t.game, seat);
    let d = t.act(player, seen, "m1", &legal[0], 0).unwrap();
    assert!(!d.events.is_empty());
    // A version ahead of the table is refused.
    assert!(matches!(
        t.act(player, t.version + 1, "m2", &legal[0], 0),
        Err(TableError::Stale { .. })
    ));
    // `other` is one of them.
    for _ in 1..MAX_SPECTATORS {
        let events = t.spectate(Uuid::now_v7()).unwrap().events;
        t = fold(Some(t), &events);
    }
    assert_eq!(t.spectate(Uuid::now_v7()), Err(TableError::SpectatorsFull));
}

#[test]
fn parse_setup_bounds() {
    let o = || fairdeal_games_wire::any::AnyOptions::JeuDu10(TableOptions::default());
    assert!(parse_setup::<Game>(o(), &[0, 1, 2, 3], 0).is_err());
    assert!(parse_setup::<Game>(o(), &[1, 1], 0).is_err());
    assert!(parse_setup::<Game>(o(), &[4], 0).is_err());
    assert!(parse_setup::<Game>(o(), &[], 4).is_err());
    assert!(parse_setup::<Game>(o(), &[], 601).is_err());
    let setup = parse_setup::<Game>(o(), &[1, 3], 0).unwrap();
    assert_eq!(setup.move_seconds, DEFAULT_MOVE_SECONDS);
    assert_eq!(setup.bots, [false, true, false, true]);
    assert_eq!(setup.layout.seats, 4);
    let id = parse_command_id::<fairdeal_games::RuleError>;
    assert!(id("").is_err());
    assert!(id(&"a".repeat(65)).is_err());
    assert!(id("a b").is_err());
    assert!(id("0b7c-1.x_z").is_ok());
    assert!(id("bot:1").is_err(), "the service's ids");
}

#[test]
fn a_table_waiting_for_players_expires_at_its_latest_end_and_sits_nobody_after() {
    const END: i64 = 1_800_000_000_000;
    let t = table_ending([false, true, true, true], Some(END));
    assert_eq!(
        TableEvent::Created(t.created.clone()).due(),
        Some(Due::Expires(END))
    );
    assert_eq!(t.wakes_at(), Some(END));
    assert_eq!(t.next(END - 1), Next::Wait);
    assert_eq!(t.expire(END - 1).events, Vec::new(), "not before the end");
    assert_eq!(t.next(END), Next::Expire);
    let a = Uuid::now_v7();
    assert_eq!(t.sit(a, seat(0), END), Err(TableError::Expired));
    let expired = t.expire(END).events;
    assert_eq!(
        expired,
        vec![TableEvent::Expired {
            latest_end_ms: END,
            hands_dealt: 0
        }]
    );
    // Nothing was dealt: nothing to reveal, the table is done.
    assert_eq!(expired[0].due(), Some(Due::Nobody));
    let t = fold(Some(t), &expired);
    assert!(t.over() && t.expired && t.finished.is_none());
    assert_eq!(t.wakes_at(), None);
    assert_eq!(t.expire(END + 1).events, Vec::new(), "once");
    // Refused whatever the clock says once expired.
    assert_eq!(t.sit(a, seat(0), 0), Err(TableError::Expired));
    assert_eq!(t.next(END), Next::Wait);
}

#[test]
fn a_hand_in_play_at_the_latest_end_stops_there_and_its_cards_become_public() {
    const END: i64 = 1_800_000_000_000;
    let mut t = table_ending([false, true, true, true], Some(END));
    let a = Uuid::now_v7();
    let now = END - 60_000;
    let events = t.sit(a, seat(0), now).unwrap().events;
    t = fold(Some(t), &events);
    let deal = t.deal(&dealt(0), now).unwrap().events;
    t = fold(Some(t), &deal);
    t = bots_play(t, now);
    // Seat 0's clock: 30 s per move, within the end.
    assert_eq!(t.deadline, Some((seat(0), now + 30_000)));
    // A move 45 s before the end leaves the next turn's clock at the end, not past it.
    let view = TableGame::seat_view(&t.game, seat(0)).unwrap();
    let fairdeal_games_wire::any::AnySeatView::JeuDu10(view) = view else {
        unreachable!("a Jeu du 10 table")
    };
    use fairdeal_games::Bot;
    let bot = fairdeal_games::HeuristicBot::new(1);
    let command = fairdeal_games_wire::any::AnyCommand::JeuDu10(bot.choose(&view).unwrap());
    let moved = t
        .act(a, t.version, "m1", &command, END - 10_000)
        .unwrap()
        .events;
    t = fold(Some(t), &moved);
    t = bots_play(t, END - 10_000);
    if let Some((_, deadline)) = t.deadline {
        assert!(deadline <= END, "deadline {deadline} past the end {END}");
    }
    assert_eq!(t.wakes_at().map(|w| w <= END), Some(true));
    // At the end: no move, no timeout, the table expires.
    assert_eq!(t.next(END), Next::Expire);
    assert_eq!(
        t.act(a, t.version, "m2", &command, END),
        Err(TableError::Expired)
    );
    let expired = t.expire(END).events;
    let t = fold(Some(t), &expired);
    assert!(t.over());
    assert_eq!(
        expired,
        vec![TableEvent::Expired {
            latest_end_ms: END,
            hands_dealt: 1
        }]
    );
    assert_eq!(expired[0].due(), Some(Due::Service));
    assert_eq!(t.next(END), Next::Reveal);
    // The watchers' rule: `finished` is `over()`, and every seat's cards are then public.
    let cards: Vec<_> = deal
        .iter()
        .filter(|e| matches!(e, TableEvent::CardsDealt { .. }))
        .collect();
    assert_eq!(cards.len(), 4);
    for e in cards {
        assert!(!e.visible_to(Viewer::Spectator, false));
        assert!(e.visible_to(Viewer::Spectator, t.over()));
    }
}
