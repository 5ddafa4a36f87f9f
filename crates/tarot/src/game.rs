//! The match state machine.
//!
//! [`Tarot`] is the state of one match; it changes only through [`Tarot::apply`], one
//! [`Event`] at a time, so a match is the fold of its events. [`Tarot::decide`] checks a
//! [`Command`] against the state and returns the events it causes, without mutating
//! anything: a refused command changes nothing.
//!
//! `apply` trusts its events (they come from `decide`, or from a log the auditor's
//! re-decision accepted) but is total: an inconsistent event never panics, it is applied as
//! far as it makes sense.
//!
//! Seats turn in increasing number (the table's clockwise), which stands for the FFT's
//! counter-clockwise turn: the seat after the dealer is served first, speaks first and
//! leads first, and the deal passes to it (see `RULES.md`, "Seats and direction").

use fairdeal_table_game::{Actor, Seat};

use crate::card::{CAVALIER, Card, CardSet, DAME, ROI, Suit, TarotCards, VALET};
use crate::command::Command;
use crate::contract::{Camp, Contract, Poignee};
use crate::error::{ContractError, DealError, Phase, RuleError};
use crate::event::{AuctionCall, DealScore, Event, ShownPoignee};
use crate::options::TarotOptions;
use crate::scoring::{chelem, contract_score, seat_deltas, tally};
use crate::trick::{PlayedCard, Trick, check_play, playable, winning_position};

/// One match of French Tarot: the fold of its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tarot {
    /// Number of events applied: a version for optimistic concurrency, and the
    /// per-decision salt of the bot.
    version: u64,
    /// The validated options, from `match_started`.
    options: Option<TarotOptions>,
    /// Where the match stands.
    phase: Phase,
    /// Each seat's cumulative score.
    scores: Vec<i32>,
    /// Number of the next deal (its deal's salt).
    next_deal: u32,
    /// Dealer of the next deal.
    next_dealer: Seat,
    /// The deal in progress, or the last one once it is over.
    deal: Option<DealState>,
    /// Scoring of the last scored deal.
    last_score: Option<DealScore>,
}

/// The state of one deal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DealState {
    /// Deal number.
    pub(crate) number: u32,
    /// Seats at the table.
    pub(crate) seats: usize,
    /// The dealer.
    pub(crate) dealer: Seat,
    /// Cards each seat was dealt, by seat.
    pub(crate) dealt: Vec<CardSet>,
    /// The chien as dealt.
    pub(crate) chien: CardSet,
    /// Cards each seat holds now (the taker's includes a taken chien, less the écart).
    pub(crate) hands: Vec<CardSet>,
    /// The auction so far.
    pub(crate) calls: Vec<AuctionCall>,
    /// The highest bid so far and its bidder.
    pub(crate) highest: Option<(Seat, Contract)>,
    /// The taker and the contract, once the auction is won.
    pub(crate) contract: Option<(Seat, Contract)>,
    /// The card called at 5.
    pub(crate) called: Option<Card>,
    /// The called partner (the called card's holder other than the taker).
    pub(crate) partner: Option<Seat>,
    /// Whether the chien was shown and taken.
    pub(crate) chien_shown: bool,
    /// The taker's écart.
    pub(crate) ecart: CardSet,
    /// Whether the taker announced a chelem, once it has said.
    pub(crate) chelem_announced: Option<bool>,
    /// Poignées shown.
    pub(crate) poignees: Vec<ShownPoignee>,
    /// Whether each seat has played a card (a poignée comes before).
    pub(crate) has_played: Vec<bool>,
    /// The trick being played.
    pub(crate) trick: Vec<PlayedCard>,
    /// Finished tricks.
    pub(crate) tricks: Vec<Trick>,
    /// Who leads the current trick.
    pub(crate) leader: Seat,
}

impl DealState {
    /// The taker, once the auction is won.
    pub(crate) fn taker(&self) -> Option<Seat> {
        self.contract.map(|(seat, _)| seat)
    }

    /// The side of `seat`.
    fn camp(&self, seat: Seat) -> Camp {
        if Some(seat) == self.taker() || Some(seat) == self.partner {
            Camp::Attack
        } else {
            Camp::Defence
        }
    }

    fn hand(&self, seat: Seat) -> CardSet {
        self.hands.get(seat.index()).copied().unwrap_or_default()
    }

    /// The cards of the current trick, in order.
    fn trick_cards(&self) -> Vec<Card> {
        self.trick.iter().map(|p| p.card).collect()
    }

    /// The seat who played the called card, once it is played.
    pub(crate) fn called_played_by(&self) -> Option<Seat> {
        let called = self.called?;
        self.tricks
            .iter()
            .flat_map(|t| t.cards.iter())
            .chain(self.trick.iter())
            .find(|p| p.card == called)
            .map(|p| p.seat)
    }

    /// The cards `seat` may play now: [`playable`], and at 5 the first trick may not be
    /// led in the called suit except with the called card (when the leader has another
    /// card).
    fn playable(&self, seat: Seat) -> CardSet {
        let hand = self.hand(seat);
        let cards = playable(hand, &self.trick_cards());
        match self.called_suit_barred(hand) {
            Some(suit) => {
                let barred = hand
                    .of_suit(suit)
                    .difference(self.called.into_iter().collect());
                cards.difference(barred)
            }
            None => cards,
        }
    }

    /// The called suit, when a lead from `hand` may not be in it (the first lead at 5,
    /// from a hand with some card outside the suit).
    fn called_suit_barred(&self, hand: CardSet) -> Option<Suit> {
        if self.seats != 5 || !self.tricks.is_empty() || !self.trick.is_empty() {
            return None;
        }
        let suit = self.called?.suit()?;
        let outside = hand.difference(CardSet::suit(suit));
        (!outside.is_empty()).then_some(suit)
    }
}

/// The cards the taker may call at 5: every king, and when the taker holds all four kings
/// the queens (holding the four queens too, the cavaliers; then the valets).
pub fn callable(hand: CardSet) -> CardSet {
    let of_rank = |rank: u8| -> CardSet {
        Suit::ALL
            .into_iter()
            .filter_map(|s| Card::plain(s, rank))
            .collect()
    };
    let mut cards = of_rank(ROI);
    for (rank, next) in [(ROI, DAME), (DAME, CAVALIER), (CAVALIER, VALET)] {
        if !of_rank(rank).difference(hand).is_empty() {
            break;
        }
        cards = cards.union(of_rank(next));
    }
    cards
}

/// The trumps `hand` may show as `poignee` at `seats` seats, the lowest ones (with the
/// excuse only when it completes all the trumps held); `None` when it cannot.
pub fn poignee_from(hand: CardSet, poignee: Poignee, seats: usize) -> Option<Vec<Card>> {
    let needed = poignee.trumps(seats);
    let trumps = hand.trumps();
    if trumps.len() >= needed {
        return Some(trumps.iter().take(needed).collect());
    }
    if hand.contains(Card::EXCUSE) && trumps.len() + 1 == needed {
        return Some(trumps.with(Card::EXCUSE).to_vec());
    }
    None
}

/// Checks a poignée shown from `hand` at `seats` seats.
pub fn check_poignee(hand: CardSet, shown: &[Card], seats: usize) -> Result<Poignee, RuleError> {
    let mut set = CardSet::EMPTY;
    for &card in shown {
        if !card.is_trump() && !card.is_excuse() {
            return Err(RuleError::PoigneeNotTrump { card });
        }
        if !hand.contains(card) {
            return Err(RuleError::CardNotInHand { card });
        }
        if !set.insert(card) {
            return Err(RuleError::PoigneeRepeated { card });
        }
    }
    let poignee = Poignee::of_count(set.len(), seats).ok_or(RuleError::PoigneeSize {
        count: set.len(),
        seats,
    })?;
    if set.contains(Card::EXCUSE) && !hand.trumps().difference(set).is_empty() {
        return Err(RuleError::PoigneeExcuseHidesTrump);
    }
    Ok(poignee)
}

impl Tarot {
    /// An empty state, before `match_started`.
    pub fn new() -> Tarot {
        Tarot::default()
    }

    /// Number of events applied.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Where the match stands.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The options, once the match has started.
    pub fn options(&self) -> Option<TarotOptions> {
        self.options
    }

    /// Each seat's cumulative score (empty before the match starts).
    pub fn scores(&self) -> &[i32] {
        &self.scores
    }

    /// Number of the next deal: the salt of its deal.
    pub fn next_deal_number(&self) -> u32 {
        self.next_deal
    }

    /// Dealer of the next deal.
    pub fn next_dealer(&self) -> Seat {
        self.next_dealer
    }

    /// Scoring of the last scored deal.
    pub fn last_score(&self) -> Option<&DealScore> {
        self.last_score.as_ref()
    }

    /// The cards `seat` holds now (authoritative state, not a view: never send it to
    /// another seat).
    pub fn hand_of(&self, seat: Seat) -> CardSet {
        self.deal.as_ref().map_or(CardSet::EMPTY, |d| d.hand(seat))
    }

    /// The chien of the current (or last) deal, as dealt (authoritative state).
    pub fn chien(&self) -> CardSet {
        self.deal.as_ref().map_or(CardSet::EMPTY, |d| d.chien)
    }

    /// The taker's écart in the current (or last) deal (authoritative state).
    pub fn ecart(&self) -> CardSet {
        self.deal.as_ref().map_or(CardSet::EMPTY, |d| d.ecart)
    }

    /// The current (or last) deal, for views.
    pub(crate) fn deal_state(&self) -> Option<&DealState> {
        self.deal.as_ref()
    }

    fn seats(&self) -> usize {
        self.options.map_or(0, TarotOptions::seat_count)
    }

    /// The seat that must act now (`None`: the table must deal, or it is over).
    pub fn turn(&self) -> Option<Seat> {
        let deal = self.deal.as_ref()?;
        match self.phase {
            Phase::Bidding => (deal.calls.len() < deal.seats)
                .then(|| deal.dealer.offset(1 + deal.calls.len(), deal.seats)),
            Phase::Calling | Phase::Discarding | Phase::Announcing => deal.taker(),
            Phase::Playing => (deal.trick.len() < deal.seats)
                .then(|| deal.leader.offset(deal.trick.len(), deal.seats)),
            _ => None,
        }
    }

    /// Checks `command` from `actor` and returns the events it causes; never mutates.
    pub fn decide(&self, actor: Actor, command: &Command) -> Result<Vec<Event>, RuleError> {
        ContractError::sender(
            actor == Actor::Table,
            command.is_table_command(),
            command.name(),
        )?;
        let seat = match actor {
            Actor::Table => None,
            Actor::Seat(seat) => Some(seat),
        };
        match (seat, command) {
            (
                _,
                Command::StartMatch {
                    options,
                    first_dealer,
                },
            ) => {
                if self.options.is_some() {
                    return Err(ContractError::MatchAlreadyStarted.into());
                }
                let options = options.validate()?;
                if first_dealer.index() >= options.seat_count() {
                    return Err(ContractError::NoSuchSeat {
                        seat: first_dealer.number(),
                        seats: options.seat_count(),
                    }
                    .into());
                }
                Ok(vec![Event::MatchStarted {
                    options,
                    first_dealer: *first_dealer,
                }])
            }
            (_, Command::StartDeal { hands, chien }) => self.decide_start_deal(hands, chien),
            (None, _) => Err(ContractError::SeatOnly {
                command: command.name(),
            }
            .into()),
            (Some(seat), Command::Bid { contract }) => self.decide_bid(seat, Some(*contract)),
            (Some(seat), Command::Pass) => self.decide_bid(seat, None),
            (Some(seat), Command::CallKing { card }) => {
                let deal = self.acting(seat, command, Phase::Calling)?;
                if !callable(deal.hand(seat)).contains(*card) {
                    return Err(RuleError::NotCallable { card: *card });
                }
                let mut events = vec![Event::KingCalled { seat, card: *card }];
                if deal.contract.is_some_and(|(_, c)| c.shows_chien()) {
                    events.push(Event::ChienShown {
                        cards: deal.chien.to_vec(),
                    });
                }
                Ok(events)
            }
            (Some(seat), Command::Discard { card }) => {
                let deal = self.acting(seat, command, Phase::Discarding)?;
                self.check_discard(deal, seat, *card)?;
                Ok(vec![Event::CardDiscarded { seat, card: *card }])
            }
            (Some(seat), Command::DeclareChelem { announce }) => {
                self.acting(seat, command, Phase::Announcing)?;
                Ok(vec![Event::ChelemDeclared {
                    seat,
                    announced: *announce,
                }])
            }
            (Some(seat), Command::ShowPoignee { trumps }) => {
                let deal = self.acting(seat, command, Phase::Playing)?;
                let shown_before = deal.poignees.iter().any(|p| p.seat == seat);
                if shown_before || deal.has_played.get(seat.index()).copied().unwrap_or(true) {
                    return Err(RuleError::PoigneeTooLate);
                }
                let poignee = check_poignee(deal.hand(seat), trumps, deal.seats)?;
                let trumps: CardSet = trumps.iter().copied().collect();
                Ok(vec![Event::PoigneeShown {
                    seat,
                    poignee,
                    trumps: trumps.to_vec(),
                }])
            }
            (Some(seat), Command::PlayCard { card }) => self.decide_play(seat, *card),
        }
    }

    /// The deal, if `seat` may act now in `phase` (the phase `command` belongs to).
    fn acting(&self, seat: Seat, command: &Command, phase: Phase) -> Result<&DealState, RuleError> {
        let Some(options) = self.options else {
            return Err(ContractError::MatchNotStarted.into());
        };
        if seat.index() >= options.seat_count() {
            return Err(ContractError::NoSuchSeat {
                seat: seat.number(),
                seats: options.seat_count(),
            }
            .into());
        }
        ContractError::in_phase(self.phase, phase, command.name())?;
        let deal = self.deal.as_ref().ok_or(ContractError::WrongPhase {
            command: command.name(),
            phase: self.phase,
        })?;
        ContractError::turn(seat, self.turn())?;
        Ok(deal)
    }

    /// The `match_ended` event, if the deal numbered `deal` is the match's last.
    fn match_end(&self, deal: u32, scores: Vec<i32>) -> Option<Event> {
        let options = self.options?;
        (deal.saturating_add(1) >= options.deals()).then_some(Event::MatchEnded { scores })
    }

    fn decide_start_deal(
        &self,
        hands: &[Vec<Card>],
        chien: &[Card],
    ) -> Result<Vec<Event>, RuleError> {
        let Some(options) = self.options else {
            return Err(ContractError::MatchNotStarted.into());
        };
        ContractError::deal_due(self.phase, "start_deal")?;
        let seats = options.seat_count();
        if hands.len() != seats {
            return Err(DealError::WrongHandCount {
                found: hands.len(),
                expected: seats,
            }
            .into());
        }
        let mut seen = CardSet::EMPTY;
        for (i, hand) in hands.iter().enumerate() {
            if hand.len() != options.hand_len() {
                return Err(DealError::WrongHandSize {
                    hand: i,
                    found: hand.len(),
                    expected: options.hand_len(),
                }
                .into());
            }
        }
        if chien.len() != options.chien_len() {
            return Err(DealError::WrongChienSize {
                found: chien.len(),
                expected: options.chien_len(),
            }
            .into());
        }
        // Right sizes and no card twice: every card of the deck exactly once.
        for &card in hands.iter().flatten().chain(chien) {
            if !seen.insert(card) {
                return Err(DealError::DuplicateCard { card }.into());
            }
        }
        let deal = self.next_deal;
        let dealer = self.next_dealer;
        let mut events = vec![Event::DealStarted {
            deal,
            dealer,
            hands: hands.to_vec(),
            chien: chien.to_vec(),
        }];
        let petit_sec = hands.iter().position(|hand| {
            let set: CardSet = hand.iter().copied().collect();
            set.trumps() == CardSet::EMPTY.with(Card::PETIT) && !set.contains(Card::EXCUSE)
        });
        if let Some(position) = petit_sec {
            events.push(Event::DealAnnulled {
                deal,
                seat: dealer.offset(position + 1, seats),
            });
            events.extend(self.match_end(deal, self.scores.clone()));
        }
        Ok(events)
    }

    /// A bid (`Some`) or a pass (`None`).
    fn decide_bid(&self, seat: Seat, bid: Option<Contract>) -> Result<Vec<Event>, RuleError> {
        let command = match bid {
            Some(contract) => Command::Bid { contract },
            None => Command::Pass,
        };
        let deal = self.acting(seat, &command, Phase::Bidding)?;
        let mut highest = deal.highest;
        let mut events = Vec::with_capacity(3);
        match bid {
            Some(contract) => {
                if let Some((_, h)) = highest
                    && contract <= h
                {
                    return Err(RuleError::BidTooLow {
                        bid: contract,
                        highest: h,
                    });
                }
                highest = Some((seat, contract));
                events.push(Event::BidPlaced { seat, contract });
            }
            None => events.push(Event::PlayerPassed { seat }),
        }
        // Everyone has spoken once, or nothing can be bid over a garde contre.
        let over = deal.calls.len() + 1 >= deal.seats
            || matches!(highest, Some((_, Contract::GardeContre)));
        if !over {
            return Ok(events);
        }
        match highest {
            Some((taker, contract)) => {
                events.push(Event::AuctionWon {
                    seat: taker,
                    contract,
                });
                if deal.seats != 5 && contract.shows_chien() {
                    events.push(Event::ChienShown {
                        cards: deal.chien.to_vec(),
                    });
                }
            }
            None => {
                events.push(Event::AllPassed { deal: deal.number });
                events.extend(self.match_end(deal.number, self.scores.clone()));
            }
        }
        Ok(events)
    }

    /// FFT, l'écart: no king, no oudler; a trump only when no other card can go.
    fn check_discard(&self, deal: &DealState, seat: Seat, card: Card) -> Result<(), RuleError> {
        let hand = deal.hand(seat);
        if !hand.contains(card) {
            return Err(RuleError::CardNotInHand { card });
        }
        if card.is_king() {
            return Err(RuleError::DiscardKing { card });
        }
        if card.is_oudler() {
            return Err(RuleError::DiscardOudler { card });
        }
        if card.is_trump() {
            let chien_len = self.options.map_or(0, TarotOptions::chien_len);
            let remaining = chien_len.saturating_sub(deal.ecart.len());
            if discardable_plain(hand).len() >= remaining {
                return Err(RuleError::DiscardTrumpNotForced { card });
            }
        }
        Ok(())
    }

    fn decide_play(&self, seat: Seat, card: Card) -> Result<Vec<Event>, RuleError> {
        let deal = self.acting(seat, &Command::PlayCard { card }, Phase::Playing)?;
        let hand = deal.hand(seat);
        if !hand.contains(card) {
            return Err(RuleError::CardNotInHand { card });
        }
        if let Some(suit) = deal.called_suit_barred(hand)
            && card.suit() == Some(suit)
            && Some(card) != deal.called
        {
            return Err(RuleError::CalledSuitLead { suit, card });
        }
        check_play(hand, &deal.trick_cards(), card)?;
        let mut events = vec![Event::CardPlayed { seat, card }];
        if deal.trick.len() + 1 < deal.seats {
            return Ok(events);
        }
        let mut cards = deal.trick.clone();
        cards.push(PlayedCard { seat, card });
        let plain: Vec<Card> = cards.iter().map(|p| p.card).collect();
        let mut winner = winning_position(&plain)
            .and_then(|i| cards.get(i))
            .map_or(seat, |p| p.seat);
        let hand_len = self.options.map_or(0, TarotOptions::hand_len);
        let last = deal.tricks.len() + 1 >= hand_len;
        // FFT, chelem: the excuse played to the last trick by a side that won every other
        // trick wins it.
        if last && let Some(excuse) = cards.iter().find(|p| p.card.is_excuse()) {
            let side = deal.camp(excuse.seat);
            if !deal.tricks.is_empty() && deal.tricks.iter().all(|t| deal.camp(t.winner) == side) {
                winner = excuse.seat;
            }
        }
        events.push(Event::TrickWon {
            seat: winner,
            trick: u8::try_from(deal.tricks.len()).unwrap_or(u8::MAX),
        });
        if !last {
            return Ok(events);
        }
        let mut tricks = deal.tricks.clone();
        tricks.push(Trick { cards, winner });
        let score = self.score(deal, &tricks);
        let scores = score.scores.clone();
        events.push(Event::DealScored(score));
        events.extend(self.match_end(deal.number, scores));
        Ok(events)
    }

    /// Scores a deal whose tricks are all played.
    fn score(&self, deal: &DealState, tricks: &[Trick]) -> DealScore {
        let (taker, contract) = deal.contract.unwrap_or((deal.dealer, Contract::Petite));
        let attack_extra = match contract {
            Contract::Petite | Contract::Garde => deal.ecart,
            Contract::GardeSans => deal.chien,
            Contract::GardeContre => CardSet::EMPTY,
        };
        let t = tally(tricks, |s| deal.camp(s), attack_extra);
        let poignees: Vec<Poignee> = deal.poignees.iter().map(|p| p.poignee).collect();
        let chelem = chelem(
            deal.chelem_announced == Some(true),
            t.attack_took_all,
            t.defence_took_all,
        );
        let result = contract_score(
            contract,
            t.half_points,
            t.oudlers,
            t.petit_au_bout,
            &poignees,
            chelem,
        );
        let deltas = seat_deltas(deal.seats, taker, deal.partner, result.value);
        let scores = Seat::all(deal.seats)
            .map(|s| {
                let before = self.scores.get(s.index()).copied().unwrap_or(0);
                before.saturating_add(deltas.get(s.index()).copied().unwrap_or(0))
            })
            .collect();
        DealScore {
            deal: deal.number,
            taker,
            contract,
            called: deal.called,
            partner: deal.partner,
            half_points: t.half_points,
            oudlers: t.oudlers,
            target: result.target,
            made: result.made,
            difference: result.difference,
            petit_au_bout: t.petit_au_bout,
            poignees,
            chelem,
            value: result.value,
            deltas,
            scores,
        }
    }

    /// Every command `seat` may send now (empty when it is not that seat's turn). A
    /// poignée is listed once per size the seat can show, as its lowest trumps
    /// ([`poignee_from`]); `decide` accepts any valid choice of trumps.
    pub fn legal_commands(&self, seat: Seat) -> Vec<Command> {
        let Some(deal) = &self.deal else {
            return Vec::new();
        };
        if self.turn() != Some(seat) {
            return Vec::new();
        }
        let hand = deal.hand(seat);
        match self.phase {
            Phase::Bidding => {
                let highest = deal.highest.map(|(_, c)| c);
                std::iter::once(Command::Pass)
                    .chain(
                        Contract::ALL
                            .into_iter()
                            .filter(|c| highest.is_none_or(|h| *c > h))
                            .map(|contract| Command::Bid { contract }),
                    )
                    .collect()
            }
            Phase::Calling => callable(hand)
                .iter()
                .map(|card| Command::CallKing { card })
                .collect(),
            Phase::Discarding => hand
                .iter()
                .filter(|&card| self.check_discard(deal, seat, card).is_ok())
                .map(|card| Command::Discard { card })
                .collect(),
            Phase::Announcing => [false, true]
                .into_iter()
                .map(|announce| Command::DeclareChelem { announce })
                .collect(),
            Phase::Playing => {
                let may_show = !deal.has_played.get(seat.index()).copied().unwrap_or(true)
                    && !deal.poignees.iter().any(|p| p.seat == seat);
                let poignees = Poignee::ALL
                    .into_iter()
                    .filter(|_| may_show)
                    .filter_map(|p| poignee_from(hand, p, deal.seats))
                    .map(|trumps| Command::ShowPoignee { trumps });
                deal.playable(seat)
                    .iter()
                    .map(|card| Command::PlayCard { card })
                    .chain(poignees)
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// Applies one event: the only way the state changes.
    pub fn apply(&mut self, event: &Event) {
        self.version = self.version.saturating_add(1);
        match event {
            Event::MatchStarted {
                options,
                first_dealer,
            } => {
                // A log only holds valid options (`decide` checked them); invalid ones
                // leave the match unstarted rather than panic.
                if let Ok(options) = options.validate() {
                    self.options = Some(options);
                    self.scores = vec![0; options.seat_count()];
                    self.next_dealer = *first_dealer;
                    self.phase = Phase::AwaitingDeal;
                }
            }
            Event::DealStarted {
                deal,
                dealer,
                hands,
                chien,
            } => self.start_deal(*deal, *dealer, hands, chien),
            Event::DealAnnulled { .. } | Event::AllPassed { .. } => {
                self.phase = Phase::AwaitingDeal;
            }
            Event::BidPlaced { seat, contract } => {
                if let Some(d) = &mut self.deal {
                    d.calls.push(AuctionCall {
                        seat: *seat,
                        bid: Some(*contract),
                    });
                    d.highest = Some((*seat, *contract));
                }
            }
            Event::PlayerPassed { seat } => {
                if let Some(d) = &mut self.deal {
                    d.calls.push(AuctionCall {
                        seat: *seat,
                        bid: None,
                    });
                }
            }
            Event::AuctionWon { seat, contract } => {
                if let Some(d) = &mut self.deal {
                    d.contract = Some((*seat, *contract));
                    self.phase = if d.seats == 5 {
                        Phase::Calling
                    } else if contract.shows_chien() {
                        Phase::Discarding
                    } else {
                        Phase::Announcing
                    };
                }
            }
            Event::KingCalled { seat, card } => {
                if let Some(d) = &mut self.deal {
                    d.called = Some(*card);
                    d.partner = Seat::all(d.seats).find(|s| {
                        s != seat && d.dealt.get(s.index()).is_some_and(|h| h.contains(*card))
                    });
                    self.phase = if d.contract.is_some_and(|(_, c)| c.shows_chien()) {
                        Phase::Discarding
                    } else {
                        Phase::Announcing
                    };
                }
            }
            Event::ChienShown { cards } => {
                if let Some(d) = &mut self.deal {
                    d.chien_shown = true;
                    if let Some(taker) = d.taker()
                        && let Some(hand) = d.hands.get_mut(taker.index())
                    {
                        *hand = hand.union(cards.iter().copied().collect());
                    }
                    self.phase = Phase::Discarding;
                }
            }
            Event::CardDiscarded { seat, card } => {
                let chien_len = self.options.map_or(0, TarotOptions::chien_len);
                if let Some(d) = &mut self.deal {
                    if let Some(hand) = d.hands.get_mut(seat.index()) {
                        hand.remove(*card);
                    }
                    d.ecart.insert(*card);
                    if d.ecart.len() >= chien_len {
                        self.phase = Phase::Announcing;
                    }
                }
            }
            Event::ChelemDeclared { seat, announced } => {
                if let Some(d) = &mut self.deal {
                    d.chelem_announced = Some(*announced);
                    // FFT, chelem: an announced chelem gives the taker the first lead.
                    d.leader = if *announced {
                        *seat
                    } else {
                        d.dealer.offset(1, d.seats)
                    };
                    self.phase = Phase::Playing;
                }
            }
            Event::PoigneeShown {
                seat,
                poignee,
                trumps,
            } => {
                if let Some(d) = &mut self.deal {
                    d.poignees.push(ShownPoignee {
                        seat: *seat,
                        poignee: *poignee,
                        trumps: trumps.clone(),
                    });
                }
            }
            Event::CardPlayed { seat, card } => {
                if let Some(d) = &mut self.deal {
                    if let Some(hand) = d.hands.get_mut(seat.index()) {
                        hand.remove(*card);
                    }
                    if let Some(played) = d.has_played.get_mut(seat.index()) {
                        *played = true;
                    }
                    d.trick.push(PlayedCard {
                        seat: *seat,
                        card: *card,
                    });
                }
            }
            Event::TrickWon { seat, .. } => {
                if let Some(d) = &mut self.deal {
                    let cards = std::mem::take(&mut d.trick);
                    d.tricks.push(Trick {
                        cards,
                        winner: *seat,
                    });
                    d.leader = *seat;
                }
            }
            Event::DealScored(score) => {
                self.scores = score.scores.clone();
                self.last_score = Some(score.clone());
                self.phase = Phase::AwaitingDeal;
            }
            Event::MatchEnded { .. } => {
                self.phase = Phase::Finished;
            }
        }
    }

    fn start_deal(&mut self, number: u32, dealer: Seat, hands: &[Vec<Card>], chien: &[Card]) {
        let seats = self.seats();
        if seats == 0 {
            return;
        }
        let mut dealt = vec![CardSet::EMPTY; seats];
        for (i, cards) in hands.iter().take(seats).enumerate() {
            if let Some(hand) = dealt.get_mut(dealer.offset(i + 1, seats).index()) {
                *hand = cards.iter().copied().collect();
            }
        }
        self.deal = Some(DealState {
            number,
            seats,
            dealer,
            hands: dealt.clone(),
            dealt,
            chien: chien.iter().copied().collect(),
            calls: Vec::with_capacity(seats),
            highest: None,
            contract: None,
            called: None,
            partner: None,
            chien_shown: false,
            ecart: CardSet::EMPTY,
            chelem_announced: None,
            poignees: Vec::new(),
            has_played: vec![false; seats],
            trick: Vec::with_capacity(seats),
            tricks: Vec::with_capacity(24),
            leader: dealer.offset(1, seats),
        });
        self.next_deal = number.saturating_add(1);
        self.next_dealer = dealer.offset(1, seats);
        self.phase = Phase::Bidding;
    }
}

/// The cards of `hand` that may go to the écart without being forced: neither a trump, an
/// oudler nor a king.
fn discardable_plain(hand: CardSet) -> CardSet {
    hand.iter()
        .filter(|c| c.suit().is_some() && !c.is_king())
        .collect()
}

/// The command (and its sender) an event records, for the events a command causes first;
/// `None` for the events that follow another.
pub fn command_of(event: &Event) -> Option<(Actor, Command)> {
    Some(match event {
        Event::MatchStarted {
            options,
            first_dealer,
        } => (
            Actor::Table,
            Command::StartMatch {
                options: *options,
                first_dealer: *first_dealer,
            },
        ),
        Event::DealStarted { hands, chien, .. } => (
            Actor::Table,
            Command::StartDeal {
                hands: hands.clone(),
                chien: chien.clone(),
            },
        ),
        Event::BidPlaced { seat, contract } => (
            Actor::Seat(*seat),
            Command::Bid {
                contract: *contract,
            },
        ),
        Event::PlayerPassed { seat } => (Actor::Seat(*seat), Command::Pass),
        Event::KingCalled { seat, card } => (Actor::Seat(*seat), Command::CallKing { card: *card }),
        Event::CardDiscarded { seat, card } => {
            (Actor::Seat(*seat), Command::Discard { card: *card })
        }
        Event::ChelemDeclared { seat, announced } => (
            Actor::Seat(*seat),
            Command::DeclareChelem {
                announce: *announced,
            },
        ),
        Event::PoigneeShown { seat, trumps, .. } => (
            Actor::Seat(*seat),
            Command::ShowPoignee {
                trumps: trumps.clone(),
            },
        ),
        Event::CardPlayed { seat, card } => (Actor::Seat(*seat), Command::PlayCard { card: *card }),
        Event::DealAnnulled { .. }
        | Event::AuctionWon { .. }
        | Event::AllPassed { .. }
        | Event::ChienShown { .. }
        | Event::TrickWon { .. }
        | Event::DealScored(_)
        | Event::MatchEnded { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn set(codes: &str) -> CardSet {
        codes.parse().unwrap()
    }

    #[test]
    fn kings_are_called_and_queens_with_all_four_kings() {
        let kings = set("KS KH KD KC");
        assert_eq!(callable(set("KS 2H T5")), kings);
        assert_eq!(
            callable(set("KS KH KD KC T5")),
            kings.union(set("QS QH QD QC"))
        );
        assert_eq!(
            callable(set("KS KH KD KC QS QH QD QC")),
            kings.union(set("QS QH QD QC NS NH ND NC"))
        );
    }

    #[test]
    fn a_poignee_is_its_trumps_and_the_excuse_only_completes_them_all() {
        let hand = set("T1 T2 T3 T4 T5 T6 T7 T8 T9 EX 3S");
        assert_eq!(
            check_poignee(hand, &set("T1 T2 T3 T4 T5 T6 T7 T8 T9 EX").to_vec(), 4),
            Ok(Poignee::Simple)
        );
        assert_eq!(
            poignee_from(hand, Poignee::Simple, 4),
            Some(set("T1 T2 T3 T4 T5 T6 T7 T8 T9 EX").to_vec())
        );
        let more = hand.with(Card::trump(10).unwrap());
        assert_eq!(
            check_poignee(more, &set("T1 T2 T3 T4 T5 T6 T7 T8 T9 EX").to_vec(), 4),
            Err(RuleError::PoigneeExcuseHidesTrump)
        );
        assert_eq!(
            check_poignee(more, &set("T1 T2 T3").to_vec(), 4),
            Err(RuleError::PoigneeSize { count: 3, seats: 4 })
        );
        assert_eq!(
            poignee_from(hand, Poignee::Simple, 4).map(|v| v.len()),
            Some(10)
        );
        assert_eq!(poignee_from(hand, Poignee::Simple, 3), None);
        assert_eq!(
            poignee_from(hand, Poignee::Simple, 5).map(|v| v.len()),
            Some(8)
        );
    }
}
