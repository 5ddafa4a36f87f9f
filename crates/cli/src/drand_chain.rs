//! A drand chain given by its chain info, the JSON drand publishes at `/{chain hash}/info`
//! (and the local test beacon serves the same way): what `--drand-chain FILE` reads, so that
//! an auditor can check rounds of a chain other than quicknet (built in) without the network.
//!
//! The fields read are drand's: `public_key` (hex, a compressed G2 point), `period` and
//! `genesis_time` (seconds), `groupHash` (hex, 32 bytes), `schemeID` (only
//! `bls-unchained-g1-rfc9380`, quicknet's scheme, is verified), `metadata.beaconID` and
//! `hash`. The chain hash is recomputed from the fields (drand's formula, in
//! `fairdeal_drand::ChainInfo::chain_hash`) and must equal `hash`: a file whose fields do not
//! make its own hash is refused. The key is the auditor's choice, never one read from the
//! export being audited.

use fairdeal_drand::test_chain::TEST_BEACON_ID;
use fairdeal_drand::{Chain, ChainInfo, QUICKNET, Schedule, Scheme};
use serde_json::Value;

/// The largest chain-info file read (drand's is about 500 bytes).
pub const MAX_CHAIN_INFO_BYTES: u64 = 64 * 1024;

/// Why a chain info was refused: the field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ChainInfoError {
    /// The JSON field (`public_key`, `period`, ..; `chain info` for the document itself).
    pub field: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

fn error(field: &'static str, problem: impl Into<String>) -> ChainInfoError {
    ChainInfoError {
        field,
        problem: problem.into(),
    }
}

/// Decodes `field` as exactly `N` bytes of hex.
fn hex_field<const N: usize>(
    object: &serde_json::Map<String, Value>,
    field: &'static str,
) -> Result<[u8; N], ChainInfoError> {
    let text = string_field(object, field)?;
    let bytes = hex::decode(text).map_err(|_| error(field, "not hexadecimal"))?;
    <[u8; N]>::try_from(bytes.as_slice()).map_err(|_| {
        error(
            field,
            format!("{} bytes, expected {N} ({} hex digits)", bytes.len(), N * 2),
        )
    })
}

fn string_field<'a>(
    object: &'a serde_json::Map<String, Value>,
    field: &'static str,
) -> Result<&'a str, ChainInfoError> {
    match object.get(field) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(error(field, "not a string")),
        None => Err(error(field, "missing")),
    }
}

fn u64_field(
    object: &serde_json::Map<String, Value>,
    field: &'static str,
) -> Result<u64, ChainInfoError> {
    match object.get(field) {
        Some(value) => value
            .as_u64()
            .ok_or_else(|| error(field, "not a whole number of seconds (0 or more)")),
        None => Err(error(field, "missing")),
    }
}

/// The beacon ID as the `'static` text `ChainInfo` holds: quicknet's and the test chains'
/// are built in; any other is kept for the life of the process (one chain per run).
fn beacon_id(id: &str) -> &'static str {
    match id {
        _ if id == QUICKNET.beacon_id => QUICKNET.beacon_id,
        TEST_BEACON_ID => TEST_BEACON_ID,
        "default" => "default",
        other => Box::leak(other.to_owned().into_boxed_str()),
    }
}

/// Parses drand's chain-info JSON into a checked chain: the public key a point of G2 (not
/// the identity), the scheme quicknet's, the period at least 1 s, and `hash` the chain hash
/// of the other fields.
pub fn parse(text: &str) -> Result<Chain, ChainInfoError> {
    let document: Value =
        serde_json::from_str(text).map_err(|e| error("chain info", format!("not JSON: {e}")))?;
    let Value::Object(object) = document else {
        return Err(error("chain info", "not a JSON object"));
    };
    let scheme = string_field(&object, "schemeID")?;
    if scheme != Scheme::BlsUnchainedG1Rfc9380.id() {
        return Err(error(
            "schemeID",
            format!(
                "{scheme:?}: only {} (quicknet's scheme) is verified",
                Scheme::BlsUnchainedG1Rfc9380.id()
            ),
        ));
    }
    let public_key = hex_field::<96>(&object, "public_key")?;
    let period = u64_field(&object, "period")?;
    let genesis_time = u64_field(&object, "genesis_time")?;
    let schedule =
        Schedule::new(genesis_time, period).map_err(|e| error("period", e.to_string()))?;
    let genesis_seed = hex_field::<32>(&object, "groupHash")?;
    let id = match object.get("metadata") {
        None => "default",
        Some(Value::Object(metadata)) => match metadata.get("beaconID") {
            None => "default",
            Some(Value::String(id)) => id.as_str(),
            Some(_) => return Err(error("metadata.beaconID", "not a string")),
        },
        Some(_) => return Err(error("metadata", "not an object")),
    };
    let info = ChainInfo {
        public_key,
        schedule,
        genesis_seed,
        beacon_id: beacon_id(id),
        scheme: Scheme::BlsUnchainedG1Rfc9380,
    };
    let stated = hex_field::<32>(&object, "hash")?;
    let computed = info.chain_hash();
    if stated != computed {
        return Err(error(
            "hash",
            format!(
                "{} is not the chain hash of the other fields ({})",
                hex::encode(stated),
                hex::encode(computed)
            ),
        ));
    }
    Chain::new(info).map_err(|e| error("public_key", e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use fairdeal_drand::{QUICKNET_CHAIN_HASH, TestChain};
    use serde_json::json;

    use super::*;

    /// Quicknet's chain info as drand serves it (`/52db9ba7…/info`).
    fn quicknet_json() -> Value {
        json!({
            "public_key": hex::encode(QUICKNET.public_key),
            "period": 3,
            "genesis_time": 1_692_803_367,
            "hash": hex::encode(QUICKNET_CHAIN_HASH),
            "groupHash": hex::encode(QUICKNET.genesis_seed),
            "schemeID": "bls-unchained-g1-rfc9380",
            "metadata": {"beaconID": "quicknet"}
        })
    }

    #[test]
    fn quicknets_published_info_parses_to_quicknet() {
        let chain = parse(&quicknet_json().to_string()).unwrap();
        assert_eq!(chain.chain_hash(), QUICKNET_CHAIN_HASH);
        assert_eq!(*chain.info(), QUICKNET);
    }

    #[test]
    fn a_test_chains_info_parses_to_that_chain() {
        let test = TestChain::from_seed(&[5; 32], Schedule::new(1_700_000_000, 1).unwrap())
            .unwrap()
            .info();
        let text = json!({
            "public_key": hex::encode(test.public_key),
            "period": 1,
            "genesis_time": 1_700_000_000,
            "hash": hex::encode(test.chain_hash()),
            "groupHash": hex::encode(test.genesis_seed),
            "schemeID": "bls-unchained-g1-rfc9380",
            "metadata": {"beaconID": TEST_BEACON_ID}
        })
        .to_string();
        assert_eq!(*parse(&text).unwrap().info(), test);
    }

    #[test]
    fn every_wrong_field_is_named() {
        let with = |field: &str, value: Value| {
            let mut info = quicknet_json();
            info[field] = value;
            parse(&info.to_string()).unwrap_err().to_string()
        };
        let without = |field: &str| {
            let mut info = quicknet_json();
            info.as_object_mut().unwrap().remove(field);
            parse(&info.to_string()).unwrap_err().to_string()
        };
        assert_eq!(parse("[]").unwrap_err().field, "chain info");
        assert!(
            parse("{")
                .unwrap_err()
                .to_string()
                .starts_with("chain info: not JSON")
        );
        assert_eq!(without("public_key"), "public_key: missing");
        assert_eq!(
            with("public_key", json!("ab")),
            "public_key: 1 bytes, expected 96 (192 hex digits)"
        );
        assert_eq!(
            with("period", json!(0)),
            "period: the period must be at least 1 second"
        );
        assert_eq!(
            with("period", json!(-3)),
            "period: not a whole number of seconds (0 or more)"
        );
        assert_eq!(
            with("genesis_time", json!("x")).split(':').next(),
            Some("genesis_time")
        );
        assert_eq!(with("groupHash", json!("zz")), "groupHash: not hexadecimal");
        assert!(
            with("schemeID", json!("pedersen-bls-chained")).starts_with("schemeID: \"pedersen")
        );
        assert_eq!(with("metadata", json!(1)), "metadata: not an object");
        // A changed genesis: the fields no longer make the stated hash.
        assert!(with("genesis_time", json!(1_692_803_368)).starts_with("hash: 52db9ba7"));
        // A key that is not a point, with a hash recomputed to match it.
        let mut bad = QUICKNET;
        bad.public_key[95] ^= 1;
        let mut info = quicknet_json();
        info["public_key"] = json!(hex::encode(bad.public_key));
        info["hash"] = json!(hex::encode(bad.chain_hash()));
        assert_eq!(
            parse(&info.to_string()).unwrap_err().to_string(),
            "public_key: the public key is not a compressed point of the BLS12-381 G2 group"
        );
    }
}
