//! A table's events ([`TableEvent`] and the values they carry), who may see each
//! ([`visible`]), and what each says about who must act next ([`TableEvent::due`]).

use fairdeal_table_game::{Actor, Layout, Outcome, Seat, TableGame};
use uuid::Uuid;

/// A table's settings, as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created<G: TableGame> {
    /// The table.
    pub table_id: Uuid,
    /// Who created it.
    pub creator: Uuid,
    /// The game's options (valid: [`TableGame::layout`] accepted them).
    pub options: G::Options,
    /// The seats and deck the options need (not stored: the options' layout).
    pub layout: Layout,
    /// Seats played by the game's bot, one entry per seat.
    pub bots: Vec<bool>,
    /// Time per move, seconds.
    pub move_seconds: u32,
    /// The server seed's commitment.
    pub commitment: String,
    /// Its short code.
    pub short_code: String,
    /// The dealer of hand 0.
    pub first_dealer: Seat,
    /// The latest end (Unix ms), when the seed is timelocked: nothing is dealt or played
    /// from then on, and the table expires ([`TableEvent::Expired`]) unless its game
    /// finished before.
    pub latest_end_ms: Option<i64>,
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
pub struct Finished<G: TableGame> {
    /// Players by seat (`None`: a bot).
    pub players: Vec<Option<Uuid>>,
    /// Seats their player abandoned (the bot played them out).
    pub abandoned: Vec<bool>,
    /// The sides, their final scores and placings.
    pub outcome: Outcome,
    /// The options played.
    pub options: G::Options,
    /// Hands played to the end.
    pub hands_played: u32,
    /// Completed or abandoned.
    pub reason: FinishReason,
}

/// One event of a table's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableEvent<G: TableGame> {
    /// The table was created (version 1).
    Created(Created<G>),
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
    /// A game event other than a deal (which is split, below), with the command that
    /// caused it when it is the first event of a seat's command.
    Engine {
        /// The game's event.
        event: G::Event,
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
        cards: Vec<G::Card>,
    },
    /// The talon of a hand (the Tarot's chien), which no seat sees until the game is over
    /// (the game's own events show it when its rules do).
    TalonDealt {
        /// Hand number.
        hand: u32,
        /// The cards, as dealt.
        cards: Vec<G::Card>,
    },
    /// The game is over.
    GameFinished(Finished<G>),
    /// The table reached its latest end ([`Created::latest_end_ms`]) before its game was
    /// over: nothing more is dealt or played, the game is not rated, and every event is
    /// public from here on, as after [`TableEvent::GameFinished`].
    Expired {
        /// The latest end reached (Unix ms).
        latest_end_ms: i64,
        /// Hands dealt before it.
        hands_dealt: u32,
    },
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
    /// Nobody before this time (Unix ms), the table's latest end; then the service, which
    /// ends the table (a table waiting for its players, when its seed is timelocked).
    Expires(i64),
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

/// Who may see an event before the game is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privacy {
    /// Everyone.
    Public,
    /// The player at this seat only (a seat's cards).
    Seat(Seat),
    /// Nobody (the talon).
    Hidden,
}

/// The visibility rule, the one both the domain ([`TableEvent::visible_to`]) and the
/// watchers' wire path apply: an event private to a seat is seen by that seat's player
/// only, a hidden one by nobody, until the stream holds `GameFinished` or `TableExpired`
/// (`finished`: then everything is public); any other event is public.
pub fn visible(privacy: Privacy, viewer: Viewer, finished: bool) -> bool {
    match privacy {
        Privacy::Public => true,
        Privacy::Seat(seat) => finished || viewer == Viewer::Seat(seat),
        Privacy::Hidden => finished,
    }
}

impl<G: TableGame> TableEvent<G> {
    /// Who may see this event before the game is over: a [`TableEvent::CardsDealt`] its
    /// seat, a [`TableEvent::TalonDealt`] nobody, the others everyone.
    pub fn privacy(&self) -> Privacy {
        match self {
            TableEvent::CardsDealt { seat, .. } => Privacy::Seat(*seat),
            TableEvent::TalonDealt { .. } => Privacy::Hidden,
            // The game's own private events (French Tarot's écart is the taker's).
            TableEvent::Engine { event, .. } => {
                G::seen_only_by(event).map_or(Privacy::Public, Privacy::Seat)
            }
            _ => Privacy::Public,
        }
    }

    /// Whether `viewer` may see this event, `finished` saying whether the stream holds
    /// `GameFinished` or `TableExpired` (then everything is public): [`visible`].
    pub fn visible_to(&self, viewer: Viewer, finished: bool) -> bool {
        visible(self.privacy(), viewer, finished)
    }

    /// What this event says about when the table next needs someone to act: a player's
    /// turn deadline; the service itself, at once (no player is to act: a deal, a bot's or
    /// an abandoned seat's move, or the reveal is owed); nobody before the latest end (a
    /// new table whose seed is timelocked); or nobody (the seed is revealed: the table is
    /// done). `None`: it changes nothing of that.
    ///
    /// A turn's deadline is never after the table's latest end ([`Table::act`] and the
    /// service's steps clamp it), so a table's row always comes due by its latest end.
    ///
    /// [`Table::act`]: super::Table::act
    pub fn due(&self) -> Option<Due> {
        match self {
            TableEvent::Created(created) => created.latest_end_ms.map(Due::Expires),
            TableEvent::TurnClock { deadline_ms, .. } => Some(Due::Player(*deadline_ms)),
            TableEvent::Engine {
                command: Some(command),
                ..
            } => Some(match command.next_turn {
                Some((_, deadline_ms)) => Due::Player(deadline_ms),
                None => Due::Service,
            }),
            // The match's start (the table's own command): the first deal is owed.
            TableEvent::Engine {
                event,
                command: None,
            } if matches!(G::command_of(event), Some((Actor::Table, _))) => Some(Due::Service),
            TableEvent::GameFinished(_) => Some(Due::Service),
            // The reveal, when a hand was dealt; else the table is done.
            TableEvent::Expired { hands_dealt, .. } => Some(if *hands_dealt > 0 {
                Due::Service
            } else {
                Due::Nobody
            }),
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
        for seat in Seat::all(5) {
            let other = seat.offset(1, 5);
            let private = Privacy::Seat(seat);
            assert!(visible(private, Viewer::Seat(seat), false));
            assert!(!visible(private, Viewer::Seat(other), false));
            assert!(!visible(private, Viewer::Spectator, false));
            assert!(visible(private, Viewer::Spectator, true));
            assert!(visible(private, Viewer::Seat(other), true));
            assert!(visible(Privacy::Public, Viewer::Spectator, false));
            assert!(visible(Privacy::Public, Viewer::Seat(seat), false));
            assert!(!visible(Privacy::Hidden, Viewer::Seat(seat), false));
            assert!(visible(Privacy::Hidden, Viewer::Seat(seat), true));
        }
        assert!(!visible(Privacy::Hidden, Viewer::Spectator, false));
        assert!(visible(Privacy::Hidden, Viewer::Spectator, true));
    }
}
