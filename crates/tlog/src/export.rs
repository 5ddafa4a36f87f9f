//! The game export format: NDJSON, one [`Line`] per line, written by the ledger service and
//! read by `fairdeal audit`. Both link this module, so the two sides cannot drift.
//!
//! ```text
//! {"kind":"header","format":"fairdeal-game-export/1","table_id":"…","checkpoint":"<signed note>","server_seed":"…"}
//! {"kind":"consistency","old_size":120,"proof":["<base64 hash>",…]}
//! {"kind":"event","leaf_index":7,"stream_id":"table-…","version":1,"event_type":"fairdeal.tables.v1.TableCreated","envelope":"<base64>","proof":["<base64 hash>",…]}
//! ```
//!
//! - The header comes first, once. `checkpoint` is the whole signed note (C2SP
//!   tlog-checkpoint); every proof of the file is against its tree size and root.
//!   `server_seed` is the table's revealed server seed.
//! - A `consistency` line proves that the tree of `old_size` (a checkpoint the auditor kept
//!   from before) is a prefix of the export's tree.
//! - An `event` line holds a leaf: `envelope` is the base64 of the leaf bytes (the protobuf
//!   `fairdeal.event.v1.Envelope`, `hash` included) and `proof` its inclusion proof at the
//!   checkpoint's size. `stream_id`, `version` and `event_type` repeat the envelope's for
//!   readers; the auditor checks that they agree. Event lines are in leaf order.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::hash::Hash;

/// The value of the header's `format`.
pub const FORMAT: &str = "fairdeal-game-export/1";

/// One line of an export.
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

/// The header line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    /// The game (table) id.
    pub table_id: String,
    /// The signed checkpoint note every proof is against.
    pub checkpoint: String,
    /// The table's revealed server seed.
    pub server_seed: String,
}

/// A consistency line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consistency {
    /// The older tree size.
    pub old_size: u64,
    /// The proof's hashes, base64.
    pub proof: Vec<String>,
}

/// An event line.
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
    /// The leaf bytes, base64.
    pub envelope: String,
    /// The inclusion proof's hashes, base64.
    pub proof: Vec<String>,
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

    #[test]
    fn lines_round_trip_and_refuse_unknown_fields() {
        let line = Line::Event(EventLine {
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
        assert_eq!(serde_json::from_str::<Line>(&text).unwrap(), line);
        let extra = text.replace(r#""version":2"#, r#""version":2,"x":1"#);
        assert!(serde_json::from_str::<Line>(&extra).is_err());
        assert_eq!(
            decode_hashes(&[encode_bytes(&[1; 31])]).unwrap_err(),
            "proof[0]: 31 bytes, not 32"
        );
    }
}
