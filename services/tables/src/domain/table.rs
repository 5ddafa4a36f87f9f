//! The state of a table, [`Table`]: the fold of its stream ([`Table::apply`], refusing what
//! cannot follow with a [`FoldError`]), the queries on it, and the game's log of a stream
//! ([`engine_log`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use fairdeal_table_game::{Actor, Dealt, Seat, TableGame};
use uuid::Uuid;

use super::event::{Created, Finished, TableEvent, Viewer};

/// A hand being recorded: `HandStarted` seen, some `CardsDealt` (or the `TalonDealt`) still
/// to come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PendingHand<C> {
    /// Hand number.
    hand: u32,
    /// Its dealer.
    dealer: Seat,
    /// Cards by dealing position.
    hands: Vec<Option<Vec<C>>>,
    /// The talon, when the deck has one (`None` until recorded).
    talon: Option<Vec<C>>,
    /// Whether the deck deals a talon.
    has_talon: bool,
}

impl<C: Clone> PendingHand<C> {
    fn new<G: TableGame>(created: &Created<G>, hand: u32, dealer: Seat) -> Self {
        PendingHand {
            hand,
            dealer,
            hands: vec![None; created.layout.seats],
            talon: None,
            has_talon: created.layout.deck.chien_len() > 0,
        }
    }

    /// Records the cards at `position`; `None` when there is no such position.
    fn record(&mut self, position: u8, cards: &[C]) -> Option<()> {
        *self.hands.get_mut(usize::from(position))? = Some(cards.to_vec());
        Some(())
    }

    /// The whole hand, once every seat's cards (and the talon) are recorded.
    fn complete(&self) -> Option<Dealt<C>> {
        if self.has_talon && self.talon.is_none() {
            return None;
        }
        Some(Dealt {
            hand: self.hand,
            dealer: self.dealer,
            hands: self.hands.iter().cloned().collect::<Option<_>>()?,
            talon: self.talon.clone().unwrap_or_default(),
        })
    }
}

/// A table: the fold of its stream.
#[derive(Debug, Clone)]
pub struct Table<G: TableGame> {
    /// Its settings.
    pub created: Created<G>,
    /// Players by seat (bot seats stay `None`).
    pub players: Vec<Option<Uuid>>,
    /// Seats that contributed to the client seed.
    pub contributed: Vec<bool>,
    /// The game's state.
    pub game: G,
    /// The hand whose cards are being recorded.
    pub(super) pending: Option<PendingHand<G::Card>>,
    /// The client seed, once the first hand is dealt.
    pub client_seed: Option<String>,
    /// Accepted commands: (seat, command id) -> version after them. Shared, so cloning a
    /// table (a snapshot handed out, a preview of events) does not copy the whole match's
    /// commands; the fold copies it only while a clone still holds it.
    pub(super) commands: Arc<HashMap<(Seat, String), u64>>,
    /// The summary, once finished.
    pub finished: Option<Finished<G>>,
    /// Whether the table reached its latest end before its game finished
    /// ([`TableEvent::Expired`]).
    pub expired: bool,
    /// The server seed, once revealed.
    pub server_seed: Option<String>,
    /// The seat to act and its deadline (Unix ms), while a player must act.
    pub deadline: Option<(Seat, i64)>,
    /// Consecutive timeouts by seat.
    pub timeouts: Vec<u32>,
    /// Seats abandoned to the bot.
    pub abandoned: Vec<bool>,
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
    /// An event naming a seat the table does not have.
    #[error("{seat} is not a seat of this table")]
    NoSuchSeat {
        /// The seat named.
        seat: Seat,
    },
}

/// The seat an event names, checked against the table's seats.
fn at<T>(list: &mut [T], seat: Seat) -> Result<&mut T, FoldError> {
    list.get_mut(seat.index())
        .ok_or(FoldError::NoSuchSeat { seat })
}

impl<G: TableGame> Table<G> {
    /// Folds `event` into `state` (`None`: the empty stream); the error says why the event
    /// cannot follow.
    pub fn apply(state: Option<Self>, event: &TableEvent<G>) -> Result<Self, FoldError> {
        let mut table = match (state, event) {
            (None, TableEvent::Created(created)) => {
                let seats = created.layout.seats;
                return Ok(Table {
                    created: created.clone(),
                    players: vec![None; seats],
                    contributed: vec![false; seats],
                    game: G::default(),
                    pending: None,
                    client_seed: None,
                    commands: Arc::default(),
                    finished: None,
                    expired: false,
                    server_seed: None,
                    deadline: None,
                    timeouts: vec![0; seats],
                    abandoned: vec![false; seats],
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
            TableEvent::SeatTaken { seat, player } => {
                *at(&mut table.players, *seat)? = Some(*player)
            }
            TableEvent::SeatLeft { seat, .. } => *at(&mut table.players, *seat)? = None,
            TableEvent::SeedContributed { seat, .. } => *at(&mut table.contributed, *seat)? = true,
            TableEvent::Engine { event, command } => {
                if let (Some(command), Some(seat)) = (command, actor_of::<G>(event)) {
                    // A move of the player's own (ids with ':' are the service's).
                    if !command.command_id.contains(':') {
                        *at(&mut table.timeouts, seat)? = 0;
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
                *at(&mut table.timeouts, *seat)? = *consecutive;
            }
            TableEvent::SeatAbandoned { seat, .. } => *at(&mut table.abandoned, *seat)? = true,
            TableEvent::HandStarted {
                hand,
                dealer,
                client_seed,
                ..
            } => {
                table.client_seed = Some(client_seed.clone());
                table.pending = Some(PendingHand::new(&table.created, *hand, *dealer));
            }
            TableEvent::CardsDealt {
                hand,
                seat,
                position,
                cards,
            } => {
                if seat.index() >= table.seat_count() {
                    return Err(FoldError::NoSuchSeat { seat: *seat });
                }
                let pending = table
                    .pending
                    .as_mut()
                    .filter(|p| p.hand == *hand)
                    .ok_or(FoldError::CardsBeforeHand { hand: *hand })?;
                pending
                    .record(*position, cards)
                    .ok_or(FoldError::DealingPosition {
                        position: *position,
                    })?;
                table.deal_if_complete();
            }
            TableEvent::TalonDealt { hand, cards } => {
                let pending = table
                    .pending
                    .as_mut()
                    .filter(|p| p.hand == *hand)
                    .ok_or(FoldError::CardsBeforeHand { hand: *hand })?;
                pending.talon = Some(cards.clone());
                table.deal_if_complete();
            }
            TableEvent::GameFinished(finished) => table.finished = Some(finished.clone()),
            TableEvent::Expired { .. } => {
                table.expired = true;
                table.deadline = None;
            }
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

    /// Once the pending hand is whole, the game's deal event is put back together and
    /// folded in.
    fn deal_if_complete(&mut self) {
        if let Some(dealt) = self.pending.as_ref().and_then(PendingHand::complete) {
            self.pending = None;
            self.game.apply(&G::deal_event(dealt));
        }
    }

    /// The table's id.
    pub fn id(&self) -> Uuid {
        self.created.table_id
    }

    /// The number of seats.
    pub fn seat_count(&self) -> usize {
        self.created.layout.seats
    }

    /// The table's seats, clockwise from 0.
    pub fn seats(&self) -> impl Iterator<Item = Seat> + Clone + use<G> {
        Seat::all(self.seat_count())
    }

    /// The seat `player` holds.
    pub fn seat_of(&self, player: Uuid) -> Option<Seat> {
        self.seats()
            .find(|s| self.players.get(s.index()) == Some(&Some(player)))
    }

    /// How `player` sees the table.
    pub fn viewer(&self, player: Uuid) -> Viewer {
        self.seat_of(player).map_or(Viewer::Spectator, Viewer::Seat)
    }

    /// Whether the match has started.
    pub fn started(&self) -> bool {
        self.game.started()
    }

    /// Whether the table is done with play: its game finished, or it expired. Every event
    /// is public from then on ([`super::visible`]).
    pub fn over(&self) -> bool {
        self.finished.is_some() || self.expired
    }

    /// Whether the table's latest end has come by `now` (Unix ms): it has one, and `now` is
    /// at or past it.
    pub fn past_latest_end(&self, now: i64) -> bool {
        self.created.latest_end_ms.is_some_and(|end| now >= end)
    }

    /// When the service must next look at the table on its own, while play is not over:
    /// the deadline of the player to act, or else the latest end (a turn's deadline is never
    /// after it). `None`: only a command or an owed step moves it.
    pub fn wakes_at(&self) -> Option<i64> {
        if self.over() {
            return None;
        }
        self.deadline
            .map(|(_, deadline)| deadline)
            .or(self.created.latest_end_ms)
    }

    /// Open seats, ascending.
    pub fn open_seats(&self) -> Vec<Seat> {
        self.seats()
            .filter(|s| !self.is_bot(*s) && self.player_at(*s).is_none())
            .collect()
    }

    /// The player at `seat` (none for a bot seat, an open one or no such seat).
    pub fn player_at(&self, seat: Seat) -> Option<Uuid> {
        self.players.get(seat.index()).copied().flatten()
    }

    /// Whether the game's bot plays `seat` from the start.
    pub fn is_bot(&self, seat: Seat) -> bool {
        self.created
            .bots
            .get(seat.index())
            .copied()
            .unwrap_or(false)
    }

    /// Whether the service plays `seat` (a bot seat, or an abandoned one).
    pub fn plays_itself(&self, seat: Seat) -> bool {
        self.is_bot(seat) || self.abandoned.get(seat.index()).copied().unwrap_or(false)
    }
}

/// The seat whose command produced `event` (the events a command's id is kept on).
fn actor_of<G: TableGame>(event: &G::Event) -> Option<Seat> {
    match G::command_of(event) {
        Some((Actor::Seat(seat), _)) => Some(seat),
        _ => None,
    }
}

/// The game's log of a table's events: the game's own events, with each hand's
/// `HandStarted`, `CardsDealt` (and `TalonDealt`) put back together into the game's deal
/// event. What an auditor hands to [`TableGame::verify`] to re-decide every move.
pub fn engine_log<G: TableGame>(events: &[TableEvent<G>]) -> Vec<G::Event> {
    let mut log = Vec::new();
    let mut created: Option<&Created<G>> = None;
    let mut pending: Option<PendingHand<G::Card>> = None;
    for event in events {
        match event {
            TableEvent::Created(c) => created = Some(c),
            TableEvent::Engine { event, .. } => log.push(event.clone()),
            TableEvent::HandStarted { hand, dealer, .. } => {
                pending = created.map(|c| PendingHand::new(c, *hand, *dealer));
            }
            TableEvent::CardsDealt {
                position, cards, ..
            } => {
                if let Some(p) = pending.as_mut() {
                    p.record(*position, cards);
                }
            }
            TableEvent::TalonDealt { cards, .. } => {
                if let Some(p) = pending.as_mut() {
                    p.talon = Some(cards.clone());
                }
            }
            _ => {}
        }
        if let Some(dealt) = pending.as_ref().and_then(PendingHand::complete) {
            log.push(G::deal_event(dealt));
            pending = None;
        }
    }
    log
}
