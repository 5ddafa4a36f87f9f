//! Pure scoring functions (FFT, "le décompte" and "la marque"), in half-points where card
//! points are concerned so every count is exact.
//!
//! - [`tally`] counts a deal's tricks into the attack's pile: every trick goes to its
//!   winner's side, except the excuse, which its side keeps and exchanges for half a point
//!   (it changes side when played to the last trick, unless it won that trick in a
//!   chelem); it also finds the petit au bout and whether a side took every trick.
//! - [`contract_score`] is the contract's score per defender:
//!   `(25 + difference + petit au bout) x multiplier + poignées + chelem`, the sign of the
//!   first and of the poignées being the contract's result.
//! - [`seat_deltas`] shares it out: the taker (players - 1) times it at 3 and 4; at 5 the
//!   taker twice and the partner once, or the lone taker four times; each defender pays
//!   it once. The deltas sum to zero.

use fairdeal_table_game::Seat;

use crate::card::{Card, CardSet, DECK_HALF_POINTS, TarotCards};
use crate::contract::{Camp, Chelem, Contract, Poignee};
use crate::trick::Trick;

/// The half-points the attack needs with `oudlers` oudlers: 56, 51, 41 or 36 points.
pub const fn target_half_points(oudlers: u8) -> u16 {
    match oudlers {
        0 => 112,
        1 => 102,
        2 => 82,
        _ => 72,
    }
}

/// A deal's tricks counted for the attack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The attack's pile (tricks won, its écart or chien, and its own excuse).
    pub pile: CardSet,
    /// The attack's card points in half-points, after the excuse's exchange.
    pub half_points: u16,
    /// Oudlers in the attack's pile.
    pub oudlers: u8,
    /// The side that took the petit au bout.
    pub petit_au_bout: Option<Camp>,
    /// Whether the attack won every trick.
    pub attack_took_all: bool,
    /// Whether the defence won every trick.
    pub defence_took_all: bool,
}

/// Counts `tricks` (each with its winner, the last one last) for the attack, `camp`
/// telling each seat's side; `attack_extra` is what the attack counts besides its tricks:
/// the écart (petite, garde) or the chien (garde sans; at a garde contre the chien is the
/// defence's, so nothing).
pub fn tally(tricks: &[Trick], camp: impl Fn(Seat) -> Camp, attack_extra: CardSet) -> Tally {
    let mut attack = attack_extra;
    // Half-points the attack receives (+) or gives (-) for excuses exchanged.
    let mut exchange: i32 = 0;
    let last = tricks.len().saturating_sub(1);
    for (i, trick) in tricks.iter().enumerate() {
        let winner = camp(trick.winner);
        for played in &trick.cards {
            let owner = camp(played.seat);
            let kept = played.card.is_excuse() && i != last && owner != winner;
            let goes_to = if kept { owner } else { winner };
            if goes_to == Camp::Attack {
                attack.insert(played.card);
            }
            if kept {
                // The excuse's side gives the trick's winners a half-point card instead.
                exchange += if owner == Camp::Attack { -1 } else { 1 };
            }
        }
    }
    let half_points =
        (i32::from(attack.half_points()) + exchange).clamp(0, i32::from(DECK_HALF_POINTS)) as u16;
    let petit_au_bout = petit_au_bout(tricks, &camp);
    let took_all = |side| !tricks.is_empty() && tricks.iter().all(|t| camp(t.winner) == side);
    Tally {
        pile: attack,
        half_points,
        oudlers: attack.oudlers() as u8,
        petit_au_bout,
        attack_took_all: took_all(Camp::Attack),
        defence_took_all: took_all(Camp::Defence),
    }
}

/// The side that took the petit au bout: the petit in the last trick goes with it to the
/// side that wins it; when a chelem's last trick is won by the excuse, the petit in the
/// one before counts as au bout.
fn petit_au_bout(tricks: &[Trick], camp: &impl Fn(Seat) -> Camp) -> Option<Camp> {
    let last = tricks.last()?;
    if last.set().contains(Card::PETIT) {
        return Some(camp(last.winner));
    }
    let won_by_excuse = last.player_of(Card::EXCUSE) == Some(last.winner);
    let before = tricks.len().checked_sub(2).and_then(|i| tricks.get(i))?;
    (won_by_excuse
        && before.set().contains(Card::PETIT)
        && camp(before.winner) == camp(last.winner))
    .then(|| camp(last.winner))
}

/// The chelem of a deal from the announcement and who took every trick.
pub const fn chelem(announced: bool, attack_took_all: bool, defence_took_all: bool) -> Chelem {
    match (announced, attack_took_all, defence_took_all) {
        (true, true, _) => Chelem::AnnouncedMade,
        (false, true, _) => Chelem::Made,
        (true, false, _) => Chelem::AnnouncedFailed,
        (false, false, true) => Chelem::Defence,
        (false, false, false) => Chelem::None,
    }
}

/// A contract's score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContractScore {
    /// The points the attack needed.
    pub target: u8,
    /// Whether it made them.
    pub made: bool,
    /// Points over or under the target, half a point rounded up.
    pub difference: u16,
    /// What each defender pays the attack (negative: receives).
    pub value: i32,
}

/// The contract's score per defender (see the module docs): made when the attack has at
/// least the target; a difference of x.5 points rounds up (to the taker's gain when made,
/// to the defence's when failed); the petit au bout counts 10 to the side that took it,
/// multiplied; poignées and the chelem are not multiplied, and the poignées go to the side
/// that wins the contract.
pub fn contract_score(
    contract: Contract,
    half_points: u16,
    oudlers: u8,
    petit_au_bout: Option<Camp>,
    poignees: &[Poignee],
    chelem: Chelem,
) -> ContractScore {
    let target = target_half_points(oudlers);
    let made = half_points >= target;
    let difference = half_points.abs_diff(target).div_ceil(2);
    let sign = if made { 1 } else { -1 };
    let petit = match petit_au_bout {
        Some(Camp::Attack) => 10,
        Some(Camp::Defence) => -10,
        None => 0,
    };
    let poignees: i32 = poignees.iter().map(|p| p.bonus()).sum();
    let value = (sign * (25 + i32::from(difference)) + petit) * contract.multiplier()
        + sign * poignees
        + chelem.bonus();
    ContractScore {
        target: (target / 2) as u8,
        made,
        difference,
        value,
    }
}

/// Each seat's share of a contract worth `value` per defender, at a table of `seats`
/// seats; `partner` is the called partner at 5 (`None`: alone). Sums to zero.
pub fn seat_deltas(seats: usize, taker: Seat, partner: Option<Seat>, value: i32) -> Vec<i32> {
    let partner = partner.filter(|p| *p != taker);
    Seat::all(seats)
        .map(|seat| {
            if seat == taker {
                let defenders = seats - 1 - usize::from(partner.is_some());
                let partner_share = i32::from(partner.is_some());
                value * (defenders as i32 - partner_share)
            } else if Some(seat) == partner {
                value
            } else {
                -value
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::trick::PlayedCard;

    fn seat(n: u8) -> Seat {
        Seat::new(n).unwrap()
    }

    fn trick(cards: &[(u8, &str)], winner: u8) -> Trick {
        Trick {
            cards: cards
                .iter()
                .map(|(s, c)| PlayedCard {
                    seat: seat(*s),
                    card: c.parse().unwrap(),
                })
                .collect(),
            winner: seat(winner),
        }
    }

    /// Seat 0 is the taker at 4.
    fn camp(s: Seat) -> Camp {
        if s.index() == 0 {
            Camp::Attack
        } else {
            Camp::Defence
        }
    }

    #[test]
    fn the_taker_collects_the_shares_of_the_defenders() {
        assert_eq!(seat_deltas(4, seat(1), None, 66), [-66, 198, -66, -66]);
        assert_eq!(seat_deltas(3, seat(2), None, -30), [30, 30, -60]);
        assert_eq!(
            seat_deltas(5, seat(0), Some(seat(3)), 50),
            [100, -50, -50, 50, -50]
        );
        assert_eq!(seat_deltas(5, seat(0), None, 50), [200, -50, -50, -50, -50]);
        // Calling one's own king is playing alone.
        assert_eq!(
            seat_deltas(5, seat(4), Some(seat(4)), -7),
            [7, 7, 7, 7, -28]
        );
        for deltas in [
            seat_deltas(5, seat(2), Some(seat(0)), 123),
            seat_deltas(3, seat(1), None, -456),
        ] {
            assert_eq!(deltas.iter().sum::<i32>(), 0);
        }
    }

    #[test]
    fn the_excuse_is_kept_for_half_a_point_except_in_the_last_trick() {
        // The taker's excuse in a trick the defence wins: the taker keeps it (4.5) and
        // gives half a point.
        let tricks = [
            trick(&[(0, "EX"), (1, "3S"), (2, "KS"), (3, "4S")], 2),
            trick(&[(0, "T21"), (1, "T2"), (2, "T3"), (3, "T4")], 0),
        ];
        let t = tally(&tricks, camp, CardSet::EMPTY);
        // EX 9 - 1 + T21 9 + T2 T3 T4 3 = 20 half-points.
        assert_eq!((t.half_points, t.oudlers), (20, 2));
        // Played to the last trick, the excuse goes to the trick's winner.
        let tricks = [
            trick(&[(0, "T21"), (1, "T2"), (2, "T3"), (3, "T4")], 0),
            trick(&[(0, "EX"), (1, "3S"), (2, "KS"), (3, "4S")], 2),
        ];
        let t = tally(&tricks, camp, CardSet::EMPTY);
        assert_eq!((t.half_points, t.oudlers), (12, 1));
        // A defender's excuse in the taker's trick: the taker gets half a point for it.
        let tricks = [
            trick(&[(0, "KH"), (1, "EX"), (2, "3H"), (3, "4H")], 0),
            trick(&[(1, "2C"), (2, "3C"), (3, "4C"), (0, "T5")], 0),
        ];
        let t = tally(&tricks, camp, CardSet::EMPTY);
        assert_eq!((t.half_points, t.oudlers), (9 + 1 + 1 + 1 + 4, 0));
        assert!(t.attack_took_all && !t.defence_took_all);
    }

    #[test]
    fn petit_au_bout_goes_to_the_side_winning_the_last_trick() {
        let first = trick(&[(0, "T21"), (1, "T2"), (2, "T3"), (3, "T4")], 0);
        let petit_won = trick(&[(0, "T1"), (1, "3S"), (2, "KS"), (3, "4S")], 0);
        let t = tally(&[first.clone(), petit_won], camp, CardSet::EMPTY);
        assert_eq!(t.petit_au_bout, Some(Camp::Attack));
        let petit_lost = trick(&[(0, "T1"), (1, "T6"), (2, "3D"), (3, "4S")], 1);
        let t = tally(&[first.clone(), petit_lost], camp, CardSet::EMPTY);
        assert_eq!(t.petit_au_bout, Some(Camp::Defence));
        // Chelem with the excuse winning the last trick: the petit in the trick before
        // is au bout.
        let petit = trick(&[(0, "T1"), (1, "2S"), (2, "3D"), (3, "4S")], 0);
        let excuse = trick(&[(0, "EX"), (1, "5S"), (2, "5D"), (3, "6S")], 0);
        let t = tally(&[first, petit, excuse], camp, CardSet::EMPTY);
        assert_eq!(t.petit_au_bout, Some(Camp::Attack));
        assert!(t.attack_took_all);
        assert_eq!(t.oudlers, 3);
    }

    #[test]
    fn the_chelem_outcomes() {
        assert_eq!(chelem(true, true, false), Chelem::AnnouncedMade);
        assert_eq!(chelem(false, true, false), Chelem::Made);
        assert_eq!(chelem(true, false, true), Chelem::AnnouncedFailed);
        assert_eq!(chelem(false, false, true), Chelem::Defence);
        assert_eq!(chelem(false, false, false), Chelem::None);
    }

    #[test]
    fn targets_and_rounding() {
        assert_eq!([0, 1, 2, 3].map(target_half_points), [112, 102, 82, 72]);
        // 41 points exactly with 2 oudlers: made by 0, worth 25 at a petite.
        let s = contract_score(Contract::Petite, 82, 2, None, &[], Chelem::None);
        assert_eq!((s.made, s.difference, s.value), (true, 0, 25));
        // 40.5 with 2 oudlers: failed by half a point, rounded to 1.
        let s = contract_score(Contract::Petite, 81, 2, None, &[], Chelem::None);
        assert_eq!((s.made, s.difference, s.value), (false, 1, -26));
        // 41.5: made by half a point, rounded to 1.
        let s = contract_score(Contract::Garde, 83, 2, None, &[], Chelem::None);
        assert_eq!((s.made, s.difference, s.value), (true, 1, 52));
    }
}
