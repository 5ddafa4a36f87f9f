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
    // `remove_two`): this runs once per deal, next to only a handful of HMAC calls.
    let mut remaining = [0u8; MAX_ITEMS + WIDE];
    for (i, slot) in remaining.iter_mut().enumerate().take(n) {
        *slot = i as u8;
    }
    let mut order = Vec::with_capacity(n);
    let mut indices = Vec::with_capacity(n);
    // Steps go in pairs: one shift of the list serves two picks (see `remove_two`).
    let mut len = n;
    while len >= 3 {
        let i = pick(source.next_number()?, len as u64) as usize;
        let j = pick(source.next_number()?, len as u64 - 1) as usize;
        // `pick(_, m) < m`: `i < len` and `j < len - 1`, both inside the list.
        let (first, second) = remove_two(&mut remaining, i, j, len);
        order.push(first);
        order.push(second);
        indices.push(i as u8);
        indices.push(j as u8);
        len -= 2;
    }
    if len == 2 {
        let i = pick(source.next_number()?, 2) as usize;
        order.push(remaining[i]);
        order.push(remaining[1 - i]);
        indices.push(i as u8);
        indices.push(0);
    } else if len == 1 {
        order.push(remaining[0]);
        indices.push(0);
    }
    Ok(Shuffle { order, indices })
}

/// The largest window of [`remove_two`].
const WIDE: usize = 128;

/// Removes two items from the first `len` of `list`: item `i`, then item `j` of what
/// remains; returns them in that order. Needs `i < len`, `j < len - 1`, `len <= MAX_ITEMS`.
///
/// Both removals are one pass: the bytes between the two items move down one place and
/// those after the second move down two, each run copied as a fixed-size window (a few
/// vector moves; a variable-length `copy_within` calls `memmove`, whose call and dispatch
/// cost more than moving a few dozen bytes). Each step's loads overlap the stores of the
/// step before at another offset, which the CPU cannot forward from its store buffer: it
/// waits for them to reach the cache. Pairing the picks halves those waits, the largest
/// cost of the shuffle. Bytes shifted in from beyond `len` are never read.
#[inline]
fn remove_two(list: &mut [u8; MAX_ITEMS + WIDE], i: usize, j: usize, len: usize) -> (u8, u8) {
    fn shift_two<const W: usize>(list: &mut [u8], low: usize, high: usize) {
        // Both windows are read before either is written.
        let mut below = [0u8; W];
        let mut above = [0u8; W];
        below.copy_from_slice(&list[low + 1..low + 1 + W]);
        above.copy_from_slice(&list[high + 1..high + 1 + W]);
        list[low..low + W].copy_from_slice(&below);
        list[high - 1..high - 1 + W].copy_from_slice(&above);
    }
    // Position of the second item in the list before the first removal.
    let second = if j < i { j } else { j + 1 };
    let picked = (list[i], list[second]);
    let (low, high) = if i < second { (i, second) } else { (second, i) };
    // The smallest window (in steps of 16 bytes, one vector move) that reaches the end of
    // the list: the choice follows `len`, which only shrinks, so it is well predicted.
    match len.div_ceil(16) {
        0 | 1 => shift_two::<16>(list, low, high),
        2 => shift_two::<32>(list, low, high),
        3 => shift_two::<48>(list, low, high),
        4 => shift_two::<64>(list, low, high),
        5 => shift_two::<80>(list, low, high),
        6 => shift_two::<96>(list, low, high),
        7 => shift_two::<112>(list, low, high),
        8 => shift_two::<WIDE>(list, low, high),
        _ => {
            list.copy_within(low + 1..high, low);
            list.copy_within(high + 1..len, high - 1);
        }
    }
    picked
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
        // Sizes around the window boundaries of `remove_two`, checked against
        // `order_from_indices` (plain `Vec::remove`).
        for n in (0..=40)
            .chain([
                47, 48, 49, 50, 63, 64, 65, 66, 78, 79, 80, 81, 82, 96, 97, 98, 112, 113,
            ])
            .chain([127, 128, 129, 130, 200, 255, 256])
        {
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
