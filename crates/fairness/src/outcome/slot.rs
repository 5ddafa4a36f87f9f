//! Slot: one cursor per spin; reels 0..3 stop at `floor(u_i * 30)`, reel 4 at
//! `floor(u_4 * 41)`, and the cursor's last 3 numbers are not used.

use crate::explain::Explanation;
use crate::generator::{Exhausted, NUMBERS_PER_BLOCK, NumberSource, pick};

use super::{Reader, Spins, note};

/// Stops of slot reels 0..3.
pub const SLOT_STOPS: u64 = 30;
/// Stops of slot reel 4.
pub const SLOT_LAST_STOPS: u64 = 41;

/// The 5 reel stops of each spin.
pub(super) fn spins<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    spins: Spins,
    steps: &mut Option<&mut Explanation>,
) -> Result<Vec<[u8; 5]>, Exhausted> {
    let mut out = Vec::with_capacity(spins.get().into());
    for k in 0..spins.get() {
        let mut stops = [0u8; 5];
        let mut first = 0;
        for (reel, stop) in stops.iter_mut().enumerate() {
            let (i, u) = reader.next()?;
            if reel == 0 {
                first = i;
            }
            let n = if reel < 4 {
                SLOT_STOPS
            } else {
                SLOT_LAST_STOPS
            };
            // n <= 41, so the stop fits a u8.
            *stop = pick(u, n) as u8;
        }
        // The spin owns its whole cursor: skip its 3 unused numbers.
        for _ in 5..NUMBERS_PER_BLOCK {
            reader.next()?;
        }
        note(steps, || {
            let reels: Vec<String> = stops
                .iter()
                .enumerate()
                .map(|(reel, stop)| {
                    let n = if reel < 4 {
                        SLOT_STOPS
                    } else {
                        SLOT_LAST_STOPS
                    };
                    format!("floor(U[{}] * {n}) = {stop}", first + reel)
                })
                .collect();
            format!("spin {k} (cursor {k}): {}", reels.join(", "))
        });
        out.push(stops);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::outcome::tests::bytes_of;
    use crate::outcome::{Outcome, Round, Spins};

    #[test]
    fn slot_uses_one_cursor_per_spin() {
        // Spin 0 all maximal, spin 1 all zero; numbers 5..7 of each cursor are ignored.
        let mut numbers = vec![u64::MAX; 5];
        numbers.extend([1, 2, 3]);
        numbers.extend([0; 8]);
        let bytes = bytes_of(&numbers, 2);
        let slot = Round::Slot(Spins::new(2).unwrap());
        assert_eq!(
            slot.from_bytes(&bytes),
            Ok(Outcome::Slot(vec![[29, 29, 29, 29, 40], [0; 5]]))
        );
    }
}
