//! Server seeds, commitments and sequence-number salts (SPEC sections 1 and 4).
//!
//! Before a round or a table starts, the platform publishes the commitment
//! `lowercase hex SHA-256(server_seed)` (and its first 5 hex characters, the short code
//! players compare at a glance); after the game it reveals the seed and anyone checks
//! [`Commitment::matches`]. Platform seeds are 32 bytes from the OS CSPRNG written as 64
//! lowercase hex characters ([`ServerSeed::generate`]).
//!
//! [`ServerSeed`] keeps the seed out of `Debug` output so it cannot leak into logs or
//! error messages by accident; reading it requires the explicit
//! [`ServerSeed::expose_secret`].

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// Bytes of CSPRNG output in a generated server seed.
pub const SEED_BYTES: usize = 32;
/// Hex characters of a commitment.
pub const COMMITMENT_LEN: usize = 64;
/// Hex characters of a short code.
pub const SHORT_CODE_LEN: usize = 5;

/// A server seed: secret until revealed.
///
/// Any UTF-8 string is a valid seed (a tournament organiser's secret may be a phrase);
/// seeds the platform generates are 64 lowercase hex characters.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerSeed(String);

impl fmt::Debug for ServerSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secret; the commitment is public and identifies the seed.
        write!(
            f,
            "ServerSeed(<redacted>, commitment {})",
            self.commitment()
        )
    }
}

/// The operating system's random source failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the OS random number generator failed: {0}")]
pub struct EntropyError(getrandom::Error);

impl ServerSeed {
    /// Wraps a known seed (e.g. one just revealed, or an organiser's secret).
    pub fn new(seed: impl Into<String>) -> Self {
        ServerSeed(seed.into())
    }

    /// A fresh seed: 32 bytes from the OS CSPRNG as 64 lowercase hex characters.
    pub fn generate() -> Result<Self, EntropyError> {
        let mut bytes = [0u8; SEED_BYTES];
        getrandom::fill(&mut bytes).map_err(EntropyError)?;
        Ok(ServerSeed(hex::encode(bytes)))
    }

    /// The seed itself: for the generator, and for the reveal.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// The public commitment to this seed.
    pub fn commitment(&self) -> Commitment {
        Commitment::of(&self.0)
    }
}

/// A fresh server seed from the OS CSPRNG (see [`ServerSeed::generate`]).
pub fn new_server_seed() -> Result<ServerSeed, EntropyError> {
    ServerSeed::generate()
}

/// `SHA-256(server_seed)`, published before the seed is used.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Commitment([u8; 32]);

impl Commitment {
    /// The commitment to `server_seed` (its UTF-8 bytes).
    pub fn of(server_seed: &str) -> Self {
        Commitment(Sha256::digest(server_seed.as_bytes()).into())
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, 64 characters: the published form.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first 5 hex characters, shown to players.
    pub fn short_code(&self) -> String {
        let mut hex = self.to_hex();
        hex.truncate(SHORT_CODE_LEN);
        hex
    }

    /// Whether a revealed seed is the one committed to.
    pub fn matches(&self, revealed_seed: &str) -> bool {
        Commitment::of(revealed_seed) == *self
    }
}

impl fmt::Display for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Commitment({})", self.to_hex())
    }
}

/// A published commitment that is not 64 hex characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a commitment is 64 hex characters (SHA-256), got {0:?}")]
pub struct BadCommitment(String);

impl FromStr for Commitment {
    type Err = BadCommitment;

    /// Parses the hex form (either case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut digest = [0u8; 32];
        if s.len() != COMMITMENT_LEN || hex::decode_to_slice(s, &mut digest).is_err() {
            // Commitments are public; echo at most a commitment's length of the input.
            return Err(BadCommitment(s.chars().take(COMMITMENT_LEN + 1).collect()));
        }
        Ok(Commitment(digest))
    }
}

/// The salt of hand `hand` at a table: its sequence number in decimal.
pub fn sequence_salt(hand: u64) -> String {
    hand.to_string()
}

/// A salt that is not a sequence number in canonical decimal form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "salt {0:?} is not a sequence number (a decimal integer up to 18446744073709551615, without sign or leading zeros)"
)]
pub struct NotASequenceNumber(String);

/// Reads a sequence-number salt back.
///
/// Only the canonical form [`sequence_salt`] writes is accepted: `"01"` or `"+1"` are
/// different salts from `"1"` (the key hashes the salt's text), so reading them as 1 would
/// silently change the deal of the next hands.
pub fn parse_sequence_salt(salt: &str) -> Result<u64, NotASequenceNumber> {
    let canonical = !salt.is_empty()
        && salt.bytes().all(|b| b.is_ascii_digit())
        && (salt == "0" || !salt.starts_with('0'));
    let error = || NotASequenceNumber(salt.chars().take(40).collect());
    if !canonical {
        return Err(error());
    }
    salt.parse().map_err(|_| error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commitment_is_sha256_hex() {
        // SHA-256("abc"), FIPS 180-2 test vector.
        let c = Commitment::of("abc");
        assert_eq!(
            c.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(c.short_code(), "ba781");
        assert!(c.matches("abc"));
        assert!(!c.matches("abd"));
        assert_eq!(c.to_hex().parse::<Commitment>(), Ok(c));
        assert_eq!(c.to_hex().to_uppercase().parse::<Commitment>(), Ok(c));
        assert!("ba7816".parse::<Commitment>().is_err());
        assert!("zz".repeat(32).parse::<Commitment>().is_err());
    }

    #[test]
    fn unicode_seeds_hash_their_utf8() {
        let c = Commitment::of("é");
        let expected: [u8; 32] = Sha256::digest([0xc3, 0xa9]).into();
        assert_eq!(c.as_bytes(), &expected);
    }

    #[test]
    fn generated_seeds_are_64_lowercase_hex_and_distinct() {
        let a = ServerSeed::generate().unwrap();
        let b = new_server_seed().unwrap();
        for seed in [&a, &b] {
            let s = seed.expose_secret();
            assert_eq!(s.len(), 64);
            assert!(s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
        }
        assert_ne!(a, b);
    }

    #[test]
    fn debug_does_not_show_the_seed() {
        let seed = ServerSeed::new("super secret seed");
        let debug = format!("{seed:?}");
        assert!(!debug.contains("super secret"), "{debug}");
        assert!(debug.contains(&seed.commitment().to_hex()));
    }

    #[test]
    fn sequence_salts_round_trip_only_in_canonical_form() {
        for hand in [0, 1, 9, 10, 12345, u64::MAX] {
            assert_eq!(parse_sequence_salt(&sequence_salt(hand)), Ok(hand));
        }
        for bad in [
            "",
            "01",
            "+1",
            "-1",
            "1.0",
            " 1",
            "18446744073709551616",
            "x",
        ] {
            assert!(parse_sequence_salt(bad).is_err(), "{bad:?}");
        }
    }
}
