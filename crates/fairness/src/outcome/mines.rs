//! Mines: `M` mines on the 5x5 board (cells 0..24, row by row from the top-left) are the
//! first `M` cells of the section 2 shuffle of the 25 cells (24 numbers, 3 cursors).

use crate::explain::Explanation;
use crate::generator::{Exhausted, NumberSource};
use crate::shuffle::{ShuffleError, shuffle};

use super::{MineCount, Reader, draw, note};

/// Cells on the mines board.
pub const MINES_CELLS: u8 = 25;

/// The mine cells, in the order the shuffle placed them.
pub(super) fn place<S: NumberSource + ?Sized>(
    reader: &mut Reader<'_, S>,
    mines: MineCount,
    steps: &mut Option<&mut Explanation>,
) -> Result<Vec<u8>, Exhausted> {
    let mut order = if steps.is_some() {
        // The walk-through names every pick and the cells left at each.
        let cells: Vec<u8> = (0..MINES_CELLS).collect();
        draw(reader, cells, MINES_CELLS as usize - 1, steps)?
    } else {
        // Plain play: the same shuffle (SPEC section 2), with its paired removals.
        match shuffle(MINES_CELLS.into(), reader) {
            Ok(shuffled) => shuffled.order,
            Err(ShuffleError::Exhausted(e)) => return Err(e),
            // 25 cells are far below the shuffle's limit.
            Err(ShuffleError::TooLong(_)) => Vec::new(),
        }
    };
    order.truncate(mines.get().into());
    note(steps, || {
        format!(
            "the first {} cells of the shuffle hold the mines",
            mines.get()
        )
    });
    Ok(order)
}
