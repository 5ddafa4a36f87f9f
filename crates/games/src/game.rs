//! The match state machine.
//!
//! [`Game`] is the state of one match; it changes only through [`Game::apply`], one
//! [`Event`] at a time, so a match is the fold of its events ([`Game::replay`]).
//! [`Game::decide`] checks a [`Command`] against the state and returns the events it
//! causes, without mutating anything: a refused command changes nothing.
//! [`Game::verify`] re-decides a whole log, which is what an auditor runs.
//!
//! `apply` trusts its events (they come from `decide`, or from a log `verify` has checked)
//! but is total: an inconsistent event never panics, it is applied as far as it makes
//! sense.

use fairdeal_table_game::TableGame;
use serde::{Deserialize, Serialize};

use crate::card::{Card, CardSet, JeuDu10Cards, Suit};
use crate::command::{Actor, Bid, Call, Command};
use crate::error::{ContractError, DealError, Phase, RuleError};
use crate::event::{Event, HandScore, MatchEnd};
use crate::options::{Mode, Purchase, Rules};
use crate::scoring::{card_points, match_end, score_hand};
use crate::seat::{Seat, Team};

/// One match of Jeu du 10: the fold of its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Game {
    /// Number of events applied; a version for optimistic concurrency, and the
    /// per-decision salt of the bots.
    version: u64,
    /// The validated options, from `match_started`.
    rules: Option<Rules>,
    /// Where the match stands.
    phase: Phase,
    /// Scores per team.
    scores: [i32; 2],
    /// Remaining budget per team (trump by purchase with a budget; zeros otherwise).
    budgets: [u32; 2],
    /// Number of the next hand to deal (its deal's salt).
    next_hand: u32,
    /// Dealer of the next hand.
    next_dealer: Seat,
    /// The hand in progress, or the last one once it is scored.
    hand: Option<Hand>,
    /// Scoring of the last finished hand.
    last_score: Option<HandScore>,
    /// The winner and why, once the match is over.
    result: Option<(Team, MatchEnd)>,
}

/// One played card, in the public history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlayedCard {
    /// Who played it.
    pub seat: Seat,
    /// The card.
    pub card: Card,
}

/// One call of the auction, in the public history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AuctionCall {
    /// Who called.
    pub seat: Seat,
    /// The bid, or pass.
    pub call: Call,
}

/// A finished trick.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Trick {
    /// The four cards in the order played (the first was led).
    pub cards: [PlayedCard; 4],
    /// Who won it.
    pub winner: Seat,
    /// Face card points in it.
    pub points: u8,
}

/// The state of one hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hand {
    /// Hand number.
    pub(crate) number: u32,
    /// The dealer.
    pub(crate) dealer: Seat,
    /// Cards each seat received (for penalised aces: who held each ace).
    pub(crate) dealt: [CardSet; 4],
    /// Cards each seat still holds.
    pub(crate) hands: [CardSet; 4],
    /// Auction calls, in order.
    pub(crate) calls: Vec<AuctionCall>,
    /// Seats that passed.
    pub(crate) passed: [bool; 4],
    /// Highest bid so far and who made it.
    pub(crate) highest: Option<(Seat, Bid)>,
    /// Whether a player of each team bid.
    pub(crate) bid_by_team: [bool; 2],
    /// The auction winner and the winning bid.
    pub(crate) contract: Option<(Seat, Bid)>,
    /// The trump suit, once named.
    pub(crate) trump: Option<Suit>,
    /// Cards of the trick being played.
    pub(crate) trick: Vec<PlayedCard>,
    /// Finished tricks.
    pub(crate) tricks: Vec<Trick>,
    /// Cards won by each team.
    pub(crate) won: [CardSet; 2],
    /// Who must act (auction, naming trump or play); `None` once the hand is over.
    pub(crate) turn: Option<Seat>,
}

impl Hand {
    /// The first seat clockwise after `seat` that has not passed.
    fn next_bidder(&self, seat: Seat) -> Option<Seat> {
        (1..=4)
            .map(|k| seat.offset(k))
            .find(|s| !self.passed[s.index()])
    }

    /// Seats still in the auction.
    fn active_bidders(&self) -> usize {
        self.passed.iter().filter(|p| !**p).count()
    }
}

impl Game {
    /// An empty state, before `match_started`.
    pub fn new() -> Game {
        Game::default()
    }

    /// The fold of `events` from the empty state ([`TableGame::replay`]).
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a Event>) -> Game {
        <Game as TableGame>::replay(events)
    }

    /// Re-decides a whole log ([`TableGame::verify`]): every event must be exactly what
    /// `decide` produces for the command it records (a bid for `bid_placed`, a deal for
    /// `hand_started`, ...), so a log with a forged score, an illegal card or a missing
    /// trick is rejected with the position of the first bad event. Returns the final state.
    pub fn verify(events: &[Event]) -> Result<Game, VerifyError> {
        <Game as TableGame>::verify(events)
    }

    /// Number of events applied.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Where the match stands.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The rules, once the match has started.
    pub fn rules(&self) -> Option<&Rules> {
        self.rules.as_ref()
    }

    /// Scores per team.
    pub fn scores(&self) -> [i32; 2] {
        self.scores
    }

    /// Remaining budget per team (trump by purchase with a budget).
    pub fn budgets(&self) -> [u32; 2] {
        self.budgets
    }

    /// Number of the next hand to deal: the salt of its deal.
    pub fn next_hand_number(&self) -> u32 {
        self.next_hand
    }

    /// Dealer of the next hand.
    pub fn next_dealer(&self) -> Seat {
        self.next_dealer
    }

    /// The seat that must act now, if any (`None`: the table must deal, or it is over).
    pub fn turn(&self) -> Option<Seat> {
        match self.phase {
            Phase::Auction | Phase::NamingTrump | Phase::Playing => {
                self.hand.as_ref().and_then(|h| h.turn)
            }
            _ => None,
        }
    }

    /// The winner and why, once the match is over.
    pub fn result(&self) -> Option<(Team, MatchEnd)> {
        self.result
    }

    /// Scoring of the last finished hand.
    pub fn last_score(&self) -> Option<&HandScore> {
        self.last_score.as_ref()
    }

    /// The cards `seat` holds now (authoritative state, not a view: never send it to
    /// another seat).
    pub fn hand_of(&self, seat: Seat) -> CardSet {
        self.hand
            .as_ref()
            .map_or(CardSet::EMPTY, |h| h.hands[seat.index()])
    }

    /// The cards each seat was dealt in the current (or last) hand, by seat.
    pub fn dealt(&self) -> Option<[CardSet; 4]> {
        self.hand.as_ref().map(|h| h.dealt)
    }

    /// Cards won by each team so far in the current (or last) hand.
    pub fn won(&self) -> [CardSet; 2] {
        self.hand.as_ref().map_or([CardSet::EMPTY; 2], |h| h.won)
    }

    /// The current (or last) hand, for views.
    pub(crate) fn hand(&self) -> Option<&Hand> {
        self.hand.as_ref()
    }

    /// Checks `command` from `actor` and returns the events it causes; never mutates.
    pub fn decide(&self, actor: Actor, command: &Command) -> Result<Vec<Event>, RuleError> {
        ContractError::sender(
            actor == Actor::Table,
            command.is_table_command(),
            command.name(),
        )?;
        match (actor, command) {
            (
                _,
                Command::StartMatch {
                    options,
                    first_dealer,
                },
            ) => {
                if self.rules.is_some() {
                    return Err(ContractError::MatchAlreadyStarted.into());
                }
                Rules::new(options)?;
                Ok(vec![Event::MatchStarted {
                    options: options.clone(),
                    first_dealer: *first_dealer,
                }])
            }
            (_, Command::StartHand { hands }) => self.decide_start_hand(hands),
            (Actor::Seat(seat), Command::Bid { bid }) => self.decide_bid(seat, *bid),
            (Actor::Seat(seat), Command::Pass) => self.decide_pass(seat),
            (Actor::Seat(seat), Command::NameTrump { suit }) => {
                self.acting(seat, command)?;
                Ok(vec![Event::TrumpNamed { seat, suit: *suit }])
            }
            (Actor::Seat(seat), Command::PlayCard { card }) => self.decide_play(seat, *card),
            // Table commands from the table and seat commands from a seat are handled
            // above; this arm is the table sending a seat command, already refused.
            (Actor::Table, c) => Err(ContractError::SeatOnly { command: c.name() }.into()),
        }
    }

    /// Every command `seat` may send now (empty when it is not that seat's turn).
    pub fn legal_commands(&self, seat: Seat) -> Vec<Command> {
        let Some(rules) = &self.rules else {
            return Vec::new();
        };
        let Some(hand) = &self.hand else {
            return Vec::new();
        };
        if self.turn() != Some(seat) {
            return Vec::new();
        }
        match self.phase {
            Phase::Auction => {
                let mut out = Vec::new();
                if self.check_pass(rules, hand, seat).is_ok() {
                    out.push(Command::Pass);
                }
                let step = usize::from(rules.bid_step().max(1));
                for amount in (rules.min_bid()..=rules.max_bid()).step_by(step) {
                    let bid = Bid::Points(amount);
                    if self.check_bid(rules, hand, seat, bid).is_ok() {
                        out.push(Command::Bid { bid });
                    }
                }
                if self.check_bid(rules, hand, seat, Bid::Game).is_ok() {
                    out.push(Command::Bid { bid: Bid::Game });
                }
                out
            }
            Phase::NamingTrump => Suit::ALL
                .into_iter()
                .map(|suit| Command::NameTrump { suit })
                .collect(),
            Phase::Playing => playable(hand, seat)
                .iter()
                .map(|card| Command::PlayCard { card })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The rules and hand, if `seat` may act now in the phase `command` belongs to.
    fn acting(&self, seat: Seat, command: &Command) -> Result<(&Rules, &Hand), RuleError> {
        let expected = match command {
            Command::Bid { .. } | Command::Pass => Phase::Auction,
            Command::NameTrump { .. } => Phase::NamingTrump,
            _ => Phase::Playing,
        };
        let (rules, hand) = match (&self.rules, &self.hand) {
            (None, _) => return Err(ContractError::MatchNotStarted.into()),
            (Some(r), Some(h)) => (r, h),
            (Some(_), None) => {
                return Err(ContractError::WrongPhase {
                    command: command.name(),
                    phase: self.phase,
                }
                .into());
            }
        };
        ContractError::in_phase(self.phase, expected, command.name())?;
        ContractError::turn(seat.into(), hand.turn.map(Into::into))?;
        Ok((rules, hand))
    }

    fn decide_start_hand(&self, hands: &[Vec<Card>]) -> Result<Vec<Event>, RuleError> {
        let Some(rules) = &self.rules else {
            return Err(ContractError::MatchNotStarted.into());
        };
        ContractError::deal_due(self.phase, "start_hand")?;
        if hands.len() != 4 {
            return Err(DealError::WrongHandCount { found: hands.len() }.into());
        }
        let mut seen = CardSet::EMPTY;
        for (i, hand) in hands.iter().enumerate() {
            if hand.len() != rules.hand_len() {
                return Err(DealError::WrongHandSize {
                    hand: i,
                    found: hand.len(),
                    expected: rules.hand_len(),
                }
                .into());
            }
            for &card in hand {
                if !rules.cards().contains(card) {
                    return Err(DealError::CardNotInDeck {
                        card,
                        deck: rules.deck(),
                    }
                    .into());
                }
                if !seen.insert(card) {
                    return Err(DealError::DuplicateCard { card }.into());
                }
            }
        }
        Ok(vec![Event::HandStarted {
            hand: self.next_hand,
            dealer: self.next_dealer,
            hands: hands.to_vec(),
        }])
    }

    /// Whether `seat` may pass now.
    fn check_pass(&self, rules: &Rules, hand: &Hand, seat: Seat) -> Result<(), RuleError> {
        // The last player left, with nobody having bid, must bid, unless the team has no
        // budget left to pay even the minimum (then it passes and gets trump for nothing).
        if hand.highest.is_none() && hand.active_bidders() == 1 {
            let broke = rules.mode() == Mode::Purchase(Purchase::Budget)
                && self.budgets[seat.team().index()] < u32::from(rules.min_bid());
            if !broke {
                return Err(RuleError::MustBid);
            }
        }
        Ok(())
    }

    /// Whether `seat` may bid `bid` now.
    fn check_bid(&self, rules: &Rules, hand: &Hand, seat: Seat, bid: Bid) -> Result<(), RuleError> {
        let highest = hand.highest.map(|(_, b)| b);
        let team = seat.team().index();
        match bid {
            Bid::Game => {
                if !rules.game_bid_allowed() {
                    return Err(RuleError::GameBidNotAllowed);
                }
                if highest == Some(Bid::Game) {
                    return Err(RuleError::GameAlreadyBid);
                }
                if self.scores[team] < 0 {
                    return Err(RuleError::GameBidWithNegativeScore {
                        score: self.scores[team],
                    });
                }
                Ok(())
            }
            Bid::Points(amount) => {
                let step = rules.bid_step().max(1);
                let minimum = match highest {
                    Some(Bid::Game) => return Err(RuleError::GameAlreadyBid),
                    Some(Bid::Points(h)) => rules.min_bid().max(h.saturating_add(step)),
                    None => rules.min_bid(),
                };
                if amount % step != 0 {
                    return Err(RuleError::NotAMultiple { bid: amount, step });
                }
                if amount < minimum {
                    return Err(RuleError::BidTooLow {
                        bid: amount,
                        minimum,
                    });
                }
                if let Mode::Purchase(Purchase::Budget) = rules.mode() {
                    let budget = self.budgets[team];
                    if u32::from(amount) > budget {
                        return Err(RuleError::BudgetExceeded {
                            bid: amount,
                            budget,
                        });
                    }
                } else if amount > rules.max_bid() {
                    return Err(RuleError::BidTooHigh {
                        bid: amount,
                        maximum: rules.max_bid(),
                    });
                }
                Ok(())
            }
        }
    }

    fn decide_bid(&self, seat: Seat, bid: Bid) -> Result<Vec<Event>, RuleError> {
        let (rules, hand) = self.acting(seat, &Command::Bid { bid })?;
        self.check_bid(rules, hand, seat, bid)?;
        let mut events = vec![Event::BidPlaced { seat, bid }];
        // A bid ends the auction only when the bidder is the last one left (a forced bid).
        if hand.active_bidders() == 1 {
            events.push(Event::AuctionWon { seat, bid });
        }
        Ok(events)
    }

    fn decide_pass(&self, seat: Seat) -> Result<Vec<Event>, RuleError> {
        let (rules, hand) = self.acting(seat, &Command::Pass)?;
        self.check_pass(rules, hand, seat)?;
        let mut events = vec![Event::PlayerPassed { seat }];
        let left = hand.active_bidders().saturating_sub(1);
        match (left, hand.highest) {
            // One player left who holds the highest bid: the auction is won.
            (1, Some((winner, bid))) => events.push(Event::AuctionWon { seat: winner, bid }),
            // The last player passed with nothing bid: only possible with an empty budget;
            // that player takes trump for nothing.
            (0, _) => events.push(Event::AuctionWon {
                seat,
                bid: Bid::Points(0),
            }),
            _ => {}
        }
        Ok(events)
    }

    fn decide_play(&self, seat: Seat, card: Card) -> Result<Vec<Event>, RuleError> {
        let (rules, hand) = self.acting(seat, &Command::PlayCard { card })?;
        let held = hand.hands[seat.index()];
        if !held.contains(card) {
            return Err(RuleError::CardNotInHand { card });
        }
        if let Some(led) = hand.trick.first().map(|p| p.card.suit())
            && card.suit() != led
            && !held.of_suit(led).is_empty()
        {
            return Err(RuleError::MustFollowSuit { led, card });
        }
        let mut events = vec![Event::CardPlayed { seat, card }];
        if hand.trick.len() < 3 {
            return Ok(events);
        }
        // Fourth card: the trick is won.
        let trump = hand.trump.unwrap_or(Suit::Spades);
        let mut cards = hand.trick.clone();
        cards.push(PlayedCard { seat, card });
        let winner = trick_winner(&cards, trump).unwrap_or(seat);
        let points: u8 = cards.iter().map(|p| p.card.points()).sum();
        events.push(Event::TrickWon {
            seat: winner,
            trick: u8::try_from(hand.tricks.len()).unwrap_or(u8::MAX),
            points,
        });
        let cards_left: usize = hand.hands.iter().map(|h| h.len()).sum();
        if cards_left > 1 {
            return Ok(events);
        }
        // Last trick: score the hand.
        let mut won = hand.won;
        won[winner.team().index()] =
            won[winner.team().index()].union(cards.iter().map(|p| p.card).collect());
        let (declarer, bid) = hand.contract.unwrap_or((seat, Bid::Points(0)));
        let team = declarer.team();
        let points = card_points(rules.penalised_aces(), &hand.dealt, &won);
        let outcome = score_hand(rules, team, bid, points.net, self.scores, hand.bid_by_team);
        let scores = [
            self.scores[0].saturating_add(outcome.deltas[0]),
            self.scores[1].saturating_add(outcome.deltas[1]),
        ];
        events.push(Event::HandScored(HandScore {
            hand: hand.number,
            declarer,
            bid,
            card_points: points.net,
            ace_transfers: points.ace_transfers,
            contract_made: outcome.contract_made,
            deltas: outcome.deltas,
            scores,
        }));
        if let Some((team, reason)) = match_end(rules, team, bid, outcome.contract_made, scores) {
            events.push(Event::MatchWon {
                team,
                reason,
                scores,
            });
        }
        Ok(events)
    }

    /// Applies one event: the only way the state changes.
    pub fn apply(&mut self, event: &Event) {
        self.version = self.version.saturating_add(1);
        match event {
            Event::MatchStarted {
                options,
                first_dealer,
            } => {
                // A log can only hold valid options (`decide` checked them); invalid ones
                // leave the match unstarted rather than panic.
                if let Ok(rules) = Rules::new(options) {
                    let budget = rules.budget().unwrap_or(0);
                    self.budgets = [budget, budget];
                    self.rules = Some(rules);
                    self.next_dealer = *first_dealer;
                    self.phase = Phase::AwaitingDeal;
                }
            }
            Event::HandStarted {
                hand,
                dealer,
                hands,
            } => {
                let mut dealt = [CardSet::EMPTY; 4];
                for (i, cards) in hands.iter().take(4).enumerate() {
                    dealt[dealer.offset(1 + i).index()] = cards.iter().copied().collect();
                }
                self.hand = Some(Hand {
                    number: *hand,
                    dealer: *dealer,
                    dealt,
                    hands: dealt,
                    calls: Vec::new(),
                    passed: [false; 4],
                    highest: None,
                    bid_by_team: [false; 2],
                    contract: None,
                    trump: None,
                    trick: Vec::with_capacity(4),
                    tricks: Vec::with_capacity(10),
                    won: [CardSet::EMPTY; 2],
                    turn: Some(dealer.next()),
                });
                self.next_hand = hand.saturating_add(1);
                self.next_dealer = dealer.next();
                self.phase = Phase::Auction;
            }
            Event::BidPlaced { seat, bid } => {
                if let Some(h) = &mut self.hand {
                    h.calls.push(AuctionCall {
                        seat: *seat,
                        call: Call::Bid(*bid),
                    });
                    h.highest = Some((*seat, *bid));
                    h.bid_by_team[seat.team().index()] = true;
                    h.turn = h.next_bidder(*seat);
                }
            }
            Event::PlayerPassed { seat } => {
                if let Some(h) = &mut self.hand {
                    h.calls.push(AuctionCall {
                        seat: *seat,
                        call: Call::Pass,
                    });
                    h.passed[seat.index()] = true;
                    h.turn = h.next_bidder(*seat);
                }
            }
            Event::AuctionWon { seat, bid } => {
                if let Some(h) = &mut self.hand {
                    h.contract = Some((*seat, *bid));
                    h.turn = Some(*seat);
                }
                let pays_budget = self
                    .rules
                    .as_ref()
                    .is_some_and(|r| r.mode() == Mode::Purchase(Purchase::Budget));
                if pays_budget {
                    let budget = &mut self.budgets[seat.team().index()];
                    *budget = budget.saturating_sub(u32::from(bid.points().unwrap_or(0)));
                }
                self.phase = Phase::NamingTrump;
            }
            Event::TrumpNamed { seat, suit } => {
                if let Some(h) = &mut self.hand {
                    h.trump = Some(*suit);
                    h.turn = Some(*seat);
                }
                self.phase = Phase::Playing;
            }
            Event::CardPlayed { seat, card } => {
                if let Some(h) = &mut self.hand {
                    h.hands[seat.index()].remove(*card);
                    h.trick.push(PlayedCard {
                        seat: *seat,
                        card: *card,
                    });
                    h.turn = Some(seat.next());
                }
            }
            Event::TrickWon { seat, points, .. } => {
                if let Some(h) = &mut self.hand {
                    let team = seat.team().index();
                    h.won[team] = h.won[team].union(h.trick.iter().map(|p| p.card).collect());
                    // A trick always has four cards when `decide` wins it; a corrupt log
                    // with fewer is folded without recording the trick.
                    if let Ok(cards) = <[PlayedCard; 4]>::try_from(h.trick.as_slice()) {
                        h.tricks.push(Trick {
                            cards,
                            winner: *seat,
                            points: *points,
                        });
                    }
                    h.trick.clear();
                    h.turn = Some(*seat);
                }
            }
            Event::HandScored(score) => {
                self.scores = [
                    self.scores[0].saturating_add(score.deltas[0]),
                    self.scores[1].saturating_add(score.deltas[1]),
                ];
                if let Some(h) = &mut self.hand {
                    h.turn = None;
                }
                self.last_score = Some(score.clone());
                self.phase = Phase::AwaitingDeal;
            }
            Event::MatchWon { team, reason, .. } => {
                self.result = Some((*team, *reason));
                self.phase = Phase::Finished;
            }
        }
    }
}

/// The cards `seat` may play to the current trick: the led suit if it holds any, else
/// anything.
pub(crate) fn playable(hand: &Hand, seat: Seat) -> CardSet {
    let held = hand.hands[seat.index()];
    match hand.trick.first() {
        Some(led) => {
            let follow = held.of_suit(led.card.suit());
            if follow.is_empty() { held } else { follow }
        }
        None => held,
    }
}

/// The winner of a (possibly partial) trick: the highest trump, else the highest card of
/// the suit led.
pub fn trick_winner(cards: &[PlayedCard], trump: Suit) -> Option<Seat> {
    let first = cards.first()?;
    let led = first.card.suit();
    let best = cards.iter().skip(1).fold(first, |best, p| {
        if p.card.beats(best.card, led, trump) {
            p
        } else {
            best
        }
    });
    Some(best.seat)
}

/// The command (and its sender) recorded by an event that a command causes first;
/// `None` for events that only follow another (auction won, trick won, scores, match won).
pub fn command_of(event: &Event) -> Option<(Actor, Command)> {
    Some(match event {
        Event::MatchStarted {
            options,
            first_dealer,
        } => (
            Actor::Table,
            Command::StartMatch {
                options: options.clone(),
                first_dealer: *first_dealer,
            },
        ),
        Event::HandStarted { hands, .. } => (
            Actor::Table,
            Command::StartHand {
                hands: hands.clone(),
            },
        ),
        Event::BidPlaced { seat, bid } => (Actor::Seat(*seat), Command::Bid { bid: *bid }),
        Event::PlayerPassed { seat } => (Actor::Seat(*seat), Command::Pass),
        Event::TrumpNamed { seat, suit } => {
            (Actor::Seat(*seat), Command::NameTrump { suit: *suit })
        }
        Event::CardPlayed { seat, card } => (Actor::Seat(*seat), Command::PlayCard { card: *card }),
        Event::AuctionWon { .. }
        | Event::TrickWon { .. }
        | Event::HandScored(_)
        | Event::MatchWon { .. } => return None,
    })
}

/// Why a log failed [`Game::verify`].
pub type VerifyError = fairdeal_table_game::VerifyError<RuleError, Event>;
