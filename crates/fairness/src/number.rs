//! Distribution numbers (SPEC section 2): the lexicographic rank of a dealt order.
//!
//! A shuffle of `n` cards picks `i_k` in `[0, n - k)` at step `k`. The distribution number
//! is the mixed-radix value of these picks,
//!
//! ```text
//! N = sum_k i_k * (n - 1 - k)!        (i_(n-1) = 0)
//! ```
//!
//! which is the rank of the dealt order among all `n!` orders of the canonical deck, so it
//! lies in `[0, n!)` and every value of that range is exactly one deal. For Tarot,
//! `78! ~ 1.13e115` needs 385 bits, hence [`BigUint`].
//!
//! Ranking runs once per deal, so it is built for speed: Horner's scheme
//! `N = (..((i_0 * (n-1) + i_1) * (n-2) + i_2) ..) * 1 + i_(n-1)` with the radices grouped
//! into chunks whose product fits a `u64`. A 78-card rank is then eight in-place scalar
//! multiply-adds on the big integer instead of 78 (or a sum of 77 big factorials).
//! Unranking runs the same chunks backwards with one in-place short division per chunk.

/// The big integer type of distribution numbers, re-exported so callers need not depend
/// on `num-bigint` themselves.
pub use num_bigint::BigUint;

use crate::shuffle::{MAX_ITEMS, indices_from_order, order_from_indices};

/// Chunk products stay at or below this bound when ranking, so that even out-of-range
/// digits (the formula is total, see [`mixed_radix`]) cannot overflow the `u64` chunk:
/// with digits up to 255 a chunk value stays below `2 * 255 * product < 2^9 * 2^54`.
const RANK_CHUNK_LIMIT: u64 = 1 << 54;

/// Why a distribution number could not be computed or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NumberError {
    /// Orders longer than the shuffle supports.
    #[error("distribution numbers cover at most {MAX_ITEMS} cards, got {0}")]
    TooManyCards(usize),
    /// A pick is outside the list it was taken from.
    #[error("pick {step} is {index}, but only {remaining} cards remained at that step")]
    InvalidPick {
        /// The step `k`.
        step: usize,
        /// The pick `i_k`.
        index: u8,
        /// `n - k`, the size of the remaining list.
        remaining: usize,
    },
    /// The order is not a permutation of the deck's canonical indices.
    #[error("not a dealt order of {0} cards (a card is missing, repeated or out of range)")]
    NotAnOrder(usize),
    /// The number is at least `n!`.
    #[error("distribution number too large: it must be less than {n}! = {}", factorial(*n))]
    TooLarge {
        /// Number of cards.
        n: usize,
    },
}

/// Why a decimal distribution number could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseNumberError {
    /// Nothing to parse.
    #[error("distribution number is empty")]
    Empty,
    /// A leading minus sign: distribution numbers are never negative.
    #[error("distribution number must not be negative")]
    Negative,
    /// A character other than an ASCII digit.
    #[error(
        "distribution number is not a decimal integer: unexpected {character:?} at position {position}"
    )]
    NotDecimal {
        /// The offending character.
        character: char,
        /// Its character position (0-based).
        position: usize,
    },
    /// The value is not below `n!`.
    #[error(transparent)]
    OutOfRange(#[from] NumberError),
}

/// `n!`, the number of orders of `n` cards (so distribution numbers lie in `[0, n!)`).
pub fn factorial(n: usize) -> BigUint {
    let mut f = BigUint::from(1u8);
    for (_, product) in chunks(n, u64::MAX) {
        f *= product;
    }
    f
}

/// Splits the radices `n, n-1, .., 1` (most significant first) into consecutive runs whose
/// product stays at or below `limit`; yields `(run length, product)`.
fn chunks(n: usize, limit: u64) -> impl Iterator<Item = (usize, u64)> {
    let mut radix = n as u64;
    std::iter::from_fn(move || {
        if radix == 0 {
            return None;
        }
        let mut len = 0;
        let mut product = 1u64;
        while radix > 0 {
            match product.checked_mul(radix) {
                Some(p) if p <= limit => {
                    product = p;
                    len += 1;
                    radix -= 1;
                }
                // A single radix is at most 256, so a run always takes at least one.
                _ => break,
            }
        }
        Some((len, product))
    })
}

/// How many digits the next ranking chunk takes when `remaining` digits are left (`None`
/// when none are): with `b` bits for the first radix `r = remaining` (`r <= 2^b`), every
/// radix of the chunk is at most `2^b`, so `54 / b` of them multiply to at most
/// [`RANK_CHUNK_LIMIT`]. Unlike [`chunks`] this needs no multiplication to find the chunk
/// ends, which ranking would otherwise wait on.
fn rank_chunk_len(remaining: usize) -> Option<usize> {
    if remaining == 0 {
        return None;
    }
    let radix = remaining as u64;
    // ceil(log2(radix)), at least 1; at most 8 for radices up to 256, so chunks hold 6 or more.
    let bits = (u64::BITS - (radix - 1).leading_zeros()).max(1) as usize;
    Some((RANK_CHUNK_LIMIT.ilog2() as usize / bits).clamp(1, remaining))
}

/// Limbs (64-bit) of the largest value [`mixed_radix`] can produce: even with every digit
/// 255, 256 digits stay below `255 * 2 * 255! < 2^1685`, i.e. 27 limbs.
const MAX_LIMBS: usize = 27;

/// The value of the formula `sum_k indices[k] * (n - 1 - k)!` for `n = indices.len()`, with
/// no checks: for valid picks it is the distribution number; for invalid ones it is still
/// the formula's exact value (possibly `>= n!`). Use [`from_indices`] to validate.
///
/// Inputs longer than [`MAX_ITEMS`] are truncated to their first [`MAX_ITEMS`] digits.
pub fn mixed_radix(indices: &[u8]) -> BigUint {
    let indices = &indices[..indices.len().min(MAX_ITEMS)];
    // Horner's scheme over fixed little-endian limbs on the stack, one u64 multiply-add
    // per limb and chunk, and a single allocation for the result: num-bigint's in-place
    // scalar ops grow their digit vector three times on the way to 78!, which costs more
    // than the arithmetic.
    let mut limbs = [0u64; MAX_LIMBS];
    let mut used = 0usize;
    let mut rest = indices;
    while let Some(len) = rank_chunk_len(rest.len()) {
        let (chunk, tail) = rest.split_at(len);
        // The chunk's radix product and mixed-radix value, two digits per step: the
        // multiply chains are what take time here, and `value * (r0 * r1) + (d0 * r1 + d1)`
        // halves them (same value, same intermediate bound as one digit at a time).
        let mut radix = rest.len() as u64;
        let mut value = 0u64;
        let mut product = 1u64;
        let mut pairs = chunk.chunks_exact(2);
        for pair in pairs.by_ref() {
            let both = radix * (radix - 1);
            value = value * both + (u64::from(pair[0]) * (radix - 1) + u64::from(pair[1]));
            product *= both;
            radix -= 2;
        }
        for &digit in pairs.remainder() {
            value = value * radix + u64::from(digit);
            product *= radix;
        }
        // limbs = limbs * product + value; each step's result is below 2^128.
        let mut carry = u128::from(value);
        for limb in &mut limbs[..used] {
            let t = u128::from(*limb) * u128::from(product) + carry;
            *limb = t as u64;
            carry = t >> 64;
        }
        // `MAX_LIMBS` holds every value the formula can reach, so the slot always exists.
        if carry != 0
            && let Some(limb) = limbs.get_mut(used)
        {
            *limb = carry as u64;
            used += 1;
        }
        rest = tail;
    }
    let mut digits = [0u32; 2 * MAX_LIMBS];
    for (pair, limb) in digits.chunks_exact_mut(2).zip(&limbs[..used]) {
        pair[0] = *limb as u32;
        pair[1] = (*limb >> 32) as u32;
    }
    BigUint::from_slice(&digits[..2 * used])
}

/// The distribution number of a shuffle's picks `i_k` (one per card, the last one 0).
pub fn from_indices(indices: &[u8]) -> Result<BigUint, NumberError> {
    let n = indices.len();
    if n > MAX_ITEMS {
        return Err(NumberError::TooManyCards(n));
    }
    for (step, &index) in indices.iter().enumerate() {
        let remaining = n - step;
        if usize::from(index) >= remaining {
            return Err(NumberError::InvalidPick {
                step,
                index,
                remaining,
            });
        }
    }
    Ok(mixed_radix(indices))
}

/// The picks `i_k` of the deal of `n` cards numbered `number`.
pub fn to_indices(number: &BigUint, n: usize) -> Result<Vec<u8>, NumberError> {
    if n > MAX_ITEMS {
        return Err(NumberError::TooManyCards(n));
    }
    // Peel chunks off the least significant end: each short division by a chunk's radix
    // product leaves the chunk's mixed-radix value as remainder. Hand-written over u64 limbs
    // because num-bigint's scalar division allocates a fresh integer for every quotient and
    // remainder.
    let mut limbs = number.to_u64_digits();
    let mut indices = vec![0u8; n];
    let runs: Vec<(usize, u64)> = chunks(n, u64::MAX).collect();
    let mut end = n;
    for &(len, product) in runs.iter().rev() {
        let mut value = div_rem_in_place(&mut limbs, product);
        // Positions start..end have radices n - k; peel them least significant first.
        let start = end - len;
        for k in (start..end).rev() {
            let radix = (n - k) as u64;
            // `value % radix < radix <= 256`, so the cast is exact.
            indices[k] = (value % radix) as u8;
            value /= radix;
        }
        end = start;
    }
    // Whatever is left above n! means the number was out of range.
    if limbs.iter().any(|&l| l != 0) {
        return Err(NumberError::TooLarge { n });
    }
    Ok(indices)
}

/// Divides the little-endian `limbs` by `divisor` in place and returns the remainder.
fn div_rem_in_place(limbs: &mut [u64], divisor: u64) -> u64 {
    let mut rem = 0u128;
    for limb in limbs.iter_mut().rev() {
        let cur = (rem << 64) | u128::from(*limb);
        // `rem < divisor`, so the quotient fits a u64.
        *limb = (cur / u128::from(divisor)) as u64;
        rem = cur % u128::from(divisor);
    }
    rem as u64
}

/// The distribution number of a dealt order (canonical indices, first card dealt first).
pub fn from_order(order: &[u8]) -> Result<BigUint, NumberError> {
    if order.len() > MAX_ITEMS {
        return Err(NumberError::TooManyCards(order.len()));
    }
    let indices = indices_from_order(order).ok_or(NumberError::NotAnOrder(order.len()))?;
    Ok(mixed_radix(&indices))
}

/// The dealt order of `n` cards numbered `number`.
pub fn to_order(number: &BigUint, n: usize) -> Result<Vec<u8>, NumberError> {
    let indices = to_indices(number, n)?;
    // Picks produced by `to_indices` are always in range.
    order_from_indices(&indices).ok_or(NumberError::NotAnOrder(n))
}

/// Parses a distribution number of an `n`-card deck written in decimal.
///
/// Only ASCII digits are accepted (no sign, spaces or separators); leading zeros are
/// allowed. The value must be below `n!`.
pub fn parse(text: &str, n: usize) -> Result<BigUint, ParseNumberError> {
    if text.is_empty() {
        return Err(ParseNumberError::Empty);
    }
    if text.starts_with('-') {
        return Err(ParseNumberError::Negative);
    }
    if let Some((position, character)) = text.chars().enumerate().find(|(_, c)| !c.is_ascii_digit())
    {
        return Err(ParseNumberError::NotDecimal {
            character,
            position,
        });
    }
    if n > MAX_ITEMS {
        return Err(NumberError::TooManyCards(n).into());
    }
    let significant = text.trim_start_matches('0');
    let limit = factorial(n);
    // A number with more digits than n! is too large: reject it before converting, so
    // absurdly long input costs no quadratic big-integer parsing.
    let limit_digits = limit.to_string().len();
    if significant.len() > limit_digits {
        return Err(NumberError::TooLarge { n }.into());
    }
    let value = if significant.is_empty() {
        BigUint::ZERO
    } else {
        BigUint::parse_bytes(significant.as_bytes(), 10).ok_or(ParseNumberError::NotDecimal {
            character: '?',
            position: 0,
        })?
    };
    if value >= limit {
        return Err(NumberError::TooLarge { n }.into());
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The formula as written in the SPEC, with big factorials: the reference for the
    /// chunked Horner evaluation.
    fn naive(indices: &[u8]) -> BigUint {
        let n = indices.len();
        indices
            .iter()
            .enumerate()
            .map(|(k, &i)| BigUint::from(i) * factorial(n - 1 - k))
            .sum()
    }

    #[test]
    fn small_factorials() {
        let got: Vec<String> = (0..8).map(|n| factorial(n).to_string()).collect();
        assert_eq!(got, ["1", "1", "2", "6", "24", "120", "720", "5040"]);
        assert_eq!(
            factorial(52).to_string(),
            "80658175170943878571660636856403766975289505440883277824000000000000"
        );
        assert!(
            factorial(78)
                .to_string()
                .starts_with("113242811782062978314575211587320")
        );
        assert_eq!(factorial(78).to_string().len(), 116);
    }

    #[test]
    fn chunks_cover_every_radix() {
        for n in 0..=MAX_ITEMS {
            for limit in [RANK_CHUNK_LIMIT, u64::MAX] {
                let runs: Vec<_> = chunks(n, limit).collect();
                assert_eq!(runs.iter().map(|r| r.0).sum::<usize>(), n);
                assert!(runs.iter().all(|r| r.0 > 0 && r.1 <= limit));
            }
        }
    }

    #[test]
    fn rank_chunks_stay_below_the_limit() {
        for n in 0..=MAX_ITEMS {
            let mut remaining = n;
            while let Some(len) = rank_chunk_len(remaining) {
                assert!(len > 0 && len <= remaining);
                let product = (remaining - len + 1..=remaining)
                    .try_fold(1u64, |p, r| p.checked_mul(r as u64));
                assert!(
                    product.is_some_and(|p| p <= RANK_CHUNK_LIMIT),
                    "{n} {remaining}"
                );
                remaining -= len;
            }
        }
    }

    #[test]
    fn three_cards_in_lexicographic_order() {
        // All 6 orders of 3 cards, sorted: their numbers are 0..6.
        let orders = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        for (rank, order) in orders.iter().enumerate() {
            assert_eq!(from_order(order), Ok(BigUint::from(rank)));
            assert_eq!(to_order(&BigUint::from(rank), 3).unwrap(), order);
        }
        assert_eq!(
            to_order(&BigUint::from(6u8), 3),
            Err(NumberError::TooLarge { n: 3 })
        );
    }

    #[test]
    fn edges_of_78_cards() {
        let max = factorial(78) - 1u8;
        let identity: Vec<u8> = (0..78).collect();
        let reversed: Vec<u8> = (0..78).rev().collect();
        assert_eq!(from_order(&identity), Ok(BigUint::ZERO));
        assert_eq!(from_order(&reversed), Ok(max.clone()));
        assert_eq!(to_order(&max, 78), Ok(reversed));
        assert_eq!(to_order(&BigUint::ZERO, 78), Ok(identity));
        assert_eq!(
            to_order(&factorial(78), 78),
            Err(NumberError::TooLarge { n: 78 })
        );
        assert_eq!(to_indices(&BigUint::ZERO, 0), Ok(vec![]));
        assert_eq!(from_indices(&[]), Ok(BigUint::ZERO));
    }

    #[test]
    fn invalid_picks_are_named() {
        assert_eq!(
            from_indices(&[0, 2, 0]),
            Err(NumberError::InvalidPick {
                step: 1,
                index: 2,
                remaining: 2
            })
        );
        assert_eq!(from_order(&[0, 0]), Err(NumberError::NotAnOrder(2)));
        assert_eq!(from_indices(&[0; 257]), Err(NumberError::TooManyCards(257)));
        // The unchecked formula is still exact for out-of-range digits, up to the largest
        // value it can produce.
        for n in [78, MAX_ITEMS] {
            let wild = vec![255u8; n];
            assert_eq!(mixed_radix(&wild), naive(&wild));
        }
        let reversed: Vec<u8> = (0..=255).rev().collect();
        let max = factorial(MAX_ITEMS) - 1u8;
        assert_eq!(from_order(&reversed), Ok(max.clone()));
        assert_eq!(to_order(&max, MAX_ITEMS), Ok(reversed));
    }

    #[test]
    fn parse_errors_name_the_problem() {
        assert_eq!(parse("", 52), Err(ParseNumberError::Empty));
        assert_eq!(parse("-1", 52), Err(ParseNumberError::Negative));
        assert_eq!(
            parse("12a4", 52),
            Err(ParseNumberError::NotDecimal {
                character: 'a',
                position: 2
            })
        );
        assert!(matches!(
            parse("+1", 52),
            Err(ParseNumberError::NotDecimal { character: '+', .. })
        ));
        assert!(matches!(
            parse("1_000", 52),
            Err(ParseNumberError::NotDecimal { character: '_', .. })
        ));
        assert_eq!(parse("0000", 52), Ok(BigUint::ZERO));
        assert_eq!(parse("007", 52), Ok(BigUint::from(7u8)));
        let limit = factorial(52).to_string();
        assert_eq!(
            parse(&limit, 52),
            Err(ParseNumberError::OutOfRange(NumberError::TooLarge {
                n: 52
            }))
        );
        let below = (factorial(52) - 1u8).to_string();
        assert_eq!(parse(&below, 52), Ok(factorial(52) - 1u8));
        let huge = "9".repeat(100_000);
        assert!(parse(&huge, 78).is_err());
        let message = parse(&limit, 52).unwrap_err().to_string();
        assert!(message.contains("less than 52! = 8065817517"), "{message}");
    }

    fn big_below_factorial(n: usize) -> impl Strategy<Value = BigUint> {
        let limit = factorial(n);
        let bytes = limit.to_bytes_le().len();
        proptest::collection::vec(any::<u8>(), bytes)
            .prop_map(move |b| BigUint::from_bytes_le(&b) % &limit)
    }

    proptest! {
        #[test]
        fn unrank_then_rank_is_identity(n in 0usize..=80, seed in any::<u64>()) {
            let limit = factorial(n);
            // Spread values over the whole range with a multiplicative walk.
            let number = (BigUint::from(seed) * BigUint::from(0x9e37_79b9_7f4a_7c15u64)
                * factorial(n / 2 + 1)) % &limit;
            let indices = to_indices(&number, n).unwrap();
            prop_assert_eq!(from_indices(&indices), Ok(number.clone()));
            let order = to_order(&number, n).unwrap();
            prop_assert_eq!(from_order(&order), Ok(number));
        }

        #[test]
        fn every_78_card_number_round_trips(number in big_below_factorial(78)) {
            let order = to_order(&number, 78).unwrap();
            prop_assert_eq!(from_order(&order), Ok(number.clone()));
            prop_assert_eq!(parse(&number.to_string(), 78), Ok(number));
        }

        #[test]
        fn chunked_horner_matches_the_formula(indices in proptest::collection::vec(any::<u8>(), 0..=100)) {
            prop_assert_eq!(mixed_radix(&indices), naive(&indices));
        }

        #[test]
        fn rank_of_valid_picks_is_below_n_factorial(
            raw in proptest::collection::vec(any::<u8>(), 0..=78)
        ) {
            let n = raw.len();
            let indices: Vec<u8> = raw.iter().enumerate().map(|(k, &i)| (usize::from(i) % (n - k)) as u8).collect();
            let number = from_indices(&indices).unwrap();
            prop_assert!(number < factorial(n));
            prop_assert_eq!(to_indices(&number, n), Ok(indices));
        }
    }
}
