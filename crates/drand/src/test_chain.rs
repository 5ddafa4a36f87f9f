//! A local chain in quicknet's scheme, **not drand**: one key held here signs the rounds,
//! so its beacons prove nothing about time or about who knew them first. It exists so that
//! tests, and a local test beacon, can produce rounds that [`crate::Chain::verify`] accepts
//! and that open ciphertexts from [`crate::timelock::encrypt`], without the network.
//!
//! Signing is the scheme's definition, on the `bls12_381` crate's primitives: the secret
//! scalar times the RFC 9380 hash to G1 of `SHA-256(round as u64 big-endian)`, with DST
//! `BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_`; the public key is the secret times G2's
//! generator. No curve arithmetic is written here. Verification stays with `drand-verify`,
//! which builds the message on its own, so a test chain round that verifies also checks
//! that this module signs what drand signs.
//!
//! Its [`ChainInfo`] has the beacon ID [`TEST_BEACON_ID`] and a genesis seed derived from
//! its key: its chain hash cannot be mistaken for a drand chain's.

use bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use bls12_381::{G1Affine, G1Projective, G2Affine, Scalar};
use sha2::{Digest, Sha256, Sha512};
use zeroize::Zeroizing;

use crate::beacon::{Beacon, BeaconError, BeaconField, Signature};
use crate::chain::{Chain, ChainInfo, PublicKeyError, Scheme};
use crate::round::Schedule;

/// The beacon ID of every test chain; it says what it is.
pub const TEST_BEACON_ID: &str = "fairdeal-test-chain-not-drand";

/// RFC 9380's domain separation tag for BLS signatures on G1, as quicknet uses it.
const DST_G1: &[u8] = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";

/// Domain separation of the secret scalar derived from a seed.
const SECRET_DOMAIN: &[u8] = b"fairdeal-drand test chain secret v1\0";

/// Domain separation of the genesis seed derived from the public key.
const GENESIS_DOMAIN: &[u8] = b"fairdeal-drand test chain genesis v1\0";

/// Why a test chain could not be made or sign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TestChainError {
    /// The seed gave the scalar 0 (probability about 2^-255): use another seed.
    #[error("this seed gives a zero secret; use another seed")]
    ZeroSecret,
    /// The public key was refused (it cannot be: the secret is not zero).
    #[error(transparent)]
    PublicKey(#[from] PublicKeyError),
    /// The beacon was refused: round 0 (the signature itself cannot be refused).
    #[error(transparent)]
    Beacon(#[from] BeaconError),
}

/// A local, single-key chain in `bls-unchained-g1-rfc9380`. Not drand.
pub struct TestChain {
    /// The secret scalar, wiped when the chain is dropped.
    secret: Zeroizing<Scalar>,
    /// The public parameters (the key is `secret * G2`).
    info: ChainInfo,
}

impl std::fmt::Debug for TestChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestChain")
            .field("public_key", &hex::encode(self.info.public_key))
            .field("schedule", &self.info.schedule)
            .finish_non_exhaustive()
    }
}

impl TestChain {
    /// The test chain of a 32-byte seed (the same seed always gives the same key): the secret
    /// is `SHA-512(domain || seed)` reduced modulo the group order, which is uniform to
    /// within 2^-256. The caller draws the seed (from the OS for a beacon, fixed in tests).
    pub fn from_seed(seed: &[u8; 32], schedule: Schedule) -> Result<Self, TestChainError> {
        let mut wide = Zeroizing::new([0u8; 64]);
        let mut hash = Sha512::new();
        hash.update(SECRET_DOMAIN);
        hash.update(seed);
        wide.copy_from_slice(&hash.finalize());
        let secret = Zeroizing::new(Scalar::from_bytes_wide(&wide));
        if *secret == Scalar::zero() {
            return Err(TestChainError::ZeroSecret);
        }
        let public_key = G2Affine::from(G2Affine::generator() * *secret).to_compressed();
        let genesis_seed = Sha256::new()
            .chain_update(GENESIS_DOMAIN)
            .chain_update(public_key)
            .finalize()
            .into();
        let info = ChainInfo {
            public_key,
            schedule,
            genesis_seed,
            beacon_id: TEST_BEACON_ID,
            scheme: Scheme::BlsUnchainedG1Rfc9380,
        };
        Ok(Self { secret, info })
    }

    /// The chain's public parameters.
    pub fn info(&self) -> ChainInfo {
        self.info
    }

    /// The chain, parsed, to verify its rounds and encrypt to them.
    pub fn chain(&self) -> Result<Chain, TestChainError> {
        Ok(Chain::new(self.info)?)
    }

    /// The round's beacon, with its randomness.
    pub fn sign(&self, round: u64) -> Result<Beacon, TestChainError> {
        let message = Sha256::digest(round.to_be_bytes());
        let point = <G1Projective as HashToCurve<ExpandMsgXmd<sha2_09::Sha256>>>::hash_to_curve(
            message, DST_G1,
        );
        let signature = Signature::from_bytes(G1Affine::from(point * *self.secret).to_compressed())
            .map_err(|problem| BeaconError {
                field: BeaconField::Signature,
                problem,
            })?;
        Ok(Beacon::new(round, signature, Some(signature.randomness()))?)
    }
}
