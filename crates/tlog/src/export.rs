//! The game export format: NDJSON, one [`Line`] per line, written by the ledger service and
//! read by `fairdeal audit`. Both link this module, so the two sides cannot drift.
//!
//! # Format 2 (`fairdeal-game-export/2`, what the ledger writes now)
//!
//! ```text
//! {"kind":"header","format":"fairdeal-game-export/2","table_id":"…","checkpoint":"<signed note>","server_seed":"…"}
//! {"kind":"consistency","old_size":120,"proof":["<base64 hash>",…]}
//! {"kind":"event","leaf_index":7,"leaf_format":2,"leaf":"<base64, 65 bytes>","proof":["<base64 hash>",…],"stream_id":"table-…","version":1,"event_type":"fairdeal.tables.v1.TableCreated","disclosure":"full","envelope":"<base64>","body_salt":"<base64, 32 bytes>","chain_salt":"<base64, 32 bytes>"}
//! {"kind":"event",…,"disclosure":"body","body":"<base64>","body_salt":"<base64, 32 bytes>"}
//! {"kind":"event",…,"disclosure":"withheld_personal"}
//! {"kind":"event",…,"disclosure":"erased"}
//! {"kind":"event","leaf_index":3,"leaf_format":1,"proof":[…],…,"disclosure":"full","envelope":"<base64>"}
//! {"kind":"event","leaf_index":4,"leaf_format":1,"leaf_hash":"<base64, 32 bytes>","proof":[…],…,"disclosure":"withheld_personal"}
//! ```
//!
//! - The header comes first, once. `checkpoint` is the whole signed note (C2SP
//!   tlog-checkpoint); every proof of the file is against its tree size and root.
//!   `server_seed` is the table's revealed server seed.
//! - A `consistency` line proves that the tree of `old_size` (a checkpoint the auditor kept
//!   from before) is a prefix of the export's tree.
//! - An `event` line ([`EventLine`]) is one leaf, in leaf order, with its inclusion `proof`
//!   at the checkpoint's size, and its content disclosed as the ledger's visibility rule
//!   discloses it to anyone ([`Disclosure`]). Fields a line does not need are omitted,
//!   never empty; which ones a line has is fixed by `leaf_format` and `disclosure`:
//!
//!   | `leaf_format` | `disclosure`             | fields                                        |
//!   |---------------|--------------------------|-----------------------------------------------|
//!   | 2             | `full`                   | `leaf`, `envelope`, `body_salt`, `chain_salt` |
//!   | 2             | `body`                   | `leaf`, `body`, `body_salt`                   |
//!   | 2             | withheld\_\*, `erased`   | `leaf`                                        |
//!   | 1             | `full`                   | `envelope` (the leaf itself)                  |
//!   | 1             | any other                | `leaf_hash`                                   |
//!
//!   - Leaf format 2 is [`crate::entry`]: `leaf` is the 65-byte entry, `envelope` the whole
//!     `fairdeal.event.v1.Envelope` (hash included) in its canonical encoding, `body` its
//!     canonical bytes with `prev_hash` and `hash` empty (what the body commitment commits
//!     to), `body_salt` and `chain_salt` the commitments' salts.
//!   - Leaf format 1 (a leaf written before format 2) is the envelope itself: in full, the
//!     line's `envelope` is the leaf; otherwise the line carries only `leaf_hash`, SHA-256(0x00
//!     || leaf), so that its inclusion still verifies. A format 1 leaf has no commitment a
//!     body could be checked against, so a `body` disclosure of one carries only its hash.
//!   - `stream_id`, `version` and `event_type` are what the ledger recorded of the event. A
//!     reader checks them against the envelope (or body) when one is disclosed; for a
//!     withheld or erased line they are the ledger's word only, bound to nothing the reader
//!     can open.
//!
//! # Format 1 (`fairdeal-game-export/1`, written before format 2; [`v1`])
//!
//! ```text
//! {"kind":"header","format":"fairdeal-game-export/1",…}
//! {"kind":"consistency",…}
//! {"kind":"event","leaf_index":7,"stream_id":"table-…","version":1,"event_type":"fairdeal.tables.v1.TableCreated","envelope":"<base64>","proof":["<base64 hash>",…]}
//! ```
//!
//! Header and consistency lines are format 2's. Every leaf is format 1 and every event is
//! disclosed: `envelope` is the base64 of the leaf bytes (the envelope, `hash` included),
//! and `stream_id`, `version` and `event_type` repeat the envelope's for readers.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::entry::Salt;
use crate::hash::{Hash, leaf_hash};

/// The value of the header's `format`: format 2, what the ledger writes.
pub const FORMAT: &str = "fairdeal-game-export/2";

/// The value of the header's `format` in format 1 exports (read with [`v1::Line`]).
pub const FORMAT_V1: &str = "fairdeal-game-export/1";

/// One line of a format 2 export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Line {
    /// The first line.
    Header(Header),
    /// A consistency proof from an older tree size.
    Consistency(Consistency),
    /// One event (leaf) with its inclusion proof.
    Event(EventLine),
}

/// The header line (both formats).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// [`FORMAT`] (or [`FORMAT_V1`]).
    pub format: String,
    /// The game (table) id.
    pub table_id: String,
    /// The signed checkpoint note every proof is against.
    pub checkpoint: String,
    /// The table's revealed server seed.
    pub server_seed: String,
}

/// A consistency line (both formats).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consistency {
    /// The older tree size.
    pub old_size: u64,
    /// The proof's hashes, base64.
    pub proof: Vec<String>,
}

/// What of an event's content the ledger's visibility rule lets anyone see
/// (`fairdeal.ledger.v1.Disclosure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disclosure {
    /// All of it: the envelope and (leaf format 2) both salts.
    Full,
    /// A public event of a game in play: its body and body salt, not its chain link.
    Body,
    /// A private event (a hand, a deal, the seed) of a game that has not finished.
    WithheldGame,
    /// Personal content (accounts, chat, single-player bets): never disclosed.
    WithheldPersonal,
    /// Erased for good: a removed chat line, a deleted account's content.
    Erased,
    /// A type no visibility rule names yet.
    WithheldUnknown,
}

impl Disclosure {
    /// The name the export writes (`full`, `withheld_personal`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Body => "body",
            Self::WithheldGame => "withheld_game",
            Self::WithheldPersonal => "withheld_personal",
            Self::Erased => "erased",
            Self::WithheldUnknown => "withheld_unknown",
        }
    }
}

impl std::fmt::Display for Disclosure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A leaf's format: written as the number 1 or 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum LeafFormat {
    /// 1: the leaf is the event's envelope bytes (leaves written before format 2).
    V1,
    /// 2: the leaf is a [`crate::Entry`], salted commitments to the event.
    V2,
}

impl From<LeafFormat> for u8 {
    fn from(format: LeafFormat) -> Self {
        match format {
            LeafFormat::V1 => 1,
            LeafFormat::V2 => 2,
        }
    }
}

impl TryFrom<u8> for LeafFormat {
    type Error = String;

    fn try_from(n: u8) -> Result<Self, Self::Error> {
        match n {
            1 => Ok(Self::V1),
            2 => Ok(Self::V2),
            _ => Err(format!("leaf_format {n}: 1 or 2")),
        }
    }
}

/// A format 2 event line, as written. [`EventLine::new`] writes one from its [`Content`] and
/// [`EventLine::content`] reads that back, checking that the line has exactly the fields its
/// leaf format and disclosure call for (the table in the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventLine {
    /// The leaf index.
    pub leaf_index: u64,
    /// The leaf's format.
    pub leaf_format: LeafFormat,
    /// Leaf format 2: the leaf bytes (the entry), base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf: Option<String>,
    /// Leaf format 1 not disclosed in full: SHA-256(0x00 || leaf), base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_hash: Option<String>,
    /// The inclusion proof's hashes, base64.
    pub proof: Vec<String>,
    /// The event's stream id, as the ledger recorded it.
    pub stream_id: String,
    /// The event's stream version, as the ledger recorded it.
    pub version: u64,
    /// The event's type, as the ledger recorded it.
    pub event_type: String,
    /// What of the event the line discloses.
    pub disclosure: Disclosure,
    /// `full`: the whole envelope (hash included), base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<String>,
    /// `body` (leaf format 2): the envelope's canonical bytes without `prev_hash` and `hash`,
    /// base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Leaf format 2, `full` or `body`: the body commitment's salt, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_salt: Option<String>,
    /// Leaf format 2, `full`: the chain commitment's salt, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_salt: Option<String>,
}

/// What an event line carries, decoded: one variant per row of the module doc's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Leaf format 1, `full`: the leaf is the envelope.
    V1Envelope {
        /// The envelope bytes (the leaf).
        envelope: Vec<u8>,
    },
    /// Leaf format 1, not `full`: only the leaf's hash.
    V1Sealed {
        /// Any disclosure but [`Disclosure::Full`].
        disclosure: Disclosure,
        /// SHA-256(0x00 || leaf).
        leaf_hash: Hash,
    },
    /// Leaf format 2, `full`.
    Full {
        /// The entry's bytes.
        leaf: Vec<u8>,
        /// The whole envelope, hash included.
        envelope: Vec<u8>,
        /// The body commitment's salt.
        body_salt: Salt,
        /// The chain commitment's salt.
        chain_salt: Salt,
    },
    /// Leaf format 2, `body`.
    Body {
        /// The entry's bytes.
        leaf: Vec<u8>,
        /// The envelope's canonical bytes without `prev_hash` and `hash`.
        body: Vec<u8>,
        /// The body commitment's salt.
        body_salt: Salt,
    },
    /// Leaf format 2, withheld or erased.
    Sealed {
        /// Any disclosure but [`Disclosure::Full`] and [`Disclosure::Body`].
        disclosure: Disclosure,
        /// The entry's bytes.
        leaf: Vec<u8>,
    },
}

impl Content {
    /// The line's disclosure.
    pub fn disclosure(&self) -> Disclosure {
        match self {
            Self::V1Envelope { .. } | Self::Full { .. } => Disclosure::Full,
            Self::Body { .. } => Disclosure::Body,
            Self::V1Sealed { disclosure, .. } | Self::Sealed { disclosure, .. } => *disclosure,
        }
    }

    /// The leaf's format.
    pub fn leaf_format(&self) -> LeafFormat {
        match self {
            Self::V1Envelope { .. } | Self::V1Sealed { .. } => LeafFormat::V1,
            Self::Full { .. } | Self::Body { .. } | Self::Sealed { .. } => LeafFormat::V2,
        }
    }

    /// The leaf hash its inclusion proof proves: of the leaf bytes, or the given hash.
    pub fn leaf_hash(&self) -> Hash {
        match self {
            Self::V1Envelope { envelope: leaf }
            | Self::Full { leaf, .. }
            | Self::Body { leaf, .. }
            | Self::Sealed { leaf, .. } => leaf_hash(leaf),
            Self::V1Sealed { leaf_hash, .. } => *leaf_hash,
        }
    }
}

/// Why an event line's fields do not make a [`Content`]; each names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// A field the line's leaf format and disclosure call for is absent.
    #[error("{field} is missing (leaf_format {leaf_format}, disclosure {disclosure})")]
    Missing {
        /// The field.
        field: &'static str,
        /// The line's leaf format.
        leaf_format: u8,
        /// The line's disclosure.
        disclosure: Disclosure,
    },
    /// A field the line's leaf format and disclosure do not allow is present.
    #[error("{field} is not expected (leaf_format {leaf_format}, disclosure {disclosure})")]
    Unexpected {
        /// The field.
        field: &'static str,
        /// The line's leaf format.
        leaf_format: u8,
        /// The line's disclosure.
        disclosure: Disclosure,
    },
    /// A field is not base64.
    #[error("{field}: {reason}")]
    Base64 {
        /// The field.
        field: &'static str,
        /// The decoder's complaint.
        reason: String,
    },
    /// A fixed-size field has another size.
    #[error("{field}: {len} bytes, not {expected}")]
    Length {
        /// The field.
        field: &'static str,
        /// Its size.
        len: usize,
        /// The size it must have.
        expected: usize,
    },
}

impl EventLine {
    /// The line of leaf `leaf_index` with its inclusion `proof`, the ledger's record of the
    /// event (`stream_id`, `version`, `event_type`) and the `content` its disclosure allows.
    pub fn new(
        leaf_index: u64,
        proof: &[Hash],
        stream_id: String,
        version: u64,
        event_type: String,
        content: &Content,
    ) -> Self {
        let mut line = Self {
            leaf_index,
            leaf_format: content.leaf_format(),
            leaf: None,
            leaf_hash: None,
            proof: encode_hashes(proof),
            stream_id,
            version,
            event_type,
            disclosure: content.disclosure(),
            envelope: None,
            body: None,
            body_salt: None,
            chain_salt: None,
        };
        match content {
            Content::V1Envelope { envelope } => line.envelope = Some(encode_bytes(envelope)),
            Content::V1Sealed { leaf_hash, .. } => line.leaf_hash = Some(encode_bytes(leaf_hash)),
            Content::Full {
                leaf,
                envelope,
                body_salt,
                chain_salt,
            } => {
                line.leaf = Some(encode_bytes(leaf));
                line.envelope = Some(encode_bytes(envelope));
                line.body_salt = Some(encode_bytes(body_salt));
                line.chain_salt = Some(encode_bytes(chain_salt));
            }
            Content::Body {
                leaf,
                body,
                body_salt,
            } => {
                line.leaf = Some(encode_bytes(leaf));
                line.body = Some(encode_bytes(body));
                line.body_salt = Some(encode_bytes(body_salt));
            }
            Content::Sealed { leaf, .. } => line.leaf = Some(encode_bytes(leaf)),
        }
        line
    }

    /// The line's content, decoded; an error names the first field that is missing, not
    /// allowed, not base64 or of the wrong size. A `Full` or `Body` content's bytes are not
    /// checked against the leaf here: that is the reader's opening.
    pub fn content(&self) -> Result<Content, LineError> {
        // The fields each combination needs; every other optional field must be absent.
        let needed: &[&'static str] = match (self.leaf_format, self.disclosure) {
            (LeafFormat::V1, Disclosure::Full) => &["envelope"],
            (LeafFormat::V1, _) => &["leaf_hash"],
            (LeafFormat::V2, Disclosure::Full) => &["leaf", "envelope", "body_salt", "chain_salt"],
            (LeafFormat::V2, Disclosure::Body) => &["leaf", "body", "body_salt"],
            (LeafFormat::V2, _) => &["leaf"],
        };
        let fields = [
            ("leaf", &self.leaf),
            ("leaf_hash", &self.leaf_hash),
            ("envelope", &self.envelope),
            ("body", &self.body),
            ("body_salt", &self.body_salt),
            ("chain_salt", &self.chain_salt),
        ];
        let leaf_format = u8::from(self.leaf_format);
        for (field, value) in fields {
            match (needed.contains(&field), value.is_some()) {
                (true, false) => {
                    return Err(LineError::Missing {
                        field,
                        leaf_format,
                        disclosure: self.disclosure,
                    });
                }
                (false, true) => {
                    return Err(LineError::Unexpected {
                        field,
                        leaf_format,
                        disclosure: self.disclosure,
                    });
                }
                _ => {}
            }
        }
        let bytes = |field: &'static str, value: &Option<String>| -> Result<Vec<u8>, LineError> {
            decode_bytes(value.as_deref().unwrap_or_default())
                .map_err(|reason| LineError::Base64 { field, reason })
        };
        // Salts and hashes: 32 bytes each.
        let fixed = |field: &'static str, value: &Option<String>| -> Result<[u8; 32], LineError> {
            let b = bytes(field, value)?;
            <[u8; 32]>::try_from(b.as_slice()).map_err(|_| LineError::Length {
                field,
                len: b.len(),
                expected: 32,
            })
        };
        Ok(match (self.leaf_format, self.disclosure) {
            (LeafFormat::V1, Disclosure::Full) => Content::V1Envelope {
                envelope: bytes("envelope", &self.envelope)?,
            },
            (LeafFormat::V1, disclosure) => Content::V1Sealed {
                disclosure,
                leaf_hash: fixed("leaf_hash", &self.leaf_hash)?,
            },
            (LeafFormat::V2, Disclosure::Full) => Content::Full {
                leaf: bytes("leaf", &self.leaf)?,
                envelope: bytes("envelope", &self.envelope)?,
                body_salt: fixed("body_salt", &self.body_salt)?,
                chain_salt: fixed("chain_salt", &self.chain_salt)?,
            },
            (LeafFormat::V2, Disclosure::Body) => Content::Body {
                leaf: bytes("leaf", &self.leaf)?,
                body: bytes("body", &self.body)?,
                body_salt: fixed("body_salt", &self.body_salt)?,
            },
            (LeafFormat::V2, disclosure) => Content::Sealed {
                disclosure,
                leaf: bytes("leaf", &self.leaf)?,
            },
        })
    }
}

/// Format 1 (`fairdeal-game-export/1`): what the ledger wrote before format 2, kept so that
/// those files stay auditable.
pub mod v1 {
    use serde::{Deserialize, Serialize};

    pub use super::{Consistency, Header};

    /// One line of a format 1 export.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
    pub enum Line {
        /// The first line.
        Header(Header),
        /// A consistency proof from an older tree size.
        Consistency(Consistency),
        /// One event (leaf) with its inclusion proof.
        Event(EventLine),
    }

    /// A format 1 event line: the leaf is the envelope, always disclosed.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct EventLine {
        /// The leaf index.
        pub leaf_index: u64,
        /// The envelope's stream id (for readers).
        pub stream_id: String,
        /// The envelope's stream version (for readers).
        pub version: u64,
        /// The envelope's event type (for readers).
        pub event_type: String,
        /// The leaf bytes (the envelope, hash included), base64.
        pub envelope: String,
        /// The inclusion proof's hashes, base64.
        pub proof: Vec<String>,
    }
}

/// Hashes as the export writes them (base64).
pub fn encode_hashes(hashes: &[Hash]) -> Vec<String> {
    hashes.iter().map(|h| STANDARD.encode(h)).collect()
}

/// Bytes as the export writes them (base64).
pub fn encode_bytes(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Base64 back into bytes; the error says why not.
pub fn decode_bytes(text: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(text)
        .map_err(|e| format!("not base64: {e}"))
}

/// Base64 hashes back into hashes; the error names the entry.
pub fn decode_hashes(texts: &[String]) -> Result<Vec<Hash>, String> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let bytes = decode_bytes(text).map_err(|e| format!("proof[{i}]: {e}"))?;
            Hash::try_from(bytes.as_slice())
                .map_err(|_| format!("proof[{i}]: {} bytes, not 32", bytes.len()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::entry::Entry;

    #[test]
    fn format_1_lines_round_trip_and_refuse_unknown_fields() {
        let line = v1::Line::Event(v1::EventLine {
            leaf_index: 3,
            stream_id: "table-1".into(),
            version: 2,
            event_type: "t.v1.X".into(),
            envelope: encode_bytes(b"abc"),
            proof: encode_hashes(&[[7; 32]]),
        });
        let text = serde_json::to_string(&line).unwrap();
        assert!(
            text.starts_with(r#"{"kind":"event","leaf_index":3"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<v1::Line>(&text).unwrap(), line);
        let extra = text.replace(r#""version":2"#, r#""version":2,"x":1"#);
        assert!(serde_json::from_str::<v1::Line>(&extra).is_err());
        // A format 1 event line is not a format 2 one.
        assert!(serde_json::from_str::<Line>(&text).is_err());
        assert_eq!(
            decode_hashes(&[encode_bytes(&[1; 31])]).unwrap_err(),
            "proof[0]: 31 bytes, not 32"
        );
    }

    fn every_content() -> Vec<Content> {
        let leaf = Entry::commit(&[1; 32], b"body", &[2; 32], &[3; 32], &[4; 32])
            .to_bytes()
            .to_vec();
        vec![
            Content::V1Envelope {
                envelope: b"envelope".to_vec(),
            },
            Content::V1Sealed {
                disclosure: Disclosure::WithheldPersonal,
                leaf_hash: [5; 32],
            },
            Content::Full {
                leaf: leaf.clone(),
                envelope: b"envelope".to_vec(),
                body_salt: [1; 32],
                chain_salt: [2; 32],
            },
            Content::Body {
                leaf: leaf.clone(),
                body: b"body".to_vec(),
                body_salt: [1; 32],
            },
            Content::Sealed {
                disclosure: Disclosure::WithheldGame,
                leaf: leaf.clone(),
            },
            Content::Sealed {
                disclosure: Disclosure::Erased,
                leaf,
            },
        ]
    }

    #[test]
    fn format_2_lines_round_trip_with_exactly_their_fields() {
        for content in every_content() {
            let line = EventLine::new(
                7,
                &[[9; 32]],
                "table-1".into(),
                1,
                "t.v1.X".into(),
                &content,
            );
            let text = serde_json::to_string(&Line::Event(line.clone())).unwrap();
            let back = match serde_json::from_str::<Line>(&text).unwrap() {
                Line::Event(e) => e,
                other => panic!("{other:?}"),
            };
            assert_eq!(back, line);
            assert_eq!(back.content().unwrap(), content, "{text}");
            // No empty fields: what a line does not carry is omitted.
            assert!(!text.contains("null") && !text.contains(r#""""#), "{text}");
            let extra = text.replace(r#""version":1"#, r#""version":1,"x":1"#);
            assert!(serde_json::from_str::<Line>(&extra).is_err());
        }
    }

    #[test]
    fn format_2_lines_are_written_as_documented() {
        let content = &every_content()[2];
        let line = EventLine::new(7, &[], "s-1".into(), 1, "t.v1.X".into(), content);
        let text = serde_json::to_string(&Line::Event(line)).unwrap();
        let keys: Vec<String> =
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text)
                .unwrap()
                .keys()
                .cloned()
                .collect();
        assert!(
            text.starts_with(r#"{"kind":"event","leaf_index":7,"leaf_format":2,"leaf":""#),
            "{text}"
        );
        assert!(
            text.contains(r#""disclosure":"full","envelope":""#),
            "{text}"
        );
        let mut sorted = vec![
            "kind",
            "leaf_index",
            "leaf_format",
            "leaf",
            "proof",
            "stream_id",
            "version",
            "event_type",
            "disclosure",
            "envelope",
            "body_salt",
            "chain_salt",
        ];
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        for (disclosure, name) in [
            (Disclosure::Full, "full"),
            (Disclosure::Body, "body"),
            (Disclosure::WithheldGame, "withheld_game"),
            (Disclosure::WithheldPersonal, "withheld_personal"),
            (Disclosure::Erased, "erased"),
            (Disclosure::WithheldUnknown, "withheld_unknown"),
        ] {
            assert_eq!(
                serde_json::to_string(&disclosure).unwrap(),
                format!("\"{name}\"")
            );
            assert_eq!(disclosure.as_str(), name);
        }
    }

    #[test]
    fn lines_with_the_wrong_fields_are_refused_by_name() {
        let full = EventLine::new(7, &[], "s-1".into(), 1, "t".into(), &every_content()[2]);
        let missing = EventLine {
            chain_salt: None,
            ..full.clone()
        };
        assert_eq!(
            missing.content().unwrap_err().to_string(),
            "chain_salt is missing (leaf_format 2, disclosure full)"
        );
        let withheld = EventLine {
            disclosure: Disclosure::WithheldPersonal,
            ..full.clone()
        };
        assert_eq!(
            withheld.content().unwrap_err().to_string(),
            "envelope is not expected (leaf_format 2, disclosure withheld_personal)"
        );
        let v1 = EventLine {
            leaf_format: LeafFormat::V1,
            ..full.clone()
        };
        assert!(matches!(
            v1.content().unwrap_err(),
            LineError::Unexpected { field: "leaf", .. }
        ));
        let short = EventLine {
            body_salt: Some(encode_bytes(&[1; 31])),
            ..full.clone()
        };
        assert_eq!(
            short.content().unwrap_err().to_string(),
            "body_salt: 31 bytes, not 32"
        );
        let garbage = EventLine {
            leaf: Some("not base64!".into()),
            ..full
        };
        assert!(matches!(
            garbage.content().unwrap_err(),
            LineError::Base64 { field: "leaf", .. }
        ));
        let text = serde_json::to_string(&Line::Event(garbage)).unwrap();
        for bad in [r#""leaf_format":3"#, r#""leaf_format":0"#] {
            let changed = text.replace(r#""leaf_format":2"#, bad);
            assert!(serde_json::from_str::<Line>(&changed).is_err(), "{changed}");
        }
        let unknown = text.replace(r#""disclosure":"full""#, r#""disclosure":"partial""#);
        assert!(serde_json::from_str::<Line>(&unknown).is_err());
    }

    #[test]
    fn a_lines_leaf_hash_is_what_its_proof_proves() {
        // A log begun in format 1 and continued in format 2: every line's leaf hash proves
        // its inclusion, whatever the line discloses.
        let contents = every_content();
        let mut tree = crate::Tree::new();
        tree.push_leaf(b"envelope");
        tree.push_leaf_hash([5; 32]);
        for content in &contents[2..] {
            match content {
                Content::Full { leaf, .. }
                | Content::Body { leaf, .. }
                | Content::Sealed { leaf, .. } => tree.push_leaf(leaf),
                other => panic!("{other:?}"),
            };
        }
        for (i, content) in contents.iter().enumerate() {
            let i = i as u64;
            let proof = tree.inclusion_proof(i, tree.size()).unwrap();
            let line = EventLine::new(i, &proof, "s-1".into(), 1, "t".into(), content);
            let read = line.content().unwrap();
            let proof = decode_hashes(&line.proof).unwrap();
            crate::verify_inclusion(&read.leaf_hash(), i, tree.size(), &proof, &tree.root())
                .unwrap();
        }
    }
}
