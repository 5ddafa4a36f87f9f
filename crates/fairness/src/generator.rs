//! The bit-exact generator (SPEC section 1).
//!
//! ```text
//! key   = SHA-256( server_seed ":" salt )
//! bytes = HMAC-SHA512( key, client_seed ":" cursor )
//! ```
//!
//! Each 64-byte block gives eight big-endian `u64` numbers `U`, standing for `u = U / 2^64`.
//! An index in `[0, n)` is `(U * n) >> 64`, computed in `u128`: never through `f64`, which
//! can round a number just below 1 up to exactly 1.0 and index one past the end.
//!
//! The keyed HMAC state is built once per generator and cloned for every cursor: re-keying
//! (two extra SHA-512 compressions) would nearly halve the rate of a 78-card deal.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

type HmacSha512 = Hmac<Sha512>;

/// Bytes produced by one cursor.
pub const BLOCK_LEN: usize = 64;
/// Numbers produced by one cursor.
pub const NUMBERS_PER_BLOCK: usize = BLOCK_LEN / 8;

/// `floor(u * n)` for `u = number / 2^64`, in exact integer arithmetic.
#[inline]
pub const fn pick(number: u64, n: u64) -> u64 {
    ((number as u128 * n as u128) >> 64) as u64
}

/// A source of generator numbers, read in order.
///
/// Implemented by the seeded [`Generator`] stream (endless) and by [`RawNumbers`] (the
/// generator's raw output supplied by a verifier, which can run out).
pub trait NumberSource {
    /// The next number `U`, or an error when the source is exhausted.
    fn next_number(&mut self) -> Result<u64, Exhausted>;
}

/// Raw generator output ran out before a computation had all the numbers it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the generator bytes ran out after {available} numbers")]
pub struct Exhausted {
    /// How many numbers the source held.
    pub available: usize,
}

/// The generator for one `(server_seed, client_seed, salt)` triple.
#[derive(Clone)]
pub struct Generator {
    /// `SHA-256(server_seed ":" salt)`: kept for explanations; it is derived from the
    /// server seed, so it is as secret as the seed until the reveal.
    key: [u8; 32],
    /// HMAC state keyed with `key` that has already absorbed `client_seed ":"`, the
    /// constant prefix of every message; cloned for each cursor, so the prefix is copied
    /// (and, for client seeds of 128 bytes or more, compressed) once per round, not once
    /// per cursor.
    keyed: HmacSha512,
}

impl std::fmt::Debug for Generator {
    // The key is derived from the server seed: never print it by accident.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator").finish_non_exhaustive()
    }
}

impl Generator {
    /// Builds the generator for one round.
    ///
    /// For many rounds under one server seed (hand after hand at a table), a [`SeedKeyer`]
    /// does the same with the seed's part of the key hash computed once.
    pub fn new(server_seed: &str, client_seed: &str, salt: &str) -> Self {
        SeedKeyer::new(server_seed).generator(client_seed, salt)
    }

    /// The HMAC key, `SHA-256(server_seed ":" salt)`.
    pub fn key(&self) -> &[u8; 32] {
        &self.key
    }

    /// The 64 bytes of one cursor.
    pub fn block(&self, cursor: u64) -> [u8; BLOCK_LEN] {
        let mut mac = self.keyed.clone();
        let mut digits = [0u8; 20];
        mac.update(decimal(cursor, &mut digits));
        mac.finalize().into_bytes().into()
    }

    /// The endless stream of numbers from cursor 0 on.
    pub fn numbers(&self) -> Numbers<'_> {
        Numbers {
            generator: self,
            cursor: 0,
            block: [0; NUMBERS_PER_BLOCK],
            next: NUMBERS_PER_BLOCK,
        }
    }
}

/// The key derivation of one server seed, shared by all its rounds.
///
/// `SHA-256(server_seed ":" salt)` starts with the same bytes for every salt: the hasher
/// state after `server_seed ":"` is built once and cloned per round. A 64-character hex
/// seed fills exactly one SHA-256 block, which the hasher compresses as soon as it has
/// it, so each round then pays one compression for its key instead of two.
#[derive(Clone)]
pub struct SeedKeyer {
    /// SHA-256 state that has absorbed `server_seed ":"`: as secret as the seed.
    prefix: Sha256,
}

impl std::fmt::Debug for SeedKeyer {
    // The state is derived from the server seed: never print it by accident.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeedKeyer").finish_non_exhaustive()
    }
}

impl SeedKeyer {
    /// Absorbs `server_seed ":"`.
    pub fn new(server_seed: &str) -> Self {
        let mut prefix = Sha256::new();
        prefix.update(server_seed.as_bytes());
        prefix.update(b":");
        SeedKeyer { prefix }
    }

    /// The generator of the round `(client_seed, salt)` under this server seed; the same
    /// as [`Generator::new`] with this keyer's server seed.
    pub fn generator(&self, client_seed: &str, salt: &str) -> Generator {
        let mut hasher = self.prefix.clone();
        hasher.update(salt.as_bytes());
        let key: [u8; 32] = hasher.finalize().into();
        let mut keyed = match HmacSha512::new_from_slice(&key) {
            Ok(mac) => mac,
            // HMAC accepts keys of any length; this arm cannot be reached.
            Err(_) => unreachable_hmac_key(),
        };
        keyed.update(client_seed.as_bytes());
        keyed.update(b":");
        Generator { key, keyed }
    }
}

#[cold]
fn unreachable_hmac_key() -> HmacSha512 {
    // `new_from_slice` only fails for fixed-key MACs; HMAC takes any key length.
    // Fall back to an explicitly empty-keyed state rather than panic.
    <HmacSha512 as KeyInit>::new(&Default::default())
}

/// Writes `n` in decimal into `buf` and returns the digits.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Splits a block into its eight big-endian numbers.
pub fn block_numbers(block: &[u8; BLOCK_LEN]) -> [u64; NUMBERS_PER_BLOCK] {
    let mut out = [0u64; NUMBERS_PER_BLOCK];
    for (n, chunk) in out.iter_mut().zip(block.chunks_exact(8)) {
        let mut be = [0u8; 8];
        be.copy_from_slice(chunk);
        *n = u64::from_be_bytes(be);
    }
    out
}

/// The numbers of a [`Generator`], cursor after cursor.
#[derive(Debug, Clone)]
pub struct Numbers<'a> {
    generator: &'a Generator,
    /// The cursor of the next block to compute.
    cursor: u64,
    /// Numbers of the current block.
    block: [u64; NUMBERS_PER_BLOCK],
    /// Index of the next unread number in `block`.
    next: usize,
}

impl Numbers<'_> {
    /// How many cursors (HMAC calls) have been consumed so far.
    pub fn cursors_used(&self) -> u64 {
        self.cursor
    }
}

impl Iterator for Numbers<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.next == NUMBERS_PER_BLOCK {
            self.block = block_numbers(&self.generator.block(self.cursor));
            self.cursor = self.cursor.wrapping_add(1);
            self.next = 0;
        }
        let n = self.block[self.next];
        self.next += 1;
        Some(n)
    }
}

impl NumberSource for Numbers<'_> {
    #[inline]
    fn next_number(&mut self) -> Result<u64, Exhausted> {
        // The seeded stream never ends.
        Ok(self.next().unwrap_or_default())
    }
}

/// Numbers read from raw generator output (cursor blocks of 64 bytes, concatenated).
#[derive(Debug, Clone)]
pub struct RawNumbers<'a> {
    bytes: &'a [u8],
    /// Index of the next unread number.
    next: usize,
}

/// Raw generator output whose length is not a whole number of 64-byte blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("generator bytes must be whole 64-byte cursor blocks, got {0} bytes")]
pub struct BadRawLength(pub usize);

impl<'a> RawNumbers<'a> {
    /// Wraps raw output; it must be a non-empty whole number of 64-byte blocks.
    pub fn new(bytes: &'a [u8]) -> Result<Self, BadRawLength> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(BLOCK_LEN) {
            return Err(BadRawLength(bytes.len()));
        }
        Ok(RawNumbers { bytes, next: 0 })
    }
}

impl NumberSource for RawNumbers<'_> {
    fn next_number(&mut self) -> Result<u64, Exhausted> {
        let start = self.next * 8;
        let chunk = self.bytes.get(start..start + 8).ok_or(Exhausted {
            available: self.bytes.len() / 8,
        })?;
        let mut be = [0u8; 8];
        be.copy_from_slice(chunk);
        self.next += 1;
        Ok(u64::from_be_bytes(be))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn key_is_sha256_of_seed_colon_salt() {
        let g = Generator::new("server", "client", "7");
        let expected: [u8; 32] = Sha256::digest(b"server:7").into();
        assert_eq!(g.key(), &expected);
    }

    #[test]
    fn keyer_matches_fresh_key_derivation() {
        // Seeds shorter than, exactly one and longer than a SHA-256 block.
        let long = "f".repeat(64);
        let longer = "e".repeat(150);
        for server in ["server", long.as_str(), longer.as_str()] {
            let keyer = SeedKeyer::new(server);
            for salt in ["0", "17", "123456789012345678901234567890"] {
                let expected: [u8; 32] = Sha256::digest(format!("{server}:{salt}")).into();
                let g = keyer.generator("client", salt);
                assert_eq!(g.key(), &expected);
                assert_eq!(g.block(3), Generator::new(server, "client", salt).block(3));
            }
        }
    }

    #[test]
    fn block_is_hmac_of_client_colon_cursor() {
        let g = Generator::new("server", "client", "7");
        let mut mac = HmacSha512::new_from_slice(g.key()).unwrap();
        mac.update(b"client:12345");
        let expected: [u8; 64] = mac.finalize().into_bytes().into();
        assert_eq!(g.block(12345), expected);
    }

    #[test]
    fn numbers_walk_cursors_in_order() {
        let g = Generator::new("s", "c", "0");
        let mut expected = Vec::new();
        for cursor in 0..3 {
            expected.extend(block_numbers(&g.block(cursor)));
        }
        let got: Vec<u64> = g.numbers().take(24).collect();
        assert_eq!(got, expected);
        let raw: Vec<u8> = (0..3).flat_map(|c| g.block(c)).collect();
        let mut rawn = RawNumbers::new(&raw).unwrap();
        for n in &expected {
            assert_eq!(rawn.next_number(), Ok(*n));
        }
        assert_eq!(rawn.next_number(), Err(Exhausted { available: 24 }));
    }

    #[test]
    fn raw_length_is_checked() {
        assert!(RawNumbers::new(&[]).is_err());
        assert!(RawNumbers::new(&[0; 63]).is_err());
        assert!(RawNumbers::new(&[0; 128]).is_ok());
    }

    #[test]
    fn pick_edges() {
        assert_eq!(pick(0, 52), 0);
        assert_eq!(pick(u64::MAX, 52), 51);
        assert_eq!(pick(1 << 63, 2), 1);
        assert_eq!(pick(u64::MAX, 1), 0);
    }

    proptest! {
        #[test]
        fn pick_is_in_range(u in any::<u64>(), n in 1u64..) {
            prop_assert!(pick(u, n) < n);
        }

        #[test]
        fn decimal_matches_to_string(n in any::<u64>()) {
            let mut buf = [0u8; 20];
            let expected = n.to_string();
            prop_assert_eq!(decimal(n, &mut buf), expected.as_bytes());
        }
    }
}
