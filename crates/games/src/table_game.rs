//! Jeu du 10 as a table runs it: [`TableGame`] for [`Game`], the contract the tables
//! service, the auditor and the client go through (`fairdeal_table_game`).
//!
//! The engine numbers its four seats with its own [`Seat`] (which knows teams and
//! partners); the contract's seats are the table's, 0 up to five. They convert here: every
//! engine seat is a table seat, and a table seat past 3 is refused
//! ([`ContractError::NoSuchSeat`]), shown nothing and offered nothing.

use fairdeal_fairness::deal::Deal;
use fairdeal_table_game::{self as table, Dealt, Layout, Outcome, TableGame};

use crate::bot::{Bot, HeuristicBot};
use crate::card::Card;
use crate::command::{Actor, Command};
use crate::error::{ContractError, Phase, RuleError};
use crate::event::Event;
use crate::game::{Game, command_of};
use crate::options::{Rules, TableOptions};
use crate::seat::{Seat, Team};
use crate::view::{PublicView, SeatView};

impl From<Seat> for table::Seat {
    fn from(seat: Seat) -> table::Seat {
        // Engine seats are 0..=3, below the contract's five.
        table::Seat::new(seat.number()).unwrap_or_default()
    }
}

/// The engine's seat for table seat `seat`, if Jeu du 10 has it.
pub fn engine_seat(seat: table::Seat) -> Option<Seat> {
    Seat::new(seat.number())
}

fn table_actor(actor: Actor) -> table::Actor {
    match actor {
        Actor::Table => table::Actor::Table,
        Actor::Seat(seat) => table::Actor::Seat(seat.into()),
    }
}

impl TableGame for Game {
    const NAME: &'static str = "jeu_du_10";
    type Options = TableOptions;
    type Command = Command;
    type Event = Event;
    type Card = Card;
    type Error = RuleError;
    type SeatView = SeatView;
    type PublicView = PublicView;

    fn layout(options: &TableOptions) -> Result<Layout, RuleError> {
        Rules::new(options)?;
        Ok(Layout {
            seats: Seat::ALL.len(),
            deck: options.deck,
        })
    }

    fn start(options: &TableOptions, first_dealer: table::Seat) -> Command {
        Command::StartMatch {
            options: options.clone(),
            first_dealer: engine_seat(first_dealer).unwrap_or_default(),
        }
    }

    fn start_hand(deal: &Deal) -> Result<Command, RuleError> {
        Command::start_hand(deal)
    }

    fn decide(&self, actor: table::Actor, command: &Command) -> Result<Vec<Event>, RuleError> {
        let actor = match actor {
            table::Actor::Table => Actor::Table,
            table::Actor::Seat(seat) => {
                Actor::Seat(engine_seat(seat).ok_or(ContractError::NoSuchSeat {
                    seat: seat.number(),
                    seats: Seat::ALL.len(),
                })?)
            }
        };
        Game::decide(self, actor, command)
    }

    fn apply(&mut self, event: &Event) {
        Game::apply(self, event);
    }

    fn command_of(event: &Event) -> Option<(table::Actor, Command)> {
        command_of(event).map(|(actor, command)| (table_actor(actor), command))
    }

    fn kind(event: &Event) -> &'static str {
        event.kind()
    }

    fn started(&self) -> bool {
        self.phase() != Phase::NotStarted
    }

    fn deal_due(&self) -> Option<u32> {
        (self.phase() == Phase::AwaitingDeal).then(|| self.next_hand_number())
    }

    fn hands_dealt(&self) -> u32 {
        self.next_hand_number()
    }

    fn turn(&self) -> Option<table::Seat> {
        Game::turn(self).map(Into::into)
    }

    fn legal_commands(&self, seat: table::Seat) -> Vec<Command> {
        engine_seat(seat).map_or_else(Vec::new, |seat| Game::legal_commands(self, seat))
    }

    fn outcome(&self) -> Option<Outcome> {
        let (winner, _) = self.result()?;
        Some(Outcome {
            sides: Team::ALL
                .into_iter()
                .map(|team| team.seats().into_iter().map(Into::into).collect())
                .collect(),
            scores: self.scores().to_vec(),
            placings: Team::ALL
                .into_iter()
                .map(|team| if team == winner { 1 } else { 2 })
                .collect(),
        })
    }

    fn seat_view(&self, seat: table::Seat) -> Option<SeatView> {
        engine_seat(seat).map(|seat| Game::seat_view(self, seat))
    }

    fn public_view(&self) -> PublicView {
        Game::public_view(self)
    }

    fn bot_command(view: &SeatView, seed: u64) -> Option<Command> {
        HeuristicBot::new(seed).choose(view)
    }

    fn dealt(event: &Event) -> Option<Dealt<Card>> {
        match event {
            Event::HandStarted {
                hand,
                dealer,
                hands,
            } => Some(Dealt {
                hand: *hand,
                dealer: (*dealer).into(),
                hands: hands.clone(),
                talon: Vec::new(),
            }),
            _ => None,
        }
    }

    fn deal_event(dealt: Dealt<Card>) -> Event {
        Event::HandStarted {
            hand: dealt.hand,
            dealer: engine_seat(dealt.dealer).unwrap_or_default(),
            hands: dealt.hands,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use fairdeal_fairness::Deck;

    use super::*;
    use crate::sim::{self, MatchSetup};

    fn seat(n: u8) -> table::Seat {
        table::Seat::new(n).unwrap()
    }

    #[test]
    fn a_played_match_verifies_through_the_contract_and_ends_with_one_winning_team() {
        let setup = MatchSetup {
            options: TableOptions::default(),
            first_dealer: Seat::ALL[0],
            server_seed: "server".into(),
            client_seed: "client".into(),
            max_hands: 200,
        };
        let bot = HeuristicBot::new(7);
        let played = sim::play_match(&setup, [&bot, &bot, &bot, &bot]).unwrap();
        assert!(played.finished());
        let game = <Game as TableGame>::verify(&played.events).unwrap();
        assert_eq!(game, played.game);
        let outcome = TableGame::outcome(&game).unwrap();
        assert_eq!(
            outcome.sides,
            [vec![seat(0), seat(2)], vec![seat(1), seat(3)]]
        );
        assert_eq!(outcome.scores, game.scores().to_vec());
        let (team, _) = game.result().unwrap();
        assert_eq!(outcome.winners().collect::<Vec<_>>(), [team.index()]);
    }

    #[test]
    fn a_deal_comes_apart_and_back_and_a_fifth_seat_is_refused_and_shown_nothing() {
        let layout = <Game as TableGame>::layout(&TableOptions::default()).unwrap();
        assert_eq!((layout.seats, layout.deck), (4, Deck::Dix));
        let game = Game::new();
        let start = <Game as TableGame>::start(&TableOptions::default(), seat(1));
        let events = TableGame::decide(&game, table::Actor::Table, &start).unwrap();
        let game = <Game as TableGame>::replay(&events);
        assert_eq!(TableGame::deal_due(&game), Some(0));
        let deal = Deal::from_seeds(Deck::Dix, "server", "client", "0");
        let command = <Game as TableGame>::start_hand(&deal).unwrap();
        let dealt = TableGame::decide(&game, table::Actor::Table, &command).unwrap();
        let parts = <Game as TableGame>::dealt(&dealt[0]).unwrap();
        assert_eq!(parts.dealer, seat(1));
        assert_eq!(parts.seat_of(0, layout.seats), seat(2));
        assert_eq!(<Game as TableGame>::deal_event(parts), dealt[0]);
        let mut game = game;
        TableGame::apply(&mut game, &dealt[0]);
        let turn = TableGame::turn(&game).unwrap();
        assert!(!TableGame::legal_commands(&game, turn).is_empty());
        assert!(TableGame::seat_view(&game, seat(4)).is_none());
        assert!(TableGame::legal_commands(&game, seat(4)).is_empty());
        let pass = Command::Pass;
        assert_eq!(
            TableGame::decide(&game, table::Actor::Seat(seat(4)), &pass),
            Err(ContractError::NoSuchSeat { seat: 4, seats: 4 }.into())
        );
        let view = TableGame::seat_view(&game, turn).unwrap();
        assert!(<Game as TableGame>::bot_command(&view, 3).is_some());
    }
}
