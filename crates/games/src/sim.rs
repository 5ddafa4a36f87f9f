//! Self-play: a whole match driven by four bots, dealt by the fairness crate.
//!
//! The table's part (start the match, deal each hand with salt = the hand number, as SPEC
//! section 4 prescribes for tables) and the players' part go through the same
//! `decide` / `apply` path a live table uses, so a simulated match is a real event log:
//! tests replay and verify it, and the benchmark measures it.

use fairdeal_fairness::deal::Deal;

use crate::bot::Bot;
use crate::command::{Actor, Command};
use crate::error::{Phase, RuleError};
use crate::event::Event;
use crate::game::Game;
use crate::options::TableOptions;
use crate::seat::Seat;

/// How to run a simulated match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchSetup {
    /// The table's options.
    pub options: TableOptions,
    /// Dealer of hand 0.
    pub first_dealer: Seat,
    /// Server seed of the deals (a simulation's, not a secret).
    pub server_seed: String,
    /// Client seed of the deals.
    pub client_seed: String,
    /// Stop after this many hands if nobody has won (a match can in principle go on
    /// forever, e.g. when every contract fails).
    pub max_hands: u32,
}

/// A simulated match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMatch {
    /// Final state.
    pub game: Game,
    /// Every event, in order.
    pub events: Vec<Event>,
}

impl PlayedMatch {
    /// Whether a team won (rather than the hand limit being reached).
    pub fn finished(&self) -> bool {
        self.game.phase() == Phase::Finished
    }
}

/// Why a simulation stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The rules refused a command (a bot bug, or invalid options).
    #[error("{actor:?} sent {command:?}, refused: {error}")]
    Refused {
        /// Who sent it.
        actor: Actor,
        /// What was sent.
        command: Command,
        /// Why it was refused.
        error: RuleError,
    },
    /// A bot returned nothing on its turn.
    #[error("the bot at {0} chose nothing on its turn")]
    BotIdle(Seat),
    /// Nobody can act (the state machine is stuck).
    #[error("nobody can act in phase {0:?}")]
    Stuck(Phase),
}

/// Plays a match with `bots[s]` at seat `s`.
pub fn play_match(setup: &MatchSetup, bots: [&dyn Bot; 4]) -> Result<PlayedMatch, SimError> {
    let mut game = Game::new();
    let mut events = Vec::new();
    let mut run = |game: &mut Game, actor: Actor, command: Command| {
        let produced = game
            .decide(actor, &command)
            .map_err(|error| SimError::Refused {
                actor,
                command,
                error,
            })?;
        for event in &produced {
            game.apply(event);
        }
        events.extend(produced);
        Ok::<(), SimError>(())
    };
    run(
        &mut game,
        Actor::Table,
        Command::StartMatch {
            options: setup.options.clone(),
            first_dealer: setup.first_dealer,
        },
    )?;
    loop {
        match game.phase() {
            Phase::Finished => break,
            Phase::AwaitingDeal => {
                let number = game.next_hand_number();
                if number >= setup.max_hands {
                    break;
                }
                let deal = Deal::from_seeds(
                    setup.options.deck,
                    &setup.server_seed,
                    &setup.client_seed,
                    &number.to_string(),
                );
                let command = Command::start_hand(&deal).map_err(|error| SimError::Refused {
                    actor: Actor::Table,
                    command: Command::StartHand { hands: Vec::new() },
                    error,
                })?;
                run(&mut game, Actor::Table, command)?;
            }
            phase => {
                let seat = game.turn().ok_or(SimError::Stuck(phase))?;
                let view = game.seat_view(seat);
                let bot = bots[seat.index()];
                let command = bot.choose(&view).ok_or(SimError::BotIdle(seat))?;
                run(&mut game, Actor::Seat(seat), command)?;
            }
        }
    }
    Ok(PlayedMatch { game, events })
}
