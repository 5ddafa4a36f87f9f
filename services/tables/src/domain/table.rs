//! The state of a table, [`Table`]: the fold of its stream ([`Table::apply`], refusing what
//! cannot follow with a [`FoldError`]), the queries on it, and the rules engine's log of a
//! stream ([`engine_log`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use fairdeal_games::{Card, Event, Game, Phase, Seat};
use uuid::Uuid;

use super::event::{Created, Finished, TableEvent, Viewer};

/// A hand being recorded: `HandStarted` seen, some `CardsDealt` still to come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PendingHand {
    /// Hand number.
    pub(super) hand: u32,
    /// Its dealer.
    pub(super) dealer: Seat,
    /// Cards by dealing position.
    pub(super) hands: [Option<Vec<Card>>; 4],
}

/// A table: the fold of its stream.
#[derive(Debug, Clone)]
pub struct Table {
    /// Its settings.
    pub created: Created,
    /// Players by seat (bot seats stay `None`).
    pub players: [Option<Uuid>; 4],
    /// Seats that contributed to the client seed.
    pub contributed: [bool; 4],
    /// The rules engine's state.
    pub game: Game,
    /// The hand whose cards are being recorded.
    pub(super) pending: Option<PendingHand>,
    /// The client seed, once the first hand is dealt.
    pub client_seed: Option<String>,
    /// Accepted commands: (seat, command id) -> version after them. Shared, so cloning a
    /// table (a snapshot handed out, a preview of events) does not copy the whole match's
    /// commands; the fold copies it only while a clone still holds it.
    pub(super) commands: Arc<HashMap<(Seat, String), u64>>,
    /// The summary, once finished.
    pub finished: Option<Finished>,
    /// The server seed, once revealed.
    pub server_seed: Option<String>,
    /// The seat to act and its deadline (Unix ms), while a player must act.
    pub deadline: Option<(Seat, i64)>,
    /// Consecutive timeouts by seat.
    pub timeouts: [u32; 4],
    /// Seats abandoned to the bot.
    pub abandoned: [bool; 4],
    /// Users spectating now.
    pub spectators: BTreeSet<Uuid>,
    /// The version of the last event other than a spectator's joining or leaving: what a
    /// player's decision is based on.
    pub decided_at: u64,
    /// Events folded (the stream version).
    pub version: u64,
}

/// Why an event cannot follow a table's state ([`Table::apply`]): a corrupt or foreign
/// stream, never a caller's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    /// The stream's first event is not the table's creation.
    #[error("a table stream must begin with TableCreated")]
    NotCreatedFirst,
    /// A second creation.
    #[error("TableCreated twice")]
    CreatedTwice,
    /// Cards of a hand that was not started (or not the one being dealt).
    #[error("cards of hand {hand} without its HandStarted")]
    CardsBeforeHand {
        /// The hand the cards name.
        hand: u32,
    },
    /// Cards at a dealing position past the last seat.
    #[error("dealing position {position} out of range")]
    DealingPosition {
        /// The position the cards name.
        position: u8,
    },
}

impl Table {
    /// Folds `event` into `state` (`None`: the empty stream); the error says why the event
    /// cannot follow.
    pub fn apply(state: Option<Table>, event: &TableEvent) -> Result<Table, FoldError> {
        let mut table = match (state, event) {
            (None, TableEvent::Created(created)) => {
                return Ok(Table {
                    created: created.clone(),
                    players: [None; 4],
                    contributed: [false; 4],
                    game: Game::new(),
                    pending: None,
                    client_seed: None,
                    commands: Arc::default(),
                    finished: None,
                    server_seed: None,
                    deadline: None,
                    timeouts: [0; 4],
                    abandoned: [false; 4],
                    spectators: BTreeSet::new(),
                    decided_at: 1,
                    version: 1,
                });
            }
            (None, _) => return Err(FoldError::NotCreatedFirst),
            (Some(_), TableEvent::Created(_)) => return Err(FoldError::CreatedTwice),
            (Some(table), _) => table,
        };
        table.version += 1;
        if !matches!(
            event,
            TableEvent::SpectatorJoined { .. } | TableEvent::SpectatorLeft { .. }
        ) {
            table.decided_at = table.version;
        }
        match event {
            TableEvent::Created(_) => {}
            TableEvent::SeatTaken { seat, player } => table.players[seat.index()] = Some(*player),
            TableEvent::SeatLeft { seat, .. } => table.players[seat.index()] = None,
            TableEvent::SeedContributed { seat, .. } => table.contributed[seat.index()] = true,
            TableEvent::Engine { event, command } => {
                if let (Some(command), Some(seat)) = (command, actor_of(event)) {
                    // A move of the player's own (ids with ':' are the service's).
                    if !command.command_id.contains(':') {
                        table.timeouts[seat.index()] = 0;
                    }
                    Arc::make_mut(&mut table.commands)
                        .insert((seat, command.command_id.clone()), command.version_after);
                }
                // A command's first event sets the clock the command leaves (none: the
                // service acts next); the events that follow it in the same append leave it.
                if let Some(command) = command {
                    table.deadline = command.next_turn;
                }
                table.game.apply(event);
            }
            TableEvent::TurnClock { seat, deadline_ms } => {
                table.deadline = Some((*seat, *deadline_ms));
            }
            TableEvent::TurnTimedOut { seat, consecutive } => {
                table.timeouts[seat.index()] = *consecutive;
            }
            TableEvent::SeatAbandoned { seat, .. } => table.abandoned[seat.index()] = true,
            TableEvent::HandStarted {
                hand,
                dealer,
                client_seed,
                ..
            } => {
                table.client_seed = Some(client_seed.clone());
                table.pending = Some(PendingHand {
                    hand: *hand,
                    dealer: *dealer,
                    hands: Default::default(),
                });
            }
            TableEvent::CardsDealt {
                hand,
                position,
                cards,
                ..
            } => {
                let pending = table
                    .pending
                    .as_mut()
                    .filter(|p| p.hand == *hand)
                    .ok_or(FoldError::CardsBeforeHand { hand: *hand })?;
                let slot = pending.hands.get_mut(usize::from(*position)).ok_or(
                    FoldError::DealingPosition {
                        position: *position,
                    },
                )?;
                *slot = Some(cards.clone());
                if pending.hands.iter().all(Option::is_some) {
                    let hands = pending.hands.iter().flatten().cloned().collect();
                    let started = Event::HandStarted {
                        hand: pending.hand,
                        dealer: pending.dealer,
                        hands,
                    };
                    table.pending = None;
                    table.game.apply(&started);
                }
            }
            TableEvent::GameFinished(finished) => table.finished = Some(finished.clone()),
            TableEvent::SeedRevealed { server_seed, .. } => {
                table.server_seed = Some(server_seed.clone());
            }
            TableEvent::SpectatorJoined { user } => {
                table.spectators.insert(*user);
            }
            TableEvent::SpectatorLeft { user } => {
                table.spectators.remove(user);
            }
        }
        Ok(table)
    }

    /// The table's id.
    pub fn id(&self) -> Uuid {
        self.created.table_id
    }

    /// The seat `player` holds.
    pub fn seat_of(&self, player: Uuid) -> Option<Seat> {
        Seat::ALL
            .into_iter()
            .find(|s| self.players[s.index()] == Some(player))
    }

    /// How `player` sees the table.
    pub fn viewer(&self, player: Uuid) -> Viewer {
        self.seat_of(player).map_or(Viewer::Spectator, Viewer::Seat)
    }

    /// Whether the match has started.
    pub fn started(&self) -> bool {
        self.game.phase() != Phase::NotStarted
    }

    /// Open seats, ascending.
    pub fn open_seats(&self) -> Vec<Seat> {
        Seat::ALL
            .into_iter()
            .filter(|s| !self.created.bots[s.index()] && self.players[s.index()].is_none())
            .collect()
    }

    /// Whether the service plays `seat` (a bot seat, or an abandoned one).
    pub fn plays_itself(&self, seat: Seat) -> bool {
        self.created.bots[seat.index()] || self.abandoned[seat.index()]
    }
}

/// The seat whose command produced `event` (the events a command's id is kept on).
fn actor_of(event: &Event) -> Option<Seat> {
    match event {
        Event::BidPlaced { seat, .. }
        | Event::PlayerPassed { seat }
        | Event::TrumpNamed { seat, .. }
        | Event::CardPlayed { seat, .. } => Some(*seat),
        _ => None,
    }
}

/// The rules engine's log of a table's events: the engine's own events, with each hand's
/// `HandStarted` and `CardsDealt` folded back into the engine's `hand_started`. What an
/// auditor hands to `Game::verify` to re-decide every move.
pub fn engine_log(events: &[TableEvent]) -> Vec<Event> {
    let mut log = Vec::new();
    let mut pending: Option<PendingHand> = None;
    for event in events {
        match event {
            TableEvent::Engine { event, .. } => log.push(event.clone()),
            TableEvent::HandStarted { hand, dealer, .. } => {
                pending = Some(PendingHand {
                    hand: *hand,
                    dealer: *dealer,
                    hands: Default::default(),
                });
            }
            TableEvent::CardsDealt {
                position, cards, ..
            } => {
                if let Some(p) = pending.as_mut()
                    && let Some(slot) = p.hands.get_mut(usize::from(*position))
                {
                    *slot = Some(cards.clone());
                    if p.hands.iter().all(Option::is_some) {
                        log.push(Event::HandStarted {
                            hand: p.hand,
                            dealer: p.dealer,
                            hands: p.hands.iter().flatten().cloned().collect(),
                        });
                        pending = None;
                    }
                }
            }
            _ => {}
        }
    }
    log
}
