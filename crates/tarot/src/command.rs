//! What the table and the players ask for: [`Command`]s, sent by an
//! [`Actor`](fairdeal_table_game::Actor).
//!
//! JSON (stable): an object tagged by `"command"`, e.g. `{"command":"bid","contract":"garde"}`,
//! `{"command":"pass"}`, `{"command":"call_king","card":"KH"}`,
//! `{"command":"discard","card":"3S"}`, `{"command":"declare_chelem","announce":false}`,
//! `{"command":"show_poignee","trumps":["T2",...]}`, `{"command":"play_card","card":"T21"}`,
//! `{"command":"start_deal","hands":[["T1",...],...],"chien":[...]}`,
//! `{"command":"start_match","options":{"seats":4,"rounds":1},"first_dealer":0}`.

use fairdeal_fairness::deal::Deal;
use fairdeal_table_game::Seat;
use serde::{Deserialize, Serialize};

use crate::card::Card;
use crate::contract::Contract;
use crate::error::{DealError, RuleError};
use crate::options::TarotOptions;

/// A request to change the game; [`crate::Tarot::decide`] turns it into events or a
/// [`RuleError`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Table: start the match with these options; `first_dealer` deals deal 0.
    StartMatch {
        /// Seats and length.
        options: TarotOptions,
        /// The dealer of the first deal (the deal then passes to the next seat).
        first_dealer: Seat,
    },
    /// Table: start the next deal with these hands, in dealing order (`hands[0]` is the
    /// first hand served, the seat after the dealer: the fairness crate's `Deal::hands`),
    /// and this chien (`Deal::chien`).
    StartDeal {
        /// One hand per seat, 24, 18 or 15 cards.
        hands: Vec<Vec<Card>>,
        /// The chien, 6, 6 or 3 cards.
        chien: Vec<Card>,
    },
    /// Seat: bid a contract higher than the last.
    Bid {
        /// The contract.
        contract: Contract,
    },
    /// Seat: pass (each player speaks once).
    Pass,
    /// Taker, at 5: call a king (or a queen, holding the four kings).
    CallKing {
        /// The card called.
        card: Card,
    },
    /// Taker (petite, garde): put one card of the écart aside.
    Discard {
        /// The card.
        card: Card,
    },
    /// Taker: announce a chelem (and lead the first trick), or not.
    DeclareChelem {
        /// Whether the taker announces it.
        announce: bool,
    },
    /// Seat: show a poignée, just before its first card.
    ShowPoignee {
        /// The trumps shown (and the excuse, when it completes the poignée).
        trumps: Vec<Card>,
    },
    /// Seat: play a card to the trick.
    PlayCard {
        /// The card.
        card: Card,
    },
}

impl Command {
    /// The `StartDeal` command for a fairness deal of a Tarot deck: its hands in dealing
    /// order and its chien, card for card.
    pub fn start_deal(deal: &Deal) -> Result<Command, RuleError> {
        let card = |index: u8| {
            Card::from_deck_index(deal.deck, index).ok_or(DealError::BadIndex {
                deck: deal.deck,
                index,
            })
        };
        if !deal.deck.is_tarot() {
            return Err(DealError::WrongDeck {
                found: deal.deck,
                expected: fairdeal_fairness::Deck::Tarot4,
            }
            .into());
        }
        let hands = deal
            .hands
            .iter()
            .map(|hand| hand.iter().map(|&i| card(i)).collect::<Result<Vec<_>, _>>())
            .collect::<Result<Vec<_>, _>>()?;
        let chien = deal
            .chien
            .iter()
            .map(|&i| card(i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Command::StartDeal { hands, chien })
    }

    /// A short name of the command, for errors and logs.
    pub const fn name(&self) -> &'static str {
        match self {
            Command::StartMatch { .. } => "start_match",
            Command::StartDeal { .. } => "start_deal",
            Command::Bid { .. } => "bid",
            Command::Pass => "pass",
            Command::CallKing { .. } => "call_king",
            Command::Discard { .. } => "discard",
            Command::DeclareChelem { .. } => "declare_chelem",
            Command::ShowPoignee { .. } => "show_poignee",
            Command::PlayCard { .. } => "play_card",
        }
    }

    /// Whether only the table may send this command.
    pub const fn is_table_command(&self) -> bool {
        matches!(self, Command::StartMatch { .. } | Command::StartDeal { .. })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use fairdeal_fairness::Deck;

    use super::*;

    #[test]
    fn a_fairness_deal_becomes_hands_and_chien_with_the_same_codes() {
        for deck in [Deck::Tarot3, Deck::Tarot4, Deck::Tarot5] {
            let deal = Deal::from_seeds(deck, "s", "c", "0");
            let Ok(Command::StartDeal { hands, chien }) = Command::start_deal(&deal) else {
                panic!("not a start_deal");
            };
            assert_eq!(hands.len(), deck.hands());
            for (cards, indices) in hands.iter().zip(&deal.hands) {
                let codes: Vec<&str> = cards.iter().map(|c| c.code()).collect();
                assert_eq!(codes, deal.codes(indices));
            }
            let codes: Vec<&str> = chien.iter().map(|c| c.code()).collect();
            assert_eq!(codes, deal.codes(&deal.chien));
        }
        let dix = Deal::from_seeds(Deck::Dix, "s", "c", "0");
        assert!(matches!(
            Command::start_deal(&dix),
            Err(RuleError::BadDeal(DealError::WrongDeck { .. }))
        ));
    }

    #[test]
    fn wire_form() {
        let json = |c: &Command| serde_json::to_string(c).unwrap();
        assert_eq!(
            json(&Command::Bid {
                contract: Contract::GardeSans
            }),
            r#"{"command":"bid","contract":"garde_sans"}"#
        );
        assert_eq!(json(&Command::Pass), r#"{"command":"pass"}"#);
        let play: Command =
            serde_json::from_str(r#"{"command":"play_card","card":"10H"}"#).unwrap();
        assert_eq!(
            play,
            Command::PlayCard {
                card: "10H".parse().unwrap()
            }
        );
    }
}
