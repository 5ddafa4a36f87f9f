//! What the table and the players ask for: [`Command`]s, sent by an [`Actor`], plus the
//! [`Bid`] and auction [`Call`] types they carry.
//!
//! JSON (stable): a command is an object tagged by `"command"`, e.g.
//! `{"command":"bid","bid":{"points":70}}`, `{"command":"bid","bid":"game"}`,
//! `{"command":"pass"}`, `{"command":"name_trump","suit":"hearts"}`,
//! `{"command":"play_card","card":"TH"}`,
//! `{"command":"start_hand","hands":[["AS",...],...]}`,
//! `{"command":"start_match","options":{...},"first_dealer":3}`.

use fairdeal_fairness::deal::Deal;
use serde::{Deserialize, Serialize};

use crate::card::{Card, Suit};
use crate::error::{DealError, RuleError};
use crate::options::TableOptions;
use crate::seat::Seat;

/// A bid in the auction: a number of points, or "the game" (la partie), above every number.
///
/// With trump by purchase the number is the price offered. JSON: `{"points": 70}` or
/// `"game"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bid {
    /// A contract (or a price) in points; the derived order compares the numbers.
    Points(u16),
    /// "The game": the team must win every point of the hand, and wins or loses the match.
    Game,
}

impl Bid {
    /// The number of points bid, `None` for "the game".
    pub const fn points(self) -> Option<u16> {
        match self {
            Bid::Points(n) => Some(n),
            Bid::Game => None,
        }
    }
}

impl std::fmt::Display for Bid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bid::Points(n) => write!(f, "{n}"),
            Bid::Game => f.write_str("the game"),
        }
    }
}

/// One call of the auction, as kept in the public history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// The player bid (JSON `{"bid": ...}`).
    Bid(Bid),
    /// The player passed and is out of the auction (JSON `"pass"`).
    Pass,
}

/// Who sends a command: the table itself (starting the match and each hand) or a seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The table (the tables service or a simulator): starts the match and deals.
    Table,
    /// The player at a seat.
    Seat(Seat),
}

/// A request to change the game; [`crate::Game::decide`] turns it into events or a
/// [`RuleError`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Table: start the match with these options; `first_dealer` deals hand 0.
    StartMatch {
        /// The table's variants.
        options: TableOptions,
        /// The dealer of the first hand (the deal then passes clockwise).
        first_dealer: Seat,
    },
    /// Table: start the next hand with these hands, in dealing order: `hands[0]` is the
    /// first hand served, the dealer's left (the fairness crate's `Deal::hands`).
    StartHand {
        /// Four hands of 10 (or 9 with Ruff) cards, hand 0 = dealer's left.
        hands: Vec<Vec<Card>>,
    },
    /// Seat: bid (or offer a price, with trump by purchase).
    Bid {
        /// The bid.
        bid: Bid,
    },
    /// Seat: pass; the player is out of this auction.
    Pass,
    /// Seat (auction winner): name the trump suit.
    NameTrump {
        /// The trump suit.
        suit: Suit,
    },
    /// Seat: play a card to the current trick.
    PlayCard {
        /// The card played.
        card: Card,
    },
}

impl Command {
    /// The `StartHand` command for a deal from the fairness crate (deck `dix` or `ruff`).
    pub fn start_hand(deal: &Deal) -> Result<Command, RuleError> {
        let mut hands = Vec::with_capacity(deal.hands.len());
        for hand in &deal.hands {
            let mut cards = Vec::with_capacity(hand.len());
            for &index in hand {
                let card = Card::from_deck_index(deal.deck, index).ok_or(DealError::BadIndex {
                    deck: deal.deck,
                    index,
                })?;
                cards.push(card);
            }
            hands.push(cards);
        }
        Ok(Command::StartHand { hands })
    }

    /// A short name of the command, for errors and logs.
    pub const fn name(&self) -> &'static str {
        match self {
            Command::StartMatch { .. } => "start_match",
            Command::StartHand { .. } => "start_hand",
            Command::Bid { .. } => "bid",
            Command::Pass => "pass",
            Command::NameTrump { .. } => "name_trump",
            Command::PlayCard { .. } => "play_card",
        }
    }

    /// Whether only the table may send this command.
    pub const fn is_table_command(&self) -> bool {
        matches!(self, Command::StartMatch { .. } | Command::StartHand { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bids_order_with_the_game_on_top() {
        assert!(Bid::Points(55) > Bid::Points(50));
        assert!(Bid::Game > Bid::Points(100));
        assert_eq!(Bid::Game.points(), None);
        assert_eq!(Bid::Points(70).to_string(), "70");
    }

    #[test]
    fn wire_form() {
        let json = |c: &Command| serde_json::to_string(c).unwrap();
        assert_eq!(
            json(&Command::Bid {
                bid: Bid::Points(70)
            }),
            r#"{"command":"bid","bid":{"points":70}}"#
        );
        assert_eq!(
            json(&Command::Bid { bid: Bid::Game }),
            r#"{"command":"bid","bid":"game"}"#
        );
        assert_eq!(json(&Command::Pass), r#"{"command":"pass"}"#);
        assert_eq!(
            json(&Command::NameTrump { suit: Suit::Hearts }),
            r#"{"command":"name_trump","suit":"hearts"}"#
        );
        let play: Command = serde_json::from_str(r#"{"command":"play_card","card":"TH"}"#).unwrap();
        assert_eq!(
            play,
            Command::PlayCard {
                card: "TH".parse().unwrap()
            }
        );
        assert_eq!(serde_json::to_string(&Call::Pass).unwrap(), r#""pass""#);
        assert_eq!(
            serde_json::to_string(&Actor::Seat(Seat::ALL[1])).unwrap(),
            r#"{"seat":1}"#
        );
    }

    #[test]
    fn start_hand_from_a_fairness_deal() {
        let deal = Deal::from_seeds(fairdeal_fairness::Deck::Ruff, "s", "c", "0");
        let Command::StartHand { hands } = Command::start_hand(&deal).unwrap() else {
            panic!("not a start_hand");
        };
        assert_eq!(hands.len(), 4);
        for (cards, indices) in hands.iter().zip(&deal.hands) {
            let codes: Vec<String> = cards.iter().map(ToString::to_string).collect();
            assert_eq!(codes, deal.codes(indices));
        }
        let bridge = Deal::from_seeds(fairdeal_fairness::Deck::Bridge, "s", "c", "0");
        assert!(Command::start_hand(&bridge).is_err());
    }
}
