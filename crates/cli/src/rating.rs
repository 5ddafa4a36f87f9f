//! `fairdeal rating`: one rating change (SPEC 6) recomputed from its inputs, as an auditor
//! checks a `RatingChanged` event by hand.
//!
//! Prints one JSON line: the rating before and after (unrounded, and rounded as players
//! see it), the expectation, score, K, and each opponent with their weight. Doubles are
//! printed in their shortest round-trip form, so a correctly rounding JSON reader gets
//! the exact bits the rating service records (`fairdeal_rating` computes them the same
//! way on every platform).
//!
//! Values are taken as text and parsed by `fairdeal_rating`, so every mistake (a score of
//! 2, a negative K, an opponent 1000 points away) is one line naming the flag.

use std::io::Write;

use fairdeal_rating::{KFactor, Opponents, Rating, RatingChange, RatingError, Score, change};
use serde::Serialize;
use serde_json::Value;

use crate::deal::write_json_line;
use crate::error::CliError;

/// Arguments of `fairdeal rating`.
#[derive(Debug, clap::Args)]
pub(crate) struct RatingArgs {
    /// The player's rating before the game (unrounded, as recorded).
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    rating: String,
    /// An opponent's rating before the game; repeat for each opponent (in a team game,
    /// each player of the other team).
    #[arg(long, value_name = "R", required = true, allow_hyphen_values = true)]
    opponent: Vec<String>,
    /// The player's score: 1 (win), 0 (loss) or 0.5 (draw); against several opponents
    /// each on their own side (French Tarot), the mean of the results against them, as the
    /// `RatingChanged` event records it (`0.6666666666666666`) or as a fraction (`2/3`).
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    score: String,
    /// The K factor.
    #[arg(
        long,
        value_name = "K",
        default_value = "32",
        allow_hyphen_values = true
    )]
    k: String,
}

/// The printed line.
#[derive(Debug, Serialize)]
struct RatingLine {
    /// The rating before the game, unrounded.
    before: f64,
    /// The rating before the game as shown to players.
    before_rounded: Value,
    /// The new rating, unrounded: what the rating service records.
    after: f64,
    /// The new rating as shown to players.
    after_rounded: Value,
    /// `E(n)`.
    expectation: f64,
    /// `S(n)`: 1, 0, 0.5 or a mean of results.
    score: f64,
    /// The K factor.
    k: f64,
    /// The opponents in the order given, each with the weight `w(n, m)` it was given.
    opponents: Vec<OpponentLine>,
}

/// One opponent of the printed line.
#[derive(Debug, Serialize)]
struct OpponentLine {
    /// Their rating before the game.
    rating: f64,
    /// Their weight in the expectation (1 with a single opponent or within 100 points).
    weight: f64,
}

impl From<&RatingChange> for RatingLine {
    fn from(c: &RatingChange) -> Self {
        RatingLine {
            before: c.before().value(),
            before_rounded: shown(c.before()),
            after: c.after().value(),
            after_rounded: shown(c.after()),
            expectation: c.expectation(),
            score: c.score().value(),
            k: c.k().value(),
            opponents: c
                .opponents()
                .ratings()
                .iter()
                .zip(c.weights())
                .map(|(rating, weight)| OpponentLine {
                    rating: rating.value(),
                    weight,
                })
                .collect(),
        }
    }
}

pub(crate) fn run(args: RatingArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let rating: Rating = parse("--rating", &args.rating)?;
    let opponents = args
        .opponent
        .iter()
        .map(|text| parse("--opponent", text))
        .collect::<Result<Vec<Rating>, _>>()?;
    let opponents = Opponents::new(opponents).map_err(|e| CliError::arg("--opponent", e))?;
    let score = score(&args.score, opponents.ratings().len())?;
    let k: KFactor = parse("--k", &args.k)?;
    let change = change(rating, opponents, score, k).map_err(|e| match e {
        RatingError::Overflow { .. } => CliError::arg("--k", e),
        _ => CliError::arg("--opponent", e),
    })?;
    write_json_line(out, &RatingLine::from(&change))
}

/// `--score` against `opponents` opponents: 0, 0.5 or 1, or a mean of results against them
/// (a whole number of half points out of `2 * opponents`) given as its double or as `p/q`.
fn score(text: &str, opponents: usize) -> Result<Score, CliError> {
    let value = match text.split_once('/') {
        Some((p, q)) => {
            let whole = |t: &str| t.trim().parse::<u32>().ok();
            match (whole(p), whole(q)) {
                (Some(p), Some(q)) if q > 0 => f64::from(p) / f64::from(q),
                _ => {
                    return Err(CliError::arg(
                        "--score",
                        "a fraction is two whole numbers p/q with q above 0",
                    ));
                }
            }
        }
        None => match text.parse::<Score>() {
            Ok(score) => return Ok(score),
            Err(RatingError::NotAScore(value)) if opponents > 1 => value,
            Err(e) => return Err(CliError::arg("--score", e)),
        },
    };
    Score::recorded(value, opponents).map_err(|e| CliError::arg("--score", e))
}

/// A rating as players see it: a JSON integer (`1608`), or for a rating beyond 2^53, where
/// every double is a whole number anyway, the double itself.
fn shown(rating: Rating) -> Value {
    const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0; // 2^53
    let rounded = rating.rounded();
    if rounded.abs() < EXACT_INTEGERS {
        // A whole number below 2^53: the conversion is exact.
        Value::from(rounded as i64)
    } else {
        Value::from(rounded)
    }
}

/// Parses one flag's value; the error names the flag (and echoes at most a short prefix
/// of the value).
fn parse<T>(flag: &str, text: &str) -> Result<T, CliError>
where
    T: std::str::FromStr<Err = RatingError>,
{
    text.parse().map_err(|e| CliError::arg(flag, e))
}
