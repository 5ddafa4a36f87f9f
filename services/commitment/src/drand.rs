//! drand rounds as tables' and tournaments' delayed values, the IO side
//! (docs/commitment-and-dealing.md, "drand round"):
//!
//! - at commit, [`Drand::fix`] fixes round `R = first round at or after the commit time +
//!   margin` and its fallback `R + fallback_rounds`, recorded in `TableCommitmentPublished`
//!   or `TournamentCommitted`;
//! - from `R`'s time, a background task (restarted at the service's start while `R` is not
//!   bound; and, at the latest, a table's first deal or a tournament's board generation)
//!   fetches `R` from the relays, verifies it, and binds its randomness through the
//!   delayed-value path (`DelayedValueBound` with the round, signature and randomness);
//! - if `R` still cannot be fetched `stall_after` past its time, `DrandRoundStalled` is
//!   recorded and only the fallback round can be bound from then on.
//!
//! The clock is the system's; rounds and their times come from the chain's schedule.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fairdeal_drand::RoundError;
use fairdeal_drand_client::BeaconClient;
use fairdeal_fairness::commitment::ServerSeed;

use crate::domain::DomainError;
use crate::domain::drand::{DrandRound, Timelock};

/// The shortest latest end of a table with a timelocked seed, in seconds after its commit.
pub const MIN_TIMELOCK_SECONDS: u32 = 60;

/// The longest latest end of a table with a timelocked seed: 30 days.
pub const MAX_TIMELOCK_SECONDS: u32 = 30 * 24 * 3600;

/// How a service uses drand: the client of its chain's relays and the rules for rounds.
#[derive(Debug, Clone)]
pub struct Drand {
    /// Fetches and verifies rounds of the chain.
    pub client: BeaconClient,
    /// Rounds after the first round at or after the commit time (the clock-skew and
    /// publication margin).
    pub margin_rounds: u64,
    /// The fallback round is the round plus this.
    pub fallback_rounds: u64,
    /// How long after its time a round that cannot be fetched is declared stalled.
    pub stall_after: Duration,
    /// How long the first deal waits for a round not published yet.
    pub deal_wait: Duration,
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// Unix seconds now, rounded up: the time a round fixed now must not precede. A commitment
/// made at 393.9 s is recorded after it (at 394.01 s, say); the first round at or after
/// 393 would be published at 393, before both, so a round is fixed from the next whole
/// second, and the margin covers the time the commitment takes to be recorded.
pub fn unix_now_ceil() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    since.as_secs() + u64::from(since.subsec_nanos() > 0)
}

impl Drand {
    /// The chain's beacon ID (`quicknet`, or the test chain's `...-not-drand`).
    pub fn beacon_id(&self) -> &'static str {
        self.client.chain().info().beacon_id
    }

    /// The round (and fallback) of a commitment made at `now` (Unix seconds).
    pub fn fix(&self, now: u64) -> Result<DrandRound, DomainError> {
        let schedule = self.client.chain().schedule();
        let overflow = |_: RoundError| DomainError::OutOfRange {
            field: "drand_round",
            reason: "does not fit in 64 bits".into(),
        };
        let round = schedule
            .round_after(now, self.margin_rounds)
            .map_err(overflow)?;
        let fallback =
            round
                .checked_add(self.fallback_rounds.max(1))
                .ok_or(DomainError::OutOfRange {
                    field: "drand_fallback_round",
                    reason: "does not fit in 64 bits".into(),
                })?;
        DrandRound::new(
            &hex::encode(self.client.chain().chain_hash()),
            round,
            fallback,
        )
    }

    /// The timelocked seed of a table committed at `now` whose latest end is `seconds` later:
    /// `seed`'s text encrypted to the first round at or after the latest end plus the margin.
    pub fn timelock(
        &self,
        now: u64,
        seconds: u32,
        seed: &ServerSeed,
    ) -> Result<Timelock, DomainError> {
        let latest_end = now
            .checked_add(u64::from(seconds))
            .ok_or(DomainError::OutOfRange {
                field: "timelock_seconds",
                reason: "the latest end does not fit in 64 bits".into(),
            })?;
        let chain = self.client.chain();
        let round = chain
            .schedule()
            .round_after(latest_end, self.margin_rounds)
            .map_err(|e| DomainError::OutOfRange {
                field: "timelock_seconds",
                reason: format!("no round of the chain after the latest end: {e}"),
            })?;
        let ciphertext =
            fairdeal_drand::timelock::encrypt(chain, round, seed.expose_secret().as_bytes())
                .map_err(|e| DomainError::Timelock(format!("encrypting the seed failed: {e}")))?;
        Timelock::new(round, ciphertext, latest_end)
    }

    /// Unix time at which `round` is published.
    pub fn round_time(&self, round: u64) -> u64 {
        self.client
            .chain()
            .schedule()
            .round_time(round)
            .unwrap_or(u64::MAX)
    }
}
