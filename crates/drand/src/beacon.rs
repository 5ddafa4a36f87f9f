//! A round's beacon as drand publishes it (`round`, `signature`, `randomness`), parsed once
//! into values that cannot be malformed: a [`Signature`] is always a point of G1's
//! prime-order subgroup, so a verification can only fail because it is the wrong signature.

use sha2::{Digest, Sha256};

/// The fields of a beacon, as errors name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BeaconField {
    /// The round number.
    Round,
    /// The BLS signature of the round.
    Signature,
    /// SHA-256 of the signature.
    Randomness,
}

impl std::fmt::Display for BeaconField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BeaconField::Round => "round",
            BeaconField::Signature => "signature",
            BeaconField::Randomness => "randomness",
        })
    }
}

/// What is wrong with one field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldProblem {
    /// Not hexadecimal (an odd number of digits, or a character that is not a hex digit).
    #[error("not hexadecimal")]
    NotHex,
    /// Hexadecimal, but not of the field's length.
    #[error("{actual} bytes, expected {expected} ({} hex digits)", expected * 2)]
    WrongLength {
        /// The field's length in bytes.
        expected: usize,
        /// The length given, in bytes.
        actual: usize,
    },
    /// The bytes do not encode a point of G1's prime-order subgroup (compressed form).
    #[error("not a compressed point of the BLS12-381 G1 group")]
    NotAPoint,
    /// The point at infinity, never a signature.
    #[error("the point at infinity is never a signature")]
    Identity,
    /// Round 0 is never published.
    #[error("round 0 is never published (rounds start at 1)")]
    RoundZero,
}

/// A beacon field that could not be parsed: which one, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct BeaconError {
    /// The field.
    pub field: BeaconField,
    /// What is wrong with it.
    pub problem: FieldProblem,
}

impl BeaconError {
    fn new(field: BeaconField) -> impl FnOnce(FieldProblem) -> Self {
        move |problem| Self { field, problem }
    }
}

/// Decodes exactly `N` bytes of hex (either case).
fn fixed_hex<const N: usize>(text: &str) -> Result<[u8; N], FieldProblem> {
    let bytes = hex::decode(text).map_err(|_| FieldProblem::NotHex)?;
    <[u8; N]>::try_from(bytes.as_slice()).map_err(|_| FieldProblem::WrongLength {
        expected: N,
        actual: bytes.len(),
    })
}

/// A round's BLS signature: a compressed point of G1's prime-order subgroup, not the
/// identity (48 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signature([u8; 48]);

impl Signature {
    /// Checks that the bytes are a compressed point of G1's prime-order subgroup and not the
    /// point at infinity.
    pub fn from_bytes(bytes: [u8; 48]) -> Result<Self, FieldProblem> {
        let point: Option<bls12_381::G1Affine> =
            bls12_381::G1Affine::from_compressed(&bytes).into();
        let point = point.ok_or(FieldProblem::NotAPoint)?;
        if bool::from(point.is_identity()) {
            return Err(FieldProblem::Identity);
        }
        Ok(Self(bytes))
    }

    /// Parses 96 hex digits (see [`Signature::from_bytes`]).
    pub fn from_hex(text: &str) -> Result<Self, FieldProblem> {
        Self::from_bytes(fixed_hex(text)?)
    }

    /// The compressed point.
    pub fn as_bytes(&self) -> &[u8; 48] {
        &self.0
    }

    /// Lowercase hex, as drand publishes it.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The round's randomness: `SHA-256(signature)`.
    pub fn randomness(&self) -> Randomness {
        Randomness(Sha256::digest(self.0).into())
    }
}

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signature({})", self.to_hex())
    }
}

/// A round's randomness: 32 bytes, `SHA-256(signature)` for a genuine beacon.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Randomness([u8; 32]);

impl Randomness {
    /// Any 32 bytes (whether they belong to a round is for [`crate::Chain::verify`]).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Parses 64 hex digits.
    pub fn from_hex(text: &str) -> Result<Self, FieldProblem> {
        fixed_hex(text).map(Self)
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, as drand publishes it.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl std::fmt::Display for Randomness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl std::fmt::Debug for Randomness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Randomness({})", self.to_hex())
    }
}

/// One round of a chain: its number, its signature and, when given, its randomness.
/// Parsed, not verified: [`crate::Chain::verify`] checks it against a chain's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Beacon {
    /// The round, at least 1.
    round: u64,
    /// The signature of the round.
    signature: Signature,
    /// The randomness published with it, when there is one; checked by verification.
    randomness: Option<Randomness>,
}

impl Beacon {
    /// A beacon from parsed parts; round 0 is refused.
    pub fn new(
        round: u64,
        signature: Signature,
        randomness: Option<Randomness>,
    ) -> Result<Self, BeaconError> {
        if round == 0 {
            return Err(BeaconError {
                field: BeaconField::Round,
                problem: FieldProblem::RoundZero,
            });
        }
        Ok(Self {
            round,
            signature,
            randomness,
        })
    }

    /// A beacon from drand's JSON fields: the round, the signature in hex and, optionally,
    /// the randomness in hex. The error names the first field that is wrong.
    pub fn from_hex(
        round: u64,
        signature: &str,
        randomness: Option<&str>,
    ) -> Result<Self, BeaconError> {
        let signature =
            Signature::from_hex(signature).map_err(BeaconError::new(BeaconField::Signature))?;
        let randomness = randomness
            .map(Randomness::from_hex)
            .transpose()
            .map_err(BeaconError::new(BeaconField::Randomness))?;
        Self::new(round, signature, randomness)
    }

    /// The round.
    pub fn round(&self) -> u64 {
        self.round
    }

    /// The signature.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The randomness given with the beacon, if any (not necessarily checked yet).
    pub fn randomness(&self) -> Option<&Randomness> {
        self.randomness.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quicknet round 1000's signature (see `tests/vectors.rs` for its sources).
    const SIG_1000: &str = "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39";

    fn err(round: u64, sig: &str, randomness: Option<&str>) -> String {
        Beacon::from_hex(round, sig, randomness)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parse_errors_name_the_field() {
        assert_eq!(err(1, "zz", None), "signature: not hexadecimal");
        assert_eq!(err(1, "abc", None), "signature: not hexadecimal");
        assert_eq!(
            err(1, "abcd", None),
            "signature: 2 bytes, expected 48 (96 hex digits)"
        );
        assert_eq!(
            err(1, &SIG_1000[..94], None),
            "signature: 47 bytes, expected 48 (96 hex digits)"
        );
        let identity = format!("c0{}", "00".repeat(47));
        assert_eq!(
            err(1, &identity, None),
            "signature: the point at infinity is never a signature"
        );
        assert_eq!(
            err(1, &"ff".repeat(48), None),
            "signature: not a compressed point of the BLS12-381 G1 group"
        );
        assert_eq!(
            err(1, SIG_1000, Some("00")),
            "randomness: 1 bytes, expected 32 (64 hex digits)"
        );
        assert_eq!(err(1, SIG_1000, Some("xyz")), "randomness: not hexadecimal");
        assert_eq!(
            err(0, SIG_1000, None),
            "round: round 0 is never published (rounds start at 1)"
        );
        let e = Beacon::from_hex(0, "", None).unwrap_err();
        assert_eq!(e.field, BeaconField::Signature);
    }

    #[test]
    fn hex_in_either_case_parses_to_the_same_beacon() {
        let lower = Beacon::from_hex(1000, SIG_1000, None).unwrap();
        let upper = Beacon::from_hex(1000, &SIG_1000.to_uppercase(), None).unwrap();
        assert_eq!(lower, upper);
        assert_eq!(lower.signature().to_hex(), SIG_1000);
        assert_eq!(lower.round(), 1000);
        assert_eq!(lower.randomness(), None);
    }
}
