//! A chain's public parameters and their parsed form, [`Chain`], which verifies the chain's
//! rounds (with the `drand-verify` crate) and encrypts to them (see [`crate::timelock`]).
//!
//! Quicknet's parameters are built in as [`QUICKNET`]. They are drand's published chain info
//! (`/info` of chain `52db9ba7…`, and the same JSON in drand/drand's
//! `common/chain/info_test.go`); a test recomputes the chain hash from them with drand's own
//! formula, so a wrong digit in any of them fails it.

use drand_verify::{G2PubkeyRfc, Pubkey};
use hex_literal::hex;
use sha2::{Digest, Sha256};

use crate::beacon::{Beacon, Randomness, Signature};
use crate::round::Schedule;

/// The signature schemes this crate verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `bls-unchained-g1-rfc9380`: signatures on G1 (48 bytes), the key on G2 (96 bytes),
    /// message `SHA-256(round as u64 big-endian)`, RFC 9380 hash to G1. Quicknet's scheme.
    BlsUnchainedG1Rfc9380,
}

impl Scheme {
    /// The scheme's identifier in drand's chain info (`schemeID`).
    pub const fn id(self) -> &'static str {
        match self {
            Scheme::BlsUnchainedG1Rfc9380 => "bls-unchained-g1-rfc9380",
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// A chain's public parameters, as drand's `/info` publishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChainInfo {
    /// The group's public key: a compressed G2 point.
    pub public_key: [u8; 96],
    /// When rounds are published.
    pub schedule: Schedule,
    /// The chain's genesis seed (`groupHash` in the v1 info), an input of the chain hash.
    pub genesis_seed: [u8; 32],
    /// The beacon ID (`beaconID`), an input of the chain hash.
    pub beacon_id: &'static str,
    /// How rounds are signed.
    pub scheme: Scheme,
}

/// Quicknet's chain hash, as drand publishes it (the chain's name in its URLs).
pub const QUICKNET_CHAIN_HASH: [u8; 32] =
    hex!("52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971");

/// The League of Entropy's quicknet chain: one round every 3 s since 2023-08-23 15:09:27 UTC.
pub const QUICKNET: ChainInfo = ChainInfo {
    public_key: hex!(
        "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c"
        "8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb"
        "5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
    ),
    schedule: match Schedule::new(1_692_803_367, 3) {
        Ok(schedule) => schedule,
        // Evaluated at compile time: a zero period would not compile.
        Err(_) => panic!("quicknet's period is 3 s"),
    },
    genesis_seed: hex!("f477d5c89f21a17c863a7f937c6a6d15859414d2be09cd448d4279af331c5d3e"),
    beacon_id: "quicknet",
    scheme: Scheme::BlsUnchainedG1Rfc9380,
};

impl ChainInfo {
    /// The chain hash, computed as drand does (`common/chain/info.go`, `Info.Hash`):
    /// `SHA-256(period as u32 BE || genesis time as i64 BE || public key || genesis seed ||
    /// beacon ID)`; the beacon ID is left out for drand's default beacon, which none of the
    /// chains here is.
    pub fn chain_hash(&self) -> [u8; 32] {
        let period = u32::try_from(self.schedule.period_seconds()).unwrap_or(u32::MAX);
        let genesis = i64::try_from(self.schedule.genesis_time()).unwrap_or(i64::MAX);
        let mut hash = Sha256::new();
        hash.update(period.to_be_bytes());
        hash.update(genesis.to_be_bytes());
        hash.update(self.public_key);
        hash.update(self.genesis_seed);
        if self.beacon_id != "default" && !self.beacon_id.is_empty() {
            hash.update(self.beacon_id.as_bytes());
        }
        hash.finalize().into()
    }

    /// The parsed chain: its public key checked once, ready to verify rounds.
    pub fn parse(&self) -> Result<Chain, PublicKeyError> {
        Chain::new(*self)
    }
}

/// Why a chain's public key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicKeyError {
    /// Not the compressed encoding of a point of G2's prime-order subgroup.
    #[error("the public key is not a compressed point of the BLS12-381 G2 group")]
    NotAPoint,
    /// The point at infinity, which would accept the identity as every round's signature.
    #[error("the public key is the point at infinity")]
    Identity,
}

/// Why a beacon did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The signature is a valid point but not the chain's signature of this round.
    #[error("not the chain's signature of round {round}")]
    InvalidSignature {
        /// The round the signature was checked against.
        round: u64,
    },
    /// The signature verified, but the randomness given with it is not its SHA-256.
    #[error("randomness {claimed} is not SHA-256 of round {round}'s signature ({derived})")]
    RandomnessMismatch {
        /// The round.
        round: u64,
        /// The randomness given with the beacon.
        claimed: Randomness,
        /// SHA-256 of the signature.
        derived: Randomness,
    },
}

/// A chain whose public key has been checked: verifies its rounds, encrypts to them.
pub struct Chain {
    /// The parameters, public key included (the timelock needs its bytes).
    info: ChainInfo,
    /// The same key, decompressed once: checking a point costs about as much as a hash to
    /// the curve, so it is not done again for every round.
    key: G2PubkeyRfc,
    /// [`ChainInfo::chain_hash`], computed once (the timelock header names the chain by it).
    chain_hash: [u8; 32],
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("beacon_id", &self.info.beacon_id)
            .field("chain_hash", &hex::encode(self.chain_hash))
            .finish_non_exhaustive()
    }
}

impl Chain {
    /// Checks the chain's public key: a point of G2's prime-order subgroup, not the identity.
    pub fn new(info: ChainInfo) -> Result<Self, PublicKeyError> {
        let point: Option<bls12_381::G2Affine> =
            bls12_381::G2Affine::from_compressed(&info.public_key).into();
        let point = point.ok_or(PublicKeyError::NotAPoint)?;
        if bool::from(point.is_identity()) {
            return Err(PublicKeyError::Identity);
        }
        let key =
            G2PubkeyRfc::from_fixed(info.public_key).map_err(|_| PublicKeyError::NotAPoint)?;
        Ok(Self {
            info,
            key,
            chain_hash: info.chain_hash(),
        })
    }

    /// Quicknet, parsed.
    pub fn quicknet() -> Result<Self, PublicKeyError> {
        Self::new(QUICKNET)
    }

    /// The chain's parameters.
    pub fn info(&self) -> &ChainInfo {
        &self.info
    }

    /// The chain hash (see [`ChainInfo::chain_hash`]).
    pub fn chain_hash(&self) -> [u8; 32] {
        self.chain_hash
    }

    /// When the chain publishes its rounds.
    pub fn schedule(&self) -> Schedule {
        self.info.schedule
    }

    /// Checks that `signature` is the chain's signature of `round`; returns the round's
    /// randomness, `SHA-256(signature)`.
    pub fn verify_signature(
        &self,
        round: u64,
        signature: &Signature,
    ) -> Result<Randomness, VerifyError> {
        // Round 0 is never signed; the Beacon type refuses it, a bare round may not.
        let valid = round != 0
            && self
                .key
                .verify(round, b"", signature.as_bytes())
                .unwrap_or(false);
        if valid {
            Ok(signature.randomness())
        } else {
            Err(VerifyError::InvalidSignature { round })
        }
    }

    /// Checks the beacon's signature of its round and, when the beacon carries a randomness,
    /// that it is `SHA-256(signature)`; returns the round's randomness.
    pub fn verify(&self, beacon: &Beacon) -> Result<Randomness, VerifyError> {
        let derived = self.verify_signature(beacon.round(), beacon.signature())?;
        match beacon.randomness() {
            Some(claimed) if *claimed != derived => Err(VerifyError::RandomnessMismatch {
                round: beacon.round(),
                claimed: *claimed,
                derived,
            }),
            _ => Ok(derived),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quicknet_constants_give_its_published_chain_hash() {
        assert_eq!(QUICKNET.chain_hash(), QUICKNET_CHAIN_HASH);
        assert_eq!(QUICKNET.scheme.id(), "bls-unchained-g1-rfc9380");
        assert_eq!(QUICKNET.schedule.genesis_time(), 1_692_803_367);
        assert_eq!(QUICKNET.schedule.period_seconds(), 3);
        let chain = Chain::quicknet().unwrap();
        assert_eq!(chain.chain_hash(), QUICKNET_CHAIN_HASH);
    }

    #[test]
    fn a_changed_constant_changes_the_chain_hash() {
        let mut info = QUICKNET;
        info.schedule = Schedule::new(1_692_803_368, 3).unwrap();
        assert_ne!(info.chain_hash(), QUICKNET_CHAIN_HASH);
        let mut info = QUICKNET;
        info.public_key[95] ^= 1;
        assert_ne!(info.chain_hash(), QUICKNET_CHAIN_HASH);
    }

    #[test]
    fn public_keys_that_are_not_points_are_refused() {
        let mut info = QUICKNET;
        info.public_key[95] ^= 1;
        // Flipping the last bit of x gives a point off the curve (or outside the subgroup).
        assert_eq!(info.parse().unwrap_err(), PublicKeyError::NotAPoint);
        let mut info = QUICKNET;
        info.public_key = [0; 96];
        info.public_key[0] = 0xc0;
        assert_eq!(info.parse().unwrap_err(), PublicKeyError::Identity);
    }
}
