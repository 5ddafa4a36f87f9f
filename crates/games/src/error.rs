//! Why a command was refused. Every refusal names the rule it breaks; an illegal command
//! changes nothing (`decide` never mutates the state).

use fairdeal_fairness::Deck;
use fairdeal_table_game::MatchPhase;
use serde::{Deserialize, Serialize};

use crate::card::{Card, Suit};
use crate::options::OptionsError;

/// Where a match stands; used in views and in the contract's refusals
/// ([`ContractError::WrongPhase`]).
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

impl MatchPhase for Phase {
    const NOT_STARTED: Phase = Phase::NotStarted;
    const AWAITING_DEAL: Phase = Phase::AwaitingDeal;
    const FINISHED: Phase = Phase::Finished;
}

/// The refusals every game makes alike, in this game's phases.
pub type ContractError = fairdeal_table_game::ContractError<Phase>;

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
    /// A refusal every game makes alike (not started, over, wrong sender, no such seat,
    /// wrong phase, not your turn).
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// The table options are invalid.
    #[error("invalid table options: {0}")]
    InvalidOptions(#[from] OptionsError),
    /// The hands dealt are invalid.
    #[error("invalid deal: {0}")]
    BadDeal(#[from] DealError),
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
