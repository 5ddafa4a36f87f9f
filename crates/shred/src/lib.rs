//! # Crypto-shredding of personal content in events
//!
//! Events are append-only and copied: the service's own store, JetStream, the ledger, backups.
//! Personal content in them (a chat line, a username) could never be erased from every copy.
//! So such a field is written *sealed*: encrypted under a key of its own subject (one key per
//! chat message, one per account), kept in the owning service's database, beside the event but
//! never in it. Erasing the content is deleting that key: every copy of the event stays whole
//! (its hash chain, the ledger's leaves and proofs are untouched) and the sealed bytes in it
//! can no longer be opened by anyone.
//!
//! The cipher is XChaCha20-Poly1305 (RustCrypto): a fresh random 192-bit nonce per seal (no
//! counter to persist), and associated data naming the field and its subject, so sealed bytes
//! copied into another event or another field fail to open. Sealed bytes are
//! `nonce (24) || ciphertext || tag (16)`.
//!
//! Pure apart from the OS random source (keys and nonces); no IO, no panics on input. The
//! services keep the keys (their own migrations) and delete them in the transaction that
//! records the erasure.
#![forbid(unsafe_code)]

use std::fmt;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use zeroize::Zeroizing;

/// Bytes of a key.
pub const KEY_LEN: usize = 32;
/// Bytes of the nonce that starts sealed bytes.
pub const NONCE_LEN: usize = 24;
/// Bytes sealing adds to the plaintext (nonce and tag).
pub const OVERHEAD: usize = NONCE_LEN + 16;

/// Why sealing or opening failed. Never carries key material or plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShredError {
    /// The OS random source failed.
    #[error("the OS random source failed")]
    Random,
    /// Stored key bytes are not a key.
    #[error("a subject key is {0} bytes, not 32")]
    KeyLength(usize),
    /// Wrong key, another subject's or field's bytes, or tampered bytes.
    #[error("sealed content could not be opened (wrong key, another subject's, or tampered)")]
    Open,
}

/// One subject's key. Zeroed when dropped; its `Debug` shows nothing.
#[derive(Clone)]
pub struct SubjectKey(Zeroizing<[u8; KEY_LEN]>);

impl fmt::Debug for SubjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SubjectKey(..)")
    }
}

impl SubjectKey {
    /// A fresh random key.
    pub fn generate() -> Result<Self, ShredError> {
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        getrandom::fill(key.as_mut_slice()).map_err(|_| ShredError::Random)?;
        Ok(Self(key))
    }

    /// A key as stored (exactly [`KEY_LEN`] bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ShredError> {
        let array: [u8; KEY_LEN] = bytes
            .try_into()
            .map_err(|_| ShredError::KeyLength(bytes.len()))?;
        Ok(Self(Zeroizing::new(array)))
    }

    /// The bytes to store.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_slice()
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&*self.0).into())
    }

    /// `plaintext` sealed under this key with `context` as associated data (name the field
    /// and the subject, e.g. `fairdeal.chat.v1.MessagePosted.sealed_text/<message id>`).
    pub fn seal(&self, context: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, ShredError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| ShredError::Random)?;
        let ciphertext = self
            .cipher()
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: plaintext,
                    aad: context,
                },
            )
            .map_err(|_| ShredError::Open)?;
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        Ok(sealed)
    }

    /// The plaintext of `sealed`, sealed by [`SubjectKey::seal`] under this key and `context`.
    pub fn open(&self, context: &[u8], sealed: &[u8]) -> Result<Zeroizing<Vec<u8>>, ShredError> {
        if sealed.len() < OVERHEAD {
            return Err(ShredError::Open);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        self.cipher()
            .decrypt(
                &XNonce::try_from(nonce).map_err(|_| ShredError::Open)?,
                Payload {
                    msg: ciphertext,
                    aad: context,
                },
            )
            .map(Zeroizing::new)
            .map_err(|_| ShredError::Open)
    }

    /// [`SubjectKey::open`] for UTF-8 text.
    pub fn open_text(&self, context: &[u8], sealed: &[u8]) -> Result<String, ShredError> {
        let bytes = self.open(context, sealed)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| ShredError::Open)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn seals_open_only_with_their_key_and_context() {
        let key = SubjectKey::generate().unwrap();
        let sealed = key.seal(b"chat/1", "bonjour à tous".as_bytes()).unwrap();
        assert_eq!(sealed.len(), "bonjour à tous".len() + OVERHEAD);
        assert!(!sealed.windows(7).any(|w| w == b"bonjour"));
        assert_eq!(key.open_text(b"chat/1", &sealed).unwrap(), "bonjour à tous");
        // Another message's context, another key, a flipped bit, a truncation: refused.
        assert_eq!(key.open(b"chat/2", &sealed).unwrap_err(), ShredError::Open);
        let other = SubjectKey::generate().unwrap();
        assert_eq!(
            other.open(b"chat/1", &sealed).unwrap_err(),
            ShredError::Open
        );
        let mut flipped = sealed.clone();
        flipped[30] ^= 1;
        assert_eq!(key.open(b"chat/1", &flipped).unwrap_err(), ShredError::Open);
        assert_eq!(
            key.open(b"chat/1", &sealed[..20]).unwrap_err(),
            ShredError::Open
        );
        // Two seals of the same text differ (fresh nonce).
        assert_ne!(
            key.seal(b"chat/1", b"x").unwrap(),
            key.seal(b"chat/1", b"x").unwrap()
        );
    }

    #[test]
    fn keys_round_trip_through_storage_and_never_print() {
        let key = SubjectKey::generate().unwrap();
        let stored = key.as_bytes().to_vec();
        let back = SubjectKey::from_bytes(&stored).unwrap();
        let sealed = key.seal(b"c", b"text").unwrap();
        assert_eq!(back.open_text(b"c", &sealed).unwrap(), "text");
        assert_eq!(
            SubjectKey::from_bytes(&[1; 31]).unwrap_err(),
            ShredError::KeyLength(31)
        );
        assert_eq!(format!("{key:?}"), "SubjectKey(..)");
    }
}
