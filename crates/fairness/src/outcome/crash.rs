//! Crash and overgo: one number, a multiplier of at least `1.00` with a house edge of 5%
//! (crash) or 3% (overgo).

use crate::explain::Explanation;
use crate::generator::{Exhausted, NumberSource, pick};

use super::{Hundredths, Reader, note};

/// Numerator of crash (house edge 5%).
pub(super) const CRASH_NUMERATOR: u64 = 950_000;
/// Numerator of overgo (house edge 3%).
pub(super) const OVERGO_NUMERATOR: u64 = 970_000;
/// Range of `h` in crash and overgo.
const CRASH_RANGE: u64 = 1_000_000;

/// Crash and overgo: `h = floor(u0 * 10^6)`, `max(1, numerator / (h + 1))` rounded half-up
/// to two decimals.
///
/// In hundredths, rounding `x = N / d` half-up is `floor(100 x + 1/2) = floor((200 N + d) /
/// (2 d))`; taking the maximum with `1.00` after rounding equals taking it before, because
/// rounding is monotonic and `1.00` is already a two-place value.
pub(super) fn crash<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    numerator: u64,
    steps: &mut Option<&mut Explanation>,
) -> Result<Hundredths, Exhausted> {
    let (i, u) = reader.next()?;
    let h = pick(u, CRASH_RANGE);
    let value = crash_hundredths(h, numerator);
    note(steps, || format!("h = floor(U[{i}] * 1000000) = {h}"));
    note(steps, || {
        let d = h + 1;
        let rounded = Hundredths((200 * numerator + d) / (2 * d));
        format!(
            "{numerator} / (h + 1) = {numerator} / {d} = {}.{:06}... -> rounded half-up: {rounded}",
            numerator / d,
            (numerator % d) * 1_000_000 / d
        )
    });
    note(steps, || format!("max(1.00, that) = {value}"));
    Ok(value)
}

/// The rounded multiplier for `h < 10^6` (so `200 * numerator + h + 1` cannot overflow).
fn crash_hundredths(h: u64, numerator: u64) -> Hundredths {
    let d = h + 1;
    Hundredths(((200 * numerator + d) / (2 * d)).max(100))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::tests::{bytes_of, number_for};
    use crate::outcome::{Outcome, Round};

    #[test]
    fn crash_rounding_is_exact() {
        // h = 0: 950000.00 exactly.
        assert_eq!(crash_hundredths(0, CRASH_NUMERATOR), Hundredths(95_000_000));
        // h + 1 = 128: 950000 / 128 = 7421.875 -> 7421.88 (half-up).
        assert_eq!(crash_hundredths(127, CRASH_NUMERATOR), Hundredths(742_188));
        // h + 1 = 3: 316666.666... -> 316666.67.
        assert_eq!(crash_hundredths(2, CRASH_NUMERATOR), Hundredths(31_666_667));
        // 950000 / 950000 = 1.00; just below 1 clamps to 1.00.
        assert_eq!(crash_hundredths(949_999, CRASH_NUMERATOR), Hundredths(100));
        assert_eq!(crash_hundredths(999_999, CRASH_NUMERATOR), Hundredths(100));
        // 950000 / 475001 = 1.99999578... -> 2.00.
        assert_eq!(crash_hundredths(475_000, CRASH_NUMERATOR), Hundredths(200));
        // 970000 / 400000 = 2.425 -> 2.43 (half-up, not banker's).
        assert_eq!(crash_hundredths(399_999, OVERGO_NUMERATOR), Hundredths(243));
        let overgo = Round::Overgo;
        let u = number_for(399_999, CRASH_RANGE);
        assert_eq!(
            overgo.from_bytes(&bytes_of(&[u], 1)),
            Ok(Outcome::Overgo(Hundredths(243)))
        );
    }
}
