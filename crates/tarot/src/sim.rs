//! Self-play: a whole match dealt by the fairness crate (salt = the deal's number, SPEC
//! section 4) and played through the table contract, with the bot or any other chooser at
//! every seat. A simulated match is a real event log: tests replay and verify it.

use fairdeal_fairness::deal::Deal;
use fairdeal_table_game::{Actor, Seat, TableGame};

use crate::command::Command;
use crate::error::{Phase, RuleError};
use crate::event::Event;
use crate::game::Tarot;
use crate::options::TarotOptions;
use crate::view::SeatView;

/// How to run a simulated match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchSetup {
    /// The table's options.
    pub options: TarotOptions,
    /// Dealer of deal 0.
    pub first_dealer: Seat,
    /// Server seed of the deals (a simulation's, not a secret).
    pub server_seed: String,
    /// Client seed of the deals.
    pub client_seed: String,
}

/// A simulated match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMatch {
    /// Final state.
    pub game: Tarot,
    /// Every event, in order.
    pub events: Vec<Event>,
}

/// Why a simulation stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The rules refused a command (a chooser's bug, or invalid options).
    #[error("{actor:?} sent {command:?}, refused: {error}")]
    Refused {
        /// Who sent it.
        actor: Actor,
        /// What was sent.
        command: Command,
        /// Why it was refused.
        error: RuleError,
    },
    /// A chooser returned nothing on its turn.
    #[error("the chooser at {0} chose nothing on its turn")]
    Idle(Seat),
    /// Nobody can act.
    #[error("nobody can act in phase {0:?}")]
    Stuck(Phase),
}

/// The most events a simulated match may take (a 5-seat, 10-round match needs about
/// 4,500): a guard against a state machine that never ends.
const MAX_EVENTS: usize = 20_000;

/// Plays a match with the bot (seeded `bot_seed`) at every seat.
pub fn play_match(setup: &MatchSetup, bot_seed: u64) -> Result<PlayedMatch, SimError> {
    play_match_with(setup, |view| {
        <Tarot as TableGame>::bot_command(view, bot_seed)
    })
}

/// Plays a match with `choose` deciding every seat's command from its view.
pub fn play_match_with(
    setup: &MatchSetup,
    mut choose: impl FnMut(&SeatView) -> Option<Command>,
) -> Result<PlayedMatch, SimError> {
    let mut game = Tarot::new();
    let mut events = Vec::new();
    let mut run = |game: &mut Tarot, actor: Actor, command: Command| {
        let produced =
            TableGame::decide(game, actor, &command).map_err(|error| SimError::Refused {
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
    let start = <Tarot as TableGame>::start(&setup.options, setup.first_dealer);
    run(&mut game, Actor::Table, start)?;
    let deck = setup.options.deck();
    loop {
        if game.phase() == Phase::Finished {
            break;
        }
        if let Some(number) = TableGame::deal_due(&game) {
            let deal = Deal::from_seeds(
                deck,
                &setup.server_seed,
                &setup.client_seed,
                &number.to_string(),
            );
            let command =
                <Tarot as TableGame>::start_hand(&deal).map_err(|error| SimError::Refused {
                    actor: Actor::Table,
                    command: Command::StartDeal {
                        hands: Vec::new(),
                        chien: Vec::new(),
                    },
                    error,
                })?;
            run(&mut game, Actor::Table, command)?;
        } else if let Some(seat) = game.turn() {
            let view = game.seat_view(seat);
            let command = choose(&view).ok_or(SimError::Idle(seat))?;
            run(&mut game, Actor::Seat(seat), command)?;
        } else {
            return Err(SimError::Stuck(game.phase()));
        }
        if game.version() as usize > MAX_EVENTS {
            return Err(SimError::Stuck(game.phase()));
        }
    }
    Ok(PlayedMatch { game, events })
}
