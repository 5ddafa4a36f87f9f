//! A table's events ([`TableEvent`] and the values they carry), who may see each
//! ([`visible`]), and what each says about who must act next ([`TableEvent::due`]).

use fairdeal_games::{Card, Event, Seat, TableOptions, Team};
use uuid::Uuid;

/// A table's settings, as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The table.
    pub table_id: Uuid,
    /// Who created it.
    pub creator: Uuid,
    /// The variants (valid: [`Rules::new`](fairdeal_games::Rules::new) accepted them).
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
    /// The seat timed out [`MAX_TIMEOUTS`](super::MAX_TIMEOUTS) times in a row: the bot plays it from now on.
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

/// The visibility rule, the one both the domain ([`TableEvent::visible_to`]) and the
/// watchers' wire path apply: an event private to a seat (`private_to`) is seen by that
/// seat's player only, until the stream holds `GameFinished` (`finished`: then everything is
/// public); any other event is public.
pub fn visible(private_to: Option<Seat>, viewer: Viewer, finished: bool) -> bool {
    match private_to {
        Some(seat) => finished || viewer == Viewer::Seat(seat),
        None => true,
    }
}

impl TableEvent {
    /// The seat this event is private to: a [`TableEvent::CardsDealt`]'s; `None` for the
    /// public events.
    pub fn private_to(&self) -> Option<Seat> {
        match self {
            TableEvent::CardsDealt { seat, .. } => Some(*seat),
            _ => None,
        }
    }

    /// Whether `viewer` may see this event, `finished` saying whether the stream holds
    /// `GameFinished` (then everything is public): [`visible`].
    pub fn visible_to(&self, viewer: Viewer, finished: bool) -> bool {
        visible(self.private_to(), viewer, finished)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_event_is_its_seats_until_the_game_is_finished_and_a_public_one_everyones() {
        for seat in Seat::ALL {
            assert!(visible(Some(seat), Viewer::Seat(seat), false));
            assert!(!visible(Some(seat), Viewer::Seat(seat.next()), false));
            assert!(!visible(Some(seat), Viewer::Spectator, false));
            assert!(visible(Some(seat), Viewer::Spectator, true));
            assert!(visible(Some(seat), Viewer::Seat(seat.next()), true));
            assert!(visible(None, Viewer::Spectator, false));
            assert!(visible(None, Viewer::Seat(seat), false));
        }
    }
}
