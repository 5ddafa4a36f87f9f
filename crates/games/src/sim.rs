//! Self-play: a whole match driven by four bots, dealt by the fairness crate.
//!
//! The table's part (start the match, deal each hand with salt = the hand number, as SPEC
//! section 4 prescribes for tables) and the players' part go through the same
//! `decide` / `apply` path a live table uses, so a simulated match is a real event log:
//! tests replay and verify it, and the benchmark measures it.

use fairdeal_fairness::deal::Deal;

use fairdeal_fairness::Deck;

use crate::bot::{Bot, HeuristicBot, RandomBot};
use crate::command::{Actor, Command};
use crate::error::{Phase, RuleError};
use crate::event::Event;
use crate::game::Game;
use crate::options::{Purchase, TableOptions};
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

/// Every valid combination of options: 2 decks x penalised aces or not x 4 scoring modes,
/// and the budget mode once more with a budget of its own (3): the variants tests and
/// benches play through.
pub fn variants() -> Vec<TableOptions> {
    let mut out = Vec::new();
    for deck in [Deck::Dix, Deck::Ruff] {
        for penalised_aces in [false, true] {
            for (made_or_nothing, purchase, budget) in [
                (false, None, None),
                (true, None, None),
                (false, Some(Purchase::Points), None),
                (false, Some(Purchase::Budget), None),
                (false, Some(Purchase::Budget), Some(3)),
            ] {
                out.push(TableOptions {
                    deck,
                    penalised_aces,
                    made_or_nothing,
                    purchase,
                    budget,
                });
            }
        }
    }
    out
}

/// A match of `setup` between bots drawn from `seed`: by `mix % 3`, random bots, heuristic
/// bots, or a heuristic team against a random one.
pub fn play_mixed(setup: &MatchSetup, seed: u64, mix: u8) -> Result<PlayedMatch, SimError> {
    let (r0, r1) = (RandomBot::new(seed), RandomBot::new(seed ^ 1));
    let (h0, h1) = (HeuristicBot::new(seed), HeuristicBot::new(seed ^ 1));
    let bots: [&dyn Bot; 4] = match mix % 3 {
        0 => [&r0, &r1, &r0, &r1],
        1 => [&h0, &h1, &h0, &h1],
        _ => [&h0, &r1, &h0, &r1],
    };
    play_match(setup, bots)
}

/// The game of `options` at its first turn: the first hand dealt (seat 0 dealing, seeds
/// `server` and `client`), nobody having acted yet.
pub fn first_turn(options: TableOptions) -> Result<Game, SimError> {
    let setup = MatchSetup {
        options,
        first_dealer: Seat::ALL[0],
        server_seed: "server".into(),
        client_seed: "client".into(),
        max_hands: 1,
    };
    let bot = RandomBot::new(1);
    let played = play_match(&setup, [&bot, &bot, &bot, &bot])?;
    let dealt = played
        .events
        .iter()
        .position(|e| matches!(e, Event::HandStarted { .. }))
        .map_or(played.events.len(), |i| i + 1);
    Ok(Game::replay(&played.events[..dealt]))
}
