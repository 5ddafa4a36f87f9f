//! The table: a stream `table-<uuid>` of [`TableEvent`]s folded into a [`Table`], with the
//! rules engine (`fairdeal_games::Game`) inside as the only rules authority.
//!
//! Pure: no IO, no clock. Every decision takes the state and returns the events to append
//! (or a [`TableError`]); nothing here mutates except [`Table::apply`]. What needs the
//! outside world (the commitment, a deal) is fetched by the service first and handed in.
//!
//! Visibility: every event is public except [`TableEvent::CardsDealt`], private to its seat
//! until the stream holds [`TableEvent::GameFinished`] ([`TableEvent::visible_to`]).
//!
//! Spectators: [`TableEvent::SpectatorJoined`] / [`TableEvent::SpectatorLeft`] record who
//! spectates (the chat channel's members); they change nothing a player decides on, so they
//! do not make a player's `expected_version` stale ([`Table::decided_at`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use fairdeal_games::{
    Actor, Bot, Card, Command, Event, Game, HeuristicBot, Phase, RuleError, Rules, Seat,
    TableOptions, Team,
};
use uuid::Uuid;

/// Seconds per move when the creator asks for none.
pub const DEFAULT_MOVE_SECONDS: u32 = 30;
/// Allowed seconds per move.
pub const MOVE_SECONDS: std::ops::RangeInclusive<u32> = 5..=600;
/// The dealer of hand 0 (the deal then passes clockwise): seat 0, so seat 1 bids first.
pub const FIRST_DEALER: Seat = Seat::ALL[0];
/// Longest command id.
pub const MAX_COMMAND_ID: usize = 64;
/// Consecutive timeouts after which a seat is abandoned to the bot.
pub const MAX_TIMEOUTS: u32 = 3;
/// Most users spectating one table at once.
pub const MAX_SPECTATORS: usize = 1_000;

/// A table's settings, as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The table.
    pub table_id: Uuid,
    /// Who created it.
    pub creator: Uuid,
    /// The variants (valid: [`Rules::new`] accepted them).
    pub options: TableOptions,
    /// Seats played by the engine's bot.
    pub bots: [bool; 4],
    /// Time per move, seconds.
    pub move_seconds: u32,
    /// The server seed's commitment.
    pub commitment: String,
    /// Its short code.
    pub short_code: String,
    /// The dealer of hand 0.
    pub first_dealer: Seat,
}

/// The command an event answers: its id, the version after everything it caused, and the
/// turn it leaves the table in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRef {
    /// The client-chosen id (`bot:<version>` for a bot's move).
    pub command_id: String,
    /// The stream version right after the command's events.
    pub version_after: u64,
    /// When after the command a player must act (not a bot or an abandoned seat, not a deal
    /// due): that seat and its deadline (Unix ms). The move carries the next turn's clock,
    /// as a Lichess move carries the clocks, instead of a `TurnClock` event after it.
    pub next_turn: Option<(Seat, i64)>,
}

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// Played to the end of the rules.
    Completed,
    /// Stopped before the end.
    Abandoned,
}

/// The summary of a finished game (what rating, chat and the ledger consume).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Players by seat (`None`: a bot).
    pub players: [Option<Uuid>; 4],
    /// Seats their player abandoned (the bot played them out).
    pub abandoned: [bool; 4],
    /// Final scores per team.
    pub scores: [i32; 2],
    /// The winning team.
    pub winner: Team,
    /// The variants played.
    pub options: TableOptions,
    /// Hands played to the end.
    pub hands_played: u32,
    /// Completed or abandoned.
    pub reason: FinishReason,
}

/// One event of a table's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableEvent {
    /// The table was created (version 1).
    Created(Created),
    /// A player sat.
    SeatTaken {
        /// The seat.
        seat: Seat,
        /// The player.
        player: Uuid,
    },
    /// A player left before the start.
    SeatLeft {
        /// The seat.
        seat: Seat,
        /// The player.
        player: Uuid,
    },
    /// A seated player contributed to the client seed.
    SeedContributed {
        /// The seat.
        seat: Seat,
        /// The player.
        player: Uuid,
        /// The contribution.
        contribution: String,
    },
    /// An engine event other than `hand_started` (which is split, below), with the
    /// command that caused it when it is the first event of a seat's command.
    Engine {
        /// The engine's event.
        event: Event,
        /// The command it answers.
        command: Option<CommandRef>,
    },
    /// A hand was dealt (public part).
    HandStarted {
        /// Hand number (the salt).
        hand: u32,
        /// Its dealer.
        dealer: Seat,
        /// The commitment the deal used.
        commitment: String,
        /// The client seed the deal used.
        client_seed: String,
    },
    /// One seat's cards of a hand (private to that seat).
    CardsDealt {
        /// Hand number.
        hand: u32,
        /// The seat.
        seat: Seat,
        /// Position in the dealing order (0: the dealer's left).
        position: u8,
        /// The cards, as dealt.
        cards: Vec<Card>,
    },
    /// The game is over.
    GameFinished(Finished),
    /// The seat to act must act by `deadline_ms` (Unix milliseconds).
    TurnClock {
        /// The seat to act.
        seat: Seat,
        /// The deadline.
        deadline_ms: i64,
    },
    /// The seat let its deadline pass (the bot's move for it follows).
    TurnTimedOut {
        /// The seat.
        seat: Seat,
        /// Consecutive timeouts, this one included.
        consecutive: u32,
    },
    /// The seat timed out [`MAX_TIMEOUTS`] times in a row: the bot plays it from now on.
    SeatAbandoned {
        /// The seat.
        seat: Seat,
        /// Its player.
        player: Uuid,
    },
    /// The server seed was revealed.
    SeedRevealed {
        /// The commitment.
        commitment: String,
        /// The server seed.
        server_seed: String,
        /// The client seed.
        client_seed: String,
    },
    /// A user who holds no seat joined as a spectator.
    SpectatorJoined {
        /// The spectator.
        user: Uuid,
    },
    /// A spectator left (or sat down).
    SpectatorLeft {
        /// The spectator.
        user: Uuid,
    },
}

/// Who must act next on a table, as an event leaves it ([`TableEvent::due`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// A player, by this deadline (Unix ms); past it the service plays for the seat.
    Player(i64),
    /// The service, at once: a step it owes (a deal, a bot's move, the reveal).
    Service,
    /// Nobody: the game is over and its seed revealed.
    Nobody,
}

/// Who looks at a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    /// A player at this seat.
    Seat(Seat),
    /// Anyone else.
    Spectator,
}

impl TableEvent {
    /// Whether `viewer` may see this event, `finished` saying whether the stream holds
    /// `GameFinished` (then everything is public).
    pub fn visible_to(&self, viewer: Viewer, finished: bool) -> bool {
        match self {
            TableEvent::CardsDealt { seat, .. } => finished || viewer == Viewer::Seat(*seat),
            _ => true,
        }
    }

    /// What this event says about when the table next needs someone to act: a player's
    /// turn deadline; the service itself, at once (no player is to act: a deal, a bot's or
    /// an abandoned seat's move, or the reveal is owed); or nobody (the seed is revealed:
    /// the table is done). `None`: it changes nothing of that.
    pub fn due(&self) -> Option<Due> {
        match self {
            TableEvent::TurnClock { deadline_ms, .. } => Some(Due::Player(*deadline_ms)),
            TableEvent::Engine {
                command: Some(command),
                ..
            } => Some(match command.next_turn {
                Some((_, deadline_ms)) => Due::Player(deadline_ms),
                None => Due::Service,
            }),
            TableEvent::Engine {
                event: Event::MatchStarted { .. },
                command: None,
            }
            | TableEvent::GameFinished(_) => Some(Due::Service),
            TableEvent::SeedRevealed { .. } => Some(Due::Nobody),
            _ => None,
        }
    }

    /// The turn deadline (seat, Unix ms) this event records: a `TurnClock`'s, or the next
    /// turn a seat's command leaves.
    pub fn turn_clock(&self) -> Option<(Seat, i64)> {
        match self {
            TableEvent::TurnClock { seat, deadline_ms } => Some((*seat, *deadline_ms)),
            TableEvent::Engine {
                command: Some(command),
                ..
            } => command.next_turn,
            _ => None,
        }
    }
}

/// Why a request is refused. Every refusal changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// A request field is malformed (names it).
    #[error("{field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// No such table.
    #[error("table not found")]
    NotFound,
    /// The table exists already (a repeated create).
    #[error("the table exists already")]
    Exists,
    /// The caller holds no seat at this table.
    #[error("you are not seated at this table")]
    NotSeated,
    /// The seat is taken by another player.
    #[error("{0} is taken")]
    SeatTaken(Seat),
    /// The seat is held by a bot (taken, as tables.proto says: ALREADY_EXISTS).
    #[error("{0} is taken by a bot")]
    BotSeat(Seat),
    /// The caller sits at another seat of this table.
    #[error("you already sit at {0}")]
    AlreadySeated(Seat),
    /// The match has started: seats are fixed.
    #[error("the match has started: seats are fixed")]
    Started,
    /// The first hand has been dealt: the client seed is fixed.
    #[error("the first hand has been dealt: the client seed is fixed")]
    SeedFixed,
    /// The seat contributed already.
    #[error("{0} has already contributed a seed")]
    AlreadyContributed(Seat),
    /// A seated player cannot spectate their own table.
    #[error("you sit at {0} of this table: players do not spectate it")]
    SeatedSpectator(Seat),
    /// The table has as many spectators as it takes.
    #[error("the table has {MAX_SPECTATORS} spectators already")]
    SpectatorsFull,
    /// The client's version is not the table's.
    #[error("expected_version {expected} is stale: the table is at version {current}")]
    Stale {
        /// What the client sent.
        expected: u64,
        /// The table's version.
        current: u64,
    },
    /// The rules engine refused the move (names the rule).
    #[error("{0}")]
    Rule(#[from] RuleError),
}

/// A hand being recorded: `HandStarted` seen, some `CardsDealt` still to come.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PendingHand {
    /// Hand number.
    hand: u32,
    /// Its dealer.
    dealer: Seat,
    /// Cards by dealing position.
    hands: [Option<Vec<Card>>; 4],
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
    pending: Option<PendingHand>,
    /// The client seed, once the first hand is dealt.
    pub client_seed: Option<String>,
    /// Accepted commands: (seat, command id) -> version after them. Shared, so cloning a
    /// table (a snapshot handed out, a preview of events) does not copy the whole match's
    /// commands; the fold copies it only while a clone still holds it.
    commands: Arc<HashMap<(Seat, String), u64>>,
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

/// What the table needs next from the service (not from a player).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Deal hand `hand` (dealing service).
    Deal {
        /// The hand (its salt).
        hand: u32,
    },
    /// The bot at this seat plays.
    Bot(Seat),
    /// The player at this seat let the deadline pass: the bot plays for it.
    Timeout(Seat),
    /// Reveal the server seed (commitment service).
    Reveal,
    /// Nothing: a player must act, seats are open, or all is done.
    Wait,
}

/// A deal as the dealing service returned it, parsed.
#[derive(Debug, Clone)]
pub struct DealtHand {
    /// The hand number.
    pub hand: u32,
    /// Hands in dealing order (0: dealer's left).
    pub hands: Vec<Vec<Card>>,
    /// The commitment it used.
    pub commitment: String,
    /// The client seed it used.
    pub client_seed: String,
}

/// A decision's events and the version they lead to.
#[derive(Debug, PartialEq, Eq)]
pub struct Decided {
    /// Events to append (none: nothing changes).
    pub events: Vec<TableEvent>,
    /// The version after them (or the first answer of a repeated command).
    pub version: u64,
}

impl Decided {
    fn nothing(version: u64) -> Self {
        Decided {
            events: Vec::new(),
            version,
        }
    }
}

/// Parses the fields of a new table. `bot_seats` are seat numbers; `move_seconds` 0 means
/// the default.
pub fn parse_setup(
    options: TableOptions,
    bot_seats: &[u32],
    move_seconds: u32,
) -> Result<(TableOptions, [bool; 4], u32), TableError> {
    Rules::new(&options).map_err(|e| TableError::Invalid {
        field: "options",
        reason: e.to_string(),
    })?;
    let mut bots = [false; 4];
    for &n in bot_seats {
        let seat = seat_number("bot_seats", n)?;
        if std::mem::replace(&mut bots[seat.index()], true) {
            return Err(TableError::Invalid {
                field: "bot_seats",
                reason: format!("seat {n} is listed twice"),
            });
        }
    }
    if bots.iter().all(|b| *b) {
        return Err(TableError::Invalid {
            field: "bot_seats",
            reason: "at most 3 seats can be bots (a table needs a player)".into(),
        });
    }
    let move_seconds = match move_seconds {
        0 => DEFAULT_MOVE_SECONDS,
        n if MOVE_SECONDS.contains(&n) => n,
        n => {
            return Err(TableError::Invalid {
                field: "move_seconds",
                reason: format!(
                    "{n} is out of range ({}..={})",
                    MOVE_SECONDS.start(),
                    MOVE_SECONDS.end()
                ),
            });
        }
    };
    Ok((options, bots, move_seconds))
}

/// The seat numbered `n`, or INVALID_ARGUMENT on `field`.
pub fn seat_number(field: &'static str, n: u32) -> Result<Seat, TableError> {
    u8::try_from(n)
        .ok()
        .and_then(Seat::new)
        .ok_or_else(|| TableError::Invalid {
            field,
            reason: format!("seat {n} does not exist (seats are 0..3)"),
        })
}

/// Checks a client-chosen command id (never with ':', which the service's own ids have).
pub fn parse_command_id(id: &str) -> Result<String, TableError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_COMMAND_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(id.to_owned())
    } else {
        Err(TableError::Invalid {
            field: "command_id",
            reason: format!(
                "1..={MAX_COMMAND_ID} characters of A-Z a-z 0-9 - _ . are required, got \"{}\"",
                fairdeal_text::shown(id)
            ),
        })
    }
}

/// The first event of a stream.
pub fn create(created: Created) -> Vec<TableEvent> {
    vec![TableEvent::Created(created)]
}

impl Table {
    /// Folds `event` into `state` (`None`: the empty stream); the error says why the event
    /// cannot follow.
    pub fn apply(state: Option<Table>, event: &TableEvent) -> Result<Table, String> {
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
            (None, _) => return Err("a table stream must begin with TableCreated".into()),
            (Some(_), TableEvent::Created(_)) => return Err("TableCreated twice".into()),
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
                    .ok_or_else(|| format!("cards of hand {hand} without its HandStarted"))?;
                let slot = pending
                    .hands
                    .get_mut(usize::from(*position))
                    .ok_or_else(|| format!("dealing position {position} out of range"))?;
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

    /// `player` sits at `seat`; the fourth seat filled starts the match.
    pub fn sit(&self, player: Uuid, seat: Seat) -> Result<Decided, TableError> {
        if self.players[seat.index()] == Some(player) {
            return Ok(Decided::nothing(self.version));
        }
        if self.started() {
            return Err(TableError::Started);
        }
        if let Some(mine) = self.seat_of(player) {
            return Err(TableError::AlreadySeated(mine));
        }
        if self.created.bots[seat.index()] {
            return Err(TableError::BotSeat(seat));
        }
        if self.players[seat.index()].is_some() {
            return Err(TableError::SeatTaken(seat));
        }
        let mut events = Vec::new();
        // Sitting down ends spectating.
        if self.spectators.contains(&player) {
            events.push(TableEvent::SpectatorLeft { user: player });
        }
        events.push(TableEvent::SeatTaken { seat, player });
        let mut players = self.players;
        players[seat.index()] = Some(player);
        let full = Seat::ALL
            .iter()
            .all(|s| self.created.bots[s.index()] || players[s.index()].is_some());
        if full {
            let start = Command::StartMatch {
                options: self.created.options.clone(),
                first_dealer: self.created.first_dealer,
            };
            for event in self.game.decide(Actor::Table, &start)? {
                events.push(TableEvent::Engine {
                    event,
                    command: None,
                });
            }
        }
        Ok(self.decided(events))
    }

    /// `player` leaves before the start.
    pub fn leave(&self, player: Uuid) -> Result<Decided, TableError> {
        let seat = self.seat_of(player).ok_or(TableError::NotSeated)?;
        if self.started() {
            return Err(TableError::Started);
        }
        Ok(self.decided(vec![TableEvent::SeatLeft { seat, player }]))
    }

    /// `user` spectates the table (once: again appends nothing); refused for a seated
    /// player.
    pub fn spectate(&self, user: Uuid) -> Result<Decided, TableError> {
        if let Some(seat) = self.seat_of(user) {
            return Err(TableError::SeatedSpectator(seat));
        }
        if self.spectators.contains(&user) {
            return Ok(Decided::nothing(self.version));
        }
        if self.spectators.len() >= MAX_SPECTATORS {
            return Err(TableError::SpectatorsFull);
        }
        Ok(self.decided(vec![TableEvent::SpectatorJoined { user }]))
    }

    /// `user` stops spectating (not spectating: nothing).
    pub fn stop_spectating(&self, user: Uuid) -> Decided {
        if self.spectators.contains(&user) {
            self.decided(vec![TableEvent::SpectatorLeft { user }])
        } else {
            Decided::nothing(self.version)
        }
    }

    /// Whether `player` may contribute a seed now; their seat.
    pub fn may_contribute(&self, player: Uuid) -> Result<Seat, TableError> {
        let seat = self.seat_of(player).ok_or(TableError::NotSeated)?;
        if self.client_seed.is_some() || self.game.next_hand_number() > 0 {
            return Err(TableError::SeedFixed);
        }
        if self.contributed[seat.index()] {
            return Err(TableError::AlreadyContributed(seat));
        }
        Ok(seat)
    }

    /// Records a contribution the commitment service accepted.
    pub fn contribute(&self, player: Uuid, contribution: String) -> Result<Decided, TableError> {
        let seat = self.may_contribute(player)?;
        Ok(self.decided(vec![TableEvent::SeedContributed {
            seat,
            player,
            contribution,
        }]))
    }

    /// A player's move at time `now` (Unix ms), with the retry contract: a known command id
    /// returns its first answer; a stale version (older than the last event a player
    /// decides on, spectators aside) is refused; then the engine decides.
    pub fn act(
        &self,
        player: Uuid,
        expected_version: u64,
        command_id: &str,
        command: &Command,
        now: i64,
    ) -> Result<Decided, TableError> {
        let seat = self.seat_of(player).ok_or(TableError::NotSeated)?;
        if let Some(version) = self.commands.get(&(seat, command_id.to_owned())) {
            return Ok(Decided::nothing(*version));
        }
        if expected_version < self.decided_at || expected_version > self.version {
            return Err(TableError::Stale {
                expected: expected_version,
                current: self.version,
            });
        }
        self.seat_command(Vec::new(), seat, command_id, command, now)
    }

    /// `prefix`, then the command of `seat` through the engine (its first event carries the
    /// command), the `GameFinished` it may cause, and the next turn's clock.
    fn seat_command(
        &self,
        prefix: Vec<TableEvent>,
        seat: Seat,
        command_id: &str,
        command: &Command,
        now: i64,
    ) -> Result<Decided, TableError> {
        let produced = self.game.decide(Actor::Seat(seat), command)?;
        let first = prefix.len();
        let mut events = prefix;
        events.extend(produced.into_iter().map(|event| TableEvent::Engine {
            event,
            command: None,
        }));
        if let Some(finished) = self.finish(&events) {
            events.push(TableEvent::GameFinished(finished));
        }
        let next_turn = self.next_turn(&events, now);
        let version_after = self.version + events.len() as u64;
        match events.get_mut(first) {
            Some(TableEvent::Engine { command: slot, .. }) => {
                *slot = Some(CommandRef {
                    command_id: command_id.to_owned(),
                    version_after,
                    next_turn,
                });
                Ok(self.decided(events))
            }
            // The engine answered with no event: nothing to record the command on.
            _ => {
                if let Some((seat, deadline_ms)) = next_turn {
                    events.push(TableEvent::TurnClock { seat, deadline_ms });
                }
                Ok(self.decided(events))
            }
        }
    }

    /// `events`, then a `TurnClock` when after them a player (not the service) must act
    /// (after a deal: a seat's command carries the clock in its [`CommandRef`] instead).
    fn clocked(&self, mut events: Vec<TableEvent>, now: i64) -> Vec<TableEvent> {
        if let Some((seat, deadline_ms)) = self.next_turn(&events, now) {
            events.push(TableEvent::TurnClock { seat, deadline_ms });
        }
        events
    }

    /// The seat a player must act at after `events` and its deadline from `now`; `None`
    /// when the service acts next (a deal, a bot's move, the reveal) or the game is over.
    fn next_turn(&self, events: &[TableEvent], now: i64) -> Option<(Seat, i64)> {
        let mut after = self.clone();
        // What follows needs no command ids: folding into a shared map would copy it.
        after.commands = Arc::default();
        for e in events {
            // Not foldable: the append's own fold reports it.
            after = Table::apply(Some(after), e).ok()?;
        }
        let seat = after.game.turn()?;
        (after.finished.is_none() && !after.plays_itself(seat)).then(|| {
            (
                seat,
                now.saturating_add(i64::from(self.created.move_seconds) * 1000),
            )
        })
    }

    /// The `GameFinished` that follows `events` when they end the match.
    fn finish(&self, events: &[TableEvent]) -> Option<Finished> {
        let (team, scores) = events.iter().find_map(|e| match e {
            TableEvent::Engine {
                event: Event::MatchWon { team, scores, .. },
                ..
            } => Some((*team, *scores)),
            _ => None,
        })?;
        let mut game = self.game.clone();
        let mut seats_abandoned = self.abandoned;
        for e in events {
            match e {
                TableEvent::Engine { event, .. } => game.apply(event),
                TableEvent::SeatAbandoned { seat, .. } => seats_abandoned[seat.index()] = true,
                _ => {}
            }
        }
        let abandoned = seats_abandoned.iter().any(|a| *a);
        Some(Finished {
            players: self.players,
            abandoned: seats_abandoned,
            scores,
            winner: team,
            options: self.created.options.clone(),
            hands_played: game.next_hand_number(),
            reason: if abandoned {
                FinishReason::Abandoned
            } else {
                FinishReason::Completed
            },
        })
    }

    /// Whether the service plays `seat` (a bot seat, or an abandoned one).
    pub fn plays_itself(&self, seat: Seat) -> bool {
        self.created.bots[seat.index()] || self.abandoned[seat.index()]
    }

    /// What the table needs next from the service at time `now` (Unix ms).
    pub fn next(&self, now: i64) -> Next {
        if self.finished.is_some() {
            return if self.server_seed.is_none() {
                Next::Reveal
            } else {
                Next::Wait
            };
        }
        match self.game.phase() {
            Phase::AwaitingDeal if self.pending.is_none() => Next::Deal {
                hand: self.game.next_hand_number(),
            },
            Phase::Auction | Phase::NamingTrump | Phase::Playing => match self.game.turn() {
                Some(seat) if self.plays_itself(seat) => Next::Bot(seat),
                Some(seat) => match self.deadline {
                    Some((s, deadline)) if s == seat && now >= deadline => Next::Timeout(seat),
                    _ => Next::Wait,
                },
                None => Next::Wait,
            },
            _ => Next::Wait,
        }
    }

    /// Records hand `dealt` at time `now` when the table is still waiting for it (else
    /// nothing: it was dealt meanwhile).
    pub fn deal(&self, dealt: &DealtHand, now: i64) -> Result<Decided, TableError> {
        if self.next(now) != (Next::Deal { hand: dealt.hand }) {
            return Ok(Decided::nothing(self.version));
        }
        let command = Command::StartHand {
            hands: dealt.hands.clone(),
        };
        let mut events = Vec::new();
        for event in self.game.decide(Actor::Table, &command)? {
            let Event::HandStarted {
                hand,
                dealer,
                hands,
            } = event
            else {
                return Err(TableError::Rule(RuleError::WrongPhase {
                    command: "start_hand",
                    phase: self.game.phase(),
                }));
            };
            events.push(TableEvent::HandStarted {
                hand,
                dealer,
                commitment: dealt.commitment.clone(),
                client_seed: dealt.client_seed.clone(),
            });
            for (position, cards) in hands.into_iter().enumerate() {
                let seat = dealer.offset(position + 1);
                events.push(TableEvent::CardsDealt {
                    hand,
                    seat,
                    position: u8::try_from(position).unwrap_or(u8::MAX),
                    cards,
                });
            }
        }
        Ok(self.decided(self.clocked(events, now)))
    }

    /// The bot's move at `seat` (a bot seat or an abandoned one), when it is still its turn.
    /// The bot sees only the seat's view; its decision is a pure function of the table id
    /// and the view.
    pub fn bot_move(&self, seat: Seat, now: i64) -> Result<Decided, TableError> {
        if self.next(now) != Next::Bot(seat) {
            return Ok(Decided::nothing(self.version));
        }
        self.play_for(Vec::new(), seat, &format!("bot:{}", self.version), now)
    }

    /// The player at `seat` let the deadline pass by `now`: record the timeout (and the
    /// abandonment at the [`MAX_TIMEOUTS`]th in a row), then the bot plays for the seat.
    pub fn time_out(&self, seat: Seat, now: i64) -> Result<Decided, TableError> {
        if self.next(now) != Next::Timeout(seat) {
            return Ok(Decided::nothing(self.version));
        }
        let consecutive = self.timeouts[seat.index()].saturating_add(1);
        let mut prefix = vec![TableEvent::TurnTimedOut { seat, consecutive }];
        if consecutive >= MAX_TIMEOUTS
            && let Some(player) = self.players[seat.index()]
        {
            prefix.push(TableEvent::SeatAbandoned { seat, player });
        }
        self.play_for(prefix, seat, &format!("timeout:{}", self.version), now)
    }

    /// The engine's bot's move for `seat`, after `prefix`.
    fn play_for(
        &self,
        prefix: Vec<TableEvent>,
        seat: Seat,
        command_id: &str,
        now: i64,
    ) -> Result<Decided, TableError> {
        let bot = HeuristicBot::new(bot_seed(self.id()));
        let Some(command) = bot.choose(&self.game.seat_view(seat)) else {
            return Ok(Decided::nothing(self.version));
        };
        self.seat_command(prefix, seat, command_id, &command, now)
    }

    /// Records the revealed seed (once).
    pub fn reveal(&self, server_seed: String) -> Decided {
        if self.server_seed.is_some() || self.finished.is_none() {
            return Decided::nothing(self.version);
        }
        self.decided(vec![TableEvent::SeedRevealed {
            commitment: self.created.commitment.clone(),
            server_seed,
            client_seed: self.client_seed.clone().unwrap_or_default(),
        }])
    }

    fn decided(&self, events: Vec<TableEvent>) -> Decided {
        Decided {
            version: self.version + events.len() as u64,
            events,
        }
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

/// The bots' seed at a table: from its id, so a replay chooses the same moves.
pub fn bot_seed(table_id: Uuid) -> u64 {
    let (high, low) = table_id.as_u64_pair();
    high ^ low
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use fairdeal_fairness::Deck;
    use fairdeal_fairness::deal::Deal;

    fn table(bots: [bool; 4]) -> Table {
        let created = Created {
            table_id: Uuid::now_v7(),
            creator: Uuid::now_v7(),
            options: TableOptions::default(),
            bots,
            move_seconds: 30,
            commitment: "c".repeat(64),
            short_code: "ccccc".into(),
            first_dealer: FIRST_DEALER,
        };
        fold(None, &create(created))
    }

    fn fold(state: Option<Table>, events: &[TableEvent]) -> Table {
        let mut state = state;
        for e in events {
            state = Some(Table::apply(state, e).unwrap());
        }
        state.unwrap()
    }

    fn dealt(hand: u32) -> DealtHand {
        let deal = Deal::from_seeds(Deck::Dix, "server", "client", &hand.to_string());
        let Command::StartHand { hands } = Command::start_hand(&deal).unwrap() else {
            unreachable!()
        };
        DealtHand {
            hand,
            hands,
            commitment: "c".into(),
            client_seed: "client".into(),
        }
    }

    #[test]
    fn fourth_seat_starts_the_match_and_the_deal_is_private_per_seat() {
        let mut t = table([false, true, false, true]);
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let events = t.sit(a, Seat::ALL[0]).unwrap().events;
        t = fold(Some(t), &events);
        assert_eq!(
            t.sit(b, Seat::ALL[1]),
            Err(TableError::BotSeat(Seat::ALL[1]))
        );
        assert_eq!(
            t.sit(b, Seat::ALL[0]),
            Err(TableError::SeatTaken(Seat::ALL[0]))
        );
        let d = t.sit(b, Seat::ALL[2]).unwrap();
        assert_eq!(d.events.len(), 2, "seat taken + match started");
        t = fold(Some(t), &d.events);
        assert!(t.started());
        assert_eq!(t.next(0), Next::Deal { hand: 0 });
        let d = t.deal(&dealt(0), 0).unwrap();
        assert_eq!(d.events.len(), 5);
        for e in &d.events {
            if let TableEvent::CardsDealt { seat, .. } = e {
                assert!(e.visible_to(Viewer::Seat(*seat), false));
                assert!(!e.visible_to(Viewer::Seat(seat.next()), false));
                assert!(!e.visible_to(Viewer::Spectator, false));
                assert!(e.visible_to(Viewer::Spectator, true));
            }
        }
        t = fold(Some(t), &d.events);
        assert_eq!(t.game.phase(), Phase::Auction);
        assert_eq!(t.game.hand_of(Seat::ALL[0]).len(), 10);
        // Seat 1 (a bot) bids first: the dealer is seat 0.
        assert_eq!(t.next(0), Next::Bot(Seat::ALL[1]));
    }

    #[test]
    fn retry_stale_and_not_seated() {
        let mut t = table([false, true, true, true]);
        let a = Uuid::now_v7();
        let events = t.sit(a, Seat::ALL[0]).unwrap().events;
        t = fold(Some(t), &events);
        let events = t.deal(&dealt(0), 0).unwrap().events;
        t = fold(Some(t), &events);
        // Bots play until seat 0's turn.
        while let Next::Bot(seat) = t.next(0) {
            let events = t.bot_move(seat, 0).unwrap().events;
            t = fold(Some(t), &events);
        }
        assert_eq!(t.game.turn(), Some(Seat::ALL[0]));
        let legal = t.game.legal_commands(Seat::ALL[0]);
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
        let events = t.sit(a, Seat::ALL[0]).unwrap().events;
        t = fold(Some(t), &events);
        let mut now = 1_000_000;
        let events = t.deal(&dealt(0), now).unwrap().events;
        t = fold(Some(t), &events);
        let me = Seat::ALL[0];
        for round in 1..=MAX_TIMEOUTS {
            while let Next::Bot(seat) = t.next(now) {
                let events = t.bot_move(seat, now).unwrap().events;
                t = fold(Some(t), &events);
            }
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
        let events = t.sit(a, Seat::ALL[0]).unwrap().events;
        t = fold(Some(t), &events);
        assert_eq!(
            t.spectate(a),
            Err(TableError::SeatedSpectator(Seat::ALL[0]))
        );
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
        let d = t.sit(watcher, Seat::ALL[3]).unwrap();
        assert_eq!(d.events[0], TableEvent::SpectatorLeft { user: watcher });
        assert_eq!(
            d.events[1],
            TableEvent::SeatTaken {
                seat: Seat::ALL[3],
                player: watcher
            }
        );
        t = fold(Some(t), &d.events);
        assert!(t.spectators.is_empty() && t.started());
        let events = t.deal(&dealt(0), 0).unwrap().events;
        t = fold(Some(t), &events);
        while let Next::Bot(seat) = t.next(0) {
            let events = t.bot_move(seat, 0).unwrap().events;
            t = fold(Some(t), &events);
        }
        // A spectator arriving between a player's read and their move: still their move.
        let seat = t.game.turn().unwrap();
        let player = t.players[seat.index()].unwrap();
        let seen = t.version;
        let other = Uuid::now_v7();
        let events = t.spectate(other).unwrap().events;
        t = fold(Some(t), &events);
        assert_eq!(t.version, seen + 1);
        let legal = t.game.legal_commands(seat);
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
        let o = TableOptions::default;
        assert!(parse_setup(o(), &[0, 1, 2, 3], 0).is_err());
        assert!(parse_setup(o(), &[1, 1], 0).is_err());
        assert!(parse_setup(o(), &[4], 0).is_err());
        assert!(parse_setup(o(), &[], 4).is_err());
        assert!(parse_setup(o(), &[], 601).is_err());
        assert_eq!(
            parse_setup(o(), &[1, 3], 0).unwrap().2,
            DEFAULT_MOVE_SECONDS
        );
        assert!(parse_command_id("").is_err());
        assert!(parse_command_id(&"a".repeat(65)).is_err());
        assert!(parse_command_id("a b").is_err());
        assert!(parse_command_id("0b7c-1.x_z").is_ok());
        assert!(parse_command_id("bot:1").is_err(), "the service's ids");
    }
}
