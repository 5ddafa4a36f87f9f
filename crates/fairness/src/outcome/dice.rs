//! Dice: `floor(u0 * 10001) / 100`, a roll from `0.00` to `100.00` (1 number).

use crate::explain::Explanation;
use crate::generator::{Exhausted, NumberSource, pick};

use super::{Hundredths, Reader, note};

/// The roll of the next number, in hundredths.
pub(super) fn roll<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    steps: &mut Option<&mut Explanation>,
) -> Result<Hundredths, Exhausted> {
    let (i, u) = reader.next()?;
    let roll = Hundredths(pick(u, 10_001));
    note(steps, || {
        format!(
            "floor(U[{i}] * 10001) = {} -> roll {} / 100 = {roll}",
            roll.0, roll.0
        )
    });
    Ok(roll)
}

#[cfg(test)]
mod tests {
    use crate::outcome::tests::{bytes_of, number_for};
    use crate::outcome::{Hundredths, Outcome, Round};

    #[test]
    fn dice_edges() {
        let dice = Round::Dice;
        assert_eq!(
            dice.from_bytes(&bytes_of(&[0], 1)),
            Ok(Outcome::Dice(Hundredths(0)))
        );
        assert_eq!(
            dice.from_bytes(&bytes_of(&[u64::MAX], 1)),
            Ok(Outcome::Dice(Hundredths(10_000)))
        );
        assert_eq!(
            dice.from_bytes(&bytes_of(&[number_for(5000, 10_001)], 1)),
            Ok(Outcome::Dice(Hundredths(5000)))
        );
        assert_eq!(
            dice.from_bytes(&bytes_of(&[number_for(5000, 10_001) - 1], 1)),
            Ok(Outcome::Dice(Hundredths(4999)))
        );
    }
}
