//! Double (`floor(u0 * 15)`), x50 (`floor(u0 * 54)`) and jackpot with `T` tickets
//! (`floor(u0 * T) + 1`): one number picks one slot of a wheel or one ticket.

use crate::explain::Explanation;
use crate::generator::{Exhausted, NumberSource, pick};

use super::{Reader, Tickets, note};

/// `floor(u0 * n)` for the wheel games (`n <= 54`, so it fits a u8).
pub(super) fn slot<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    n: u64,
    steps: &mut Option<&mut Explanation>,
) -> Result<u8, Exhausted> {
    let (i, u) = reader.next()?;
    let slot = pick(u, n) as u8;
    note(steps, || {
        format!("floor(U[{i}] * {n}) = {slot} -> slot {slot}")
    });
    Ok(slot)
}

/// The winning ticket, `1..=T`.
pub(super) fn ticket<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    tickets: Tickets,
    steps: &mut Option<&mut Explanation>,
) -> Result<u64, Exhausted> {
    let (i, u) = reader.next()?;
    let t = tickets.get();
    let index = pick(u, t);
    // `index < t`, so adding 1 cannot overflow.
    let ticket = index + 1;
    note(steps, || {
        format!("floor(U[{i}] * {t}) + 1 = {index} + 1 -> ticket {ticket}")
    });
    Ok(ticket)
}

#[cfg(test)]
mod tests {
    use crate::outcome::tests::bytes_of;
    use crate::outcome::{Outcome, Round, Tickets};

    #[test]
    fn wheels_and_jackpot_edges() {
        let max = bytes_of(&[u64::MAX], 1);
        assert_eq!(Round::Double.from_bytes(&max), Ok(Outcome::Double(14)));
        assert_eq!(Round::X50.from_bytes(&max), Ok(Outcome::X50(53)));
        let jackpot = |t| Round::Jackpot(Tickets::new(t).unwrap());
        assert_eq!(jackpot(1).from_bytes(&max), Ok(Outcome::Jackpot(1)));
        assert_eq!(
            jackpot(u64::MAX).from_bytes(&max),
            Ok(Outcome::Jackpot(u64::MAX))
        );
        assert_eq!(
            jackpot(10).from_bytes(&bytes_of(&[0], 1)),
            Ok(Outcome::Jackpot(1))
        );
    }
}
