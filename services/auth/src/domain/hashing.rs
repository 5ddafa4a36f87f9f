//! Argon2id password hashes (RFC 9106) in PHC string form, with a per-hash random salt.

use std::fmt;

use argon2::{Algorithm, Argon2, Params, PasswordHasher as _, PasswordVerifier as _, Version};

use super::password::Password;

/// Why hashing failed (only on bad parameters or a failing random source).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    /// The configured Argon2 parameters are out of range.
    #[error("invalid Argon2 parameters: {0}")]
    Params(String),
    /// The operating system's random source failed.
    #[error("no randomness available for a salt")]
    Randomness,
    /// The Argon2 computation failed.
    #[error("password hashing failed")]
    Hash,
}

/// Argon2id cost parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HashParams {
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Passes over memory.
    pub iterations: u32,
    /// Lanes.
    pub parallelism: u32,
}

impl HashParams {
    /// OWASP Password Storage Cheat Sheet's Argon2id choice: 19 MiB, 2 passes, 1 lane.
    pub const OWASP: Self = Self {
        memory_kib: 19_456,
        iterations: 2,
        parallelism: 1,
    };

    fn to_argon2(self) -> Result<Params, HashError> {
        Params::new(self.memory_kib, self.iterations, self.parallelism, None)
            .map_err(|e| HashError::Params(e.to_string()))
    }
}

impl Default for HashParams {
    fn default() -> Self {
        Self::OWASP
    }
}

/// A stored hash in PHC form (`$argon2id$v=19$m=...,t=...,p=...$salt$hash`). Debug hides it:
/// a hash is offline-crackable material.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(String);

impl PasswordHash {
    /// Wraps a stored PHC string.
    pub fn from_stored(phc: String) -> Self {
        Self(phc)
    }

    /// The PHC string, for storage.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PasswordHash(<redacted>)")
    }
}

/// Hashes and verifies passwords. CPU-heavy (tens of milliseconds): async code calls it from
/// `spawn_blocking`.
#[derive(Clone)]
pub struct PasswordHasher {
    /// The configured costs; new hashes use them, old ones verify with their own.
    params: HashParams,
    /// Argon2id with `params`.
    argon2: Argon2<'static>,
    /// A hash of a random password, verified when the user does not exist so that "no such
    /// user" costs the same time as "wrong password".
    dummy: PasswordHash,
}

impl fmt::Debug for PasswordHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasswordHasher")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl PasswordHasher {
    /// A hasher with `params`; computes the dummy hash once.
    pub fn new(params: HashParams) -> Result<Self, HashError> {
        let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.to_argon2()?);
        let mut random = [0u8; 32];
        getrandom::fill(&mut random).map_err(|_| HashError::Randomness)?;
        let dummy = hash_with(&argon2, &random)?;
        Ok(Self {
            params,
            argon2,
            dummy,
        })
    }

    /// The configured parameters.
    pub fn params(&self) -> HashParams {
        self.params
    }

    /// Hashes `password` with a fresh 16-byte salt.
    pub fn hash(&self, password: &Password) -> Result<PasswordHash, HashError> {
        hash_with(&self.argon2, password.expose())
    }

    /// Whether `password` matches `stored`. With `None` (no such user) it verifies against the
    /// dummy hash and returns `false`, taking the same time as a real check. A stored string
    /// that does not parse counts as a mismatch.
    pub fn verify(&self, password: &Password, stored: Option<&PasswordHash>) -> bool {
        let target = stored.unwrap_or(&self.dummy);
        let matches = self
            .argon2
            .verify_password(password.expose(), target.as_str())
            .is_ok();
        matches && stored.is_some()
    }

    /// Whether `stored` was made with other parameters than the configured ones (rehash it at
    /// the next successful login).
    pub fn needs_rehash(&self, stored: &PasswordHash) -> bool {
        let expected = format!(
            "$argon2id$v=19$m={},t={},p={}$",
            self.params.memory_kib, self.params.iterations, self.params.parallelism
        );
        !stored.as_str().starts_with(&expected)
    }
}

fn hash_with(argon2: &Argon2<'static>, password: &[u8]) -> Result<PasswordHash, HashError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|_| HashError::Randomness)?;
    let hash = argon2
        .hash_password_with_salt(password, &salt)
        .map_err(|_| HashError::Hash)?;
    Ok(PasswordHash(hash.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small costs: these tests check behaviour, not cost.
    const FAST: HashParams = HashParams {
        memory_kib: 64,
        iterations: 1,
        parallelism: 1,
    };

    #[test]
    fn hash_then_verify() {
        let hasher = PasswordHasher::new(FAST).unwrap();
        let pw = Password::candidate("correct horse battery staple").unwrap();
        let stored = hasher.hash(&pw).unwrap();
        assert!(stored.as_str().starts_with("$argon2id$v=19$m=64,t=1,p=1$"));
        assert!(hasher.verify(&pw, Some(&stored)));
        assert!(!hasher.verify(&Password::candidate("wrong").unwrap(), Some(&stored)));
        assert!(!hasher.verify(&pw, None));
        assert!(!hasher.needs_rehash(&stored));
        assert!(
            PasswordHasher::new(HashParams::OWASP)
                .unwrap()
                .needs_rehash(&stored)
        );
    }

    #[test]
    fn salts_differ() {
        let hasher = PasswordHasher::new(FAST).unwrap();
        let pw = Password::candidate("same password").unwrap();
        assert_ne!(hasher.hash(&pw).unwrap(), hasher.hash(&pw).unwrap());
    }

    #[test]
    fn garbage_hash_is_a_mismatch() {
        let hasher = PasswordHasher::new(FAST).unwrap();
        let pw = Password::candidate("x").unwrap();
        assert!(!hasher.verify(&pw, Some(&PasswordHash::from_stored("not a hash".into()))));
    }

    #[test]
    fn owasp_params_are_valid() {
        assert!(HashParams::OWASP.to_argon2().is_ok());
        assert!(
            HashParams {
                memory_kib: 0,
                iterations: 0,
                parallelism: 0
            }
            .to_argon2()
            .is_err()
        );
    }
}
