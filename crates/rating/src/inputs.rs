//! The inputs of a rating change, parsed once into types that cannot hold invalid values.
//!
//! A [`Rating`] is a finite double, a [`KFactor`] a finite double above 0, a [`Score`]
//! exactly 1, 0 or 0.5 (or, with several opponents placed each against the player, the mean
//! of those results: [`Score::placed`]), and [`Opponents`] at least one rating. Everything downstream can
//! then compute without re-checking; the only checks left are those that involve several
//! inputs at once (two ratings too far apart, a new rating beyond the range of a double).
//!
//! Text forms (`FromStr`) read decimal numbers with surrounding whitespace ignored, the way
//! the CLI and configuration files give them.

use std::cmp::Ordering;
use std::str::FromStr;

use crate::error::RatingError;

/// Every player's rating in a game kind before their first rated game (SPEC 6).
pub const DEFAULT_RATING: Rating = Rating(1500.0);

/// The K factor unless the service is configured otherwise (SPEC 6).
pub const DEFAULT_K: KFactor = KFactor(32.0);

/// A player's rating for one game kind: any finite double, kept unrounded (SPEC 6).
///
/// `-0.0` is stored as `0.0`, so equal ratings always have equal bits and a rating's bits
/// are a faithful record of it. Ratings are totally ordered (no NaN can get in).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating(f64);

impl Rating {
    /// A rating, if `value` is finite.
    pub fn new(value: f64) -> Result<Rating, RatingError> {
        if value.is_finite() {
            // `-0.0 + 0.0` is `+0.0`; every other value is unchanged.
            Ok(Rating(value + 0.0))
        } else {
            Err(RatingError::RatingNotFinite(value))
        }
    }

    /// The unrounded value.
    pub const fn value(self) -> f64 {
        self.0
    }

    /// The rating as shown to players: rounded to the nearest whole number, halves away
    /// from zero (1500.5 shows as 1501). A double, so that it is exact for every rating;
    /// never `-0` (-0.4 shows as 0).
    pub fn rounded(self) -> f64 {
        self.0.round() + 0.0
    }
}

impl Eq for Rating {}

impl PartialOrd for Rating {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rating {
    /// Numeric order (total: ratings are finite and never `-0.0`).
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl TryFrom<f64> for Rating {
    type Error = RatingError;

    fn try_from(value: f64) -> Result<Self, Self::Error> {
        Rating::new(value)
    }
}

impl From<Rating> for f64 {
    fn from(rating: Rating) -> f64 {
        rating.0
    }
}

impl FromStr for Rating {
    type Err = RatingError;

    /// A decimal number such as `1500`, `1487.25` or `-12`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Rating::new(parse_number(text)?)
    }
}

/// The K factor: how far one game can move a rating (SPEC 6: 32 by default).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KFactor(f64);

impl KFactor {
    /// A K factor, if `value` is finite and above 0.
    pub fn new(value: f64) -> Result<KFactor, RatingError> {
        if value.is_finite() && value > 0.0 {
            Ok(KFactor(value))
        } else {
            Err(RatingError::KNotPositive(value))
        }
    }

    /// The value.
    pub const fn value(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for KFactor {
    type Error = RatingError;

    fn try_from(value: f64) -> Result<Self, Self::Error> {
        KFactor::new(value)
    }
}

impl FromStr for KFactor {
    type Err = RatingError;

    /// A decimal number above 0, such as `32` or `16.5`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        KFactor::new(parse_number(text)?)
    }
}

/// What a player scored in a game: `S(n)` of SPEC 6.
///
/// A game between two sides (two players, two teams) gives 1, 0 or 0.5. A game where every
/// player is their own side (French Tarot) gives each player the mean of their results
/// against each opponent ([`Score::placed`]): 1 with everyone placed below them, 0 with
/// everyone above, and in between a [`Score::Mean`] such as 2/3. Equal scores are equal
/// values: a mean of 1, 0 or 1/2 is always `Win`, `Loss` or `Draw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Score {
    /// The player lost (to every opponent): 0.
    Loss,
    /// Nobody won (or the player's wins and losses balance): 0.5.
    Draw,
    /// The player won (against every opponent): 1.
    Win,
    /// The mean of several results that is none of the above (strictly between 0 and 1,
    /// not 0.5).
    Mean(MeanScore),
}

/// A mean of results against several opponents that is neither 0, 0.5 nor 1: a fraction of
/// whole numbers in lowest terms (so that equal means are equal values), made only by
/// [`Score::placed`] and [`Score::recorded`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MeanScore {
    /// The numerator: half points (1 per opponent placed level, 2 per opponent placed
    /// below), in lowest terms with `out_of`.
    points: u64,
    /// The denominator: twice the number of opponents, in lowest terms with `points`.
    /// Below 2^35 (counts are `u32`), so both convert to doubles exactly.
    out_of: u64,
}

impl MeanScore {
    /// The numerator, in lowest terms.
    pub const fn numerator(self) -> u64 {
        self.points
    }

    /// The denominator, in lowest terms.
    pub const fn denominator(self) -> u64 {
        self.out_of
    }
}

impl Score {
    /// 0, 0.5 or 1, or a mean's value: `numerator / denominator`, one division of two
    /// exact doubles, so correctly rounded and the same bits everywhere.
    pub const fn value(self) -> f64 {
        match self {
            Score::Loss => 0.0,
            Score::Draw => 0.5,
            Score::Win => 1.0,
            Score::Mean(m) => m.points as f64 / m.out_of as f64,
        }
    }

    /// The opponents' score: a win for one side is a loss for the other (for a mean, one
    /// minus it).
    pub const fn opposite(self) -> Score {
        match self {
            Score::Loss => Score::Win,
            Score::Draw => Score::Draw,
            Score::Win => Score::Loss,
            Score::Mean(m) => Score::Mean(MeanScore {
                points: m.out_of - m.points,
                out_of: m.out_of,
            }),
        }
    }

    /// `S(n)` of a player who, against each of their opponents, was placed above
    /// (`wins` of them: 1 each), level (`draws`: 0.5 each) or below (`losses`: 0 each):
    /// the mean of those results, `(wins + draws / 2) / J` with `J` the number of
    /// opponents. A single opponent gives SPEC 6's win, draw or loss.
    ///
    /// Fails only without opponents ([`RatingError::NoOpponents`]).
    pub fn placed(wins: u32, draws: u32, losses: u32) -> Result<Score, RatingError> {
        let opponents = u64::from(wins) + u64::from(draws) + u64::from(losses);
        Score::of_half_points(2 * u64::from(wins) + u64::from(draws), opponents)
            .ok_or(RatingError::NoOpponents)
    }

    /// The score a record gives as a double for a player with `opponents` opponents: 0,
    /// 0.5 or 1, or a mean of results against them ([`Score::placed`]), that is a whole
    /// number of half points out of `2 * opponents`, divided as [`Score::value`] divides
    /// (the very bits; `-0.0` is 0).
    pub fn recorded(value: f64, opponents: usize) -> Result<Score, RatingError> {
        if opponents == 0 {
            return Err(RatingError::NoOpponents);
        }
        if let Ok(score) = Score::try_from(value) {
            return Ok(score);
        }
        let not_a_mean = || RatingError::NotAMeanScore { value, opponents };
        let opponents_u32 = u32::try_from(opponents).map_err(|_| not_a_mean())?;
        let out_of = 2 * u64::from(opponents_u32);
        // `out_of` is below 2^33: exact as a double, and so is every whole number up to it.
        let points = (value * out_of as f64).round();
        if !(0.0..=out_of as f64).contains(&points) {
            return Err(not_a_mean());
        }
        // A whole number in 0..=out_of: the cast is exact.
        let score = Score::of_half_points(points as u64, u64::from(opponents_u32))
            .ok_or_else(not_a_mean)?;
        if score.value() == value {
            Ok(score)
        } else {
            Err(not_a_mean())
        }
    }

    /// `points` half points against `opponents` opponents (`points <= 2 * opponents`), in
    /// lowest terms; `None` without opponents or with more points than possible.
    fn of_half_points(points: u64, opponents: u64) -> Option<Score> {
        let out_of = 2 * opponents;
        if opponents == 0 || points > out_of {
            return None;
        }
        let common = gcd(points, out_of);
        let (points, out_of) = (points / common, out_of / common);
        Some(match (points, out_of) {
            (0, _) => Score::Loss,
            (1, 2) => Score::Draw,
            (p, q) if p == q => Score::Win,
            (points, out_of) => Score::Mean(MeanScore { points, out_of }),
        })
    }
}

/// The greatest common divisor (`gcd(0, n) = n`).
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl TryFrom<f64> for Score {
    type Error = RatingError;

    /// Exactly 0, 0.5 or 1 (`-0.0` is 0).
    fn try_from(value: f64) -> Result<Self, Self::Error> {
        if value == 0.0 {
            Ok(Score::Loss)
        } else if value == 0.5 {
            Ok(Score::Draw)
        } else if value == 1.0 {
            Ok(Score::Win)
        } else {
            Err(RatingError::NotAScore(value))
        }
    }
}

impl From<Score> for f64 {
    fn from(score: Score) -> f64 {
        score.value()
    }
}

impl FromStr for Score {
    type Err = RatingError;

    /// `1`, `0` or `0.5` (any decimal spelling of those values, such as `1.0` or `.5`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Score::try_from(parse_number(text)?)
    }
}

/// A player's opponents in one game, by their ratings before it: at least one.
///
/// The order is kept as given (a service may list them by seat), but no result depends
/// on it: the computation visits them in ascending order of rating.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opponents(Vec<Rating>);

impl Opponents {
    /// The opponents, if there is at least one.
    pub fn new(ratings: Vec<Rating>) -> Result<Opponents, RatingError> {
        if ratings.is_empty() {
            Err(RatingError::NoOpponents)
        } else {
            Ok(Opponents(ratings))
        }
    }

    /// A single opponent: a two-player game.
    pub fn one(rating: Rating) -> Opponents {
        Opponents(vec![rating])
    }

    /// The ratings, in the order given.
    pub fn ratings(&self) -> &[Rating] {
        &self.0
    }

    /// How many opponents: `J` in SPEC 6 (at least 1).
    pub fn count(&self) -> usize {
        self.0.len()
    }

    /// The ratings in ascending order: the order in which the expectation visits them.
    pub fn ascending(&self) -> Vec<Rating> {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted
    }
}

/// Reads a decimal number (whitespace around it ignored); any other text is an error that
/// echoes only a short prefix of it.
fn parse_number(text: &str) -> Result<f64, RatingError> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| RatingError::not_a_number(text))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ratings_are_finite_and_never_negative_zero() {
        assert_eq!(Rating::new(1500.0).unwrap().value(), 1500.0);
        assert_eq!(Rating::new(-0.0).unwrap().value().to_bits(), 0);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                Rating::new(bad),
                Err(RatingError::RatingNotFinite(_))
            ));
        }
        assert_eq!(" 1487.25 ".parse::<Rating>().unwrap().value(), 1487.25);
        assert_eq!("-12".parse::<Rating>().unwrap().value(), -12.0);
        assert!(matches!(
            "inf".parse::<Rating>(),
            Err(RatingError::RatingNotFinite(_))
        ));
        assert!(matches!(
            "1e400".parse::<Rating>(),
            Err(RatingError::RatingNotFinite(_))
        ));
        assert!(matches!(
            "fifteen hundred".parse::<Rating>(),
            Err(RatingError::NotANumber { .. })
        ));
    }

    #[test]
    fn ratings_show_rounded_halves_away_from_zero() {
        let shown = |v: f64| Rating::new(v).unwrap().rounded();
        assert_eq!(shown(1516.0), 1516.0);
        assert_eq!(shown(1607.688), 1608.0);
        assert_eq!(shown(1500.5), 1501.0);
        assert_eq!(shown(1500.499999), 1500.0);
        assert_eq!(shown(-0.5), -1.0);
        assert_eq!(shown(-0.4).to_bits(), 0.0f64.to_bits());
        assert_eq!(shown(f64::MAX), f64::MAX);
    }

    #[test]
    fn k_is_finite_and_above_zero() {
        assert_eq!(KFactor::new(32.0).unwrap().value(), 32.0);
        assert_eq!("16.5".parse::<KFactor>().unwrap().value(), 16.5);
        assert!(KFactor::new(f64::MIN_POSITIVE).is_ok());
        for bad in [0.0, -0.0, -32.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(KFactor::new(bad), Err(RatingError::KNotPositive(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            "k".parse::<KFactor>(),
            Err(RatingError::NotANumber { .. })
        ));
    }

    #[test]
    fn scores_are_exactly_one_zero_or_a_half() {
        assert_eq!("1".parse::<Score>(), Ok(Score::Win));
        assert_eq!("0".parse::<Score>(), Ok(Score::Loss));
        assert_eq!("0.5".parse::<Score>(), Ok(Score::Draw));
        assert_eq!("1.0".parse::<Score>(), Ok(Score::Win));
        assert_eq!("-0".parse::<Score>(), Ok(Score::Loss));
        for bad in ["2", "0.25", "0.5000001", "-1", "nan", "win", ""] {
            assert!(bad.parse::<Score>().is_err(), "{bad}");
        }
        for s in [Score::Loss, Score::Draw, Score::Win] {
            assert_eq!(Score::try_from(s.value()), Ok(s));
            assert_eq!(s.opposite().opposite(), s);
            assert_eq!(s.value() + s.opposite().value(), 1.0);
        }
    }

    #[test]
    fn opponents_are_never_empty() {
        assert_eq!(Opponents::new(vec![]), Err(RatingError::NoOpponents));
        let r = |v: f64| Rating::new(v).unwrap();
        let o = Opponents::new(vec![r(1600.0), r(1400.0), r(1500.0)]).unwrap();
        assert_eq!(o.count(), 3);
        assert_eq!(o.ratings(), &[r(1600.0), r(1400.0), r(1500.0)]);
        assert_eq!(o.ascending(), vec![r(1400.0), r(1500.0), r(1600.0)]);
        assert_eq!(Opponents::one(r(1.0)).count(), 1);
    }

    proptest! {
        /// Parsing is total: any text is a rating or a typed error, and a rating's
        /// shortest decimal form reads back to the same bits.
        #[test]
        fn rating_text_round_trips(value in proptest::num::f64::ANY, junk in ".{0,40}") {
            if let Ok(rating) = junk.parse::<Rating>() {
                prop_assert!(rating.value().is_finite());
            }
            if let Ok(rating) = Rating::new(value) {
                let back: Rating = rating.value().to_string().parse().unwrap();
                prop_assert_eq!(back.value().to_bits(), rating.value().to_bits());
            } else {
                prop_assert!(!value.is_finite());
            }
        }
    }
}
