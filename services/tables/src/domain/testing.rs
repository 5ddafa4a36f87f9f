//! Tables for unit tests: a new table, the fold of events into it, a hand as the dealing
//! service would deal it, and a whole table played to its end ([`played`]).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_games::{Bot, HeuristicBot, TableOptions};
use fairdeal_table_game::{Seat, TableGame};
use uuid::Uuid;

use super::{Created, DealtHand, FIRST_DEALER, MAX_TIMEOUTS, Next, bot_seed, create};
use crate::{Game, Table, TableEvent};
use fairdeal_games_wire::any::{AnyCommand, AnyGame, AnyOptions, AnySeatView};

/// The Jeu du 10 match of a table of these tests.
pub(crate) fn jeu_du_10(game: &AnyGame) -> &fairdeal_games::Game {
    match game {
        AnyGame::JeuDu10(game) => game,
        other => panic!("a Jeu du 10 table, not {other:?}"),
    }
}

/// Seat `n`.
pub(crate) fn seat(n: u8) -> Seat {
    Seat::new(n).unwrap()
}

/// A new table with bots at `bots`.
pub(crate) fn table(bots: [bool; 4]) -> Table {
    table_ending(bots, None)
}

/// A new table with bots at `bots` and the latest end `latest_end_ms` (Unix ms; `None`:
/// none).
pub(crate) fn table_ending(bots: [bool; 4], latest_end_ms: Option<i64>) -> Table {
    let options = AnyOptions::JeuDu10(TableOptions::default());
    let created = Created {
        table_id: Uuid::now_v7(),
        creator: Uuid::now_v7(),
        layout: Game::layout(&options).unwrap(),
        options,
        bots: bots.to_vec(),
        move_seconds: 30,
        commitment: "c".repeat(64),
        short_code: "ccccc".into(),
        first_dealer: FIRST_DEALER,
        latest_end_ms,
    };
    fold(None, &create(created))
}

/// `events` folded into `state`.
pub(crate) fn fold<G: TableGame>(
    state: Option<super::Table<G>>,
    events: &[super::TableEvent<G>],
) -> super::Table<G> {
    let mut state = state;
    for e in events {
        state = Some(super::Table::apply(state, e).unwrap());
    }
    state.unwrap()
}

/// `table` after its bots have played every move due at `now` (until a player's turn, a
/// deadline or the end).
pub(crate) fn bots_play(mut table: Table, now: i64) -> Table {
    while let Next::Bot(seat) = table.next(now) {
        let events = table.bot_move(seat, now).unwrap().events;
        table = fold(Some(table), &events);
    }
    table
}

/// Hand `hand` as the dealing service deals it.
pub(crate) fn dealt(hand: u32) -> DealtHand {
    DealtHand {
        hand,
        deal: Deal::from_seeds(Deck::Dix, "server", "client", &hand.to_string()),
        commitment: "c".into(),
        client_seed: "client".into(),
    }
}

/// A table's whole stream and who took part in it (see [`played`]).
#[derive(Debug)]
pub(crate) struct Played {
    /// The stream's events, from `TableCreated` (version 1) on.
    pub(crate) events: Vec<TableEvent>,
    /// Seat 0's player: sat, moved, then let the clock run out until the seat was abandoned.
    pub(crate) abandoning: Uuid,
    /// Seat 2's player: spectated first, then sat and played every move.
    pub(crate) playing: Uuid,
    /// Sat at seat 2 and left before the start.
    pub(crate) left: Uuid,
    /// Spectated throughout, and stopped once the seed was revealed.
    pub(crate) spectator: Uuid,
}

impl Played {
    /// The stream's events with their versions.
    pub(crate) fn versioned(&self) -> impl Iterator<Item = (u64, &TableEvent)> {
        (1..).zip(&self.events)
    }
}

/// A table with bots at seats 1 and 3 played to its end and its seed revealed, with every
/// kind of event of a table on the way: seats taken and left, seeds contributed, spectators
/// joining and leaving, hands dealt (public and private parts), players' and bots' moves
/// (commands with and without a next turn), turn clocks, timeouts, an abandoned seat, the
/// end of the game and the reveal.
pub(crate) fn played() -> Played {
    let mut events = Vec::new();
    let mut t = table([false, true, false, true]);
    events.extend(create(t.created.clone()));
    let (abandoning, playing, left, spectator) = (
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
    );
    let mut take = |t: Table, new: Vec<TableEvent>| {
        let t = fold(Some(t), &new);
        events.extend(new);
        t
    };
    let (zero, two) = (seat(0), seat(2));
    let new = t.spectate(spectator).unwrap().events;
    t = take(t, new);
    let new = t.sit(left, two, 0).unwrap().events;
    t = take(t, new);
    let new = t.contribute(left, "left's".into(), 0).unwrap().events;
    t = take(t, new);
    let new = t.leave(left).unwrap().events;
    t = take(t, new);
    let new = t.sit(abandoning, zero, 0).unwrap().events;
    t = take(t, new);
    let new = t.contribute(abandoning, "mine".into(), 0).unwrap().events;
    t = take(t, new);
    let new = t.spectate(playing).unwrap().events;
    t = take(t, new);
    // Sitting down ends spectating; the fourth seat starts the match.
    let new = t.sit(playing, two, 0).unwrap().events;
    t = take(t, new);
    assert!(t.started());
    let bot = HeuristicBot::new(bot_seed(t.id()));
    let mut now = 1_700_000_000_000;
    let mut moves = 0;
    for _ in 0..1_000_000 {
        if t.finished.is_some() {
            break;
        }
        let new = match t.next(now) {
            Next::Deal { hand } => t.deal(&dealt(hand), now).unwrap().events,
            Next::Bot(seat) => t.bot_move(seat, now).unwrap().events,
            Next::Timeout(seat) => t.time_out(seat, now).unwrap().events,
            Next::Finish => t.end_match(now).events,
            Next::Reveal | Next::Expire => unreachable!("not finished, no latest end"),
            Next::Wait => {
                let turn = TableGame::turn(&t.game).unwrap();
                // Seat 0 moves twice, then lets the clock run out until abandoned.
                if turn == two || moves < 2 {
                    moves += usize::from(turn == zero);
                    let AnySeatView::JeuDu10(view) = TableGame::seat_view(&t.game, turn).unwrap()
                    else {
                        unreachable!("a Jeu du 10 table")
                    };
                    let command = AnyCommand::JeuDu10(bot.choose(&view).unwrap());
                    let player = t.player_at(turn).unwrap();
                    let id = format!("m{}", t.version);
                    now += 1_000;
                    t.act(player, t.version, &id, &command, now).unwrap().events
                } else {
                    now = t.deadline.unwrap().1;
                    continue;
                }
            }
        };
        t = take(t, new);
    }
    assert!(t.finished.is_some(), "the match ends");
    assert_eq!(t.timeouts[0], MAX_TIMEOUTS);
    assert!(t.abandoned[0]);
    assert_eq!(t.next(now), Next::Reveal);
    let new = t.reveal("server".into()).events;
    t = take(t, new);
    let new = t.stop_spectating(spectator).events;
    take(t, new);
    Played {
        events,
        abandoning,
        playing,
        left,
        spectator,
    }
}
