//! What each participant may see.
//!
//! [`PublicView`] is what a spectator sees: scores, the auction, the contract and trump,
//! every card played so far, how many cards each seat holds, but no hand. [`SeatView`]
//! adds the seat's own hand and the commands it may send now. Cards still in another
//! seat's hand appear in neither: a card is only ever shown to others once it is played.

use serde::{Deserialize, Serialize};

use crate::card::{Card, CardSet, JeuDu10Cards, Suit};
use crate::command::{Bid, Command};
use crate::error::Phase;
use crate::event::{HandScore, MatchEnd};
use crate::game::{AuctionCall, Game, PlayedCard, Trick};
use crate::options::TableOptions;
use crate::seat::{Seat, Team};

/// A seat and its bid (the highest bid, or the contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SeatBid {
    /// The bidder.
    pub seat: Seat,
    /// The bid.
    pub bid: Bid,
}

/// The end of a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MatchResult {
    /// The winners.
    pub team: Team,
    /// Why.
    pub reason: MatchEnd,
}

/// The table as a spectator sees it: everything public, no hand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicView {
    /// Events applied so far (the state's version).
    pub version: u64,
    /// Where the match stands.
    pub phase: Phase,
    /// The table's options, once the match has started.
    pub options: Option<TableOptions>,
    /// Score that ends the match.
    pub target: Option<i32>,
    /// Scores per team.
    pub scores: [i32; 2],
    /// Remaining budgets per team (trump by purchase with a budget).
    pub budgets: [u32; 2],
    /// Number of the current (or last) hand.
    pub hand: Option<u32>,
    /// Its dealer.
    pub dealer: Option<Seat>,
    /// Who must act now (`None`: the table must deal, or the match is over).
    pub turn: Option<Seat>,
    /// Cards each seat holds, by seat.
    pub card_counts: [usize; 4],
    /// The auction so far.
    pub auction: Vec<AuctionCall>,
    /// The highest bid so far.
    pub highest_bid: Option<SeatBid>,
    /// The auction's result, once won.
    pub contract: Option<SeatBid>,
    /// The trump suit, once named.
    pub trump: Option<Suit>,
    /// The trick being played.
    pub trick: Vec<PlayedCard>,
    /// The finished tricks of the hand.
    pub tricks: Vec<Trick>,
    /// Face card points won so far by each team in this hand.
    pub trick_points: [u32; 2],
    /// Scoring of the last finished hand.
    pub last_score: Option<HandScore>,
    /// The winner, once the match is over.
    pub result: Option<MatchResult>,
}

/// The table as one seat sees it: the public view, its own hand, and what it may do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatView {
    /// The viewer.
    pub seat: Seat,
    /// The viewer's cards, in canonical order.
    pub hand: Vec<Card>,
    /// The commands the viewer may send now (empty when it is not its turn).
    pub legal: Vec<Command>,
    /// Everything public.
    pub table: PublicView,
}

impl SeatView {
    /// The viewer's cards as a set.
    pub fn hand_set(&self) -> CardSet {
        self.hand.iter().copied().collect()
    }
}

impl PublicView {
    /// Every card played in this hand so far (finished tricks and the current one).
    pub fn played(&self) -> CardSet {
        self.tricks
            .iter()
            .flat_map(|t| t.cards.iter())
            .chain(self.trick.iter())
            .map(|p| p.card)
            .collect()
    }
}

impl Game {
    /// What a spectator sees.
    pub fn public_view(&self) -> PublicView {
        let hand = self.hand();
        let won = self.won();
        PublicView {
            version: self.version(),
            phase: self.phase(),
            options: self.rules().map(|r| r.options().clone()),
            target: self.rules().map(|r| r.target()),
            scores: self.scores(),
            budgets: self.budgets(),
            hand: hand.map(|h| h.number),
            dealer: hand.map(|h| h.dealer),
            turn: self.turn(),
            card_counts: hand.map_or([0; 4], |h| h.hands.map(CardSet::len)),
            auction: hand.map_or_else(Vec::new, |h| h.calls.clone()),
            highest_bid: hand
                .and_then(|h| h.highest)
                .map(|(seat, bid)| SeatBid { seat, bid }),
            contract: hand
                .and_then(|h| h.contract)
                .map(|(seat, bid)| SeatBid { seat, bid }),
            trump: hand.and_then(|h| h.trump),
            trick: hand.map_or_else(Vec::new, |h| h.trick.clone()),
            tricks: hand.map_or_else(Vec::new, |h| h.tricks.clone()),
            trick_points: won.map(CardSet::points),
            last_score: self.last_score().cloned(),
            result: self
                .result()
                .map(|(team, reason)| MatchResult { team, reason }),
        }
    }

    /// What `seat` sees: the public view, its own hand and its legal commands.
    pub fn seat_view(&self, seat: Seat) -> SeatView {
        SeatView {
            seat,
            hand: self.hand_of(seat).to_vec(),
            legal: self.legal_commands(seat),
            table: self.public_view(),
        }
    }
}
