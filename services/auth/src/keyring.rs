//! The signing keys: stored in the database so every replica signs with the same key, rotated
//! on a schedule, published (public halves) for as long as a token they signed can be valid.
//!
//! Rotation without a window of failures: a new key is *published* as soon as it is stored,
//! but used for *signing* only once it is `publish_lead` old. By then every replica has
//! reloaded the ring (they reload more often than that), so whichever replica a verifier asks
//! for keys already knows the key of any token it may see.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use fairdeal_authn::{
    Clock, KeyId, KeySet, KeySource, KeySourceError, PublicKey, SigningKey, TokenError,
};

use crate::store::{AuthStore, StoreError, StoredKey};

/// Timing of rotation. Seconds.
#[derive(Debug, Clone, Copy)]
pub struct KeyPolicy {
    /// A new key is created when the newest is this old.
    pub rotation_secs: i64,
    /// A key signs only once it is this old (every replica has loaded it by then).
    pub publish_lead_secs: i64,
    /// Longest life of a token (access-token lifetime plus verifiers' clock leeway): how long
    /// a key stays published after it stopped signing.
    pub token_lifetime_secs: i64,
}

/// Why the ring could not be loaded or rotated.
#[derive(Debug, thiserror::Error)]
pub enum KeyRingError {
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored key is unusable, or a new one could not be generated.
    #[error("signing key: {0}")]
    Key(#[from] TokenError),
    /// No key at all (cannot happen after a successful rotation).
    #[error("no signing key")]
    Empty,
}

/// A public key and until when tokens it signed can be valid.
#[derive(Debug, Clone)]
pub struct PublishedKey {
    /// The key.
    pub key: PublicKey,
    /// Seconds since the epoch.
    pub not_after: i64,
}

/// What the ring currently holds.
struct RingState {
    /// The key new tokens are signed with.
    signing: SigningKey,
    /// Keys verifiers must trust, newest first.
    published: Vec<PublishedKey>,
}

/// The key ring. One per process; cheap reads, periodic reloads.
pub struct KeyRing {
    /// Where keys live.
    store: Arc<dyn AuthStore>,
    /// Rotation timing reads it.
    clock: Arc<dyn Clock>,
    /// Timing.
    policy: KeyPolicy,
    /// Current state; replaced whole on reload.
    state: RwLock<Arc<RingState>>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl KeyRing {
    /// Loads the ring, creating the first key when there is none.
    pub async fn open(
        store: Arc<dyn AuthStore>,
        clock: Arc<dyn Clock>,
        policy: KeyPolicy,
    ) -> Result<Self, KeyRingError> {
        let state = Self::load(&*store, &*clock, &policy).await?;
        Ok(Self {
            store,
            clock,
            policy,
            state: RwLock::new(Arc::new(state)),
        })
    }

    async fn load(
        store: &dyn AuthStore,
        clock: &dyn Clock,
        policy: &KeyPolicy,
    ) -> Result<RingState, KeyRingError> {
        let now = clock.unix_seconds();
        let mut keys = store.signing_keys().await?;
        let due = keys
            .first()
            .is_none_or(|newest| now.saturating_sub(newest.created_at) >= policy.rotation_secs);
        if due {
            let key = SigningKey::generate()?;
            let stored = StoredKey {
                key_id: key.kid().as_str().to_owned(),
                secret: key.secret_bytes().to_vec(),
                public_key: key.public_key().to_bytes().to_vec(),
                created_at: now,
            };
            store.add_signing_key(stored).await?;
            tracing::info!(kid = %key.kid(), "signing key created");
            keys = store.signing_keys().await?;
        }
        Self::compute(&keys, now, policy)
    }

    /// Picks the signing key and the published set from the stored keys (newest first).
    fn compute(
        keys: &[StoredKey],
        now: i64,
        policy: &KeyPolicy,
    ) -> Result<RingState, KeyRingError> {
        let ready = keys
            .iter()
            .find(|k| now.saturating_sub(k.created_at) >= policy.publish_lead_secs)
            .or_else(|| keys.last())
            .ok_or(KeyRingError::Empty)?;
        let signing = decode_signing(ready)?;
        let mut published = Vec::new();
        let mut successor_created: Option<i64> = None;
        for key in keys {
            // A key signs until its successor is ready; its tokens live on for a lifetime.
            let stops_signing = match successor_created {
                Some(next) => next.saturating_add(policy.publish_lead_secs),
                None => now
                    .saturating_add(policy.rotation_secs)
                    .saturating_add(policy.publish_lead_secs),
            };
            let not_after = stops_signing.saturating_add(policy.token_lifetime_secs);
            if not_after > now {
                let kid = KeyId::parse(&key.key_id)?;
                published.push(PublishedKey {
                    key: PublicKey::from_bytes(kid, &key.public_key)?,
                    not_after,
                });
            }
            successor_created = Some(key.created_at);
        }
        Ok(RingState { signing, published })
    }

    /// Reloads from storage, rotating first when the newest key is due.
    pub async fn reload(&self) -> Result<(), KeyRingError> {
        let state = Self::load(&*self.store, &*self.clock, &self.policy).await?;
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(state);
        Ok(())
    }

    fn snapshot(&self) -> Arc<RingState> {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The key to sign new tokens with.
    pub fn signing_key(&self) -> SigningKey {
        self.snapshot().signing.clone()
    }

    /// The keys verifiers must trust, newest first.
    pub fn published(&self) -> Vec<PublishedKey> {
        self.snapshot().published.clone()
    }

    /// The published keys as a verifier's key set.
    pub fn key_set(&self) -> KeySet {
        KeySet::new(self.snapshot().published.iter().map(|p| p.key.clone()))
    }
}

fn decode_signing(key: &StoredKey) -> Result<SigningKey, KeyRingError> {
    let secret: [u8; 32] = key
        .secret
        .as_slice()
        .try_into()
        .map_err(|_| TokenError::Malformed("stored key length"))?;
    Ok(SigningKey::from_secret(KeyId::parse(&key.key_id)?, &secret))
}

/// The ring is its own key source: the auth service verifies access tokens (ChangePassword)
/// with it, and the all-in-one process can hand it to every other service.
#[async_trait]
impl KeySource for KeyRing {
    async fn fetch(&self) -> Result<KeySet, KeySourceError> {
        Ok(self.key_set())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: KeyPolicy = KeyPolicy {
        rotation_secs: 1000,
        publish_lead_secs: 100,
        token_lifetime_secs: 50,
    };

    fn stored(id: &str, secret: u8, created_at: i64) -> StoredKey {
        let key = SigningKey::from_secret(KeyId::parse(id).unwrap(), &[secret; 32]);
        StoredKey {
            key_id: id.into(),
            secret: key.secret_bytes().to_vec(),
            public_key: key.public_key().to_bytes().to_vec(),
            created_at,
        }
    }

    fn ids(state: &RingState) -> Vec<String> {
        state
            .published
            .iter()
            .map(|p| p.key.kid().as_str().to_owned())
            .collect()
    }

    #[test]
    fn new_key_is_published_before_it_signs() {
        let keys = vec![stored("new", 2, 1000), stored("old", 1, 0)];
        let early = KeyRing::compute(&keys, 1010, &POLICY).unwrap();
        assert_eq!(early.signing.kid().as_str(), "old");
        assert_eq!(ids(&early), ["new", "old"]);
        let ready = KeyRing::compute(&keys, 1100, &POLICY).unwrap();
        assert_eq!(ready.signing.kid().as_str(), "new");
        // The old key stopped signing at 1100; its last tokens live until 1150.
        assert_eq!(
            ids(&KeyRing::compute(&keys, 1149, &POLICY).unwrap()),
            ["new", "old"]
        );
        assert_eq!(
            ids(&KeyRing::compute(&keys, 1150, &POLICY).unwrap()),
            ["new"]
        );
    }

    #[test]
    fn a_lone_fresh_key_signs_at_once() {
        let keys = vec![stored("first", 1, 500)];
        assert_eq!(
            KeyRing::compute(&keys, 500, &POLICY)
                .unwrap()
                .signing
                .kid()
                .as_str(),
            "first"
        );
        assert!(matches!(
            KeyRing::compute(&[], 0, &POLICY),
            Err(KeyRingError::Empty)
        ));
    }
}
