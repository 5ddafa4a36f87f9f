//! Plinko with `n` pins (8..16): each of the first `n` numbers (2 cursors at most) sends
//! the ball left or right (`floor(u * 2)`); the bucket is the number of right bounces.

use serde::{Deserialize, Serialize};

use crate::explain::Explanation;
use crate::generator::{Exhausted, NumberSource, pick};

use super::{Pins, Reader, note};

/// A plinko drop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlinkoDrop {
    /// The bucket, `0..=n`: the number of right bounces.
    pub bucket: u8,
    /// Each pin's `floor(u * 2)`: 0 = left, 1 = right.
    pub path: Vec<u8>,
}

/// The drop through `pins` pins.
pub(super) fn fall<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    pins: Pins,
    steps: &mut Option<&mut Explanation>,
) -> Result<PlinkoDrop, Exhausted> {
    let mut path = Vec::with_capacity(pins.get().into());
    for _ in 0..pins.get() {
        let (i, u) = reader.next()?;
        let step = pick(u, 2) as u8;
        note(steps, || {
            let side = if step == 0 { "left" } else { "right" };
            format!("pin {i}: floor(U[{i}] * 2) = {step} ({side})")
        });
        path.push(step);
    }
    // At most 16 ones: the sum fits a u8.
    let bucket = path.iter().sum::<u8>();
    note(steps, || {
        format!("bucket = sum of the {} bounces = {bucket}", path.len())
    });
    Ok(PlinkoDrop { bucket, path })
}
