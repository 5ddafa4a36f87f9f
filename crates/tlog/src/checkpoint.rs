//! C2SP tlog checkpoints (<https://c2sp.org/tlog-checkpoint>): a log's signed tree head as a
//! signed note.
//!
//! The note text is `<origin>\n<tree size, decimal>\n<root hash, base64>\n` followed by
//! optional extension lines, every line non-empty. The size has no leading zeros (`0` for the
//! empty tree); the root hash is the standard, padded base64 of 32 bytes. Parsing accepts
//! only that canonical form, so one tree head has exactly one text and one flipped byte
//! anywhere either breaks the syntax or the signature.
//!
//! The Go sumdb, Sigstore and Trillian tooling read and write this format; the ledger signs
//! one every few seconds and an auditor opens it with [`Checkpoint::open`], then checks
//! proofs against it ([`Checkpoint::verify_inclusion`], [`Checkpoint::verify_extends`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::hash::Hash;
use crate::note::{Note, NoteError, NoteSigner, NoteVerifier};
use crate::proof::{self, ProofError};

/// A checkpoint that is malformed, does not verify, or is not the expected log's.
///
/// Values quoted from the input are cut to 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The signed note around the checkpoint is malformed or its signatures do not verify.
    #[error(transparent)]
    Note(#[from] NoteError),
    /// The checkpoint is another log's.
    #[error("checkpoint origin is {found:?}, expected {expected:?}")]
    OriginMismatch {
        /// The origin the caller expects.
        expected: String,
        /// The origin in the checkpoint.
        found: String,
    },
    /// The note text does not have the checkpoint layout.
    #[error("malformed checkpoint: {0}")]
    Malformed(&'static str),
    /// The size line is not a canonical decimal `u64`.
    #[error("invalid tree size {0:?}: expected a decimal number without leading zeros")]
    InvalidSize(String),
    /// The root hash line is not the canonical base64 of 32 bytes.
    #[error("invalid root hash {0:?}: expected the standard base64 of 32 bytes")]
    InvalidRootHash(String),
    /// An origin or extension line given to [`Checkpoint::new`] or
    /// [`Checkpoint::with_extension`] is empty or has a control character (a newline
    /// included).
    #[error("invalid {field} line {value:?}: it must be non-empty, without control characters")]
    InvalidLine {
        /// `"origin"` or `"extension"`.
        field: &'static str,
        /// The rejected line.
        value: String,
    },
}

fn clip(value: &str) -> String {
    value.chars().take(64).collect()
}

/// A log's tree head: its origin (the log's identity), size and root hash, and any
/// extension lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's identity, e.g. `fairdeal.example/ledger`; the first line.
    origin: String,
    /// The number of leaves.
    size: u64,
    /// The RFC 9162 root hash at that size.
    root_hash: Hash,
    /// Opaque extra lines (the specification discourages them: monitors cannot audit them).
    extensions: Vec<String>,
}

fn check_line(field: &'static str, value: &str) -> Result<(), CheckpointError> {
    if value.is_empty() || value.chars().any(char::is_control) {
        return Err(CheckpointError::InvalidLine {
            field,
            value: clip(value),
        });
    }
    Ok(())
}

impl Checkpoint {
    /// The checkpoint of the tree of `size` leaves with root `root_hash` in log `origin`.
    pub fn new(origin: &str, size: u64, root_hash: Hash) -> Result<Self, CheckpointError> {
        check_line("origin", origin)?;
        Ok(Self {
            origin: origin.to_owned(),
            size,
            root_hash,
            extensions: Vec::new(),
        })
    }

    /// Adds an extension line.
    pub fn with_extension(mut self, line: &str) -> Result<Self, CheckpointError> {
        check_line("extension", line)?;
        self.extensions.push(line.to_owned());
        Ok(self)
    }

    /// The log's origin line.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The tree size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The root hash.
    pub fn root_hash(&self) -> &Hash {
        &self.root_hash
    }

    /// The extension lines.
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    /// The note text: origin, size and root lines, then extension lines, each with its
    /// newline.
    pub fn body(&self) -> String {
        let mut body = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root_hash)
        );
        for line in &self.extensions {
            body.push_str(line);
            body.push('\n');
        }
        body
    }

    /// Parses a note text as a checkpoint body (no signature involved).
    pub fn parse_body(text: &str) -> Result<Self, CheckpointError> {
        let lines = text.strip_suffix('\n').ok_or(CheckpointError::Malformed(
            "the text must end with a newline",
        ))?;
        let mut lines = lines.split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(CheckpointError::Malformed(
                "a checkpoint has at least three lines: origin, size and root hash",
            ));
        };
        if origin.is_empty() {
            return Err(CheckpointError::Malformed("the origin line is empty"));
        }
        let size = parse_size(size)?;
        let root_hash = parse_root_hash(root)?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if extensions.iter().any(String::is_empty) {
            return Err(CheckpointError::Malformed(
                "a checkpoint has no empty line (extension lines are non-empty)",
            ));
        }
        Ok(Self {
            origin: origin.to_owned(),
            size,
            root_hash,
            extensions,
        })
    }

    /// The signed checkpoint: a signed note with one signature by `signer`.
    ///
    /// The key name should be the origin (the specification recommends it); that is the
    /// caller's choice.
    pub fn sign(&self, signer: &NoteSigner) -> String {
        let mut note = self.to_note();
        note.sign(signer);
        note.to_string()
    }

    /// The checkpoint as an unsigned note, for adding signatures (cosigners) one by one.
    pub fn to_note(&self) -> Note {
        // The body is always a valid note text: origin and extension lines are checked on
        // the way in (non-empty, no control character), size and hash are ASCII, and it
        // ends with a newline. A test pins this against `Note::new`.
        Note::from_valid_text(self.body())
    }

    /// Opens a signed checkpoint: parses the note, verifies it against `verifiers` (see
    /// [`Note::verify`]), parses the body and checks that its origin is `expected_origin`.
    pub fn open(
        msg: &[u8],
        expected_origin: &str,
        verifiers: &[NoteVerifier],
    ) -> Result<Self, CheckpointError> {
        let note = Note::parse(msg)?;
        note.verify(verifiers)?;
        let checkpoint = Self::parse_body(note.text())?;
        if checkpoint.origin != expected_origin {
            return Err(CheckpointError::OriginMismatch {
                expected: clip(expected_origin),
                found: clip(&checkpoint.origin),
            });
        }
        Ok(checkpoint)
    }

    /// Verifies that the leaf with hash `leaf_hash` is leaf `index` of this tree.
    pub fn verify_inclusion(
        &self,
        leaf_hash: &Hash,
        index: u64,
        proof: &[Hash],
    ) -> Result<(), ProofError> {
        proof::verify_inclusion(leaf_hash, index, self.size, proof, &self.root_hash)
    }

    /// Verifies that this tree extends `older` (the same log at an earlier or equal size),
    /// given the consistency proof from `older.size()` to `self.size()`.
    pub fn verify_extends(&self, older: &Checkpoint, proof: &[Hash]) -> Result<(), ProofError> {
        proof::verify_consistency(
            older.size,
            self.size,
            proof,
            &older.root_hash,
            &self.root_hash,
        )
    }
}

/// A tree size line: ASCII digits, no sign, no leading zero unless it is `0`, fits `u64`.
fn parse_size(line: &str) -> Result<u64, CheckpointError> {
    let canonical = !line.is_empty()
        && line.bytes().all(|b| b.is_ascii_digit())
        && (line == "0" || !line.starts_with('0'));
    if !canonical {
        return Err(CheckpointError::InvalidSize(clip(line)));
    }
    line.parse()
        .map_err(|_| CheckpointError::InvalidSize(clip(line)))
}

/// A root hash line: the canonical (padded, no stray bits) standard base64 of 32 bytes.
fn parse_root_hash(line: &str) -> Result<Hash, CheckpointError> {
    let invalid = || CheckpointError::InvalidRootHash(clip(line));
    let bytes = STANDARD.decode(line).map_err(|_| invalid())?;
    let hash = Hash::try_from(bytes.as_slice()).map_err(|_| invalid())?;
    if STANDARD.encode(hash) != line {
        return Err(invalid());
    }
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_checkpoint_body_is_a_note_text() {
        let checkpoint = Checkpoint::new("o", u64::MAX, [0xff; 32])
            .unwrap()
            .with_extension("x y z")
            .unwrap();
        assert_eq!(
            Note::new(&checkpoint.body()).unwrap().text(),
            checkpoint.body()
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("20852163"), Ok(20_852_163));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        for bad in [
            "",
            "00",
            "01",
            "+1",
            "-1",
            "1 ",
            " 1",
            "1.0",
            "0x10",
            "18446744073709551616",
            "١",
        ] {
            assert!(
                matches!(parse_size(bad), Err(CheckpointError::InvalidSize(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn root_hashes() {
        let line = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=";
        assert_eq!(STANDARD.encode(parse_root_hash(line).unwrap()), line);
        for bad in [
            "",
            "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I", // no padding
            "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=", // stray low bits
            "CsUYapGGPo4dkMgIAUqom_Xajj7h2fB2MPA3j2jxq2I=", // URL alphabet
            "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxqw==", // 31 bytes
            "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2IA", // 33 bytes
        ] {
            assert!(
                matches!(
                    parse_root_hash(bad),
                    Err(CheckpointError::InvalidRootHash(_))
                ),
                "{bad:?}"
            );
        }
    }
}
