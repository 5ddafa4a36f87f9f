//! Why a command was refused. Every refusal names the rule it breaks; an illegal command
//! changes nothing (`decide` never mutates the state).

use fairdeal_fairness::Deck;
use fairdeal_table_game::MatchPhase;
use serde::{Deserialize, Serialize};

use crate::card::{Card, Suit};
use crate::contract::Contract;
use crate::options::OptionsError;

/// Where a match stands; used in views and in the contract's refusals
/// ([`ContractError::WrongPhase`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// No `match_started` event yet.
    #[default]
    NotStarted,
    /// Between deals: the table must deal the next one.
    AwaitingDeal,
    /// The players bid in turn, each once.
    Bidding,
    /// At 5, the taker calls a king.
    Calling,
    /// The taker discards the écart, one card at a time.
    Discarding,
    /// The taker announces a chelem or not.
    Announcing,
    /// The cards are played.
    Playing,
    /// The last deal has been played.
    Finished,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::NotStarted => "the match has not started",
            Phase::AwaitingDeal => "the next deal has not been dealt",
            Phase::Bidding => "the auction is on",
            Phase::Calling => "the taker is calling a king",
            Phase::Discarding => "the taker is making the écart",
            Phase::Announcing => "the taker is announcing a chelem or not",
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

/// What is wrong with the cards of a `start_deal` command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DealError {
    /// Not one hand per seat.
    #[error("a deal has {expected} hands, got {found}")]
    WrongHandCount {
        /// Hands given.
        found: usize,
        /// Seats at the table.
        expected: usize,
    },
    /// A hand of the wrong size (24, 18, 15 cards at 3, 4, 5).
    #[error("hand {hand} has {found} cards, expected {expected}")]
    WrongHandSize {
        /// Index of the hand in dealing order.
        hand: usize,
        /// Cards given.
        found: usize,
        /// Cards each hand holds.
        expected: usize,
    },
    /// A chien of the wrong size (6, 6, 3 cards at 3, 4, 5).
    #[error("the chien has {found} cards, expected {expected}")]
    WrongChienSize {
        /// Cards given.
        found: usize,
        /// Cards the chien holds.
        expected: usize,
    },
    /// A card dealt twice (so another is missing).
    #[error("card {card} is dealt twice")]
    DuplicateCard {
        /// The card.
        card: Card,
    },
    /// A fairness deal of a deck other than the table's Tarot deck.
    #[error("a {found} deal cannot be played at this table (it deals {expected})")]
    WrongDeck {
        /// The deal's deck.
        found: Deck,
        /// The deck of the table (or any Tarot deck before the match starts).
        expected: Deck,
    },
    /// A fairness deal index that is not a Tarot card.
    #[error("index {index} is not a card of the {deck} deck")]
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
    /// The cards dealt are invalid.
    #[error("invalid deal: {0}")]
    BadDeal(#[from] DealError),
    /// FFT, enchères: each bid must be higher than the last.
    #[error("bid {bid} is not higher than the bid so far ({highest})")]
    BidTooLow {
        /// The bid.
        bid: Contract,
        /// The highest bid so far.
        highest: Contract,
    },
    /// FFT, jeu à 5: the taker calls a king, or a queen holding the four kings (and so on
    /// down to the valets).
    #[error(
        "{card} cannot be called: call a king, or the next rank down when holding all four kings"
    )]
    NotCallable {
        /// The card named.
        card: Card,
    },
    /// The card is not in the player's hand.
    #[error("card {card} is not in your hand")]
    CardNotInHand {
        /// The card.
        card: Card,
    },
    /// FFT, l'écart: no king may be discarded.
    #[error("a king ({card}) may not be put in the écart")]
    DiscardKing {
        /// The card.
        card: Card,
    },
    /// FFT, l'écart: no oudler may be discarded.
    #[error("an oudler ({card}) may not be put in the écart")]
    DiscardOudler {
        /// The card.
        card: Card,
    },
    /// FFT, l'écart: trumps only when there is no other choice.
    #[error("a trump ({card}) may be put in the écart only when no other card can be")]
    DiscardTrumpNotForced {
        /// The card.
        card: Card,
    },
    /// FFT, la poignée: shown just before the player's first card, once.
    #[error("a poignée is shown before one's first card, once")]
    PoigneeTooLate,
    /// FFT, la poignée: it shows exactly 10, 13 or 15 trumps (13/15/18 at 3, 8/10/13 at 5).
    #[error("a poignée of {count} cards does not exist at {seats} players")]
    PoigneeSize {
        /// Cards shown.
        count: usize,
        /// Seats at the table.
        seats: usize,
    },
    /// A poignée shows trumps (and at most the excuse).
    #[error("{card} is not a trump and cannot be shown in a poignée")]
    PoigneeNotTrump {
        /// The card.
        card: Card,
    },
    /// A card shown twice in a poignée.
    #[error("{card} is shown twice in the poignée")]
    PoigneeRepeated {
        /// The card.
        card: Card,
    },
    /// FFT, la poignée: the excuse in a poignée means the player holds no other trump.
    #[error("the excuse may complete a poignée only when every trump held is shown")]
    PoigneeExcuseHidesTrump,
    /// FFT, 5 joueurs: the first trick may not be led in the called king's suit, except
    /// with the called card itself.
    #[error(
        "the first trick may not be led in {suit}, the called suit, except with the called card ({card} is not)"
    )]
    CalledSuitLead {
        /// The called card's suit.
        suit: Suit,
        /// The card tried.
        card: Card,
    },
    /// FFT, jeu de la carte: follow the suit led when you can.
    #[error("must follow {suit}: you hold some, {card} is not {suit}")]
    MustFollowSuit {
        /// The suit led.
        suit: Suit,
        /// The card tried.
        card: Card,
    },
    /// FFT, jeu de la carte: trump when you cannot follow (a trump led must be followed
    /// with a trump).
    #[error("must play a trump: you hold some and cannot follow ({card} is not a trump)")]
    MustTrump {
        /// The card tried.
        card: Card,
    },
    /// FFT, jeu de la carte: a trump must beat the trumps already in the trick if it can.
    #[error("must overtrump: you hold a trump higher than T{highest}, {card} is not")]
    MustOvertrump {
        /// The highest trump already in the trick.
        highest: u8,
        /// The card tried.
        card: Card,
    },
}
