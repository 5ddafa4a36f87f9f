//! C2SP signed notes (<https://c2sp.org/signed-note>) with Ed25519 keys, byte-compatible with
//! Go's `golang.org/x/mod/sumdb/note`.
//!
//! A note is a UTF-8 text ending in a newline, a blank line, then signature lines
//! `— <key name> <base64(key id (4 bytes, big-endian) || signature)>`. The key id is the first
//! four bytes of `SHA-256(key name || 0x0A || 0x01 || public key)`; `0x01` names Ed25519, the
//! only signature type here. Keys travel as strings:
//! - verifier key: `<name>+<key id, 8 hex digits>+<base64(0x01 || 32-byte public key)>`
//! - signer key (Go's format): `PRIVATE+KEY+<name>+<key id>+<base64(0x01 || 32-byte seed)>`
//!
//! Verification is the specification's: signatures by unknown keys are ignored (they may be
//! witnesses' cosignatures or a rotated key); a signature whose name and key id match a known
//! key must verify, or the whole note is rejected; at least one known key must have signed.
//! Deliberate differences from Go, all stricter, none affecting honest notes: every signature
//! line of a known key is verified, not only the first (Go skips repeats); base64 must be
//! canonical (Go's decoder ignores stray low bits, so one flipped bit there would go
//! unnoticed); Ed25519 verification is `verify_strict` (it also refuses small-order keys and
//! nonces); key names may not hold control characters.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// The signature type byte of Ed25519 in key ids and key strings.
const ED25519: u8 = 0x01;
/// The start of every signature line: an em dash (U+2014) and a space.
const SIGNATURE_PREFIX: &str = "\u{2014} ";
/// The most signature lines a note may carry (Go's limit; the specification asks for at
/// least 16). Bounds the work an untrusted note can cause.
pub const MAX_SIGNATURES: usize = 100;

/// A key string that cannot be used.
///
/// Messages never contain key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The string does not have the verifier or signer key layout.
    #[error("malformed key: {0}")]
    Malformed(&'static str),
    /// The key name is empty or has a space, a `+` or a control character.
    #[error(
        "invalid key name {0:?}: it must be non-empty, without spaces, '+' or control characters"
    )]
    InvalidName(String),
    /// The key is of a signature type other than Ed25519.
    #[error("unsupported signature type {0:#04x}: only Ed25519 (0x01) is supported")]
    UnsupportedAlgorithm(u8),
    /// The key id in the string is not the one the name and key give.
    #[error("key id {stated:08x} does not match the key, whose id is {computed:08x}")]
    KeyIdMismatch {
        /// The id written in the key string.
        stated: u32,
        /// The id computed from the name and public key.
        computed: u32,
    },
    /// The 32 bytes are not a valid Ed25519 public key.
    #[error("invalid Ed25519 public key")]
    InvalidPublicKey,
}

/// A note that is malformed or does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    /// The bytes are not a signed note (or a text cannot be signed as one).
    #[error("malformed note: {0}")]
    Malformed(&'static str),
    /// No signature is by a known key.
    #[error("no signature by a known key (signed by: {})", list_or_nobody(signers))]
    UnknownKey {
        /// `name+keyid` of each signature found, for the message.
        signers: Vec<String>,
    },
    /// A signature by a known key does not verify: the note was altered or forged.
    #[error("bad signature by key {name}+{key_id:08x}")]
    BadSignature {
        /// The key's name.
        name: String,
        /// The key's id.
        key_id: u32,
    },
    /// More than one of the given verifiers has this name and key id, with different keys.
    #[error("ambiguous key {name}+{key_id:08x}: several verifiers have this name and id")]
    AmbiguousKey {
        /// The key's name.
        name: String,
        /// The key's id.
        key_id: u32,
    },
}

fn list_or_nobody(signers: &[String]) -> String {
    if signers.is_empty() {
        "nobody".to_owned()
    } else {
        signers.join(", ")
    }
}

/// The key id of an Ed25519 key: the first 4 bytes (big-endian) of
/// `SHA-256(name || 0x0A || 0x01 || public key)`.
pub fn key_id(name: &str, public_key: &VerifyingKey) -> u32 {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([b'\n', ED25519]);
    hasher.update(public_key.as_bytes());
    let digest = hasher.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// Whether `name` may name a key: non-empty, no Unicode space, no `+`, and (stricter than
/// the specification, as such a name could never appear in a valid note) no control
/// character.
pub fn is_valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c == '+' || c.is_control())
}

fn check_name(name: &str) -> Result<(), KeyError> {
    if is_valid_key_name(name) {
        Ok(())
    } else {
        Err(KeyError::InvalidName(name.chars().take(64).collect()))
    }
}

/// Splits `<name>+<key id hex>+<base64(0x01 || 32 bytes)>` (a verifier key, or a signer key
/// after its `PRIVATE+KEY+`) into the name, the stated key id and the 32 key bytes.
fn parse_key_fields(key: &str) -> Result<(&str, u32, [u8; 32]), KeyError> {
    let mut fields = key.splitn(3, '+');
    let (Some(name), Some(id_hex), Some(key_b64)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(KeyError::Malformed("expected <name>+<key id>+<base64 key>"));
    };
    check_name(name)?;
    if id_hex.len() != 8 || !id_hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(KeyError::Malformed("the key id must be 8 hex digits"));
    }
    let stated = u32::from_str_radix(id_hex, 16)
        .map_err(|_| KeyError::Malformed("the key id must be 8 hex digits"))?;
    let key = Zeroizing::new(
        STANDARD
            .decode(key_b64)
            .map_err(|_| KeyError::Malformed("the key is not standard base64"))?,
    );
    let (&algorithm, material) = key
        .split_first()
        .ok_or(KeyError::Malformed("the key is empty"))?;
    if algorithm != ED25519 {
        return Err(KeyError::UnsupportedAlgorithm(algorithm));
    }
    let material: [u8; 32] = material
        .try_into()
        .map_err(|_| KeyError::Malformed("an Ed25519 key is 32 bytes"))?;
    Ok((name, stated, material))
}

/// The key id a key string states must be the one its name and key give.
fn check_key_id(stated: u32, computed: u32) -> Result<(), KeyError> {
    if stated == computed {
        Ok(())
    } else {
        Err(KeyError::KeyIdMismatch { stated, computed })
    }
}

/// A public key that verifies notes: its name, key id and Ed25519 key.
#[derive(Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    /// The name signature lines carry.
    name: String,
    /// Derived from the name and key; signature lines carry it too.
    key_id: u32,
    /// The Ed25519 public key.
    key: VerifyingKey,
}

impl NoteVerifier {
    /// The verifier for `key` under `name`.
    pub fn new(name: &str, key: VerifyingKey) -> Result<Self, KeyError> {
        check_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            key_id: key_id(name, &key),
            key,
        })
    }

    /// Parses a verifier key string `<name>+<key id hex>+<base64(0x01 || public key)>`.
    pub fn parse(vkey: &str) -> Result<Self, KeyError> {
        let (name, stated, public) = parse_key_fields(vkey)?;
        let key = VerifyingKey::from_bytes(&public).map_err(|_| KeyError::InvalidPublicKey)?;
        let verifier = Self::new(name, key)?;
        check_key_id(stated, verifier.key_id)?;
        Ok(verifier)
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key's id.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The Ed25519 public key.
    pub fn public_key(&self) -> &VerifyingKey {
        &self.key
    }

    /// Whether `signature` is this key's signature of `text`.
    fn verifies(&self, text: &[u8], signature: &[u8]) -> bool {
        let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
            return false;
        };
        self.key
            .verify_strict(text, &Signature::from_bytes(&bytes))
            .is_ok()
    }
}

impl fmt::Display for NoteVerifier {
    /// The verifier key string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut key = Vec::with_capacity(33);
        key.push(ED25519);
        key.extend_from_slice(self.key.as_bytes());
        write!(
            f,
            "{}+{:08x}+{}",
            self.name,
            self.key_id,
            STANDARD.encode(key)
        )
    }
}

impl fmt::Debug for NoteVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NoteVerifier")
            .field(&self.to_string())
            .finish()
    }
}

impl FromStr for NoteVerifier {
    type Err = KeyError;

    fn from_str(vkey: &str) -> Result<Self, KeyError> {
        Self::parse(vkey)
    }
}

/// A private key that signs notes: its name, key id and Ed25519 signing key.
///
/// Its `Debug` output leaves the secret out; the key itself is zeroized on drop by
/// ed25519-dalek.
#[derive(Clone)]
pub struct NoteSigner {
    /// The name written on signature lines.
    name: String,
    /// Derived from the name and the public key.
    key_id: u32,
    /// The secret key.
    key: SigningKey,
}

impl NoteSigner {
    /// The signer for the Ed25519 key with this 32-byte secret seed, under `name`. The seed
    /// comes from the caller (a key store, or a CSPRNG at key generation): this crate does
    /// no IO.
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, KeyError> {
        check_name(name)?;
        let key = SigningKey::from_bytes(seed);
        Ok(Self {
            name: name.to_owned(),
            key_id: key_id(name, &key.verifying_key()),
            key,
        })
    }

    /// Parses a signer key string in Go's format
    /// `PRIVATE+KEY+<name>+<key id hex>+<base64(0x01 || seed)>`, checking that the key id is
    /// that of the seed's public key.
    pub fn parse(skey: &str) -> Result<Self, KeyError> {
        let rest = skey
            .strip_prefix("PRIVATE+KEY+")
            .ok_or(KeyError::Malformed("a signer key starts with PRIVATE+KEY+"))?;
        let (name, stated, seed) = parse_key_fields(rest)?;
        let signer = Self::from_seed(name, &Zeroizing::new(seed))?;
        check_key_id(stated, signer.key_id)?;
        Ok(signer)
    }

    /// The signer key string (Go's format). It is the secret: store it like one.
    pub fn to_key_string(&self) -> Zeroizing<String> {
        let mut key = Zeroizing::new(Vec::with_capacity(33));
        key.push(ED25519);
        key.extend_from_slice(self.key.as_bytes());
        Zeroizing::new(format!(
            "PRIVATE+KEY+{}+{:08x}+{}",
            self.name,
            self.key_id,
            STANDARD.encode(&*key)
        ))
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key's id.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The matching verifier (public key).
    pub fn verifier(&self) -> NoteVerifier {
        NoteVerifier {
            name: self.name.clone(),
            key_id: self.key_id,
            key: self.key.verifying_key(),
        }
    }
}

impl fmt::Debug for NoteSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoteSigner")
            .field("name", &self.name)
            .field("key_id", &format_args!("{:08x}", self.key_id))
            .field("key", &"<redacted>")
            .finish()
    }
}

/// One signature line of a note, parsed but not (yet) verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name on the line.
    name: String,
    /// The key id (the first 4 bytes of the base64 payload).
    key_id: u32,
    /// The signature proper (the rest of the payload).
    signature: Vec<u8>,
}

impl NoteSignature {
    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The signature bytes (without the key id).
    pub fn signature(&self) -> &[u8] {
        &self.signature
    }

    /// Parses one line (without its newline) `— <name> <base64(key id || signature)>`.
    fn parse(line: &str) -> Result<Self, NoteError> {
        let line = line
            .strip_prefix(SIGNATURE_PREFIX)
            .ok_or(NoteError::Malformed(
                "a signature line must start with an em dash and a space",
            ))?;
        let (name, payload) = line.split_once(' ').ok_or(NoteError::Malformed(
            "a signature line must be <em dash> <name> <base64>",
        ))?;
        if !is_valid_key_name(name) {
            return Err(NoteError::Malformed("invalid key name on a signature line"));
        }
        let payload = STANDARD
            .decode(payload)
            .map_err(|_| NoteError::Malformed("a signature is not standard base64"))?;
        match payload.as_slice() {
            [a, b, c, d, signature @ ..] if !signature.is_empty() => Ok(Self {
                name: name.to_owned(),
                key_id: u32::from_be_bytes([*a, *b, *c, *d]),
                signature: signature.to_vec(),
            }),
            _ => Err(NoteError::Malformed(
                "a signature must hold a 4-byte key id and a signature",
            )),
        }
    }

    /// `name+keyid`, as verifier keys start.
    fn signer(&self) -> String {
        format!("{}+{:08x}", self.name, self.key_id)
    }
}

impl fmt::Display for NoteSignature {
    /// The signature line, without its newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut payload = Vec::with_capacity(4 + self.signature.len());
        payload.extend_from_slice(&self.key_id.to_be_bytes());
        payload.extend_from_slice(&self.signature);
        write!(
            f,
            "{SIGNATURE_PREFIX}{} {}",
            self.name,
            STANDARD.encode(payload)
        )
    }
}

/// A signed note: its text and signatures. Parsing checks the syntax only;
/// [`Note::verify`] checks the signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The signed text, ending in a newline.
    text: String,
    /// The signature lines, in order.
    signatures: Vec<NoteSignature>,
}

/// Checks what the specification requires of a whole note: UTF-8 (the type guarantees it)
/// without control characters other than newline.
fn check_characters(text: &str) -> Result<(), NoteError> {
    if text.chars().any(|c| c < ' ' && c != '\n') {
        return Err(NoteError::Malformed(
            "a note must not contain control characters other than newline",
        ));
    }
    Ok(())
}

impl Note {
    /// A note with this text and no signature yet. The text must end in a newline and
    /// contain no control character other than newlines.
    pub fn new(text: &str) -> Result<Self, NoteError> {
        if !text.ends_with('\n') {
            return Err(NoteError::Malformed("the text must end with a newline"));
        }
        check_characters(text)?;
        Ok(Self {
            text: text.to_owned(),
            signatures: Vec::new(),
        })
    }

    /// A note from a text its caller has already made valid (see [`Note::new`]).
    pub(crate) fn from_valid_text(text: String) -> Self {
        Self {
            text,
            signatures: Vec::new(),
        }
    }

    /// Parses a signed note (syntax only; nothing is verified).
    pub fn parse(msg: &[u8]) -> Result<Self, NoteError> {
        let msg = std::str::from_utf8(msg)
            .map_err(|_| NoteError::Malformed("a note must be valid UTF-8"))?;
        check_characters(msg)?;
        // The text ends at the last blank line; signature lines never contain one.
        let split = msg.rfind("\n\n").ok_or(NoteError::Malformed(
            "no blank line separates the text from the signatures",
        ))?;
        let (text, signatures) = (&msg[..split + 1], &msg[split + 2..]);
        let lines = signatures.strip_suffix('\n').ok_or(NoteError::Malformed(
            "a note must end with a signature line",
        ))?;
        let mut parsed = Vec::new();
        for line in lines.split('\n') {
            if parsed.len() == MAX_SIGNATURES {
                return Err(NoteError::Malformed("more than 100 signatures"));
            }
            parsed.push(NoteSignature::parse(line)?);
        }
        Ok(Self {
            text: text.to_owned(),
            signatures: parsed,
        })
    }

    /// The signed text, with its final newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The signatures, in order.
    pub fn signatures(&self) -> &[NoteSignature] {
        &self.signatures
    }

    /// Signs the text with `signer`, replacing any signature with the same name and key id
    /// (a cosigner adds its line to the existing ones).
    pub fn sign(&mut self, signer: &NoteSigner) {
        let signature = signer.key.sign(self.text.as_bytes()).to_bytes().to_vec();
        self.signatures
            .retain(|s| !(s.name == signer.name && s.key_id == signer.key_id));
        self.signatures.push(NoteSignature {
            name: signer.name.clone(),
            key_id: signer.key_id,
            signature,
        });
    }

    /// Verifies the signatures against `verifiers`, as the specification asks: every
    /// signature by a known key verifies, signatures by unknown keys are ignored, and at
    /// least one known key signed. Returns the verified signatures.
    pub fn verify(&self, verifiers: &[NoteVerifier]) -> Result<Vec<&NoteSignature>, NoteError> {
        let mut verified = Vec::new();
        for signature in &self.signatures {
            let mut matching = verifiers
                .iter()
                .filter(|v| v.name == signature.name && v.key_id == signature.key_id);
            let Some(verifier) = matching.next() else {
                continue;
            };
            if matching.any(|other| other.key != verifier.key) {
                return Err(NoteError::AmbiguousKey {
                    name: signature.name.clone(),
                    key_id: signature.key_id,
                });
            }
            if !verifier.verifies(self.text.as_bytes(), &signature.signature) {
                return Err(NoteError::BadSignature {
                    name: signature.name.clone(),
                    key_id: signature.key_id,
                });
            }
            verified.push(signature);
        }
        if verified.is_empty() {
            return Err(NoteError::UnknownKey {
                signers: self.signatures.iter().map(NoteSignature::signer).collect(),
            });
        }
        Ok(verified)
    }
}

impl fmt::Display for Note {
    /// The signed note: text, blank line, one line per signature. (Without signatures that
    /// is not yet a valid signed note.)
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.text)?;
        for signature in &self.signatures {
            writeln!(f, "{signature}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signer_debug_hides_the_secret() {
        let signer = NoteSigner::from_seed("log.example", &[7; 32]).unwrap();
        let debug = format!("{signer:?}");
        let secret = STANDARD.encode([7u8; 32]);
        assert!(!debug.contains(&secret), "{debug}");
        assert!(debug.contains("redacted"));
    }

    #[test]
    fn key_names() {
        for good in ["a", "example.com/log42", "ünïcödé"] {
            assert!(is_valid_key_name(good), "{good:?}");
        }
        for bad in [
            "",
            "a b",
            "a+b",
            "a\tb",
            "a\u{a0}b",
            "a\u{2003}b",
            "a\u{1}b",
            "a\nb",
        ] {
            assert!(!is_valid_key_name(bad), "{bad:?}");
        }
    }
}
