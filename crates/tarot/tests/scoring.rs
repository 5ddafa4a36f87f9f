//! Published worked examples of French Tarot scoring, each quoted with its source, checked
//! against the pure scoring functions (`fairdeal_tarot::scoring`).
//!
//! Sources (the FFT's "Règlement officiel" and pages reproducing it or working it through):
//! - [FFT-2019] tarometre.fr/es/official-rules, "Règlement officiel à 4 joueurs",
//!   version du 1er juillet 2019 (the FFT's rules).
//! - [FFT-2014] normandie-tarot.org/le-reglement-officiel-2014/les-annonces/ ("Reproduit
//!   avec l'aimable autorisation de la Fédération Française de Tarot").
//! - [MARQUE] rencontrestarot.org/marque_au_tarot.html, "La marque au tarot".
//! - [WIKI] French Wikipedia, "Tarot", section "Le petit au bout" (examples).
//! - [BRIC] bric-a-brac.org/tarot/scores.php and bouts.php.
//! - [SHOGIX] shogix.net/chelem, "Le chelem au tarot", a commented 5-player deal.
//! - [BZSCORE] vbeuselinck.free.fr, bzscore FAQ (rounding of half points).

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_table_game::Seat;
use fairdeal_tarot::scoring::{contract_score, seat_deltas, target_half_points};
use fairdeal_tarot::{Camp, Chelem, Contract, Poignee};

fn seat(n: u8) -> Seat {
    Seat::new(n).unwrap()
}

/// Half-points of `points` (which may end in .5).
fn hp(points: f32) -> u16 {
    (points * 2.0) as u16
}

/// [FFT-2019]: "Sans bout 56 points, avec un bout 51 points, avec deux bouts 41 points,
/// avec trois bouts 36 points."
#[test]
fn the_points_to_make_depend_on_the_oudlers() {
    assert_eq!(
        [0, 1, 2, 3].map(target_half_points),
        [hp(56.0), hp(51.0), hp(41.0), hp(36.0)]
    );
}

/// [MARQUE]: "Le compte se base sur ... la petite à laquelle on attribue 25 points. A ce
/// chiffre on ajoute les points de passe ... Ensuite on affecte le total obtenu par un
/// coefficient de 1 pour la petite, 2 pour la garde, 4 pour la garde sans, 6 pour la
/// garde contre ... Le total obtenu est le total en gain ou en perte de la défense, ainsi
/// que du partenaire au jeu à 5; on multiplie par deux (au jeu à 5) ou par 3 (au jeu à 4)
/// ce chiffre pour avoir le total du preneur."
///
/// A garde made with 2 oudlers and 49 points: 49 - 41 = 8; (25 + 8) x 2 = 66 per defender,
/// 3 x 66 = 198 for the taker at 4.
#[test]
fn each_contract_multiplies_25_plus_the_difference() {
    let by_contract: Vec<i32> = Contract::ALL
        .into_iter()
        .map(|c| contract_score(c, hp(49.0), 2, None, &[], Chelem::None).value)
        .collect();
    assert_eq!(by_contract, [33, 66, 132, 198]);
    assert_eq!(seat_deltas(4, seat(0), None, 66), [198, -66, -66, -66]);
    // Failed by 6 (35 points with 2 oudlers) at a garde sans: -(25 + 6) x 4 = -124.
    let s = contract_score(Contract::GardeSans, hp(35.0), 2, None, &[], Chelem::None);
    assert_eq!((s.made, s.difference, s.value), (false, 6, -124));
    assert_eq!(
        seat_deltas(4, seat(2), None, s.value),
        [124, 124, -372, 124]
    );
    // Exactly the target ("juste fait") is made: 25.
    let s = contract_score(Contract::Petite, hp(56.0), 0, None, &[], Chelem::None);
    assert_eq!((s.made, s.value), (true, 25));
}

/// [MARQUE] at 5: the partner wins or loses what each defender loses or wins, the taker
/// twice that. At 3 the taker has two opponents: twice the contract.
#[test]
fn shares_at_three_and_five_players() {
    let value = contract_score(Contract::Garde, hp(45.0), 2, None, &[], Chelem::None).value;
    assert_eq!(value, (25 + 4) * 2);
    assert_eq!(
        seat_deltas(5, seat(1), Some(seat(3)), value),
        [-58, 116, -58, 58, -58]
    );
    assert_eq!(seat_deltas(3, seat(0), None, value), [116, -58, -58]);
    // Alone at 5 (own king called, or the king in the chien): four times.
    assert_eq!(
        seat_deltas(5, seat(1), None, value),
        [-58, 232, -58, -58, -58]
    );
}

/// [WIKI]: "Le déclarant fait une garde sans le chien. Un défenseur lui prend le petit au
/// bout. Le déclarant donne une prime de 10 x 4 = 40 points à chaque défenseur." And: "Le
/// déclarant fait une prise. Un défenseur réalise le dernier pli avec le petit. Le
/// déclarant donne une prime de 10 points à chaque défenseur. Si le déclarant gagne quand
/// même la donne, la prime est déduite de ses gains."
#[test]
fn petit_au_bout_is_ten_multiplied_to_the_side_that_takes_it() {
    let base = contract_score(Contract::GardeSans, hp(50.0), 1, None, &[], Chelem::None).value;
    let lost = contract_score(
        Contract::GardeSans,
        hp(50.0),
        1,
        Some(Camp::Defence),
        &[],
        Chelem::None,
    )
    .value;
    assert_eq!(base - lost, 40);
    // A petite won anyway: the 10 comes off the taker's gain, per defender.
    let won = contract_score(Contract::Petite, hp(60.0), 0, None, &[], Chelem::None).value;
    let petit_lost = contract_score(
        Contract::Petite,
        hp(60.0),
        0,
        Some(Camp::Defence),
        &[],
        Chelem::None,
    );
    assert!(petit_lost.made);
    assert_eq!((won, petit_lost.value), (29, 19));
    // Taken by the attack at a garde: +20.
    let taken = contract_score(
        Contract::Garde,
        hp(60.0),
        0,
        Some(Camp::Attack),
        &[],
        Chelem::None,
    );
    assert_eq!(taken.value, (25 + 4 + 10) * 2);
}

/// [FFT-2014]: "A la simple Poignée (10 Atouts) correspond une prime de 20. A la double
/// Poignée (13 Atouts) correspond une prime de 30. A la triple Poignée (15 Atouts)
/// correspond une prime de 40. Ces primes gardent la même valeur quel que soit le contrat.
/// La prime est acquise au camp vainqueur de la donne."
#[test]
fn poignees_are_not_multiplied_and_go_to_the_winning_side() {
    for (poignee, bonus) in [
        (Poignee::Simple, 20),
        (Poignee::Double, 30),
        (Poignee::Triple, 40),
    ] {
        for contract in Contract::ALL {
            let without = contract_score(contract, hp(60.0), 1, None, &[], Chelem::None).value;
            let with = contract_score(contract, hp(60.0), 1, None, &[poignee], Chelem::None).value;
            assert_eq!(with - without, bonus, "{poignee:?} at a {contract}");
            // Failed contract: the poignée, whoever showed it, is the defence's.
            let fail = contract_score(contract, hp(40.0), 1, None, &[], Chelem::None).value;
            let fail_with =
                contract_score(contract, hp(40.0), 1, None, &[poignee], Chelem::None).value;
            assert_eq!(fail_with - fail, -bonus);
        }
    }
    // Sizes at 4 players (the FFT's), 3 and 5.
    assert_eq!(Poignee::ALL.map(|p| p.trumps(4)), [10, 13, 15]);
    assert_eq!(Poignee::ALL.map(|p| p.trumps(3)), [13, 15, 18]);
    assert_eq!(Poignee::ALL.map(|p| p.trumps(5)), [8, 10, 13]);
    // Two poignées in one deal add up.
    let two = contract_score(
        Contract::Petite,
        hp(60.0),
        1,
        None,
        &[Poignee::Simple, Poignee::Double],
        Chelem::None,
    );
    assert_eq!(two.value, 25 + 9 + 50);
}

/// [BRIC]: "400 points pour un grand chelem annoncé et réalisé, 200 points pour un grand
/// chelem annoncé mais non réalisé (200 points à soustraire), 200 points pour un grand
/// chelem non annoncé mais réalisé", added to the contract's points (not multiplied).
#[test]
fn chelem_bonuses_are_added_unmultiplied() {
    let all = hp(91.0);
    let s = |chelem| contract_score(Contract::Garde, all, 3, None, &[], chelem).value;
    let plain = (25 + 55) * 2;
    assert_eq!(s(Chelem::AnnouncedMade), plain + 400);
    assert_eq!(s(Chelem::Made), plain + 200);
    let failed = contract_score(
        Contract::Garde,
        hp(80.0),
        3,
        None,
        &[],
        Chelem::AnnouncedFailed,
    );
    assert_eq!(failed.value, (25 + 44) * 2 - 200);
    // The defence taking every trick: -200 for the attack (a choice, see RULES.md).
    let defence = contract_score(Contract::Petite, 0, 0, None, &[], Chelem::Defence);
    assert_eq!(defence.value, -(25 + 56) - 200);
}

/// [SHOGIX], 5 players: "SUD donneur et preneur (garde-contre avec appel du R) ... Chien:
/// Exc, R, 1 ... SUD passe de 41 pour un score de +656 !" The chien (excuse, a king, a
/// small card: 9.5 points) is the defence's at a garde contre, so the attack's chelem
/// brings it 81.5 points with two oudlers: 40.5 over 41, counted 41 (half a point rounds
/// up); the published score is (25 + 41 + 10 for the petit au bout) x 6 + 200 for the
/// unannounced chelem = 656, per defender (and for the partner); the taker gets twice it.
#[test]
fn a_published_five_player_chelem() {
    let s = contract_score(
        Contract::GardeContre,
        hp(81.5),
        2,
        Some(Camp::Attack),
        &[],
        Chelem::Made,
    );
    assert_eq!(
        (s.target, s.made, s.difference, s.value),
        (41, true, 41, 656)
    );
    assert_eq!(
        seat_deltas(5, seat(0), Some(seat(1)), s.value),
        [1312, 656, -656, -656, -656]
    );
}

/// [BZSCORE]: "cette carte basse vaut 1/2 point. Si le contrat est gagné, on arrondit alors
/// au bénéfice du preneur mais s'il est perdu (même d'1/2 point), on arrondit en faveur de
/// la défense."
#[test]
fn half_points_round_for_the_winning_side() {
    let made = contract_score(Contract::Petite, hp(41.5), 2, None, &[], Chelem::None);
    assert_eq!((made.made, made.difference, made.value), (true, 1, 26));
    let failed = contract_score(Contract::Petite, hp(40.5), 2, None, &[], Chelem::None);
    assert_eq!(
        (failed.made, failed.difference, failed.value),
        (false, 1, -26)
    );
}
