//! `fairdeal rating`, run as a user runs it: the real binary, its stdout, stderr and exit
//! status, checked against `fairdeal_rating` bit for bit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use fairdeal_rating::{KFactor, Opponents, Rating, RatingChange, Score, change};
use serde_json::{Value, json};

use common::{fails, json_line};

/// `fairdeal rating --rating R [--opponent M ..] [--score S] [--k K]`: the flags given.
fn rating_flags<'a>(
    rating: &'a str,
    opponents: &[&'a str],
    score: Option<&'a str>,
    k: Option<&'a str>,
) -> Vec<&'a str> {
    let mut args = vec!["rating", "--rating", rating];
    for opponent in opponents {
        args.extend(["--opponent", opponent]);
    }
    for (flag, value) in [("--score", score), ("--k", k)] {
        if let Some(value) = value {
            args.extend([flag, value]);
        }
    }
    args
}

/// `fairdeal rating` with these values: it must succeed with exactly one JSON line. (The
/// dev-dependency's `float_roundtrip` makes serde_json read every double exactly.)
fn rating(rating: &str, opponents: &[&str], score: &str, k: Option<&str>) -> Value {
    json_line(&rating_flags(rating, opponents, Some(score), k))
}

/// The library's change for the same inputs.
fn library(player: f64, opponents: &[f64], score: Score, k: f64) -> RatingChange {
    let r = |v: f64| Rating::new(v).unwrap();
    let opponents = Opponents::new(opponents.iter().map(|&m| r(m)).collect()).unwrap();
    change(r(player), opponents, score, KFactor::new(k).unwrap()).unwrap()
}

/// The doubles of a printed line, as bits, in a fixed order.
fn printed_bits(v: &Value) -> Vec<u64> {
    let mut bits: Vec<u64> = ["before", "after", "expectation", "score", "k"]
        .iter()
        .map(|key| v[key].as_f64().unwrap().to_bits())
        .collect();
    for opponent in v["opponents"].as_array().unwrap() {
        bits.push(opponent["rating"].as_f64().unwrap().to_bits());
        bits.push(opponent["weight"].as_f64().unwrap().to_bits());
    }
    bits
}

/// The same doubles of the library's change.
fn library_bits(c: &RatingChange) -> Vec<u64> {
    let mut bits: Vec<u64> = [
        c.before().value(),
        c.after().value(),
        c.expectation(),
        c.score().value(),
        c.k().value(),
    ]
    .iter()
    .map(|x| x.to_bits())
    .collect();
    for (rating, weight) in c.opponents().ratings().iter().zip(c.weights()) {
        bits.push(rating.value().to_bits());
        bits.push(weight.to_bits());
    }
    bits
}

#[test]
fn two_players_the_worked_example() {
    // 1600 beats 1400: E = 1 / (1 + 10^-0.5) = 0.7597..., 1600 + 32 * 0.2402... = 1607.688...
    let v = rating("1600", &["1400"], "1", None);
    assert_eq!(
        v,
        json!({
            "before": 1600.0,
            "before_rounded": 1600,
            "after": 1607.6880983472654,
            "after_rounded": 1608,
            "expectation": 0.7597469266479578,
            "score": 1.0,
            "k": 32.0,
            "opponents": [{"rating": 1400.0, "weight": 1.0}],
        })
    );
    let c = library(1600.0, &[1400.0], Score::Win, 32.0);
    assert_eq!(printed_bits(&v), library_bits(&c));
}

#[test]
fn several_opponents_print_their_weights() {
    let v = rating("1500", &["1401", "1400", "1600", "1650"], "0.5", Some("16"));
    let weights: Vec<f64> = v["opponents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["weight"].as_f64().unwrap())
        .collect();
    // e = 99, 100, -100, -150.
    assert_eq!(weights, vec![1.0, 0.9, 1.1, 1.15]);
    let c = library(1500.0, &[1401.0, 1400.0, 1600.0, 1650.0], Score::Draw, 16.0);
    assert_eq!(printed_bits(&v), library_bits(&c));
    assert_eq!(v["after_rounded"], json!(1501));
}

#[test]
fn a_team_game_player_and_unusual_values() {
    // Against the other team's two 1500s, with the default K of 32.
    let v = rating("1500", &["1500", "1500"], "0", None);
    assert_eq!(
        (v["after"].clone(), v["k"].clone()),
        (json!(1484.0), json!(32.0))
    );

    // Negative and fractional ratings, spaces around values, another K.
    let v = rating("-12.5", &[" -100.25"], "1.0", Some("24.5"));
    let c = library(-12.5, &[-100.25], Score::Win, 24.5);
    assert_eq!(printed_bits(&v), library_bits(&c));
    assert_eq!(v["before_rounded"], json!(-13));

    // Ratings beyond 2^53 are shown as the doubles they are.
    let v = rating("1e300", &["1e300"], "1", None);
    assert_eq!(v["after_rounded"], json!(1e300));
}

#[test]
fn a_mean_score_against_several_opponents_as_recorded_or_as_a_fraction() {
    // French Tarot at four: placed above two of three opponents (SPEC 6's form for several
    // opponents, each on their own side): S = 2/3.
    let opponents = ["1480", "1510", "1530"];
    let expected = library(
        1500.0,
        &[1480.0, 1510.0, 1530.0],
        Score::placed(2, 0, 1).unwrap(),
        32.0,
    );
    for spelled in ["2/3", "0.6666666666666666", "4/6"] {
        let v = rating("1500", &opponents, spelled, None);
        assert_eq!(printed_bits(&v), library_bits(&expected), "{spelled}");
    }
    // Level with one of two opponents, above the other: 3 half points of 4.
    let v = rating("1500", &["1500", "1500"], "0.75", None);
    assert_eq!(v["score"], json!(0.75));
}

/// `--rating`, the `--opponent`s, `--score`, `--k`, and what the error line must say.
type Case<'a> = (
    &'a str,
    &'a [&'a str],
    Option<&'a str>,
    Option<&'a str>,
    &'a str,
);

#[test]
fn errors_are_one_line_naming_the_flag() {
    // 5004 digits: a number too large for a double. 5001 characters of junk.
    let long_number = format!("1500{}", "0".repeat(5000));
    let long_text = format!("x{}", "9".repeat(5000));
    let (win, two) = (Some("1"), &["1500", "1500"][..]);
    #[rustfmt::skip]
    let cases: [Case; 17] = [
        ("abc", two, win, None, "--rating: \"abc\" is not a number"),
        ("inf", two, win, None, "--rating: a rating is a finite number, got inf"),
        (&long_number, two, win, None, "--rating: a rating is a finite number, got inf"),
        ("1500", &[&long_text], win, None, "--opponent: \"x99999999999999999999999...\" is not a number"),
        ("1500", &["1500"], Some("2"), None, "--score: a score is 1 (win), 0 (loss) or 0.5 (draw), got 2.0"),
        ("1500", two, Some("2"), None, "--score: a score against 2 opponents is 1, 0, 0.5 or a whole number of half points out of 4, got 2.0"),
        ("1500", two, Some("1/3"), None, "--score: a score against 2 opponents is 1, 0, 0.5 or a whole number of half points out of 4, got 0.3333333333333333"),
        ("1500", two, Some("1/0"), None, "--score: a fraction is two whole numbers p/q with q above 0"),
        ("1500", two, Some("0.6"), None, "--score: a score against 2 opponents is 1, 0, 0.5 or a whole number of half points out of 4, got 0.6"),
        ("1500", two, Some("win"), None, "--score: \"win\" is not a number"),
        ("1500", two, win, Some("0"), "--k: K is a finite number above 0, got 0.0"),
        ("1500", two, win, Some("-3"), "--k: K is a finite number above 0, got -3.0"),
        ("1500", &["2600"], win, None, "--opponent: opponent rating 2600.0 is 1100.0 points from the player's 1500.0, more than 999.0"),
        ("1500", &["1400", "499"], win, None, "--opponent: opponent rating 499.0 is 1001.0 points"),
        ("1.7e308", &["1.7e308"], win, Some("1e308"), "--k: the new rating of a player rated 1.7e308 with K = 1e308 is not a finite number"),
        ("1500", &[], win, None, "required arguments were not provided: --opponent <R>"),
        ("1500", two, None, None, "required arguments were not provided: --score <S>"),
    ];
    for (rating, opponents, score, k, expected) in cases {
        let line = fails(&rating_flags(rating, opponents, score, k), &[expected]);
        // A bad value is echoed as a short prefix at most, never whole.
        assert!(line.len() < 200, "{} bytes: {line:.80}", line.len());
    }
}
