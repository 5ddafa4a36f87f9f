//! Opaque secret tokens: refresh tokens, email-confirmation and password-reset tokens.
//!
//! 256 random bits, base64url (43 characters). The server stores only SHA-256 of a token, so a
//! leaked database does not yield usable tokens; lookups go by that hash. No slow hash is
//! needed: the token has full entropy, unlike a password.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

/// Encoded length of a token.
pub const ENCODED_LEN: usize = 43;

/// Why a presented token was refused before any lookup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretTokenError {
    /// Empty input.
    #[error("token is empty")]
    Empty,
    /// Not 43 base64url characters encoding 32 bytes.
    #[error("token is malformed")]
    Malformed,
    /// The operating system's random source failed.
    #[error("no randomness available for a token")]
    Randomness,
}

/// A secret token as handed to (or received from) a user. Debug never shows it.
#[derive(Clone)]
pub struct SecretToken(SecretString);

impl SecretToken {
    /// A fresh token from the operating system's random source.
    pub fn generate() -> Result<Self, SecretTokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|_| SecretTokenError::Randomness)?;
        let token = Self(SecretString::from(URL_SAFE_NO_PAD.encode(bytes)));
        bytes.fill(0);
        Ok(token)
    }

    /// Checks the shape of a presented token.
    pub fn parse(raw: &str) -> Result<Self, SecretTokenError> {
        if raw.is_empty() {
            return Err(SecretTokenError::Empty);
        }
        if raw.len() != ENCODED_LEN {
            return Err(SecretTokenError::Malformed);
        }
        let decoded = URL_SAFE_NO_PAD
            .decode(raw)
            .map_err(|_| SecretTokenError::Malformed)?;
        if decoded.len() != 32 {
            return Err(SecretTokenError::Malformed);
        }
        Ok(Self(SecretString::from(raw.to_owned())))
    }

    /// The token text, to hand to the user (response body or email link) and nowhere else.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// The SHA-256 of the token text: what is stored and looked up.
    pub fn hash(&self) -> TokenHash {
        TokenHash(Sha256::digest(self.0.expose_secret().as_bytes()).into())
    }
}

impl fmt::Debug for SecretToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretToken(<redacted>)")
    }
}

/// SHA-256 of a [`SecretToken`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    /// The hash bytes, for storage.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// From stored bytes; `None` unless exactly 32.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }
}

impl fmt::Debug for TokenHash {
    /// Only a prefix: enough to correlate log lines, useless for lookups.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenHash({}..)", hex::encode(&self.0[..4]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn generate_parse_hash() {
        let t = SecretToken::generate().unwrap();
        assert_eq!(t.expose().len(), ENCODED_LEN);
        let back = SecretToken::parse(t.expose()).unwrap();
        assert_eq!(back.hash(), t.hash());
        assert_ne!(SecretToken::generate().unwrap().hash(), t.hash());
        assert!(!format!("{t:?}").contains(t.expose()));
    }

    #[test]
    fn refuses_malformed() {
        assert_eq!(SecretToken::parse("").unwrap_err(), SecretTokenError::Empty);
        assert_eq!(
            SecretToken::parse("abc").unwrap_err(),
            SecretTokenError::Malformed
        );
        assert_eq!(
            SecretToken::parse(&"!".repeat(43)).unwrap_err(),
            SecretTokenError::Malformed
        );
    }

    proptest! {
        #[test]
        fn parse_is_total(s in "\\PC{0,60}") {
            let _ = SecretToken::parse(&s);
        }

        #[test]
        fn encoding_round_trips(bytes in any::<[u8; 32]>()) {
            let text = URL_SAFE_NO_PAD.encode(bytes);
            let t = SecretToken::parse(&text).unwrap();
            prop_assert_eq!(t.expose(), text.as_str());
        }
    }
}
