//! Why a command was refused. Every refusal names the rule it breaks; an illegal command
//! changes nothing (`decide` never mutates the state).

use fairdeal_fairness::Deck;
use serde::{Deserialize, Serialize};

use crate::card::{Card, Suit};
use crate::options::OptionsError;
use crate::seat::Seat;

/// Where a match stands; used in views and in [`RuleError::WrongPhase`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// No `match_started` event yet.
    #[default]
    NotStarted,
    /// Between hands: the table must deal the next hand.
    AwaitingDeal,
    /// Players bid or pass.
    Auction,
    /// The auction winner must name trump.
    NamingTrump,
    /// Cards are being played.
    Playing,
    /// A team has won the match.
    Finished,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::NotStarted => "the match has not started",
            Phase::AwaitingDeal => "the next hand has not been dealt",
            Phase::Auction => "the auction is on",
            Phase::NamingTrump => "trump is being named",
            Phase::Playing => "the cards are being played",
            Phase::Finished => "the match is over",
        })
    }
}

/// What is wrong with the hands of a `start_hand` command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DealError {
    /// Not four hands.
    #[error("a deal has 4 hands, got {found}")]
    WrongHandCount {
        /// Hands given.
        found: usize,
    },
    /// A hand has the wrong number of cards.
    #[error("hand {hand} has {found} cards, expected {expected}")]
    WrongHandSize {
        /// Index of the hand in dealing order.
        hand: usize,
        /// Cards given.
        found: usize,
        /// Cards each hand must hold.
        expected: usize,
    },
    /// A card is not part of the table's deck (e.g. a six with Ruff).
    #[error("card {card} is not in the {deck} deck")]
    CardNotInDeck {
        /// The card.
        card: Card,
        /// The table's deck.
        deck: Deck,
    },
    /// A card appears twice.
    #[error("card {card} is dealt twice")]
    DuplicateCard {
        /// The card.
        card: Card,
    },
    /// A fairness deal index that is not a card of a Jeu du 10 deck.
    #[error("index {index} is not a card of a Jeu du 10 deck ({deck} deal)")]
    BadIndex {
        /// The deal's deck.
        deck: Deck,
        /// The index.
        index: u8,
    },
}

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The command needs a started match.
    #[error("the match has not started")]
    MatchNotStarted,
    /// `start_match` was sent twice.
    #[error("the match has already started")]
    MatchAlreadyStarted,
    /// The match is over; nothing more can happen.
    #[error("the match is over")]
    MatchOver,
    /// The table options are invalid.
    #[error("invalid table options: {0}")]
    InvalidOptions(#[from] OptionsError),
    /// The hands dealt are invalid.
    #[error("invalid deal: {0}")]
    BadDeal(#[from] DealError),
    /// A seat the game does not have (Jeu du 10 has seats 0..=3).
    #[error("seat {seat} does not exist (seats are 0, 1, 2, 3)")]
    NoSuchSeat {
        /// The seat number.
        seat: u8,
    },
    /// A seat sent a command only the table may send.
    #[error("only the table may {command}")]
    TableOnly {
        /// The command's name.
        command: &'static str,
    },
    /// The table sent a command that a seat must send.
    #[error("{command} must come from a seat")]
    SeatOnly {
        /// The command's name.
        command: &'static str,
    },
    /// The command does not fit the current phase.
    #[error("cannot {command} now: {phase}")]
    WrongPhase {
        /// The command's name.
        command: &'static str,
        /// The current phase.
        phase: Phase,
    },
    /// Another seat must act.
    #[error("not your turn: {seat} tried to act, it is {}'s turn", turn.map_or_else(|| "nobody".to_owned(), |s| s.to_string()))]
    NotYourTurn {
        /// The seat that tried to act.
        seat: Seat,
        /// The seat that must act.
        turn: Option<Seat>,
    },
    /// A bid that is not a multiple of the step.
    #[error("bid {bid} is not a multiple of {step}")]
    NotAMultiple {
        /// The bid.
        bid: u16,
        /// The step (5, or 1 with a budget).
        step: u16,
    },
    /// A bid at or below the current highest bid, or below the minimum.
    #[error("bid {bid} is too low: the lowest bid allowed now is {minimum}")]
    BidTooLow {
        /// The bid.
        bid: u16,
        /// The lowest bid allowed now.
        minimum: u16,
    },
    /// A bid above the largest number allowed.
    #[error("bid {bid} is too high: the largest bid in points is {maximum}")]
    BidTooHigh {
        /// The bid.
        bid: u16,
        /// The largest bid in points.
        maximum: u16,
    },
    /// With a budget, a price the team cannot pay.
    #[error("price {bid} exceeds the team's remaining budget of {budget}")]
    BudgetExceeded {
        /// The price offered.
        bid: u16,
        /// The team's remaining budget.
        budget: u32,
    },
    /// "The game" cannot be bid under these options (penalised aces, trump by purchase).
    #[error("the game bid is not allowed with these table options")]
    GameBidNotAllowed,
    /// "The game" is only for a team whose score is not negative.
    #[error("the game bid is not allowed with a negative score ({score})")]
    GameBidWithNegativeScore {
        /// The team's score.
        score: i32,
    },
    /// Nothing can be bid above "the game".
    #[error("the game has already been bid: only pass is possible")]
    GameAlreadyBid,
    /// The last player left with no bid made must bid.
    #[error("everybody else passed: you must bid")]
    MustBid,
    /// The card is not in the player's hand.
    #[error("card {card} is not in your hand")]
    CardNotInHand {
        /// The card.
        card: Card,
    },
    /// The player holds the led suit and did not play it.
    #[error("must follow suit: {led} was led and you hold some, {card} is not {led}")]
    MustFollowSuit {
        /// The suit led.
        led: Suit,
        /// The card tried.
        card: Card,
    },
}
