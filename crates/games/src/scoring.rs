//! Hand scoring and the end of the match, as pure functions of numbers, so every rule
//! and variant can be checked on worked examples.
//!
//! - [`card_points`]: what each team made in cards (with the penalised-aces transfers).
//! - [`score_hand`]: how the scores move (contract, defence threshold, made-or-nothing,
//!   purchase modes, "the game").
//! - [`match_end`]: whether a team has won.

use crate::card::{Card, CardSet, JeuDu10Cards, Rank, Suit};
use crate::command::Bid;
use crate::event::MatchEnd;
use crate::options::{Mode, Purchase, Rules};
use crate::seat::{Seat, Team};

/// Card points of a hand, per team.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CardPoints {
    /// Net points per team, transfers included.
    pub net: [i32; 2],
    /// Penalised-aces transfers per team (sum 0).
    pub ace_transfers: [i32; 2],
}

/// Card points made by each team from the cards it won.
///
/// Without penalised aces: A and T 10, 5 5 (100 in all). With penalised aces: aces count
/// for nothing in the piles; an ace won by the team that held it at the deal stays at 0,
/// one won by the other team gives +10 to the winners and -10 to the team that held it.
/// `dealt` is indexed by seat, `won` by team.
pub fn card_points(penalised_aces: bool, dealt: &[CardSet; 4], won: &[CardSet; 2]) -> CardPoints {
    let mut net = [0i32; 2];
    let mut ace_transfers = [0i32; 2];
    for team in Team::ALL {
        let pile = won[team.index()];
        net[team.index()] = pile.points() as i32;
    }
    if penalised_aces {
        for suit in Suit::ALL {
            let ace = Card::new(suit, Rank::Ace);
            let winner = Team::ALL.into_iter().find(|t| won[t.index()].contains(ace));
            let holder = Seat::ALL
                .into_iter()
                .find(|s| dealt[s.index()].contains(ace))
                .map(Seat::team);
            if let Some(winner) = winner {
                // The ace's face value never counts under this variant.
                net[winner.index()] -= 10;
                if let Some(holder) = holder
                    && holder != winner
                {
                    ace_transfers[winner.index()] += 10;
                    ace_transfers[holder.index()] -= 10;
                }
            }
        }
        for t in 0..2 {
            net[t] += ace_transfers[t];
        }
    }
    CardPoints { net, ace_transfers }
}

/// How a hand moved the scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandOutcome {
    /// Score change per team.
    pub deltas: [i32; 2],
    /// Whether the contract was made (`None` with trump by purchase).
    pub contract_made: Option<bool>,
}

/// Scores a hand.
///
/// - `declarer`: the team that won the auction; `bid` its bid (or price, with purchase).
/// - `points`: net card points per team ([`card_points`]).
/// - `scores`: scores before the hand (for the defence threshold).
/// - `bid_by_team`: whether a player of each team bid during the auction.
///
/// Contract: the declarer scores its points if they reach the bid, else loses the bid; the
/// defence scores its points if its score is below the threshold or one of its players bid,
/// else nothing. Made-or-nothing: made, the defence scores 0; failed, the declarer scores 0
/// and the defence the bid plus the shortfall (no threshold: the award replaces the
/// defence's card points). "The game": made when the declarer won every point
/// (`rules.hand_points()`); the scores do not move, the match is decided by [`match_end`].
/// Purchase in points: both teams score their points, the buyer's team minus the price.
/// Purchase with a budget: both teams score their points (the price came out of the
/// budget when the auction was won).
pub fn score_hand(
    rules: &Rules,
    declarer: Team,
    bid: Bid,
    points: [i32; 2],
    scores: [i32; 2],
    bid_by_team: [bool; 2],
) -> HandOutcome {
    let d = declarer.index();
    let o = declarer.other().index();
    let mut deltas = [0i32; 2];
    match rules.mode() {
        Mode::Purchase(how) => {
            deltas = points;
            if how == Purchase::Points {
                deltas[d] = deltas[d].saturating_sub(i32::from(bid.points().unwrap_or(0)));
            }
            HandOutcome {
                deltas,
                contract_made: None,
            }
        }
        Mode::Contract { made_or_nothing } => {
            let Bid::Points(amount) = bid else {
                return HandOutcome {
                    deltas,
                    contract_made: Some(points[d] >= rules.hand_points()),
                };
            };
            let amount = i32::from(amount);
            let made = points[d] >= amount;
            if made_or_nothing {
                if made {
                    deltas[d] = points[d];
                } else {
                    // Saturating: the function is public and must be total on any numbers.
                    deltas[o] = amount.saturating_add(amount.saturating_sub(points[d]));
                }
            } else {
                deltas[d] = if made { points[d] } else { -amount };
                let below = rules
                    .defence_threshold()
                    .is_none_or(|threshold| scores[o] < threshold);
                if below || bid_by_team[o] {
                    deltas[o] = points[o];
                }
            }
            HandOutcome {
                deltas,
                contract_made: Some(made),
            }
        }
    }
}

/// Whether the match ends after a hand, and who wins.
///
/// "The game" decides the match whatever the scores. Otherwise a team wins when its score
/// reaches the target; when both do in the same hand, the declarer's team wins.
pub fn match_end(
    rules: &Rules,
    declarer: Team,
    bid: Bid,
    contract_made: Option<bool>,
    scores: [i32; 2],
) -> Option<(Team, MatchEnd)> {
    if bid == Bid::Game {
        return Some(if contract_made == Some(true) {
            (declarer, MatchEnd::GameBidMade)
        } else {
            (declarer.other(), MatchEnd::GameBidFailed)
        });
    }
    let reached = |t: Team| scores[t.index()] >= rules.target();
    match (reached(declarer), reached(declarer.other())) {
        (true, true) => Some((declarer, MatchEnd::BothReachedDeclarerWins)),
        (true, false) => Some((declarer, MatchEnd::TargetReached)),
        (false, true) => Some((declarer.other(), MatchEnd::TargetReached)),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::TableOptions;
    use proptest::prelude::*;

    proptest! {
        /// Scoring is total: any numbers, any mode, no panic (no overflow).
        #[test]
        fn scoring_never_panics(
            mode in 0usize..4,
            game in any::<bool>(),
            amount in any::<u16>(),
            points in any::<[i32; 2]>(),
            scores in any::<[i32; 2]>(),
            bid_by_team in any::<[bool; 2]>(),
        ) {
            let r = rules(|o| match mode {
                0 => {}
                1 => o.made_or_nothing = true,
                2 => o.purchase = Some(Purchase::Points),
                _ => o.purchase = Some(Purchase::Budget),
            });
            let bid = if game { Bid::Game } else { Bid::Points(amount) };
            let out = score_hand(&r, T0, bid, points, scores, bid_by_team);
            let end = match_end(&r, T1, bid, out.contract_made, scores);
            prop_assert!(game || out.contract_made.is_none() == (mode >= 2));
            prop_assert_eq!(game, matches!(end, Some((_, MatchEnd::GameBidMade | MatchEnd::GameBidFailed))));
        }
    }

    const T0: Team = Team::ALL[0];
    const T1: Team = Team::ALL[1];

    fn rules(edit: impl FnOnce(&mut TableOptions)) -> Rules {
        let mut options = TableOptions::default();
        edit(&mut options);
        Rules::new(&options).unwrap()
    }

    fn set(codes: &str) -> CardSet {
        codes.parse().unwrap()
    }

    #[test]
    fn standard_contract_made_and_failed() {
        let r = rules(|_| {});
        // Bid 70, made 75 to 25: both score their points.
        let out = score_hand(&r, T0, Bid::Points(70), [75, 25], [0, 0], [true, false]);
        assert_eq!(out.deltas, [75, 25]);
        assert_eq!(out.contract_made, Some(true));
        // Exactly the bid is made.
        let out = score_hand(&r, T1, Bid::Points(60), [40, 60], [0, 0], [false, true]);
        assert_eq!((out.deltas, out.contract_made), ([40, 60], Some(true)));
        // Bid 80, made 70: the declarer loses 80, the defence scores its 30.
        let out = score_hand(&r, T0, Bid::Points(80), [70, 30], [0, 0], [true, false]);
        assert_eq!((out.deltas, out.contract_made), ([-80, 30], Some(false)));
    }

    #[test]
    fn defence_threshold_400() {
        let r = rules(|_| {});
        // Defence at 400 that did not bid scores nothing.
        let out = score_hand(&r, T0, Bid::Points(50), [60, 40], [100, 400], [true, false]);
        assert_eq!(out.deltas, [60, 0]);
        // At 395 it still scores (below 400).
        let out = score_hand(&r, T0, Bid::Points(50), [60, 40], [100, 395], [true, false]);
        assert_eq!(out.deltas, [60, 40]);
        // At 450 but one of its players bid during the auction: it scores.
        let out = score_hand(&r, T0, Bid::Points(55), [60, 40], [100, 450], [true, true]);
        assert_eq!(out.deltas, [60, 40]);
        // The threshold applies to the defence even when the contract fails.
        let out = score_hand(&r, T0, Bid::Points(65), [60, 40], [100, 420], [true, false]);
        assert_eq!(out.deltas, [-65, 0]);
    }

    #[test]
    fn made_or_nothing() {
        let r = rules(|o| o.made_or_nothing = true);
        // SPEC example: bid 70, made 60: 0 to 80.
        let out = score_hand(&r, T0, Bid::Points(70), [60, 40], [0, 0], [true, false]);
        assert_eq!((out.deltas, out.contract_made), ([0, 80], Some(false)));
        // Made: the defence scores 0.
        let out = score_hand(&r, T1, Bid::Points(70), [25, 75], [0, 0], [false, true]);
        assert_eq!((out.deltas, out.contract_made), ([0, 75], Some(true)));
        // The award ignores the defence threshold: defence at 450 still gets 50 + 15.
        let out = score_hand(&r, T0, Bid::Points(50), [35, 65], [0, 450], [true, false]);
        assert_eq!(out.deltas, [0, 65]);
    }

    #[test]
    fn purchase_in_points() {
        let r = rules(|o| o.purchase = Some(Purchase::Points));
        // SPEC example: bid 15, 70 to 30: 55 to 30.
        let out = score_hand(&r, T0, Bid::Points(15), [70, 30], [0, 0], [true, false]);
        assert_eq!((out.deltas, out.contract_made), ([55, 30], None));
        // No threshold: the other team scores even at 480.
        let out = score_hand(&r, T1, Bid::Points(40), [80, 20], [480, 0], [false, true]);
        assert_eq!(out.deltas, [80, -20]);
    }

    #[test]
    fn purchase_with_a_budget() {
        let r = rules(|o| o.purchase = Some(Purchase::Budget));
        // The price was paid from the budget: points are scored as they are.
        let out = score_hand(&r, T0, Bid::Points(7), [70, 30], [0, 0], [true, true]);
        assert_eq!((out.deltas, out.contract_made), ([70, 30], None));
    }

    #[test]
    fn the_game() {
        let r = rules(|_| {});
        let made = score_hand(&r, T1, Bid::Game, [0, 100], [0, 0], [false, true]);
        assert_eq!((made.deltas, made.contract_made), ([0, 0], Some(true)));
        assert_eq!(
            match_end(&r, T1, Bid::Game, made.contract_made, [0, 0]),
            Some((T1, MatchEnd::GameBidMade))
        );
        let failed = score_hand(&r, T1, Bid::Game, [5, 95], [0, 0], [false, true]);
        assert_eq!(failed.contract_made, Some(false));
        assert_eq!(
            match_end(&r, T1, Bid::Game, failed.contract_made, [0, 490]),
            Some((T0, MatchEnd::GameBidFailed))
        );
    }

    #[test]
    fn match_end_and_tie_rule() {
        let r = rules(|_| {});
        let bid = Bid::Points(50);
        assert_eq!(match_end(&r, T0, bid, Some(true), [499, 300]), None);
        assert_eq!(
            match_end(&r, T0, bid, Some(true), [500, 300]),
            Some((T0, MatchEnd::TargetReached))
        );
        // The defence can reach the target too.
        assert_eq!(
            match_end(&r, T0, bid, Some(false), [300, 520]),
            Some((T1, MatchEnd::TargetReached))
        );
        // Both reach it: the declarer's team wins, even with fewer points.
        assert_eq!(
            match_end(&r, T1, bid, Some(true), [540, 510]),
            Some((T1, MatchEnd::BothReachedDeclarerWins))
        );
        let aces = rules(|o| o.penalised_aces = true);
        assert_eq!(
            match_end(&aces, T0, Bid::Points(30), Some(true), [300, 0]),
            Some((T0, MatchEnd::TargetReached))
        );
    }

    #[test]
    fn penalised_aces_threshold_240() {
        let r = rules(|o| o.penalised_aces = true);
        let out = score_hand(&r, T0, Bid::Points(30), [40, 20], [0, 240], [true, false]);
        assert_eq!(out.deltas, [40, 0]);
        let out = score_hand(&r, T0, Bid::Points(30), [40, 20], [0, 235], [true, false]);
        assert_eq!(out.deltas, [40, 20]);
        // Negative net points are scored as they are by a defence below the threshold.
        let out = score_hand(&r, T0, Bid::Points(60), [70, -10], [0, 0], [true, false]);
        assert_eq!(out.deltas, [70, -10]);
    }

    #[test]
    fn card_points_plain() {
        let dealt = [CardSet::EMPTY; 4];
        let won = [set("AS TS 5S AH 7C"), set("TH 5H AD TD 5D AC TC 5C")];
        let p = card_points(false, &dealt, &won);
        // The rest of the deck holds no points, so the piles can omit it.
        assert_eq!(p.net, [35, 65]);
        assert_eq!(p.ace_transfers, [0, 0]);
    }

    #[test]
    fn card_points_with_penalised_aces() {
        // Seat 0 (team 0) held AS and AH; seat 1 (team 1) held AD; seat 2 (team 0) held AC.
        let dealt = [set("AS AH"), set("AD"), set("AC"), CardSet::EMPTY];
        // Team 0 won AS (its own: 0) and AD (taken from team 1: +10 / -10);
        // team 1 won AH and AC (both taken from team 0: +20 / -20).
        let won = [set("AS AD TS 5S"), set("AH AC TH TD TC 5H 5D 5C")];
        let p = card_points(true, &dealt, &won);
        assert_eq!(p.ace_transfers, [-10, 10]);
        assert_eq!(p.ace_transfers.iter().sum::<i32>(), 0);
        // Non-ace points: team 0 has 15, team 1 has 45 (60 in all); then the transfers.
        assert_eq!(p.net, [5, 55]);
        assert_eq!(p.net.iter().sum::<i32>(), 60);
    }
}
