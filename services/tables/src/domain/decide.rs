//! The decisions: each takes the table and returns the events to append ([`Decided`]) or a
//! [`TableError`]; what the table needs next from the service ([`Table::next`]); and the
//! parsing of a new table's fields.

use std::sync::Arc;

use fairdeal_table_game::{Actor, Deal, Layout, Seat, TableGame};
use uuid::Uuid;

use super::event::{CommandRef, Created, FinishReason, Finished, TableEvent};
use super::{
    DEFAULT_MOVE_SECONDS, MAX_COMMAND_ID, MAX_SPECTATORS, MAX_TIMEOUTS, MOVE_SECONDS, Table,
    TableError,
};

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
    /// Record the end of a match that ended without a player's command (a deal that ends
    /// it, as French Tarot's petit sec in the last deal annuls it and ends the match).
    Finish,
    /// End the table: its latest end has come before its game finished.
    Expire,
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
    /// The deal (its hands in dealing order, 0: dealer's left, and its talon).
    pub deal: Deal,
    /// The commitment it used.
    pub commitment: String,
    /// The client seed it used.
    pub client_seed: String,
}

/// A decision's events and the version they lead to.
#[derive(Debug, PartialEq, Eq)]
pub struct Decided<G: TableGame> {
    /// Events to append (none: nothing changes).
    pub events: Vec<TableEvent<G>>,
    /// The version after them (or the first answer of a repeated command).
    pub version: u64,
}

/// A decision of a table of `G`: its events, or why not.
pub type Decision<G> = Result<Decided<G>, TableError<<G as TableGame>::Error>>;

impl<G: TableGame> Decided<G> {
    fn nothing(version: u64) -> Self {
        Decided {
            events: Vec::new(),
            version,
        }
    }
}

/// A new table's fields, parsed ([`parse_setup`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup<G: TableGame> {
    /// The game's options.
    pub options: G::Options,
    /// The seats and deck they need.
    pub layout: Layout,
    /// The bot seats, one entry per seat.
    pub bots: Vec<bool>,
    /// Time per move, seconds.
    pub move_seconds: u32,
}

/// Parses the fields of a new table. `bot_seats` are seat numbers; `move_seconds` 0 means
/// the default.
pub fn parse_setup<G: TableGame>(
    options: G::Options,
    bot_seats: &[u32],
    move_seconds: u32,
) -> Result<Setup<G>, TableError<G::Error>> {
    let layout = G::layout(&options).map_err(|e| TableError::Invalid {
        field: "options",
        reason: e.to_string(),
    })?;
    let mut bots = vec![false; layout.seats];
    for &n in bot_seats {
        let seat = seat_number("bot_seats", n, layout.seats)?;
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
            reason: format!(
                "at most {} seats can be bots (a table needs a player)",
                layout.seats - 1
            ),
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
    Ok(Setup {
        options,
        layout,
        bots,
        move_seconds,
    })
}

/// The seat numbered `n` at a table of `seats` seats, or INVALID_ARGUMENT on `field`.
pub fn seat_number<E>(field: &'static str, n: u32, seats: usize) -> Result<Seat, TableError<E>> {
    Seat::at(n, seats).ok_or_else(|| TableError::Invalid {
        field,
        reason: format!(
            "seat {n} does not exist (seats are 0..{})",
            seats.saturating_sub(1)
        ),
    })
}

/// Checks a client-chosen command id (never with ':', which the service's own ids have).
pub fn parse_command_id<E>(id: &str) -> Result<String, TableError<E>> {
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
pub fn create<G: TableGame>(created: Created<G>) -> Vec<TableEvent<G>> {
    vec![TableEvent::Created(created)]
}

impl<G: TableGame> Table<G> {
    /// Refuses a player's command once the table has expired, or its latest end has come
    /// by `now` (the `TableExpired` the service appends then may not be in yet).
    fn playing_at(&self, now: i64) -> Result<(), TableError<G::Error>> {
        if self.finished.is_none() && (self.expired || self.past_latest_end(now)) {
            return Err(TableError::Expired);
        }
        Ok(())
    }

    /// `player` sits at `seat` at time `now` (Unix ms); the last seat filled starts the
    /// match.
    pub fn sit(&self, player: Uuid, seat: Seat, now: i64) -> Decision<G> {
        seat_number("seat", u32::from(seat.number()), self.seat_count())?;
        if self.player_at(seat) == Some(player) {
            return Ok(Decided::nothing(self.version));
        }
        self.playing_at(now)?;
        if self.started() {
            return Err(TableError::Started);
        }
        if let Some(mine) = self.seat_of(player) {
            return Err(TableError::AlreadySeated(mine));
        }
        if self.is_bot(seat) {
            return Err(TableError::BotSeat(seat));
        }
        if self.player_at(seat).is_some() {
            return Err(TableError::SeatTaken(seat));
        }
        let mut events = Vec::new();
        // Sitting down ends spectating.
        if self.spectators.contains(&player) {
            events.push(TableEvent::SpectatorLeft { user: player });
        }
        events.push(TableEvent::SeatTaken { seat, player });
        let full = self
            .seats()
            .all(|s| s == seat || self.is_bot(s) || self.player_at(s).is_some());
        if full {
            let start = G::start(&self.created.options, self.created.first_dealer);
            let started = self
                .game
                .decide(Actor::Table, &start)
                .map_err(TableError::Rule)?;
            for event in started {
                events.push(TableEvent::Engine {
                    event,
                    command: None,
                });
            }
        }
        Ok(self.decided(events))
    }

    /// `player` leaves before the start.
    pub fn leave(&self, player: Uuid) -> Decision<G> {
        let seat = self.seat_of(player).ok_or(TableError::NotSeated)?;
        if self.started() {
            return Err(TableError::Started);
        }
        Ok(self.decided(vec![TableEvent::SeatLeft { seat, player }]))
    }

    /// `user` spectates the table (once: again appends nothing); refused for a seated
    /// player.
    pub fn spectate(&self, user: Uuid) -> Decision<G> {
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
    pub fn stop_spectating(&self, user: Uuid) -> Decided<G> {
        if self.spectators.contains(&user) {
            self.decided(vec![TableEvent::SpectatorLeft { user }])
        } else {
            Decided::nothing(self.version)
        }
    }

    /// Whether `player` may contribute a seed at time `now` (Unix ms); their seat.
    pub fn may_contribute(&self, player: Uuid, now: i64) -> Result<Seat, TableError<G::Error>> {
        let seat = self.seat_of(player).ok_or(TableError::NotSeated)?;
        self.playing_at(now)?;
        if self.client_seed.is_some() || self.game.hands_dealt() > 0 {
            return Err(TableError::SeedFixed);
        }
        if self.contributed.get(seat.index()).copied().unwrap_or(false) {
            return Err(TableError::AlreadyContributed(seat));
        }
        Ok(seat)
    }

    /// Records a contribution the commitment service accepted, at time `now` (Unix ms).
    pub fn contribute(&self, player: Uuid, contribution: String, now: i64) -> Decision<G> {
        let seat = self.may_contribute(player, now)?;
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
        command: &G::Command,
        now: i64,
    ) -> Decision<G> {
        let seat = self.seat_of(player).ok_or(TableError::NotSeated)?;
        if let Some(version) = self.commands.get(&(seat, command_id.to_owned())) {
            return Ok(Decided::nothing(*version));
        }
        self.playing_at(now)?;
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
        prefix: Vec<TableEvent<G>>,
        seat: Seat,
        command_id: &str,
        command: &G::Command,
        now: i64,
    ) -> Decision<G> {
        let produced = self
            .game
            .decide(Actor::Seat(seat), command)
            .map_err(TableError::Rule)?;
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
    fn clocked(&self, mut events: Vec<TableEvent<G>>, now: i64) -> Vec<TableEvent<G>> {
        if let Some((seat, deadline_ms)) = self.next_turn(&events, now) {
            events.push(TableEvent::TurnClock { seat, deadline_ms });
        }
        events
    }

    /// The seat a player must act at after `events` and its deadline from `now`; `None`
    /// when the service acts next (a deal, a bot's move, the reveal) or the game is over.
    fn next_turn(&self, events: &[TableEvent<G>], now: i64) -> Option<(Seat, i64)> {
        let mut after = self.clone();
        // What follows needs no command ids: folding into a shared map would copy it.
        after.commands = Arc::default();
        for e in events {
            // Not foldable: the append's own fold reports it.
            after = Table::apply(Some(after), e).ok()?;
        }
        let seat = after.game.turn()?;
        (after.finished.is_none() && !after.plays_itself(seat)).then(|| {
            let deadline = now.saturating_add(i64::from(self.created.move_seconds) * 1000);
            // Never after the latest end: then the table expires instead.
            (
                seat,
                self.created
                    .latest_end_ms
                    .map_or(deadline, |end| deadline.min(end)),
            )
        })
    }

    /// The `GameFinished` that follows `events` when they end the match.
    fn finish(&self, events: &[TableEvent<G>]) -> Option<Finished<G>> {
        let mut game = self.game.clone();
        let mut seats_abandoned = self.abandoned.clone();
        for e in events {
            match e {
                TableEvent::Engine { event, .. } => game.apply(event),
                TableEvent::SeatAbandoned { seat, .. } => {
                    if let Some(a) = seats_abandoned.get_mut(seat.index()) {
                        *a = true;
                    }
                }
                _ => {}
            }
        }
        let outcome = game.outcome()?;
        let abandoned = seats_abandoned.iter().any(|a| *a);
        Some(Finished {
            players: self.players.clone(),
            abandoned: seats_abandoned,
            outcome,
            options: self.created.options.clone(),
            hands_played: game.hands_dealt(),
            reason: if abandoned {
                FinishReason::Abandoned
            } else {
                FinishReason::Completed
            },
        })
    }

    /// What the table needs next from the service at time `now` (Unix ms).
    pub fn next(&self, now: i64) -> Next {
        if self.over() {
            // A table that expired before its first deal used its seed for nothing: it is
            // not revealed (the commitment service reveals a started game's only).
            return if self.server_seed.is_none() && self.client_seed.is_some() {
                Next::Reveal
            } else {
                Next::Wait
            };
        }
        // A player's command records the end of the match it causes in the same append
        // (`seat_command`); the table's own steps leave it to this.
        if self.game.outcome().is_some() {
            return Next::Finish;
        }
        if self.past_latest_end(now) {
            return Next::Expire;
        }
        if let Some(hand) = self.game.deal_due() {
            return if self.pending.is_none() {
                Next::Deal { hand }
            } else {
                Next::Wait
            };
        }
        match self.game.turn() {
            Some(seat) if self.plays_itself(seat) => Next::Bot(seat),
            Some(seat) => match self.deadline {
                Some((s, deadline)) if s == seat && now >= deadline => Next::Timeout(seat),
                _ => Next::Wait,
            },
            None => Next::Wait,
        }
    }

    /// Records hand `dealt` at time `now` when the table is still waiting for it (else
    /// nothing: it was dealt meanwhile).
    pub fn deal(&self, dealt: &DealtHand, now: i64) -> Decision<G> {
        if self.next(now) != (Next::Deal { hand: dealt.hand }) {
            return Ok(Decided::nothing(self.version));
        }
        let command = G::start_hand(&dealt.deal).map_err(TableError::Rule)?;
        let produced = self
            .game
            .decide(Actor::Table, &command)
            .map_err(TableError::Rule)?;
        let mut events = Vec::new();
        for event in produced {
            // The deal is stored apart: its public part, each seat's cards, the talon.
            let Some(parts) = G::dealt(&event) else {
                events.push(TableEvent::Engine {
                    event,
                    command: None,
                });
                continue;
            };
            let hand = parts.hand;
            events.push(TableEvent::HandStarted {
                hand,
                dealer: parts.dealer,
                commitment: dealt.commitment.clone(),
                client_seed: dealt.client_seed.clone(),
            });
            for (position, cards) in parts.hands.iter().enumerate() {
                events.push(TableEvent::CardsDealt {
                    hand,
                    seat: parts.seat_of(position, self.seat_count()),
                    position: u8::try_from(position).unwrap_or(u8::MAX),
                    cards: cards.clone(),
                });
            }
            if !parts.talon.is_empty() {
                events.push(TableEvent::TalonDealt {
                    hand,
                    cards: parts.talon,
                });
            }
        }
        Ok(self.decided(self.clocked(events, now)))
    }

    /// The bot's move at `seat` (a bot seat or an abandoned one), when it is still its turn.
    /// The bot sees only the seat's view; its decision is a pure function of the table id
    /// and the view.
    pub fn bot_move(&self, seat: Seat, now: i64) -> Decision<G> {
        if self.next(now) != Next::Bot(seat) {
            return Ok(Decided::nothing(self.version));
        }
        self.play_for(Vec::new(), seat, &format!("bot:{}", self.version), now)
    }

    /// The player at `seat` let the deadline pass by `now`: record the timeout (and the
    /// abandonment at the [`MAX_TIMEOUTS`]th in a row), then the bot plays for the seat.
    pub fn time_out(&self, seat: Seat, now: i64) -> Decision<G> {
        if self.next(now) != Next::Timeout(seat) {
            return Ok(Decided::nothing(self.version));
        }
        let consecutive = self
            .timeouts
            .get(seat.index())
            .copied()
            .unwrap_or(0)
            .saturating_add(1);
        let mut prefix = vec![TableEvent::TurnTimedOut { seat, consecutive }];
        if consecutive >= MAX_TIMEOUTS
            && let Some(player) = self.player_at(seat)
        {
            prefix.push(TableEvent::SeatAbandoned { seat, player });
        }
        self.play_for(prefix, seat, &format!("timeout:{}", self.version), now)
    }

    /// The game's bot's move for `seat`, after `prefix`.
    fn play_for(
        &self,
        prefix: Vec<TableEvent<G>>,
        seat: Seat,
        command_id: &str,
        now: i64,
    ) -> Decision<G> {
        let Some(command) = self
            .game
            .seat_view(seat)
            .and_then(|view| G::bot_command(&view, bot_seed(self.id())))
        else {
            return Ok(Decided::nothing(self.version));
        };
        self.seat_command(prefix, seat, command_id, &command, now)
    }

    /// Records the end of the match ([`Next::Finish`]) when it is over and the table does
    /// not know it yet (else nothing).
    pub fn end_match(&self, now: i64) -> Decided<G> {
        match (self.next(now), self.finish(&[])) {
            (Next::Finish, Some(finished)) => {
                self.decided(vec![TableEvent::GameFinished(finished)])
            }
            _ => Decided::nothing(self.version),
        }
    }

    /// Ends the table at its latest end, when it has come by `now` and the game is not over
    /// (else nothing).
    pub fn expire(&self, now: i64) -> Decided<G> {
        match (self.next(now), self.created.latest_end_ms) {
            (Next::Expire, Some(latest_end_ms)) => self.decided(vec![TableEvent::Expired {
                latest_end_ms,
                hands_dealt: self.game.hands_dealt(),
            }]),
            _ => Decided::nothing(self.version),
        }
    }

    /// Records the revealed seed (once, after the game finished or the table expired).
    pub fn reveal(&self, server_seed: String) -> Decided<G> {
        if self.server_seed.is_some() || !self.over() {
            return Decided::nothing(self.version);
        }
        self.decided(vec![TableEvent::SeedRevealed {
            commitment: self.created.commitment.clone(),
            server_seed,
            client_seed: self.client_seed.clone().unwrap_or_default(),
        }])
    }

    fn decided(&self, events: Vec<TableEvent<G>>) -> Decided<G> {
        Decided {
            version: self.version + events.len() as u64,
            events,
        }
    }
}

/// The bots' seed at a table: from its id, so a replay chooses the same moves.
pub fn bot_seed(table_id: Uuid) -> u64 {
    let (high, low) = table_id.as_u64_pair();
    high ^ low
}
