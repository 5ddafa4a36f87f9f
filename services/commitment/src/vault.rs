//! Server seeds sealed at rest.
//!
//! A seed is encrypted with XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`) under a key
//! from configuration (a secret), with a fresh random 24-byte nonce, and the seed's id as
//! associated data, so a ciphertext copied onto another seed's row fails to open. Each
//! sealed seed records the id of the key that sealed it: keys are rotated by adding a new
//! key first in the key ring (new seeds use it) and keeping the old ones for opening.
//!
//! Why XChaCha20: its 192-bit nonce can be drawn at random for every seal with no
//! practical collision risk, so no nonce counter has to be persisted.
//!
//! Key ring format (config `seed_keys`): `kid:64hex[,kid:64hex...]`, the first key active.

use std::collections::BTreeMap;
use std::fmt;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use fairdeal_fairness::commitment::ServerSeed;
use uuid::Uuid;

/// Nonce bytes of XChaCha20-Poly1305.
pub const NONCE_LEN: usize = 24;

/// Sealing failures. None of them shows key material or plaintext.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The key ring text is malformed.
    #[error("seed_keys: {0}")]
    BadKeyRing(String),
    /// The seed was sealed with a key that is no longer configured.
    #[error("seed {seed_id} was sealed with key {key_id:?}, which is not in the key ring")]
    UnknownKey {
        /// The seed.
        seed_id: Uuid,
        /// The missing key's id.
        key_id: String,
    },
    /// Authentication failed: wrong key, tampered ciphertext or another seed's row.
    #[error("seed {0} could not be opened (wrong key or tampered ciphertext)")]
    Open(Uuid),
    /// Encryption or the OS random source failed.
    #[error("sealing failed: {0}")]
    Seal(&'static str),
}

/// Stored seeds are sealed under keys the ring does not hold (ids only, never key material).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct MissingSeedKeys {
    /// Each missing key id with how many stored seeds it sealed.
    pub missing: Vec<(String, u64)>,
}

impl fmt::Display for MissingSeedKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "stored seeds are sealed under key id{} missing from the key ring: ",
            plural(self.missing.len())
        )?;
        for (i, (key_id, seeds)) in self.missing.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(
                f,
                "\"{}\" ({seeds} seed{})",
                fairdeal_kit::status::shown(key_id),
                plural(usize::try_from(*seeds).unwrap_or(usize::MAX))
            )?;
        }
        f.write_str(
            "; put the key back in seed_keys (a rotated-out key stays, after the active one)",
        )
    }
}

/// A sealed seed as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedSeed {
    /// The seed's id (associated data of the encryption).
    pub seed_id: Uuid,
    /// The key that sealed it.
    pub key_id: String,
    /// The random nonce.
    pub nonce: Vec<u8>,
    /// Ciphertext with its 16-byte tag.
    pub ciphertext: Vec<u8>,
}

impl fmt::Debug for SealedSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The ciphertext is harmless, but keep Debug short and uninteresting.
        f.debug_struct("SealedSeed")
            .field("seed_id", &self.seed_id)
            .field("key_id", &self.key_id)
            .field("ciphertext_len", &self.ciphertext.len())
            .finish()
    }
}

/// The configured keys, first one active.
#[derive(Clone)]
pub struct KeyRing {
    /// Id of the key new seeds are sealed with.
    active: String,
    /// Every key by id.
    keys: BTreeMap<String, XChaCha20Poly1305>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("active", &self.active)
            .field("key_ids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl KeyRing {
    /// Parses `kid:64hex[,kid:64hex...]`.
    pub fn parse(text: &str) -> Result<Self, VaultError> {
        let mut keys = BTreeMap::new();
        let mut active = None;
        for (position, entry) in text.split(',').map(str::trim).enumerate() {
            let (kid, hex_key) = entry.split_once(':').ok_or_else(|| {
                VaultError::BadKeyRing(format!("entry {} is not kid:hex", position + 1))
            })?;
            if kid.is_empty()
                || !kid
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(VaultError::BadKeyRing(format!(
                    "entry {}: key ids are letters, digits, '-' and '_'",
                    position + 1
                )));
            }
            let mut key = [0u8; 32];
            hex::decode_to_slice(hex_key, &mut key).map_err(|_| {
                VaultError::BadKeyRing(format!("key {kid:?} must be 64 hex characters (32 bytes)"))
            })?;
            let cipher = XChaCha20Poly1305::new_from_slice(&key)
                .map_err(|_| VaultError::BadKeyRing(format!("key {kid:?} has a bad length")))?;
            if keys.insert(kid.to_owned(), cipher).is_some() {
                return Err(VaultError::BadKeyRing(format!(
                    "key id {kid:?} appears twice"
                )));
            }
            active.get_or_insert_with(|| kid.to_owned());
        }
        let active = active.ok_or_else(|| VaultError::BadKeyRing("no key".into()))?;
        Ok(KeyRing { active, keys })
    }

    /// A ring with one fresh random key (tests and throwaway embedded runs).
    pub fn generate(kid: &str) -> Result<Self, VaultError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|_| VaultError::Seal("OS random source"))?;
        Self::parse(&format!("{kid}:{}", hex::encode(key)))
    }

    /// The active key's id.
    pub fn active_key_id(&self) -> &str {
        &self.active
    }

    /// Whether the ring holds key `key_id`.
    pub fn has_key(&self, key_id: &str) -> bool {
        self.keys.contains_key(key_id)
    }

    /// Checks that every key id in `in_use` (key id, seeds it sealed), as stored beside the
    /// sealed seeds, is in the ring: a seed whose key is missing cannot be dealt, revealed
    /// or rotated, so the service refuses to start without it.
    pub fn check_in_use(&self, in_use: &[(String, u64)]) -> Result<(), MissingSeedKeys> {
        let missing: Vec<(String, u64)> = in_use
            .iter()
            .filter(|(key_id, _)| !self.has_key(key_id))
            .cloned()
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(MissingSeedKeys { missing })
        }
    }

    /// Seals `seed` under the active key.
    pub fn seal(&self, seed_id: Uuid, seed: &ServerSeed) -> Result<SealedSeed, VaultError> {
        let cipher = self
            .keys
            .get(&self.active)
            .ok_or(VaultError::Seal("active key missing"))?;
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| VaultError::Seal("OS random source"))?;
        let ciphertext = cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: seed.expose_secret().as_bytes(),
                    aad: seed_id.as_bytes(),
                },
            )
            .map_err(|_| VaultError::Seal("encryption"))?;
        Ok(SealedSeed {
            seed_id,
            key_id: self.active.clone(),
            nonce: nonce.to_vec(),
            ciphertext,
        })
    }

    /// Opens a sealed seed with the key that sealed it.
    pub fn open(&self, sealed: &SealedSeed) -> Result<ServerSeed, VaultError> {
        let cipher = self
            .keys
            .get(&sealed.key_id)
            .ok_or_else(|| VaultError::UnknownKey {
                seed_id: sealed.seed_id,
                key_id: sealed.key_id.clone(),
            })?;
        let nonce: [u8; NONCE_LEN] = sealed
            .nonce
            .as_slice()
            .try_into()
            .map_err(|_| VaultError::Open(sealed.seed_id))?;
        let plain = cipher
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: &sealed.ciphertext,
                    aad: sealed.seed_id.as_bytes(),
                },
            )
            .map_err(|_| VaultError::Open(sealed.seed_id))?;
        let text = String::from_utf8(plain).map_err(|_| VaultError::Open(sealed.seed_id))?;
        Ok(ServerSeed::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_and_rotate_keys() {
        let old = KeyRing::generate("k1").unwrap();
        let seed = ServerSeed::generate().unwrap();
        let id = Uuid::now_v7();
        let sealed = old.seal(id, &seed).unwrap();
        assert_eq!(sealed.key_id, "k1");
        assert!(
            !sealed.ciphertext.windows(8).any(|w| seed
                .expose_secret()
                .as_bytes()
                .windows(8)
                .any(|s| s == w))
        );
        assert_eq!(old.open(&sealed).unwrap(), seed);
        // Rotation: a new active key, the old kept for opening.
        let old_hex = "00".repeat(32);
        let ring = KeyRing::parse(&format!("k2:{},k1:{old_hex}", "11".repeat(32))).unwrap();
        assert_eq!(ring.active_key_id(), "k2");
        let k1_only = KeyRing::parse(&format!("k1:{old_hex}")).unwrap();
        let sealed = k1_only.seal(id, &seed).unwrap();
        assert_eq!(ring.open(&sealed).unwrap(), seed);
        assert_eq!(ring.seal(id, &seed).unwrap().key_id, "k2");
    }

    #[test]
    fn tampering_and_swapping_fail() {
        let ring = KeyRing::generate("k").unwrap();
        let seed = ServerSeed::new("s");
        let mut sealed = ring.seal(Uuid::now_v7(), &seed).unwrap();
        sealed.seed_id = Uuid::now_v7();
        assert!(matches!(ring.open(&sealed), Err(VaultError::Open(_))));
        let mut sealed = ring.seal(Uuid::now_v7(), &seed).unwrap();
        if let Some(b) = sealed.ciphertext.first_mut() {
            *b ^= 1;
        }
        assert!(matches!(ring.open(&sealed), Err(VaultError::Open(_))));
        sealed.key_id = "gone".into();
        assert!(matches!(
            ring.open(&sealed),
            Err(VaultError::UnknownKey { .. })
        ));
    }

    #[test]
    fn keys_in_use_must_be_in_the_ring() {
        let ring =
            KeyRing::parse(&format!("k2:{},k1:{}", "11".repeat(32), "22".repeat(32))).unwrap();
        assert!(ring.has_key("k1") && !ring.has_key("k0"));
        assert_eq!(
            ring.check_in_use(&[("k1".into(), 3), ("k2".into(), 1)]),
            Ok(())
        );
        assert_eq!(ring.check_in_use(&[]), Ok(()));
        let err = ring
            .check_in_use(&[("k0".into(), 2), ("k1".into(), 3)])
            .unwrap_err();
        assert_eq!(err.missing, vec![("k0".to_owned(), 2)]);
        let text = err.to_string();
        assert!(text.contains("\"k0\" (2 seeds)"), "{text}");
        assert!(!text.contains(&"11".repeat(32)) && !text.contains(&"22".repeat(32)));
    }

    #[test]
    fn key_ring_errors_never_show_keys() {
        let secret = "ab".repeat(31);
        let err = KeyRing::parse(&format!("k:{secret}"))
            .unwrap_err()
            .to_string();
        assert!(!err.contains(&secret), "{err}");
        assert!(KeyRing::parse("").is_err());
        assert!(KeyRing::parse(&format!("k:{0},k:{0}", "00".repeat(32))).is_err());
        assert!(!format!("{:?}", KeyRing::generate("k").unwrap()).contains("key:"));
    }
}
