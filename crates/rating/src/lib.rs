//! # fairdeal rating: Elo with a several-opponent form (SPEC 6)
//!
//! Each player has a rating per game kind, starting at [`DEFAULT_RATING`]; after a game it
//! moves by `K * (S - E)`, K being [`DEFAULT_K`] unless configured. Three users need the
//! very same numbers: the rating service (to consume `GameFinished`, record one
//! `RatingChanged` per player, and rebuild every rating from its log), the offline
//! auditor (`fairdeal audit`, to recompute every change of a game export) and the
//! verifier CLI (`fairdeal rating`). So the crate is pure (no IO, no clock, no async), total (typed
//! errors, never a panic on any input) and **bit-reproducible**: a change is a pure
//! function of the bits of its inputs, on every platform.
//!
//! The crate does not know game kinds or decide which games are rated: the service keeps
//! one rating per player and game kind and calls this crate for the games it rates.
//!
//! - [`inputs`]: [`Rating`], [`KFactor`], [`Score`], [`Opponents`], parsed once.
//! - [`elo`]: [`expectation`] and [`change`] for one player, giving a [`RatingChange`].
//! - [`teams`]: whole games between two teams, [`two_teams`] and [`four_seats`] (Jeu du 10).
//! - [`placings`]: whole games where every player is their own side, placed by the game
//!   ([`each_alone`]: French Tarot), each scoring the mean of their results against the
//!   others ([`Score::placed`]).
//! - [`audit`]: [`RecordedChange::verify`] and [`compare`], what the auditor calls.
//! - `pow10`: the crate's own `10^y` (below).
//!
//! ## SPEC 6 and the readings taken
//!
//! `R(n) = 10^(r(n)/400)`; two players: `E(n) = R(n) / (R(n) + R(m))`; `J` opponents:
//! `E(n) = R(n) / (R(n) + sum(R(m) * w(n,m)) / J)` with `e = r(n) - r(m)` and
//! `w(n,m) = 1 - e/1000` when `|e| >= 100`, else 1; `r'(n) = r(n) + K * (S(n) - E(n))`,
//! with `S` = 1 for a win, 0 for a loss, 0.5 for a draw.
//!
//! - **One opponent is the two-player formula: no weight.** SPEC gives the two-player
//!   case its own formula, without `w`. Read as the several-opponent formula with `J = 1`,
//!   a gap of 100 or more would change it (1600 against 1400: `E` = 0.7981 with
//!   `w = 0.8` instead of 0.7597) and the two players' expectations would no longer sum
//!   to 1, so ratings would drift with every game. Hence `w = 1` whenever `J = 1`, and the
//!   two-player game stays zero-sum (up to rounding). The weights apply from two opponents on (a Jeu du 10
//!   player has two), where SPEC's form is not zero-sum anyway.
//! - **Opponents at most [`MAX_GAP`] (999) points away.** SPEC's weight reaches 0 at
//!   `e = 1000` and is negative beyond: the opponent would count for nothing or less, `E`
//!   would reach or pass 1, and a player far above everyone would *lose* points for a
//!   win. Such games cannot be rated by SPEC 6 as written, so [`change`] refuses them
//!   ([`RatingError::GapTooLarge`]) rather than invent a formula; the service decides what
//!   to do with them (leave the game unrated). The last point before 1000 is kept as a
//!   margin: within it, rounding could make `E` exactly 1. The same limit applies to one
//!   opponent, so whether a game can be rated does not depend on how many players it has,
//!   and it is symmetric (if `n` can be rated against `m`, `m` can against `n`), so a team
//!   game is rated for all its players or for none. With the limit, `E` is always
//!   strictly between 0 and 1 (at least 0.0015, at most 0.999997), so a win never lowers a
//!   rating and a loss never raises one.
//! - **Draws** score 0.5 (SPEC). Jeu du 10 has no draws; [`TeamOutcome::Drawn`] exists
//!   for games that have them or for a service that scores an abandoned game as one.
//! - **Team games**: a player's opponents are the other team's players with their ratings
//!   before the game; every change of the game is computed from those pre-game ratings.
//! - **Every player their own side** (Tarot): a player's opponents are all the other
//!   players (`J = players - 1`), and `S(n)` is the mean of their results against each:
//!   1 per opponent placed below, 0.5 per opponent level, 0 per opponent above (so the first
//!   scores 1 and the last 0). With equal ratings the changes sum to zero, as in a two-sided
//!   game; scoring 1 for the winner alone would drain `K * (players / 2 - 1)` points from
//!   the pool with every game. See [`placings`].
//! - **Unrounded ratings**: every value is kept as computed; [`Rating::rounded`] (halves
//!   away from zero) is only for display.
//!
//! ## Evaluation order (normative: reproduce it to get the same bits)
//!
//! Every operation is an IEEE 754 binary64 operation rounded to nearest (ties to even),
//! one rounding per operation and no fused multiply-add (in C, compile with
//! `-ffp-contract=off`). Inputs: the player's rating `rn`, the opponents' ratings, `J` of
//! them, the score `S` (0, 0.5 or 1, or with several opponents the mean of the results
//! against them: `S = h / (2 * J)` for `h` half points, one division of two whole numbers),
//! `K`.
//!
//! 1. Visit the opponents in ascending order of rating. For each opponent `rm`:
//!    - `e = rn - rm`; if `|e| > 999` the game cannot be rated.
//!    - `x = pow10(-e / 400)` (`-e` exact, then one division), `pow10` as below.
//!    - `w = 1 - e / 1000` if `J >= 2` and `|e| >= 100`, else `w = 1`.
//!    - `sum = sum + x * w` (`sum` starts at 0).
//! 2. `mean = sum / J`; `E = 1 / (1 + mean)`.
//! 3. `after = rn + K * (S - E)`, that is `d = S - E`, then `K * d`, then `rn + (K * d)`.
//!
//! `pow10(y)`, for `|y| <= 2.4975`:
//!
//! 1. `k = floor(y * 3.321928094887362 + 0.5)`
//! 2. `r = (y - k * 0.3010299956658855) - k * -1.9043128467164274e-12`
//! 3. `p = 8.213412535439387e-06`, then for `c` in `4.6371516642572196e-05,
//!    0.00024166672554424694, 0.0011544997789984348, 0.00501392883377544,
//!    0.019597694626478524, 0.06808936507443707, 0.2069958486968681, 0.5393829291955814,
//!    1.171255148912267, 2.034678592293476, 2.650949055239199, 2.302585092994046, 1.0`:
//!    `p = p * r + c`
//! 4. `pow10(y) = p * 2^k` (exact: `ldexp(p, k)`).
//!
//! The constants are `log2(10)`, `log10(2)` split in two (the first part has 32
//! significant bits, so `k * 0.3010299956658855` is exact) and `ln(10)^i / i!` for
//! `i = 13` down to 0, each the nearest double. `pow10` is within 1.4 ulp of `10^y`.
//!
//! This is SPEC's formula with numerator and denominator divided by `R(n)`
//! (`x = R(m) / R(n)`): the same number, but never forming `10^(r/400)` of a whole rating,
//! so any finite rating works. The crate computes `10^y` itself because the platform
//! `pow` is not correctly rounded everywhere, and Rust documents `f64::powf` as
//! non-deterministic (by platform, by Rust version, even between two calls of one run).
//! The auditor therefore demands the same bits of the platform's own records, and allows
//! [`TOLERANCE`] for records of another implementation ([`audit`]). An independent
//! Python implementation of this order (`tests/golden/generate.py`) produces the golden
//! vectors the tests compare bit for bit.
#![forbid(unsafe_code)]

pub mod audit;
pub mod elo;
pub mod error;
pub mod inputs;
pub mod placings;
mod pow10;
pub mod teams;

pub use audit::{Discrepancy, Exactness, Field, RecordedChange, TOLERANCE, compare};
pub use elo::{RatingChange, change, expectation};
pub use error::RatingError;
pub use inputs::{DEFAULT_K, DEFAULT_RATING, KFactor, MeanScore, Opponents, Rating, Score};
pub use placings::{Placing, each_alone, placing_score};
pub use teams::{TeamOutcome, four_seats, two_teams};

/// The largest rating difference between a player and an opponent that can be rated:
/// `|r(n) - r(m)| <= 999`. See "SPEC 6 and the readings taken" above.
pub const MAX_GAP: f64 = 999.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_spec_6() {
        assert_eq!(DEFAULT_RATING.value(), 1500.0);
        assert_eq!(DEFAULT_K.value(), 32.0);
        assert_eq!(Rating::new(1500.0), Ok(DEFAULT_RATING));
    }
}
