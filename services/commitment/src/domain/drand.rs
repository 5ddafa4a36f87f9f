//! A drand round as a table's or a tournament's delayed value (SPEC section 4;
//! docs/commitment-and-dealing.md, "drand round"): fixed at commit, recorded in the commitment
//! event, bound by the service once fetched and verified. Pure: the round numbers come in
//! computed (`fairdeal_drand::Schedule`), the beacon verified (`fairdeal_drand_client`).
//!
//! The rules of binding and stalling are written once, in [`DrandSubject`]'s provided methods;
//! a table and a tournament only say what their state is and which events record a binding
//! and a stall.

use super::DomainError;
use super::client_seed::{DelayedSource, DelayedValue};

/// The round fixed for a table or a tournament when its seed is committed.
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

/// A commitment whose delayed value may be a drand round fixed at commit: a table
/// ([`super::table::TableCommitment`]) or a tournament ([`super::tournament::TournamentSet`]).
/// The provided methods hold the rules, the same for both: only the round due (the round, or
/// its fallback once the round was declared stalled) is bound, once, while the commitment is
/// open; a round is declared stalled once, before anything is bound.
pub trait DrandSubject {
    /// The commitment's events.
    type Event;
    /// What it is, in messages and logs: `table`, `tournament`.
    const SUBJECT: &'static str;
    /// How a missing one is named in NOT_FOUND errors.
    const NOT_FOUND: &'static str;

    /// The drand round fixed at commit, if any.
    fn drand(&self) -> Option<&DrandRound>;
    /// Whether the round was declared stalled (the fallback round is then the one).
    fn drand_stalled(&self) -> bool;
    /// Whether a delayed value is bound (by drand or by hand).
    fn delayed_value_bound(&self) -> bool;
    /// Whether a delayed value may still be bound: the error says why not (revealed, or a
    /// table's client seed fixed).
    fn open_for_delayed_value(&self) -> Result<(), DomainError>;
    /// The event binding `beacon` (whose randomness is `value`).
    fn drand_bound(&self, value: DelayedValue, beacon: DrandBeacon) -> Self::Event;
    /// The event declaring `drand`'s round stalled.
    fn drand_stalled_event(&self, drand: &DrandRound, reason: String) -> Self::Event;

    /// The drand round to fetch and bind now: the round, or its fallback once the round was
    /// declared stalled; `None` when there is nothing to bind (no drand round, bound already,
    /// closed).
    fn drand_round_to_bind(&self) -> Option<u64> {
        let drand = self.drand()?;
        let open = !self.delayed_value_bound() && self.open_for_delayed_value().is_ok();
        open.then_some(if self.drand_stalled() {
            drand.fallback_round
        } else {
            drand.round
        })
    }

    /// Binds a verified drand beacon: only the round [`Self::drand_round_to_bind`] names.
    fn bind_drand(&self, beacon: DrandBeacon) -> Result<Self::Event, DomainError> {
        self.open_for_delayed_value()?;
        if self.delayed_value_bound() {
            return Err(DomainError::DelayedValueBound);
        }
        let expected = self
            .drand_round_to_bind()
            .ok_or(DomainError::NoDelayedSource)?;
        if beacon.round != expected {
            return Err(DomainError::DrandWrongRound {
                subject: Self::SUBJECT,
                expected,
                got: beacon.round,
            });
        }
        Ok(self.drand_bound(beacon.value()?, beacon))
    }

    /// Declares the drand round stalled (once, before it is bound): from then on only the
    /// fallback round can be bound.
    fn stall_drand(&self, reason: String) -> Result<Self::Event, DomainError> {
        self.open_for_delayed_value()?;
        let drand = self.drand().ok_or(DomainError::DrandStall {
            subject: Self::SUBJECT,
            reason: "it has no drand round",
        })?;
        if self.delayed_value_bound() {
            return Err(DomainError::DelayedValueBound);
        }
        if self.drand_stalled() {
            return Err(DomainError::DrandStall {
                subject: Self::SUBJECT,
                reason: "it is stalled already",
            });
        }
        Ok(self.drand_stalled_event(drand, reason))
    }

    /// The refusal of a delayed value given by hand, when the delayed value is a drand round.
    fn refuse_value_by_hand(&self) -> Result<(), DomainError> {
        match self.drand() {
            Some(drand) => Err(DomainError::DrandBindsItself {
                subject: Self::SUBJECT,
                round: drand.round,
            }),
            None => Ok(()),
        }
    }
}
