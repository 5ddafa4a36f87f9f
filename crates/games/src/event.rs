//! What happened: the [`Event`]s a match is made of. The state is their fold
//! ([`crate::Game::apply`]), so these types are the persisted format: field names and
//! tags are stable and documented here.
//!
//! JSON: an object tagged by `"type"` (snake_case variant name) with the variant's fields,
//! e.g. `{"type":"card_played","seat":2,"card":"TH"}`. Seats and teams are integers, cards
//! are codes (`"AS"`), suits are lower-case names, bids are `{"points":70}` or `"game"`.
//! Per-team arrays (`[i32; 2]`) are indexed by team number (team 0 = seats 0 and 2).
//!
//! The events of one hand, in order: `hand_started`, then `bid_placed` / `player_passed`
//! until `auction_won`, `trump_named`, then `card_played` (with a `trick_won` after every
//! fourth card), and after the last trick `hand_scored`, possibly followed by `match_won`.
//! The match begins with `match_started`.

use serde::{Deserialize, Serialize};

use crate::card::{Card, Suit};
use crate::command::Bid;
use crate::options::TableOptions;
use crate::seat::{Seat, Team};

/// One thing that happened in a match.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The match started with these options; `first_dealer` deals hand 0.
    MatchStarted {
        /// The table's variants (valid: `decide` checked them).
        options: TableOptions,
        /// Dealer of hand 0.
        first_dealer: Seat,
    },
    /// A hand was dealt.
    HandStarted {
        /// Hand number, from 0 (the fairness salt of the deal).
        hand: u32,
        /// The dealer; the auction starts at the dealer's left.
        dealer: Seat,
        /// The hands in dealing order, as received: `hands[i]` belongs to the seat `i + 1`
        /// places clockwise from the dealer (hand 0 = dealer's left).
        hands: Vec<Vec<Card>>,
    },
    /// A player bid (or offered a price).
    BidPlaced {
        /// The bidder.
        seat: Seat,
        /// The bid.
        bid: Bid,
    },
    /// A player passed and left the auction.
    PlayerPassed {
        /// The player.
        seat: Seat,
    },
    /// The auction ended. With trump by purchase `bid` is the price (0 when the last
    /// player's team had no budget left and took trump for nothing).
    AuctionWon {
        /// The winner (declarer / buyer): names trump and leads.
        seat: Seat,
        /// The winning bid.
        bid: Bid,
    },
    /// The auction winner named trump.
    TrumpNamed {
        /// The declarer.
        seat: Seat,
        /// The trump suit.
        suit: Suit,
    },
    /// A card was played to the current trick.
    CardPlayed {
        /// The player.
        seat: Seat,
        /// The card.
        card: Card,
    },
    /// The fourth card of a trick was played; `seat` won it and leads next.
    TrickWon {
        /// The winner of the trick.
        seat: Seat,
        /// Trick number in the hand, from 0.
        trick: u8,
        /// Face card points in the trick (A and T 10, 5 5), before any ace adjustment.
        points: u8,
    },
    /// The hand's last trick was won and the hand scored.
    HandScored(HandScore),
    /// The match is over.
    MatchWon {
        /// The winning team.
        team: Team,
        /// Why the match ended.
        reason: MatchEnd,
        /// Final scores, per team.
        scores: [i32; 2],
    },
}

impl Event {
    /// The event's `type` tag.
    pub const fn kind(&self) -> &'static str {
        match self {
            Event::MatchStarted { .. } => "match_started",
            Event::HandStarted { .. } => "hand_started",
            Event::BidPlaced { .. } => "bid_placed",
            Event::PlayerPassed { .. } => "player_passed",
            Event::AuctionWon { .. } => "auction_won",
            Event::TrumpNamed { .. } => "trump_named",
            Event::CardPlayed { .. } => "card_played",
            Event::TrickWon { .. } => "trick_won",
            Event::HandScored(_) => "hand_scored",
            Event::MatchWon { .. } => "match_won",
        }
    }
}

/// The scoring of one hand (`hand_scored`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HandScore {
    /// Hand number.
    pub hand: u32,
    /// The auction winner (declarer, or buyer of the trump).
    pub declarer: Seat,
    /// The winning bid (or price).
    pub bid: Bid,
    /// Net card points each team made (100 in all; with penalised aces 60 in all, after
    /// the ace transfers).
    pub card_points: [i32; 2],
    /// Ace transfers included in `card_points` (penalised aces; zeros otherwise; they sum
    /// to 0).
    pub ace_transfers: [i32; 2],
    /// Whether the contract was made; `None` with trump by purchase (no contract).
    pub contract_made: Option<bool>,
    /// What each team's score changed by (zeros for "the game": the match is decided).
    pub deltas: [i32; 2],
    /// Each team's score after the hand.
    pub scores: [i32; 2],
}

/// Why a match ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchEnd {
    /// One team reached the target at the end of a hand.
    TargetReached,
    /// Both teams reached the target in the same hand: the declarer's team wins.
    BothReachedDeclarerWins,
    /// The declarer's team bid "the game" and won every point.
    GameBidMade,
    /// The declarer's team bid "the game" and lost a point: the other team wins.
    GameBidFailed,
}
