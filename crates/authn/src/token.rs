//! The access-token format: a compact JWS (RFC 7515) holding JWT claims (RFC 7519), signed
//! with Ed25519 (`"alg":"EdDSA"`, RFC 8037), the signing key named by `kid`.
//!
//! Parsing is separate from verification: [`UnverifiedToken::parse`] checks the shape and reads
//! the key id (so a verifier knows which key to use, or that it must refresh its keys), then
//! [`UnverifiedToken::verify`] checks the signature strictly and only then reads the claims.

use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::caller::Caller;

/// Longest token accepted, in bytes. Ours are about 300; the bound stops oversized headers
/// from costing decoding work.
pub const MAX_TOKEN_LEN: usize = 4096;

/// Why a token was refused. Callers see only "unauthenticated"; these details go to logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// No `authorization: Bearer ...` metadata.
    #[error("no access token")]
    Missing,
    /// Not three base64url parts, bad JSON, wrong algorithm, too long, ...
    #[error("malformed access token: {0}")]
    Malformed(&'static str),
    /// The header names a key the verifier does not know (rotated out, or never ours).
    #[error("access token signed with unknown key {0:?}")]
    UnknownKey(String),
    /// The signature does not verify: the token was altered or signed by someone else.
    #[error("access token signature does not verify")]
    BadSignature,
    /// The token expired (or is not yet valid, beyond the allowed clock skew).
    #[error("access token expired or not yet valid")]
    Expired,
    /// Signed by a known key, but the claims are not those of a fairdeal access token.
    #[error("access token has invalid claims: {0}")]
    InvalidClaims(&'static str),
    /// Signing failed (only when encoding the claims fails).
    #[error("could not encode access token claims")]
    Encode,
    /// The operating system's random source failed while generating a key.
    #[error("no randomness available to generate a signing key")]
    Randomness,
}

/// A key id: 1 to 64 characters from `[A-Za-z0-9_-]`, so it is safe in headers, logs and URLs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct KeyId(String);

impl KeyId {
    /// Validates a key id.
    pub fn parse(s: &str) -> Result<Self, TokenError> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(TokenError::Malformed("key id"))
        }
    }

    /// A fresh random key id (96 random bits, base64url).
    pub fn generate() -> Result<Self, TokenError> {
        let mut bytes = [0u8; 12];
        getrandom::fill(&mut bytes).map_err(|_| TokenError::Randomness)?;
        Ok(Self(URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for KeyId {
    type Error = TokenError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<KeyId> for String {
    fn from(k: KeyId) -> Self {
        k.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the caller is: a player acting for themself, a moderator (a player who may also
/// moderate chat), or an internal service (dealing asking for a seed, ...). Internal RPCs
/// accept only services; everything a player may do, a moderator may do too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A player; the subject is their user id (a UUID).
    Player,
    /// An internal service; the subject is the service's name.
    Service,
    /// A player with the moderator's rights (remove chat messages, mute users); the subject
    /// is their user id. The auth service issues it to the accounts its operator lists.
    Moderator,
}

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Issuer; always [`crate::ISSUER`].
    pub iss: String,
    /// Subject: the user id for a player, the service name for a service.
    pub sub: String,
    /// The subject's role.
    pub role: Role,
    /// Issued at, seconds since the Unix epoch.
    pub iat: i64,
    /// Expires at, seconds since the Unix epoch (the token is refused from this second on).
    pub exp: i64,
    /// Token id, unique per token, so logs can name a token without showing it.
    pub jti: String,
}

impl Claims {
    /// Whether a token with these claims is valid at `now` (Unix seconds), allowing
    /// `leeway_seconds` of clock skew: [`TokenError::Expired`] from `exp` on, or before `iat`.
    pub fn check_time(&self, now: i64, leeway_seconds: i64) -> Result<(), TokenError> {
        if now >= self.exp.saturating_add(leeway_seconds)
            || now < self.iat.saturating_sub(leeway_seconds)
        {
            return Err(TokenError::Expired);
        }
        Ok(())
    }

    /// Claims for a player's token valid from `now` for `ttl_seconds`.
    pub fn player(user_id: Uuid, now: i64, ttl_seconds: i64) -> Self {
        Self {
            iss: crate::ISSUER.to_owned(),
            sub: user_id.to_string(),
            role: Role::Player,
            iat: now,
            exp: now.saturating_add(ttl_seconds),
            jti: Uuid::now_v7().to_string(),
        }
    }

    /// Claims for a moderator's token (a player's, with role [`Role::Moderator`]) valid from
    /// `now` for `ttl_seconds`.
    pub fn moderator(user_id: Uuid, now: i64, ttl_seconds: i64) -> Self {
        Self {
            role: Role::Moderator,
            ..Self::player(user_id, now, ttl_seconds)
        }
    }

    /// Whether these claims carry the moderator's rights.
    pub fn is_moderator(&self) -> bool {
        self.role == Role::Moderator
    }

    /// Claims for an internal service's token valid from `now` for `ttl_seconds`.
    pub fn service(name: &str, now: i64, ttl_seconds: i64) -> Self {
        Self {
            iss: crate::ISSUER.to_owned(),
            sub: name.to_owned(),
            role: Role::Service,
            iat: now,
            exp: now.saturating_add(ttl_seconds),
            jti: Uuid::now_v7().to_string(),
        }
    }

    /// The caller these claims identify, if they are well-formed.
    pub fn caller(&self) -> Result<Caller, TokenError> {
        match self.role {
            // A moderator acts as the player they are everywhere; the moderation rights are
            // read from the claims ([`crate::Moderator`]).
            Role::Player | Role::Moderator => Uuid::parse_str(&self.sub)
                .map(Caller::Player)
                .map_err(|_| TokenError::InvalidClaims("player subject is not a user id")),
            Role::Service if !self.sub.is_empty() && self.sub.len() <= 64 => {
                Ok(Caller::Service(self.sub.clone()))
            }
            Role::Service => Err(TokenError::InvalidClaims("service subject")),
        }
    }
}

/// An encoded access token. Debug shows only its length: a token is a credential.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl AccessToken {
    /// Wraps an encoded token received from elsewhere.
    pub fn new(encoded: String) -> Self {
        Self(encoded)
    }

    /// The encoded token, for the `authorization` header.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The encoded token.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AccessToken(<{} bytes redacted>)", self.0.len())
    }
}

/// The JOSE header we write and require.
#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    typ: Option<String>,
    kid: String,
}

const ALG: &str = "EdDSA";

/// A private Ed25519 key with its id: issues tokens. Only the auth service holds these.
#[derive(Clone)]
pub struct SigningKey {
    /// Named in every token's header so verifiers pick the matching public key.
    kid: KeyId,
    /// The secret; zeroized on drop by ed25519-dalek.
    key: ed25519_dalek::SigningKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl SigningKey {
    /// A new key from the operating system's random source, with a random id.
    pub fn generate() -> Result<Self, TokenError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|_| TokenError::Randomness)?;
        let key = Self::from_secret(KeyId::generate()?, &secret);
        secret.fill(0);
        Ok(key)
    }

    /// Rebuilds a stored key from its id and 32-byte secret.
    pub fn from_secret(kid: KeyId, secret: &[u8; 32]) -> Self {
        Self {
            kid,
            key: ed25519_dalek::SigningKey::from_bytes(secret),
        }
    }

    /// The 32-byte secret, for storage. Handle with care.
    pub fn secret_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// This key's id.
    pub fn kid(&self) -> &KeyId {
        &self.kid
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey {
            kid: self.kid.clone(),
            key: self.key.verifying_key(),
        }
    }

    /// Encodes and signs `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<AccessToken, TokenError> {
        let header = Header {
            alg: ALG.to_owned(),
            typ: Some("JWT".to_owned()),
            kid: self.kid.0.clone(),
        };
        let header = serde_json::to_vec(&header).map_err(|_| TokenError::Encode)?;
        let payload = serde_json::to_vec(claims).map_err(|_| TokenError::Encode)?;
        let mut token = URL_SAFE_NO_PAD.encode(header);
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(payload));
        let signature = self.key.sign(token.as_bytes());
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature.to_bytes()));
        Ok(AccessToken(token))
    }
}

/// A public Ed25519 key with its id: verifies tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// The id tokens name in their header.
    kid: KeyId,
    /// The decompressed key, kept so verification does not decompress it every time.
    key: VerifyingKey,
}

impl PublicKey {
    /// A public key from its id and its 32 bytes (as `GetPublicKeys` returns them).
    pub fn from_bytes(kid: KeyId, bytes: &[u8]) -> Result<Self, TokenError> {
        let bytes: &[u8; 32] = bytes
            .try_into()
            .map_err(|_| TokenError::Malformed("public key length"))?;
        let key =
            VerifyingKey::from_bytes(bytes).map_err(|_| TokenError::Malformed("public key"))?;
        if key.is_weak() {
            return Err(TokenError::Malformed("weak public key"));
        }
        Ok(Self { kid, key })
    }

    /// This key's id.
    pub fn kid(&self) -> &KeyId {
        &self.kid
    }

    /// The key's 32 bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }
}

/// The public keys a verifier trusts, by id.
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    /// Keyed by id (as text, so a header's id looks up without allocating).
    keys: HashMap<String, VerifyingKey>,
}

impl KeySet {
    /// A set of the given keys.
    pub fn new(keys: impl IntoIterator<Item = PublicKey>) -> Self {
        Self {
            keys: keys.into_iter().map(|k| (k.kid.0, k.key)).collect(),
        }
    }

    /// Parses the configuration form `kid:64hex[,kid:64hex...]` (empty: no key). The error
    /// names the offending entry by its key id, never by its bytes.
    pub fn parse_list(text: &str) -> Result<Self, String> {
        let mut keys = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (kid, hex_key) = entry
                .split_once(':')
                .ok_or_else(|| "each key is kid:64hex".to_owned())?;
            let kid = KeyId::parse(kid).map_err(|e| e.to_string())?;
            let bytes = hex::decode(hex_key).map_err(|_| format!("key {kid:?} is not hex"))?;
            keys.push(PublicKey::from_bytes(kid, &bytes).map_err(|e| e.to_string())?);
        }
        Ok(Self::new(keys))
    }

    /// Whether the set holds a key with this id.
    pub fn contains(&self, kid: &str) -> bool {
        self.get(kid).is_some()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn get(&self, kid: &str) -> Option<&VerifyingKey> {
        self.keys.get(kid)
    }

    /// Parses and fully verifies `token` at time `now` (Unix seconds), allowing `leeway_seconds`
    /// of clock skew, and returns its claims.
    pub fn verify(&self, token: &str, now: i64, leeway_seconds: i64) -> Result<Claims, TokenError> {
        let token = UnverifiedToken::parse(token)?;
        let key = self
            .get(token.kid())
            .ok_or_else(|| TokenError::UnknownKey(token.kid().to_owned()))?;
        token.verify(key, now, leeway_seconds)
    }
}

/// A token whose shape has been checked but whose signature has not.
#[derive(Debug)]
pub struct UnverifiedToken<'a> {
    /// `header.payload`, the bytes the signature covers.
    signing_input: &'a str,
    /// The payload part (base64url), decoded only after the signature verifies.
    payload: &'a str,
    /// The decoded signature.
    signature: Signature,
    /// The key id from the header.
    kid: String,
}

impl<'a> UnverifiedToken<'a> {
    /// Checks the token's shape: length, three base64url parts, an `EdDSA` header with a key id,
    /// a 64-byte signature.
    pub fn parse(token: &'a str) -> Result<Self, TokenError> {
        if token.is_empty() {
            return Err(TokenError::Missing);
        }
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed("too long"));
        }
        let (signing_input, signature) = token
            .rsplit_once('.')
            .ok_or(TokenError::Malformed("parts"))?;
        let (header, payload) = signing_input
            .split_once('.')
            .ok_or(TokenError::Malformed("parts"))?;
        if payload.contains('.') {
            return Err(TokenError::Malformed("parts"));
        }
        let header = URL_SAFE_NO_PAD
            .decode(header)
            .map_err(|_| TokenError::Malformed("header encoding"))?;
        let header: Header =
            serde_json::from_slice(&header).map_err(|_| TokenError::Malformed("header"))?;
        // Only EdDSA: never let the token choose a weaker or symmetric algorithm.
        if header.alg != ALG {
            return Err(TokenError::Malformed("algorithm"));
        }
        let kid = KeyId::parse(&header.kid)?.0;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| TokenError::Malformed("signature encoding"))?;
        let signature = Signature::from_slice(&signature)
            .map_err(|_| TokenError::Malformed("signature length"))?;
        Ok(Self {
            signing_input,
            payload,
            signature,
            kid,
        })
    }

    /// The key id the header names.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Verifies the signature with `key` (strictly: no malleable signatures, no weak keys),
    /// then the claims: issuer, role/subject shape, and time (`iat - leeway <= now < exp + leeway`).
    pub fn verify(
        &self,
        key: &VerifyingKey,
        now: i64,
        leeway_seconds: i64,
    ) -> Result<Claims, TokenError> {
        key.verify_strict(self.signing_input.as_bytes(), &self.signature)
            .map_err(|_| TokenError::BadSignature)?;
        let payload = URL_SAFE_NO_PAD
            .decode(self.payload)
            .map_err(|_| TokenError::InvalidClaims("payload encoding"))?;
        let claims: Claims =
            serde_json::from_slice(&payload).map_err(|_| TokenError::InvalidClaims("payload"))?;
        if claims.iss != crate::ISSUER {
            return Err(TokenError::InvalidClaims("issuer"));
        }
        claims.caller()?;
        claims.check_time(now, leeway_seconds)?;
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> SigningKey {
        SigningKey::from_secret(KeyId::parse("k1").unwrap(), &[7u8; 32])
    }

    #[test]
    fn round_trip() {
        let k = key();
        let user = Uuid::now_v7();
        let claims = Claims::player(user, 1000, 900);
        let token = k.sign(&claims).unwrap();
        let set = KeySet::new([k.public_key()]);
        let got = set.verify(token.as_str(), 1000, 0).unwrap();
        assert_eq!(got, claims);
        assert_eq!(got.caller().unwrap(), Caller::Player(user));
    }

    #[test]
    fn expiry_is_exclusive_and_leeway_applies() {
        let k = key();
        let token = k.sign(&Claims::player(Uuid::now_v7(), 1000, 900)).unwrap();
        let set = KeySet::new([k.public_key()]);
        assert!(set.verify(token.as_str(), 1899, 0).is_ok());
        assert_eq!(
            set.verify(token.as_str(), 1900, 0),
            Err(TokenError::Expired)
        );
        assert!(set.verify(token.as_str(), 1900, 30).is_ok());
        assert_eq!(
            set.verify(token.as_str(), 900, 30),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn wrong_key_same_kid_is_bad_signature() {
        let k = key();
        let impostor = SigningKey::from_secret(KeyId::parse("k1").unwrap(), &[8u8; 32]);
        let token = impostor
            .sign(&Claims::player(Uuid::now_v7(), 1000, 900))
            .unwrap();
        let set = KeySet::new([k.public_key()]);
        assert_eq!(
            set.verify(token.as_str(), 1000, 0),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn unknown_kid() {
        let other = SigningKey::from_secret(KeyId::parse("k2").unwrap(), &[8u8; 32]);
        let token = other
            .sign(&Claims::player(Uuid::now_v7(), 1000, 900))
            .unwrap();
        let set = KeySet::new([key().public_key()]);
        assert_eq!(
            set.verify(token.as_str(), 1000, 0),
            Err(TokenError::UnknownKey("k2".into()))
        );
    }

    #[test]
    fn other_algorithms_are_refused() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","kid":"k1"}"#);
        let payload = URL_SAFE_NO_PAD.encode(br#"{}"#);
        let token = format!("{header}.{payload}.");
        assert_eq!(
            KeySet::new([key().public_key()]).verify(&token, 0, 0),
            Err(TokenError::Malformed("algorithm"))
        );
    }

    #[test]
    fn wrong_issuer_is_refused_even_when_signed() {
        let k = key();
        let mut claims = Claims::player(Uuid::now_v7(), 1000, 900);
        claims.iss = "someone-else".into();
        let token = k.sign(&claims).unwrap();
        assert_eq!(
            KeySet::new([k.public_key()]).verify(token.as_str(), 1000, 0),
            Err(TokenError::InvalidClaims("issuer"))
        );
    }

    #[test]
    fn debug_never_shows_secrets() {
        let k = key();
        let token = k.sign(&Claims::service("dealing", 0, 60)).unwrap();
        assert!(!format!("{token:?}").contains(token.as_str()));
        assert!(format!("{k:?}").contains("redacted"));
    }

    proptest! {
        /// Any change to any byte of a valid token makes it fail (never verify as something else).
        #[test]
        fn tampering_is_detected(pos in 0usize..400, byte in any::<u8>()) {
            let k = key();
            let token = k.sign(&Claims::player(Uuid::from_u128(42), 1000, 900)).unwrap().into_string();
            let mut bytes = token.clone().into_bytes();
            let pos = pos % bytes.len();
            prop_assume!(bytes[pos] != byte);
            bytes[pos] = byte;
            let set = KeySet::new([k.public_key()]);
            if let Ok(tampered) = String::from_utf8(bytes) {
                prop_assert!(set.verify(&tampered, 1000, 0).is_err());
            }
        }

        /// Arbitrary strings never panic the parser.
        #[test]
        fn parse_is_total(s in ".{0,600}") {
            let _ = KeySet::new([key().public_key()]).verify(&s, 0, 0);
        }
    }
}
