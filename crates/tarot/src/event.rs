//! What happened: the [`Event`]s a match is made of. The state is their fold
//! ([`crate::Tarot::apply`]), so these types are the persisted format: field names and
//! tags are stable.
//!
//! JSON: an object tagged by `"type"` (snake_case variant name), e.g.
//! `{"type":"card_played","seat":2,"card":"T21"}`. Seats are integers, cards their codes,
//! contracts `"petite"`, `"garde"`, `"garde_sans"`, `"garde_contre"`. Per-seat lists are
//! indexed by seat number.
//!
//! The events of one deal, in order: `deal_started` (then `deal_annulled` for a petit sec,
//! which ends the deal), `bid_placed` / `player_passed` (each seat once, or until a garde
//! contre) then `auction_won` or `all_passed`; at 5 `king_called`; for a petite or a garde
//! `chien_shown` and one `card_discarded` per card of the écart; `chelem_declared`; then
//! `poignee_shown` (before a seat's first card) and `card_played`, with a `trick_won` after
//! every full trick, and after the last one `deal_scored`. After the last deal of the
//! match, `match_ended`. The match begins with `match_started`.
//!
//! Privacy: a `card_discarded` of a card that is not a trump puts it in the écart, which
//! only the taker may see ([`Event::private_to`]); every other event is public (the
//! deal's hands and chien are taken apart by the table contract's `dealt`).

use fairdeal_table_game::Seat;
use serde::{Deserialize, Serialize};

use crate::card::Card;
use crate::contract::{Camp, Chelem, Contract, Poignee};
use crate::options::TarotOptions;

/// One thing that happened in a match.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The match started with these options; `first_dealer` deals deal 0.
    MatchStarted {
        /// Seats and length (valid: `decide` checked them).
        options: TarotOptions,
        /// Dealer of deal 0.
        first_dealer: Seat,
    },
    /// A deal was dealt.
    DealStarted {
        /// Deal number, from 0 (the fairness salt of the deal).
        deal: u32,
        /// The dealer; the seat after it speaks and leads first.
        dealer: Seat,
        /// The hands in dealing order: `hands[i]` belongs to the seat `i + 1` places after
        /// the dealer.
        hands: Vec<Vec<Card>>,
        /// The chien, as dealt.
        chien: Vec<Card>,
    },
    /// A player held the petit sec (the petit as its only trump, without the excuse): the
    /// deal is annulled (FFT, "le petit sec").
    DealAnnulled {
        /// Deal number.
        deal: u32,
        /// The player with the petit sec.
        seat: Seat,
    },
    /// A player bid.
    BidPlaced {
        /// The bidder.
        seat: Seat,
        /// The contract bid.
        contract: Contract,
    },
    /// A player passed.
    PlayerPassed {
        /// The player.
        seat: Seat,
    },
    /// The auction ended with a taker.
    AuctionWon {
        /// The taker (preneur).
        seat: Seat,
        /// The contract.
        contract: Contract,
    },
    /// Every player passed: the deal is void and the next one is due.
    AllPassed {
        /// Deal number.
        deal: u32,
    },
    /// At 5 the taker called a card; its holder is the taker's hidden partner.
    KingCalled {
        /// The taker.
        seat: Seat,
        /// The card called.
        card: Card,
    },
    /// The chien was shown to all and taken by the taker (petite and garde).
    ChienShown {
        /// Its cards, as dealt.
        cards: Vec<Card>,
    },
    /// The taker put a card in the écart (a trump there is shown to all; any other card
    /// only to the taker).
    CardDiscarded {
        /// The taker.
        seat: Seat,
        /// The card.
        card: Card,
    },
    /// The taker announced a chelem (and leads the first trick), or not.
    ChelemDeclared {
        /// The taker.
        seat: Seat,
        /// Whether a chelem was announced.
        announced: bool,
    },
    /// A player showed a poignée before its first card.
    PoigneeShown {
        /// The player.
        seat: Seat,
        /// Its size.
        poignee: Poignee,
        /// The trumps shown, in canonical order.
        trumps: Vec<Card>,
    },
    /// A card was played to the trick.
    CardPlayed {
        /// The player.
        seat: Seat,
        /// The card.
        card: Card,
    },
    /// The trick is complete; `seat` won it and leads next.
    TrickWon {
        /// The winner.
        seat: Seat,
        /// Trick number in the deal, from 0.
        trick: u8,
    },
    /// The last trick was won and the deal scored.
    DealScored(DealScore),
    /// The last deal of the match is over.
    MatchEnded {
        /// Final scores, per seat.
        scores: Vec<i32>,
    },
}

impl Event {
    /// The event's `type` tag.
    pub const fn kind(&self) -> &'static str {
        match self {
            Event::MatchStarted { .. } => "match_started",
            Event::DealStarted { .. } => "deal_started",
            Event::DealAnnulled { .. } => "deal_annulled",
            Event::BidPlaced { .. } => "bid_placed",
            Event::PlayerPassed { .. } => "player_passed",
            Event::AuctionWon { .. } => "auction_won",
            Event::AllPassed { .. } => "all_passed",
            Event::KingCalled { .. } => "king_called",
            Event::ChienShown { .. } => "chien_shown",
            Event::CardDiscarded { .. } => "card_discarded",
            Event::ChelemDeclared { .. } => "chelem_declared",
            Event::PoigneeShown { .. } => "poignee_shown",
            Event::CardPlayed { .. } => "card_played",
            Event::TrickWon { .. } => "trick_won",
            Event::DealScored(_) => "deal_scored",
            Event::MatchEnded { .. } => "match_ended",
        }
    }

    /// The one seat an event may be shown to while the match is on, for the events that
    /// carry a private card: a discard that is not a trump (the écart is the taker's).
    /// `None`: the event is public (the deal itself is split by the table contract).
    pub const fn private_to(&self) -> Option<Seat> {
        match self {
            Event::CardDiscarded { seat, card } if !card.is_trump() => Some(*seat),
            _ => None,
        }
    }
}

/// One call of the auction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AuctionCall {
    /// Who spoke.
    pub seat: Seat,
    /// The contract bid, `None` for a pass.
    pub bid: Option<Contract>,
}

/// A poignée shown.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShownPoignee {
    /// Who showed it.
    pub seat: Seat,
    /// Its size.
    pub poignee: Poignee,
    /// The trumps shown.
    pub trumps: Vec<Card>,
}

/// The scoring of one deal (`deal_scored`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DealScore {
    /// Deal number.
    pub deal: u32,
    /// The taker.
    pub taker: Seat,
    /// The contract.
    pub contract: Contract,
    /// The card called at 5.
    pub called: Option<Card>,
    /// The called partner at 5 (`None`: the taker played alone, or 3 and 4 players).
    pub partner: Option<Seat>,
    /// The attack's card points in half-points, after the excuse's exchange (0..=182).
    pub half_points: u16,
    /// Oudlers in the attack's pile (0..=3).
    pub oudlers: u8,
    /// The points the attack needed (56, 51, 41, 36).
    pub target: u8,
    /// Whether the contract was made (points at least the target).
    pub made: bool,
    /// The points over or under the target, half a point rounded up.
    pub difference: u16,
    /// The side that took the petit au bout, if any.
    pub petit_au_bout: Option<Camp>,
    /// The poignées shown, whichever side showed them (their bonus goes to the side that
    /// wins the contract).
    pub poignees: Vec<Poignee>,
    /// The chelem.
    pub chelem: Chelem,
    /// What each defender pays the attack (negative: receives): the contract's score.
    pub value: i32,
    /// What each seat's score changed by (they sum to zero).
    pub deltas: Vec<i32>,
    /// Each seat's score after the deal.
    pub scores: Vec<i32>,
}
