//! The shuffle of SPEC section 2.
//!
//! A list of `n` items in canonical order is shuffled with `n - 1` numbers: at step `k` the
//! item at `pick(u_k, remaining)` leaves the remaining list for the end of the output; the last
//! remaining item ends the output. The indices `i_k` are the digits of the distribution
//! number (see [`crate::number`]).

use crate::generator::{Exhausted, NumberSource, pick};

/// The result of shuffling `0..n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shuffle {
    /// Canonical indices in output (dealing) order.
    pub order: Vec<u8>,
    /// `i_k` for `k = 0..n`: the position picked in the remaining list at each step; the last
    /// is always 0.
    pub indices: Vec<u8>,
}

/// The largest list the shuffle handles; items are `u8`.
pub const MAX_ITEMS: usize = 256;

/// The list to shuffle is longer than [`MAX_ITEMS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShuffleError {
    /// More items than a `u8` can index.
    #[error("cannot shuffle {0} items (at most 256)")]
    TooLong(usize),
    /// The number source ran out.
    #[error(transparent)]
    Exhausted(#[from] Exhausted),
}

/// Shuffles `0..n` with `n - 1` numbers from `source`.
pub fn shuffle<S: NumberSource + ?Sized>(
    n: usize,
    source: &mut S,
) -> Result<Shuffle, ShuffleError> {
    if n > MAX_ITEMS {
        return Err(ShuffleError::TooLong(n));
    }
    // `n <= 256`, so every item and index fits a u8 (256 items are 0..=255). The remaining
    // list lives on the stack with a spare window's worth of slack after it (see
    // `remove_at`): this runs once per deal, next to only a handful of HMAC calls.
    let mut remaining = [0u8; MAX_ITEMS + WIDE];
    for (i, slot) in remaining.iter_mut().enumerate().take(n) {
        *slot = i as u8;
    }
    let mut order = Vec::with_capacity(n);
    let mut indices = Vec::with_capacity(n);
    for len in (2..=n).rev() {
        let i = pick(source.next_number()?, len as u64) as usize;
        // `pick(_, len) < len <= 256`: `i` is always inside the remaining list.
        order.push(remaining[i]);
        remove_at(&mut remaining, i, len);
        indices.push(i as u8);
    }
    if n > 0 {
        order.push(remaining[0]);
        indices.push(0);
    }
    Ok(Shuffle { order, indices })
}

/// Window sizes of [`remove_at`].
const NARROW: usize = 32;
const WIDE: usize = 128;

/// Removes `list[i]` from the first `len` items by shifting the rest down one place.
///
/// Lists of up to 128 items shift a fixed-size window, which compiles to a few vector
/// moves; a variable-length `copy_within` calls `memmove`, whose call and dispatch cost
/// more than moving a few dozen bytes and showed as 5% of a whole dix deal in profiles.
/// Bytes shifted in from beyond `len` are never read. Needs `i < len <= MAX_ITEMS` and
/// `list.len() == MAX_ITEMS + WIDE`.
#[inline]
fn remove_at(list: &mut [u8; MAX_ITEMS + WIDE], i: usize, len: usize) {
    fn shift<const W: usize>(list: &mut [u8], i: usize) {
        let mut window = [0u8; W];
        window.copy_from_slice(&list[i + 1..i + 1 + W]);
        list[i..i + W].copy_from_slice(&window);
    }
    if len <= NARROW {
        shift::<NARROW>(list, i);
    } else if len <= WIDE {
        shift::<WIDE>(list, i);
    } else {
        list.copy_within(i + 1..len, i);
    }
}

/// Rebuilds the order from the indices `i_k` (the inverse of reading them off a shuffle).
///
/// Returns `None` when an index is out of range for its step (`i_k > n - 1 - k`).
pub fn order_from_indices(indices: &[u8]) -> Option<Vec<u8>> {
    let n = indices.len();
    if n > MAX_ITEMS {
        return None;
    }
    let mut remaining: Vec<u8> = (0..n).map(|i| i as u8).collect();
    let mut order = Vec::with_capacity(n);
    for &i in indices {
        let i = usize::from(i);
        if i >= remaining.len() {
            return None;
        }
        order.push(remaining.remove(i));
    }
    Some(order)
}

/// Reads the indices `i_k` off a dealt order of `0..n`.
///
/// Returns `None` unless `order` is a permutation of `0..order.len()`.
pub fn indices_from_order(order: &[u8]) -> Option<Vec<u8>> {
    let n = order.len();
    if n > MAX_ITEMS {
        return None;
    }
    let mut seen = [false; MAX_ITEMS];
    for &c in order {
        let c = usize::from(c);
        if c >= n || seen[c] {
            return None;
        }
        seen[c] = true;
    }
    // i_k = number of not-yet-dealt items smaller than order[k].
    let mut dealt = [false; MAX_ITEMS];
    let mut indices = Vec::with_capacity(n);
    for &c in order {
        let c = usize::from(c);
        let smaller_remaining = (0..c).filter(|&j| !dealt[j]).count();
        indices.push(smaller_remaining as u8);
        dealt[c] = true;
    }
    Some(indices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::{Generator, RawNumbers};
    use proptest::prelude::*;

    #[test]
    fn uses_n_minus_one_numbers() {
        let g = Generator::new("a", "b", "0");
        let mut numbers = g.numbers();
        let s = shuffle(40, &mut numbers).unwrap();
        assert_eq!(s.order.len(), 40);
        assert_eq!(s.indices.len(), 40);
        assert_eq!(*s.indices.last().unwrap(), 0);
        // 39 numbers: 5 cursors, and the 40th number is the next one read.
        assert_eq!(numbers.cursors_used(), 5);
        let expected_next = g.numbers().nth(39).unwrap();
        assert_eq!(numbers.next(), Some(expected_next));
    }

    #[test]
    fn first_pick_follows_the_first_number() {
        // All-zero bytes pick index 0 each time: canonical order. All-0xff picks the last.
        let zeros = [0u8; 64 * 7];
        let s = shuffle(52, &mut RawNumbers::new(&zeros).unwrap()).unwrap();
        assert_eq!(s.order, (0..52).collect::<Vec<u8>>());
        let ones = [0xffu8; 64 * 7];
        let s = shuffle(52, &mut RawNumbers::new(&ones).unwrap()).unwrap();
        assert_eq!(s.order, (0..52).rev().collect::<Vec<u8>>());
    }

    #[test]
    fn running_out_is_an_error() {
        let bytes = [0u8; 64];
        let err = shuffle(25, &mut RawNumbers::new(&bytes).unwrap()).unwrap_err();
        assert_eq!(err, ShuffleError::Exhausted(Exhausted { available: 8 }));
        assert!(matches!(
            shuffle(257, &mut RawNumbers::new(&bytes).unwrap()),
            Err(ShuffleError::TooLong(257))
        ));
    }

    #[test]
    fn edge_sizes() {
        let bytes = [0u8; 64];
        let mut src = RawNumbers::new(&bytes).unwrap();
        assert_eq!(shuffle(0, &mut src).unwrap().order, Vec::<u8>::new());
        assert_eq!(shuffle(1, &mut src).unwrap().order, vec![0]);
    }

    proptest! {
        #[test]
        fn order_and_indices_agree(seed in any::<u64>(), n in 0usize..=78) {
            let g = Generator::new(&seed.to_string(), "c", "s");
            let s = shuffle(n, &mut g.numbers()).unwrap();
            let mut sorted = s.order.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..n).map(|i| i as u8).collect::<Vec<_>>());
            prop_assert_eq!(order_from_indices(&s.indices), Some(s.order.clone()));
            prop_assert_eq!(indices_from_order(&s.order), Some(s.indices.clone()));
        }
    }

    #[test]
    fn every_window_size_agrees_with_plain_removal() {
        // Sizes around the window boundaries of `remove_at`, checked against
        // `order_from_indices` (plain `Vec::remove`).
        for n in [2, 31, 32, 33, 127, 128, 129, 200, 256] {
            for seed in 0..4 {
                let g = Generator::new("windows", &n.to_string(), &seed.to_string());
                let s = shuffle(n, &mut g.numbers()).unwrap();
                assert_eq!(order_from_indices(&s.indices), Some(s.order.clone()), "{n}");
                let mut sorted = s.order.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).map(|i| i as u8).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn rejects_non_permutations() {
        assert_eq!(indices_from_order(&[0, 0]), None);
        assert_eq!(indices_from_order(&[0, 2]), None);
        assert_eq!(order_from_indices(&[2, 0]), None);
    }
}
