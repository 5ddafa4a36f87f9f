//! Table options (the variants a table is created with) and the validated [`Rules`] they
//! give.
//!
//! [`TableOptions`] is the wire form: plain flags, every field optional in JSON. Nonsensical
//! combinations are rejected by [`Rules::new`], which also derives the numbers of the scale
//! (target, bid limits, defence threshold, budget) so that the engine never re-derives them.
//!
//! | options                    | target | bids                         | defence threshold | "the game" |
//! |----------------------------|--------|------------------------------|-------------------|------------|
//! | standard                   | 500    | 50..=100, step 5             | 400               | yes        |
//! | penalised aces             | 300    | 30..=60, step 5              | 240               | no         |
//! | purchase in points         | same   | 5..=hand points, step 5      | none              | no         |
//! | purchase with a budget     | same   | 1..=team's budget, step 1    | none              | no         |
//!
//! "Hand points" is 100, or 60 with penalised aces (aces are then worth nothing net).

use fairdeal_fairness::Deck;
use serde::{Deserialize, Serialize};

use crate::card::{CardSet, JeuDu10Cards};

/// How the trump is bought when the table plays "trump by purchase".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purchase {
    /// The price is subtracted from the buyer team's points for the hand.
    Points,
    /// The price is paid from the buyer team's budget for the whole match.
    Budget,
}

/// The options a table is created with (SPEC section 5, variants).
///
/// JSON: `{"deck": "dix", "penalised_aces": false, "made_or_nothing": false,
/// "purchase": null, "budget": null}`; every field may be omitted (the default is the
/// standard game) and unknown fields are rejected.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TableOptions {
    /// `dix` (40 cards, 10 each) or `ruff` (Ruff / Deux-Cents: 36 cards, 9 each).
    pub deck: Deck,
    /// Aces kept by their team are worth nothing; aces taken move 10 points between teams.
    pub penalised_aces: bool,
    /// A made contract gives the defence nothing; a failed one gives the defence the bid
    /// plus the shortfall and the bidders nothing.
    pub made_or_nothing: bool,
    /// Trump by purchase instead of a contract auction.
    pub purchase: Option<Purchase>,
    /// Starting budget of each team with [`Purchase::Budget`]; `None` for the default
    /// (target / 25, or target / 15 with penalised aces).
    pub budget: Option<u32>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            deck: Deck::Dix,
            penalised_aces: false,
            made_or_nothing: false,
            purchase: None,
            budget: None,
        }
    }
}

/// Why a set of table options was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// Jeu du 10 is played with the `dix` or `ruff` deck only.
    #[error("deck {0} cannot be used for Jeu du 10 (use dix or ruff)")]
    UnsupportedDeck(Deck),
    /// Made-or-nothing scores a contract; purchase modes have none.
    #[error("made_or_nothing needs a contract, but trump by purchase has no contract")]
    MadeOrNothingWithPurchase,
    /// A budget only means something when trump is bought with a budget.
    #[error("budget is only used with purchase = \"budget\"")]
    BudgetWithoutBudgetPurchase,
    /// A budget must allow at least one purchase and stay within the match target.
    #[error("budget {budget} is out of range (1..={max})")]
    BudgetOutOfRange {
        /// The budget asked for.
        budget: u32,
        /// The largest budget allowed (the match target).
        max: u32,
    },
}

/// How the auction and the hand's scoring work, derived from the options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A contract auction: the bidding team must reach its bid.
    Contract {
        /// Whether the made-or-nothing scoring applies.
        made_or_nothing: bool,
    },
    /// Trump by purchase: no contract; the price is paid in `how`.
    Purchase(Purchase),
}

/// Validated table options and the numbers of their scale.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rules {
    /// The options as given (kept to be echoed in events and views).
    options: TableOptions,
    /// Every card of the deck.
    cards: CardSet,
    /// Cards per hand (10, or 9 with Ruff).
    hand_len: usize,
    /// Score that ends the match.
    target: i32,
    /// Smallest bid (or price).
    min_bid: u16,
    /// Largest bid in points below "the game"; with a budget, the starting budget.
    max_bid: u16,
    /// Bids are multiples of this.
    bid_step: u16,
    /// Defence scores its points only below this score unless it bid; `None` when the
    /// defence always scores (purchase modes).
    defence_threshold: Option<i32>,
    /// Whether "the game" may be bid.
    game_bid: bool,
    /// Starting budget of each team (budget purchase only).
    budget: Option<u32>,
    /// Net card points in a hand: 100, or 60 with penalised aces.
    hand_points: i32,
}

impl Rules {
    /// Validates `options` and derives the scale.
    pub fn new(options: &TableOptions) -> Result<Rules, OptionsError> {
        let cards =
            CardSet::of_deck(options.deck).ok_or(OptionsError::UnsupportedDeck(options.deck))?;
        if options.made_or_nothing && options.purchase.is_some() {
            return Err(OptionsError::MadeOrNothingWithPurchase);
        }
        if options.budget.is_some() && options.purchase != Some(Purchase::Budget) {
            return Err(OptionsError::BudgetWithoutBudgetPurchase);
        }
        let aces = options.penalised_aces;
        let target: u32 = if aces { 300 } else { 500 };
        let hand_points: u16 = if aces { 60 } else { 100 };
        let hand_len = options.deck.len() / 4;
        let base = Rules {
            options: options.clone(),
            cards,
            hand_len,
            target: target as i32,
            min_bid: if aces { 30 } else { 50 },
            max_bid: if aces { 60 } else { 100 },
            bid_step: 5,
            defence_threshold: Some(if aces { 240 } else { 400 }),
            game_bid: !aces,
            budget: None,
            hand_points: i32::from(hand_points),
        };
        Ok(match options.purchase {
            None => base,
            Some(Purchase::Points) => Rules {
                min_bid: 5,
                max_bid: hand_points,
                defence_threshold: None,
                game_bid: false,
                ..base
            },
            Some(Purchase::Budget) => {
                let budget = match options.budget {
                    Some(b) if (1..=target).contains(&b) => b,
                    Some(b) => {
                        return Err(OptionsError::BudgetOutOfRange {
                            budget: b,
                            max: target,
                        });
                    }
                    None => target / if aces { 15 } else { 25 },
                };
                Rules {
                    min_bid: 1,
                    // The budget is at most the target (500), so it fits.
                    max_bid: u16::try_from(budget).unwrap_or(u16::MAX),
                    bid_step: 1,
                    defence_threshold: None,
                    game_bid: false,
                    budget: Some(budget),
                    ..base
                }
            }
        })
    }

    /// The options these rules were built from.
    pub fn options(&self) -> &TableOptions {
        &self.options
    }

    /// The deck dealt.
    pub fn deck(&self) -> Deck {
        self.options.deck
    }

    /// Every card of the deck.
    pub fn cards(&self) -> CardSet {
        self.cards
    }

    /// Cards per hand.
    pub fn hand_len(&self) -> usize {
        self.hand_len
    }

    /// Score that ends the match (500, or 300 with penalised aces).
    pub fn target(&self) -> i32 {
        self.target
    }

    /// Smallest bid or price.
    pub fn min_bid(&self) -> u16 {
        self.min_bid
    }

    /// Largest bid in points (with a budget: the starting budget).
    pub fn max_bid(&self) -> u16 {
        self.max_bid
    }

    /// Bids are multiples of this (5, or 1 with a budget).
    pub fn bid_step(&self) -> u16 {
        self.bid_step
    }

    /// The defence threshold, if the defence can be stopped from scoring.
    pub fn defence_threshold(&self) -> Option<i32> {
        self.defence_threshold
    }

    /// Whether "the game" may be bid under these options.
    pub fn game_bid_allowed(&self) -> bool {
        self.game_bid
    }

    /// Starting budget of each team (budget purchase only).
    pub fn budget(&self) -> Option<u32> {
        self.budget
    }

    /// Net card points in one hand (100, or 60 with penalised aces).
    pub fn hand_points(&self) -> i32 {
        self.hand_points
    }

    /// Whether aces are penalised.
    pub fn penalised_aces(&self) -> bool {
        self.options.penalised_aces
    }

    /// How the auction and scoring work.
    pub fn mode(&self) -> Mode {
        match self.options.purchase {
            None => Mode::Contract {
                made_or_nothing: self.options.made_or_nothing,
            },
            Some(how) => Mode::Purchase(how),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(options: TableOptions) -> Result<Rules, OptionsError> {
        Rules::new(&options)
    }

    #[test]
    fn standard_scale() {
        let r = rules(TableOptions::default()).unwrap();
        assert_eq!(
            (r.target(), r.min_bid(), r.max_bid(), r.bid_step()),
            (500, 50, 100, 5)
        );
        assert_eq!(r.defence_threshold(), Some(400));
        assert!(r.game_bid_allowed());
        assert_eq!(r.hand_len(), 10);
        assert_eq!(r.hand_points(), 100);
        assert_eq!(
            r.mode(),
            Mode::Contract {
                made_or_nothing: false
            }
        );
    }

    #[test]
    fn penalised_aces_scale() {
        let r = rules(TableOptions {
            penalised_aces: true,
            ..TableOptions::default()
        })
        .unwrap();
        assert_eq!((r.target(), r.min_bid(), r.max_bid()), (300, 30, 60));
        assert_eq!(r.defence_threshold(), Some(240));
        assert!(!r.game_bid_allowed());
        assert_eq!(r.hand_points(), 60);
    }

    #[test]
    fn ruff_has_nine_cards_each() {
        let r = rules(TableOptions {
            deck: Deck::Ruff,
            ..TableOptions::default()
        })
        .unwrap();
        assert_eq!(r.hand_len(), 9);
        assert_eq!(r.cards().len(), 36);
    }

    #[test]
    fn purchase_scales() {
        let points = rules(TableOptions {
            purchase: Some(Purchase::Points),
            ..TableOptions::default()
        })
        .unwrap();
        assert_eq!(
            (points.min_bid(), points.max_bid(), points.bid_step()),
            (5, 100, 5)
        );
        assert_eq!(points.defence_threshold(), None);
        assert!(!points.game_bid_allowed());

        let budget = |aces, budget| {
            rules(TableOptions {
                penalised_aces: aces,
                purchase: Some(Purchase::Budget),
                budget,
                ..TableOptions::default()
            })
        };
        assert_eq!(budget(false, None).unwrap().budget(), Some(20)); // 500 / 25
        assert_eq!(budget(true, None).unwrap().budget(), Some(20)); // 300 / 15
        let b = budget(false, Some(7)).unwrap();
        assert_eq!(
            (b.budget(), b.min_bid(), b.max_bid(), b.bid_step()),
            (Some(7), 1, 7, 1)
        );
        assert_eq!(
            budget(false, Some(0)),
            Err(OptionsError::BudgetOutOfRange {
                budget: 0,
                max: 500
            })
        );
        assert_eq!(
            budget(true, Some(301)),
            Err(OptionsError::BudgetOutOfRange {
                budget: 301,
                max: 300
            })
        );
    }

    #[test]
    fn nonsense_is_rejected() {
        assert_eq!(
            rules(TableOptions {
                made_or_nothing: true,
                purchase: Some(Purchase::Points),
                ..TableOptions::default()
            }),
            Err(OptionsError::MadeOrNothingWithPurchase)
        );
        assert_eq!(
            rules(TableOptions {
                budget: Some(10),
                ..TableOptions::default()
            }),
            Err(OptionsError::BudgetWithoutBudgetPurchase)
        );
        assert_eq!(
            rules(TableOptions {
                budget: Some(10),
                purchase: Some(Purchase::Points),
                ..TableOptions::default()
            }),
            Err(OptionsError::BudgetWithoutBudgetPurchase)
        );
        assert_eq!(
            rules(TableOptions {
                deck: Deck::Bridge,
                ..TableOptions::default()
            }),
            Err(OptionsError::UnsupportedDeck(Deck::Bridge))
        );
    }

    #[test]
    fn combinations_that_make_sense_are_accepted() {
        for deck in [Deck::Dix, Deck::Ruff] {
            for penalised_aces in [false, true] {
                for (made_or_nothing, purchase) in [
                    (false, None),
                    (true, None),
                    (false, Some(Purchase::Points)),
                    (false, Some(Purchase::Budget)),
                ] {
                    let options = TableOptions {
                        deck,
                        penalised_aces,
                        made_or_nothing,
                        purchase,
                        budget: None,
                    };
                    assert!(rules(options.clone()).is_ok(), "{options:?}");
                }
            }
        }
    }

    #[test]
    fn wire_form() {
        let o: TableOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(o, TableOptions::default());
        let o: TableOptions =
            serde_json::from_str(r#"{"deck":"ruff","purchase":"budget","budget":12}"#).unwrap();
        assert_eq!(o.purchase, Some(Purchase::Budget));
        assert_eq!(o.deck, Deck::Ruff);
        assert!(serde_json::from_str::<TableOptions>(r#"{"colour":"red"}"#).is_err());
        assert_eq!(
            serde_json::to_string(&TableOptions::default()).unwrap(),
            r#"{"deck":"dix","penalised_aces":false,"made_or_nothing":false,"purchase":null,"budget":null}"#
        );
    }
}
