//! Timelock encryption to a round (tlock, <https://eprint.iacr.org/2023/189>): anyone can
//! encrypt to a future round with the chain's public key alone; the round's signature,
//! published when the round comes, is the decryption key. A seed encrypted this way is
//! revealed by the beacon itself, whether or not whoever encrypted it is still around.
//!
//! The format is drand/tlock's: an age file whose one recipient stanza is
//! `tlock <round> <chain hash>` wrapping the file key with identity-based encryption, ASCII
//! armored. This is what drand's `tle` tool writes (`tle -a`) and reads, and the work is done
//! by the `tlock_age` crate. Before decrypting, the signature is verified against the chain
//! and the ciphertext's round and chain are compared with the beacon's, so a wrong input is
//! reported as such rather than as a failed decryption.

use std::io::{self, Write};

use zeroize::Zeroizing;

use crate::beacon::Beacon;
use crate::chain::{Chain, VerifyError};

/// The longest plaintext encrypted or decrypted here: a seed is a few dozen bytes, and a
/// bound keeps a hostile ciphertext from filling memory.
pub const MAX_PLAINTEXT_BYTES: usize = 64 * 1024;

/// Why a timelock encryption or decryption failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimelockError {
    /// Round 0 is never published: nothing encrypted to it could be opened.
    #[error("round 0 is never published (rounds start at 1)")]
    RoundZero,
    /// The plaintext is longer than [`MAX_PLAINTEXT_BYTES`].
    #[error("the plaintext is longer than {MAX_PLAINTEXT_BYTES} bytes")]
    TooLong,
    /// Encryption failed (an IO error of the in-memory writer, in practice never).
    #[error("encryption failed: {0}")]
    Encrypt(String),
    /// The ciphertext is not a tlock age file (or its header is damaged).
    #[error("not a tlock ciphertext: {0}")]
    NotTimelock(String),
    /// The ciphertext is for another chain.
    #[error("the ciphertext is for chain {ciphertext_chain}, not {chain}")]
    OtherChain {
        /// The chain hash in the ciphertext's header, hex.
        ciphertext_chain: String,
        /// The chain hash of the chain decrypting, hex.
        chain: String,
    },
    /// The ciphertext is for another round than the beacon's.
    #[error("the ciphertext is for round {ciphertext_round}, not round {beacon_round}")]
    OtherRound {
        /// The round in the ciphertext's header.
        ciphertext_round: u64,
        /// The beacon's round.
        beacon_round: u64,
    },
    /// The beacon is not the chain's signature of its round.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The header matched but the body did not decrypt (a damaged or forged ciphertext).
    #[error("decryption failed: {0}")]
    Decrypt(String),
}

/// What a tlock ciphertext's header says: the round and the chain it is encrypted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The round whose signature opens it.
    pub round: u64,
    /// The chain hash.
    pub chain_hash: [u8; 32],
}

/// Reads a tlock ciphertext's header (armored or binary): its round and chain.
pub fn header(ciphertext: &[u8]) -> Result<Header, TimelockError> {
    let header = tlock_age::decrypt_header(ciphertext)
        .map_err(|e| TimelockError::NotTimelock(e.to_string()))?;
    let chain_hash = <[u8; 32]>::try_from(header.hash().as_slice()).map_err(|_| {
        TimelockError::NotTimelock(format!(
            "the chain hash in its header has {} bytes, not 32",
            header.hash().len()
        ))
    })?;
    Ok(Header {
        round: header.round(),
        chain_hash,
    })
}

/// Encrypts `plaintext` to `round` of `chain`; returns the ASCII-armored age file.
///
/// Uses the operating system's randomness (age's file key, tlock's IBE nonce).
pub fn encrypt(chain: &Chain, round: u64, plaintext: &[u8]) -> Result<String, TimelockError> {
    if round == 0 {
        return Err(TimelockError::RoundZero);
    }
    if plaintext.len() > MAX_PLAINTEXT_BYTES {
        return Err(TimelockError::TooLong);
    }
    let encrypt_error = |e: &dyn std::fmt::Display| TimelockError::Encrypt(e.to_string());
    let mut armored =
        tlock_age::armor::ArmoredWriter::wrap_output(Vec::new()).map_err(|e| encrypt_error(&e))?;
    tlock_age::encrypt(
        &mut armored,
        plaintext,
        &chain.chain_hash(),
        &chain.info().public_key,
        round,
    )
    .map_err(|e| encrypt_error(&e))?;
    let bytes = armored.finish().map_err(|e| encrypt_error(&e))?;
    String::from_utf8(bytes).map_err(|e| encrypt_error(&e))
}

/// Decrypts a ciphertext encrypted to `beacon`'s round of `chain` (armored or binary).
///
/// The beacon is verified first (its randomness too, when it has one); then the
/// ciphertext's header must name the same chain and round.
pub fn decrypt(
    chain: &Chain,
    beacon: &Beacon,
    ciphertext: &[u8],
) -> Result<Zeroizing<Vec<u8>>, TimelockError> {
    chain.verify(beacon)?;
    let header = header(ciphertext)?;
    if header.chain_hash != chain.chain_hash() {
        return Err(TimelockError::OtherChain {
            ciphertext_chain: hex::encode(header.chain_hash),
            chain: hex::encode(chain.chain_hash()),
        });
    }
    if header.round != beacon.round() {
        return Err(TimelockError::OtherRound {
            ciphertext_round: header.round,
            beacon_round: beacon.round(),
        });
    }
    let mut plaintext = Bounded::default();
    let result = tlock_age::decrypt(
        &mut plaintext,
        ciphertext,
        &chain.chain_hash(),
        beacon.signature().as_bytes(),
    );
    match result {
        Ok(()) => Ok(plaintext.bytes),
        Err(_) if plaintext.overflowed => Err(TimelockError::TooLong),
        Err(e) => Err(TimelockError::Decrypt(e.to_string())),
    }
}

/// An in-memory writer that refuses more than [`MAX_PLAINTEXT_BYTES`] and wipes what it
/// holds when dropped.
#[derive(Default)]
struct Bounded {
    /// The plaintext so far.
    bytes: Zeroizing<Vec<u8>>,
    /// Whether a write went over the bound (the error the decryption returns is age's).
    overflowed: bool,
}

impl Write for Bounded {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(data.len()) > MAX_PLAINTEXT_BYTES {
            self.overflowed = true;
            return Err(io::Error::other("the plaintext is too long"));
        }
        self.bytes.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
