//! A table's drand round as its delayed value (SPEC section 4; docs/commitment-and-dealing.md,
//! "drand round"): fixed at commit, recorded in the commitment event, bound by the service once
//! fetched and verified. Pure: the round numbers come in computed (`fairdeal_drand::Schedule`),
//! the beacon verified (`fairdeal_drand_client`).

use super::DomainError;
use super::client_seed::{DelayedSource, DelayedValue};

/// The round fixed for a table when its seed is committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrandRound {
    /// The chain's hash, lowercase hex (64 digits).
    pub chain_hash: String,
    /// The round whose randomness becomes the delayed value.
    pub round: u64,
    /// The round bound instead once `round` is declared stalled; always after `round`.
    pub fallback_round: u64,
    /// The timelocked seed published with the commitment, if the table asked for one.
    pub timelock: Option<Timelock>,
}

/// A table's timelocked seed: the server seed encrypted to a round of the table's drand chain
/// due after the table's latest end (docs/decisions.md, "A timelocked seed").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timelock {
    /// The round whose signature decrypts it.
    pub round: u64,
    /// drand/tlock's armored age file of the seed's text.
    pub ciphertext: String,
    /// The table's latest end, Unix seconds: no hand is dealt from then on.
    pub latest_end: u64,
}

impl Timelock {
    /// A recorded timelock; the round and the latest end are at least 1 and the ciphertext is
    /// not empty.
    pub fn new(round: u64, ciphertext: String, latest_end: u64) -> Result<Self, DomainError> {
        if round == 0 || latest_end == 0 {
            return Err(DomainError::OutOfRange {
                field: "timelock_round",
                reason: format!(
                    "round {round} and latest end {latest_end} must both be at least 1"
                ),
            });
        }
        if ciphertext.is_empty() {
            return Err(DomainError::InvalidText {
                field: "timelock_ciphertext",
                reason: "must not be empty with a timelock round".into(),
            });
        }
        Ok(Self {
            round,
            ciphertext,
            latest_end,
        })
    }
}

impl DrandRound {
    /// A fixed round; `fallback_round` must follow `round`, and `chain_hash` is 64 hex digits.
    pub fn new(chain_hash: &str, round: u64, fallback_round: u64) -> Result<Self, DomainError> {
        if chain_hash.len() != 64 || !chain_hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(DomainError::InvalidText {
                field: "drand_chain_hash",
                reason: "must be 64 hex digits".into(),
            });
        }
        if round == 0 || fallback_round <= round {
            return Err(DomainError::OutOfRange {
                field: "drand_fallback_round",
                reason: format!("{fallback_round} must follow round {round} (at least 1)"),
            });
        }
        Ok(Self {
            chain_hash: chain_hash.to_ascii_lowercase(),
            round,
            fallback_round,
            timelock: None,
        })
    }

    /// The delayed source's public name: the chain (its beacon ID and hash), the round and the
    /// fallback round, e.g. `drand quicknet round 123, fallback 223, chain 52db9ba7...`.
    pub fn source(&self, beacon_id: &str) -> Result<DelayedSource, DomainError> {
        DelayedSource::parse(&format!(
            "drand {beacon_id} round {}, fallback {}, chain {}",
            self.round, self.fallback_round, self.chain_hash
        ))
    }
}

/// A verified round as the binding event records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrandBeacon {
    /// The round.
    pub round: u64,
    /// Its BLS signature, lowercase hex.
    pub signature: String,
    /// SHA-256 of the signature, lowercase hex: the delayed value.
    pub randomness: String,
}

impl DrandBeacon {
    /// The delayed value it binds: its randomness.
    pub fn value(&self) -> Result<DelayedValue, DomainError> {
        DelayedValue::parse(&self.randomness)
    }
}
