//! Tower: 10 rows; row `r` draws 4 of the positions 0..4 without replacement with the
//! numbers `U_4r .. U_4r+3`, each `floor(u * remaining)` (40 numbers, 5 cursors).

use crate::explain::Explanation;
use crate::generator::{Exhausted, NumberSource};

use super::{Reader, draw, note};

/// Rows of the tower.
pub const TOWER_ROWS: usize = 10;
/// Positions per tower row.
pub const TOWER_POSITIONS: u8 = 5;
/// Positions drawn per tower row.
pub const TOWER_DRAWN: usize = 4;

/// The 4 positions drawn in each row, in drawing order.
pub(super) fn rows<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    steps: &mut Option<&mut Explanation>,
) -> Result<Vec<[u8; TOWER_DRAWN]>, Exhausted> {
    let mut rows = Vec::with_capacity(TOWER_ROWS);
    for r in 0..TOWER_ROWS {
        note(steps, || format!("row {r}:"));
        let positions: Vec<u8> = (0..TOWER_POSITIONS).collect();
        let drawn = draw(reader, positions, TOWER_DRAWN, steps)?;
        let mut row = [0u8; TOWER_DRAWN];
        for (slot, p) in row.iter_mut().zip(drawn) {
            *slot = p;
        }
        rows.push(row);
    }
    Ok(rows)
}
