//! French Tarot as a table runs it: [`TableGame`] for [`Tarot`], the contract the tables
//! service, the auditor and the client go through (`fairdeal_table_game`).
//!
//! The engine numbers seats as the table does (0 up to the table's size); a seat past the
//! table's size is refused ([`NoSuchSeat`]), shown nothing and offered nothing. The deal's
//! talon is the chien.
//!
//! [`NoSuchSeat`]: fairdeal_table_game::ContractError::NoSuchSeat

use fairdeal_fairness::deal::Deal;
use fairdeal_table_game::{Actor, Dealt, Layout, Outcome, Seat, TableGame};

use crate::bot;
use crate::card::Card;
use crate::command::Command;
use crate::error::{Phase, RuleError};
use crate::event::Event;
use crate::game::{Tarot, command_of};
use crate::options::TarotOptions;
use crate::view::{PublicView, SeatView};

impl TableGame for Tarot {
    const NAME: &'static str = "tarot";
    type Options = TarotOptions;
    type Command = Command;
    type Event = Event;
    type Card = Card;
    type Error = RuleError;
    type SeatView = SeatView;
    type PublicView = PublicView;

    fn layout(options: &TarotOptions) -> Result<Layout, RuleError> {
        let options = options.validate()?;
        Ok(Layout {
            seats: options.seat_count(),
            deck: options.deck(),
        })
    }

    fn start(options: &TarotOptions, first_dealer: Seat) -> Command {
        Command::StartMatch {
            options: *options,
            first_dealer,
        }
    }

    fn start_hand(deal: &Deal) -> Result<Command, RuleError> {
        Command::start_deal(deal)
    }

    fn decide(&self, actor: Actor, command: &Command) -> Result<Vec<Event>, RuleError> {
        Tarot::decide(self, actor, command)
    }

    fn apply(&mut self, event: &Event) {
        Tarot::apply(self, event);
    }

    fn command_of(event: &Event) -> Option<(Actor, Command)> {
        command_of(event)
    }

    fn kind(event: &Event) -> &'static str {
        event.kind()
    }

    /// The écart's plain cards are the taker's ([`Event::private_to`]).
    fn seen_only_by(event: &Event) -> Option<Seat> {
        event.private_to()
    }

    fn started(&self) -> bool {
        self.phase() != Phase::NotStarted
    }

    fn deal_due(&self) -> Option<u32> {
        (self.phase() == Phase::AwaitingDeal).then(|| self.next_deal_number())
    }

    fn hands_dealt(&self) -> u32 {
        self.next_deal_number()
    }

    fn turn(&self) -> Option<Seat> {
        Tarot::turn(self)
    }

    fn legal_commands(&self, seat: Seat) -> Vec<Command> {
        Tarot::legal_commands(self, seat)
    }

    /// Every seat is its own side (partnerships last one deal), placed by its cumulative
    /// score; equal scores share a placing.
    fn outcome(&self) -> Option<Outcome> {
        if self.phase() != Phase::Finished {
            return None;
        }
        let scores = self.scores().to_vec();
        let placings = scores
            .iter()
            .map(|s| 1 + scores.iter().filter(|o| *o > s).count() as u32)
            .collect();
        Some(Outcome {
            sides: Seat::all(scores.len()).map(|s| vec![s]).collect(),
            scores,
            placings,
        })
    }

    fn seat_view(&self, seat: Seat) -> Option<SeatView> {
        let seats = self.options().map_or(0, TarotOptions::seat_count);
        (seat.index() < seats).then(|| Tarot::seat_view(self, seat))
    }

    fn public_view(&self) -> PublicView {
        Tarot::public_view(self)
    }

    fn bot_command(view: &SeatView, seed: u64) -> Option<Command> {
        bot::choose(view, seed)
    }

    fn dealt(event: &Event) -> Option<Dealt<Card>> {
        match event {
            Event::DealStarted {
                deal,
                dealer,
                hands,
                chien,
            } => Some(Dealt {
                hand: *deal,
                dealer: *dealer,
                hands: hands.clone(),
                talon: chien.clone(),
            }),
            _ => None,
        }
    }

    fn deal_event(dealt: Dealt<Card>) -> Event {
        Event::DealStarted {
            deal: dealt.hand,
            dealer: dealt.dealer,
            hands: dealt.hands,
            chien: dealt.talon,
        }
    }
}
