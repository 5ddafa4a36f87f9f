//! A second game for the table's own tests: three seats and a talon, the shape Jeu du 10
//! never takes (four seats, no talon), so the generic table is exercised where only the
//! contract (`TableGame`) can carry it.
//!
//! "High card", dealt from the three-player Tarot deck (24 cards each, a talon of 6): the
//! dealer's left plays first, each seat plays one card of its hand, the highest card (by
//! the deck's canonical index) wins. Every seat is a side of its own. A talon holding the
//! deck's first card voids the match at the deal, every seat scoring 0: a match that ends
//! with no player's command, as a French Tarot match ends when its last deal is annulled.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_table_game::{Actor, Deal, Dealt, Deck, Layout, Outcome, Seat, TableGame};

const SEATS: usize = 3;

/// The state: the dealer, the hands, the cards played.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HighCard {
    dealer: Option<Seat>,
    hands: Vec<Vec<u8>>,
    talon: Vec<u8>,
    played: Vec<(Seat, u8)>,
    dealt: bool,
    void: bool,
}

/// Commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    Start { dealer: Seat },
    Deal { hands: Vec<Vec<u8>>, talon: Vec<u8> },
    Play { card: u8 },
}

/// Events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Started {
        dealer: Seat,
    },
    Dealt(Dealt<u8>),
    Played {
        seat: Seat,
        card: u8,
    },
    /// The deal voided the match (it follows `Dealt`).
    Voided,
}

/// The card whose dealing into the talon voids the match.
const VOIDING: u8 = 0;

/// Refusals.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("not now")]
    NotNow,
    #[error("{0} does not hold that card")]
    NotHeld(Seat),
}

/// A seat's view: its hand, and whether it is its turn.
#[derive(Clone, Debug)]
pub(crate) struct View {
    hand: Vec<u8>,
    turn: bool,
}

impl HighCard {
    fn position(&self, seat: Seat) -> Option<usize> {
        let dealer = self.dealer?;
        (0..SEATS).find(|p| dealer.offset(p + 1, SEATS) == seat)
    }

    fn hand(&self, seat: Seat) -> &[u8] {
        self.position(seat)
            .and_then(|p| self.hands.get(p))
            .map_or(&[], Vec::as_slice)
    }
}

impl TableGame for HighCard {
    const NAME: &'static str = "high_card";
    type Options = ();
    type Command = Command;
    type Event = Event;
    type Card = u8;
    type Error = Refused;
    type SeatView = View;
    type PublicView = Vec<(Seat, u8)>;

    fn layout((): &()) -> Result<Layout, Refused> {
        Ok(Layout {
            seats: SEATS,
            deck: Deck::Tarot3,
        })
    }

    fn start((): &(), first_dealer: Seat) -> Command {
        Command::Start {
            dealer: first_dealer,
        }
    }

    fn start_hand(deal: &Deal) -> Result<Command, Refused> {
        Ok(Command::Deal {
            hands: deal.hands.clone(),
            talon: deal.chien.clone(),
        })
    }

    fn decide(&self, actor: Actor, command: &Command) -> Result<Vec<Event>, Refused> {
        match (actor, command) {
            (Actor::Table, Command::Start { dealer }) if self.dealer.is_none() => {
                Ok(vec![Event::Started { dealer: *dealer }])
            }
            (Actor::Table, Command::Deal { hands, talon }) if self.deal_due().is_some() => {
                let mut events = vec![Event::Dealt(Dealt {
                    hand: 0,
                    dealer: self.dealer.ok_or(Refused::NotNow)?,
                    hands: hands.clone(),
                    talon: talon.clone(),
                })];
                if talon.contains(&VOIDING) {
                    events.push(Event::Voided);
                }
                Ok(events)
            }
            (Actor::Seat(seat), Command::Play { card }) if self.turn() == Some(seat) => {
                if self.hand(seat).contains(card) {
                    Ok(vec![Event::Played { seat, card: *card }])
                } else {
                    Err(Refused::NotHeld(seat))
                }
            }
            _ => Err(Refused::NotNow),
        }
    }

    fn apply(&mut self, event: &Event) {
        match event {
            Event::Started { dealer } => self.dealer = Some(*dealer),
            Event::Dealt(dealt) => {
                self.hands = dealt.hands.clone();
                self.talon = dealt.talon.clone();
                self.dealt = true;
            }
            Event::Played { seat, card } => {
                if let Some(hand) = self.position(*seat).and_then(|p| self.hands.get_mut(p)) {
                    hand.retain(|c| c != card);
                }
                self.played.push((*seat, *card));
            }
            Event::Voided => self.void = true,
        }
    }

    fn command_of(event: &Event) -> Option<(Actor, Command)> {
        Some(match event {
            Event::Voided => return None,
            Event::Started { dealer } => (Actor::Table, Command::Start { dealer: *dealer }),
            Event::Dealt(d) => (
                Actor::Table,
                Command::Deal {
                    hands: d.hands.clone(),
                    talon: d.talon.clone(),
                },
            ),
            Event::Played { seat, card } => (Actor::Seat(*seat), Command::Play { card: *card }),
        })
    }

    fn kind(event: &Event) -> &'static str {
        match event {
            Event::Started { .. } => "started",
            Event::Dealt(_) => "dealt",
            Event::Played { .. } => "played",
            Event::Voided => "voided",
        }
    }

    fn started(&self) -> bool {
        self.dealer.is_some()
    }

    fn deal_due(&self) -> Option<u32> {
        (self.dealer.is_some() && !self.dealt).then_some(0)
    }

    fn hands_dealt(&self) -> u32 {
        u32::from(self.dealt)
    }

    fn turn(&self) -> Option<Seat> {
        let dealer = self.dealer?;
        (self.dealt && !self.void && self.played.len() < SEATS)
            .then(|| dealer.offset(self.played.len() + 1, SEATS))
    }

    fn legal_commands(&self, seat: Seat) -> Vec<Command> {
        if self.turn() != Some(seat) {
            return Vec::new();
        }
        self.hand(seat)
            .iter()
            .map(|&card| Command::Play { card })
            .collect()
    }

    fn outcome(&self) -> Option<Outcome> {
        if self.void {
            return Some(Outcome {
                sides: Seat::all(SEATS).map(|s| vec![s]).collect(),
                scores: vec![0; SEATS],
                placings: vec![1; SEATS],
            });
        }
        if self.played.len() < SEATS {
            return None;
        }
        let card_of = |seat: Seat| {
            self.played
                .iter()
                .find(|(s, _)| *s == seat)
                .map_or(0, |(_, c)| i32::from(*c))
        };
        let best = Seat::all(SEATS).map(card_of).max().unwrap_or(0);
        Some(Outcome {
            sides: Seat::all(SEATS).map(|s| vec![s]).collect(),
            scores: Seat::all(SEATS).map(card_of).collect(),
            placings: Seat::all(SEATS)
                .map(|s| if card_of(s) == best { 1 } else { 2 })
                .collect(),
        })
    }

    fn seat_view(&self, seat: Seat) -> Option<View> {
        (seat.index() < SEATS).then(|| View {
            hand: self.hand(seat).to_vec(),
            turn: self.turn() == Some(seat),
        })
    }

    fn public_view(&self) -> Vec<(Seat, u8)> {
        self.played.clone()
    }

    fn bot_command(view: &View, _seed: u64) -> Option<Command> {
        let card = *view.hand.first()?;
        view.turn.then_some(Command::Play { card })
    }

    fn dealt(event: &Event) -> Option<Dealt<u8>> {
        match event {
            Event::Dealt(dealt) => Some(dealt.clone()),
            _ => None,
        }
    }

    fn deal_event(dealt: Dealt<u8>) -> Event {
        Event::Dealt(dealt)
    }
}

#[cfg(test)]
mod tests {
    use fairdeal_table_game::Deal;
    use uuid::Uuid;

    use super::*;
    use crate::domain::testing::{fold, seat};
    use crate::domain::{
        Created, DealtHand, Due, FIRST_DEALER, Next, Privacy, Table, TableError, TableEvent,
        Viewer, create, engine_log,
    };

    /// A new table of the game, its bots at seats 1 and 2.
    fn created() -> Created<HighCard> {
        Created {
            table_id: Uuid::now_v7(),
            creator: Uuid::now_v7(),
            options: (),
            layout: HighCard::layout(&()).unwrap(),
            bots: vec![false, true, true],
            move_seconds: 30,
            commitment: "c".repeat(64),
            short_code: "ccccc".into(),
            first_dealer: FIRST_DEALER,
            latest_end_ms: None,
        }
    }

    #[test]
    fn a_three_seat_game_with_a_talon_runs_through_the_table_and_hides_the_talon_until_the_end() {
        let mut events = create(created());
        let mut t: Table<HighCard> = fold(None, &events);
        assert_eq!(t.seats().count(), 3);
        assert_eq!(t.open_seats(), [seat(0)]);
        let player = Uuid::now_v7();
        assert!(matches!(
            t.sit(player, seat(3), 0),
            Err(TableError::Invalid { field: "seat", .. })
        ));
        // The one open seat taken: the match starts.
        let mut take = |t: Table<HighCard>, new: Vec<TableEvent<HighCard>>| {
            let t = fold(Some(t), &new);
            events.extend(new);
            t
        };
        let new = t.sit(player, seat(0), 0).unwrap().events;
        t = take(t, new);
        assert!(t.started());
        assert_eq!(t.next(0), Next::Deal { hand: 0 });

        let deal = Deal::from_seeds(Deck::Tarot3, "server", "client", "0");
        let dealt = DealtHand {
            hand: 0,
            deal: deal.clone(),
            commitment: "c".repeat(64),
            client_seed: "client".into(),
        };
        let new = t.deal(&dealt, 0).unwrap().events;
        // The public start, one private event per seat (from the dealer's left), the talon.
        let privacy: Vec<Privacy> = new.iter().map(TableEvent::privacy).collect();
        assert_eq!(
            privacy,
            [
                Privacy::Public,
                Privacy::Seat(seat(1)),
                Privacy::Seat(seat(2)),
                Privacy::Seat(seat(0)),
                Privacy::Hidden,
            ]
        );
        let talon = new.last().unwrap();
        assert_eq!(
            talon,
            &TableEvent::TalonDealt {
                hand: 0,
                cards: deal.chien.clone(),
            }
        );
        for viewer in Seat::all(3).map(Viewer::Seat).chain([Viewer::Spectator]) {
            assert!(!talon.visible_to(viewer, false));
            assert!(talon.visible_to(viewer, true));
        }
        t = take(t, new);
        // The fold put the deal back together: each seat holds its hand, the talon is kept.
        assert_eq!(t.game.hand(seat(1)), deal.hands[0].as_slice());
        assert_eq!(t.game.hand(seat(0)), deal.hands[2].as_slice());
        assert_eq!(t.game.talon, deal.chien);

        // Bots at seats 1 and 2 play; the player at seat 0 plays last.
        let mut now = 0;
        while t.finished.is_none() {
            let new = match t.next(now) {
                Next::Bot(s) => t.bot_move(s, now).unwrap().events,
                Next::Wait => {
                    let turn = t.game.turn().unwrap();
                    assert_eq!(turn, seat(0));
                    let legal = t.game.legal_commands(turn);
                    now += 1_000;
                    t.act(player, t.version, "m1", legal.last().unwrap(), now)
                        .unwrap()
                        .events
                }
                other => panic!("unexpected {other:?}"),
            };
            t = take(t, new);
        }
        let finished = t.finished.clone().unwrap();
        assert_eq!(finished.players, [Some(player), None, None]);
        assert_eq!(finished.outcome.sides.len(), 3);
        assert_eq!(finished.outcome.winners().count(), 1);
        assert_eq!(finished.hands_played, 1);
        assert_eq!(t.next(now), Next::Reveal);

        // The game's log re-decides to where the table stands.
        let log = engine_log(&events);
        assert_eq!(HighCard::verify(&log), Ok(t.game.clone()));
    }

    /// A match that ends at a deal (no player's command) is finished by the table's next
    /// step, and the seed revealed after it: before, such a table waited for nobody. The
    /// deal's events stand as a stream written then holds them, so the same step finishes
    /// such a stream now.
    #[test]
    fn a_match_ended_by_a_deal_is_finished_by_the_next_step() {
        let mut events = create(created());
        let mut t: Table<HighCard> = fold(None, &events);
        let player = Uuid::now_v7();
        let sat = t.sit(player, seat(0), 0).unwrap().events;
        t = fold(Some(t), &sat);
        events.extend(sat);
        // The first hand number whose deal puts the voiding card in the talon.
        let deal = (0..1_000)
            .map(|n| Deal::from_seeds(Deck::Tarot3, "server", "client", &n.to_string()))
            .find(|deal| deal.chien.contains(&VOIDING))
            .expect("a deal with the card in its talon");
        let dealt = DealtHand {
            hand: 0,
            deal,
            commitment: "c".repeat(64),
            client_seed: "client".into(),
        };
        let new = t.deal(&dealt, 0).unwrap().events;
        t = fold(Some(t), &new);
        events.extend(new);
        // The deadlines projection keeps each table's last due: the deal owed, and the deal
        // that voided the match changes nothing of it. A replica steps every owed row when
        // it starts, so one with the step below finishes a table left here before the step
        // existed.
        assert_eq!(
            events.iter().filter_map(TableEvent::due).next_back(),
            Some(Due::Service),
            "the table's row is a step owed"
        );
        assert!(t.game.outcome().is_some(), "the deal ended the match");
        assert!(t.finished.is_none());
        assert_eq!(t.next(0), Next::Finish, "the table has a step to take");
        assert_eq!(t.game.turn(), None);

        let new = t.end_match(0).events;
        assert!(matches!(new.as_slice(), [TableEvent::GameFinished(_)]));
        t = fold(Some(t), &new);
        events.extend(new);
        let finished = t.finished.clone().unwrap();
        assert_eq!(finished.outcome.scores, [0, 0, 0]);
        assert_eq!(finished.hands_played, 1);
        assert_eq!(t.next(0), Next::Reveal);
        // Once: a finished table has nothing more to finish.
        assert!(t.end_match(0).events.is_empty());
        assert_eq!(HighCard::verify(&engine_log(&events)), Ok(t.game.clone()));
    }
}
