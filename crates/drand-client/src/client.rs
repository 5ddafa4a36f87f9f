//! The fetch loop: relays in turn, bounded passes, verification of every answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fairdeal_drand::{Beacon, BeaconError, Chain, Randomness, Signature, VerifyError};
use fairdeal_telemetry::metrics::{self, Counter, KeyValue};
use serde::Deserialize;

use crate::http::{self, GetError};
use crate::relay::Relay;

/// How hard a fetch tries before it gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchPolicy {
    /// The longest one request may take (connect, TLS, answer).
    pub request_timeout: Duration,
    /// Passes over the relay list (at least 1).
    pub passes: u32,
    /// Pause after the first failed pass; doubled after each, up to `max_backoff`.
    pub backoff: Duration,
    /// The longest pause between passes.
    pub max_backoff: Duration,
}

impl Default for FetchPolicy {
    /// 5 s per request, 3 passes, 1 s then 2 s between them: a fetch ends within
    /// `3 * relays * 5 s + 3 s` whatever the relays do.
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(5),
            passes: 3,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(8),
        }
    }
}

/// A round whose signature verified against the chain's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifiedRound {
    /// The round.
    pub round: u64,
    /// Its signature.
    pub signature: Signature,
    /// Its randomness, SHA-256 of the signature.
    pub randomness: Randomness,
}

/// Why a relay's answer was refused: the relay lied (or is broken in a way that looks like
/// lying). Each one is logged at ERROR and counted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The body is not drand's JSON.
    #[error("the answer is not a beacon: {0}")]
    NotABeacon(String),
    /// The answer is another round than the one asked for.
    #[error("asked for round {asked}, the answer is round {answered}")]
    WrongRound {
        /// The round asked for.
        asked: u64,
        /// The round in the answer.
        answered: u64,
    },
    /// A field does not parse (names it).
    #[error(transparent)]
    Field(#[from] BeaconError),
    /// The signature or the randomness does not verify.
    #[error(transparent)]
    Verify(#[from] VerifyError),
}

impl Refusal {
    /// A short name for the metric's `reason` attribute.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::NotABeacon(_) => "not_a_beacon",
            Refusal::WrongRound { .. } => "wrong_round",
            Refusal::Field(_) => "bad_field",
            Refusal::Verify(VerifyError::InvalidSignature { .. }) => "bad_signature",
            Refusal::Verify(VerifyError::RandomnessMismatch { .. }) => "randomness_mismatch",
        }
    }
}

/// Why a fetch gave no verified round.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// No relay is configured.
    #[error("no drand relay is configured")]
    NoRelays,
    /// Every pass over every relay failed; `last` is the last relay's failure.
    #[error(
        "round {round}: no relay gave a verified beacon in {passes} passes ({refused} answers refused); last failure: {last}"
    )]
    Unavailable {
        /// The round.
        round: u64,
        /// Passes made.
        passes: u32,
        /// Answers refused during this fetch.
        refused: u64,
        /// The last failure, for the log.
        last: String,
    },
}

/// drand's JSON for a round (quicknet has no `previous_signature`; extra fields are ignored).
#[derive(Debug, Deserialize)]
struct RoundJson {
    round: u64,
    signature: String,
    #[serde(default)]
    randomness: Option<String>,
}

/// What one relay gave for one round.
enum Outcome {
    /// A verified round.
    Verified(VerifiedRound),
    /// A failure that is no lie: not published yet, down, slow.
    Failed(String),
    /// A lie, refused.
    Refused(Refusal),
}

/// Fetches and verifies rounds of one chain from its relays.
#[derive(Clone)]
pub struct BeaconClient {
    /// The chain whose key verifies every answer.
    chain: Arc<Chain>,
    /// The chain hash in lowercase hex: the first segment of drand's paths.
    chain_hash: String,
    /// Asked in this order.
    relays: Arc<[Relay]>,
    /// Timeouts and retries.
    policy: FetchPolicy,
    /// TLS for https relays.
    tls: Arc<rustls::ClientConfig>,
    /// Answers refused since the client was made (tests and health read it).
    refused: Arc<AtomicU64>,
    /// `fairdeal.drand.refused_beacons`, by relay and reason: alert on any increase.
    refused_metric: Counter<u64>,
}

impl std::fmt::Debug for BeaconClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BeaconClient")
            .field("chain_hash", &self.chain_hash)
            .field("relays", &self.relays)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// The metric counting refused answers.
pub const REFUSED_METRIC: &str = "fairdeal.drand.refused_beacons";

impl BeaconClient {
    /// A client of `chain` asking `relays` in order.
    pub fn new(
        chain: Arc<Chain>,
        relays: Vec<Relay>,
        policy: FetchPolicy,
    ) -> Result<Self, rustls::Error> {
        Ok(Self {
            chain_hash: hex_lower(&chain.chain_hash()),
            chain,
            relays: relays.into(),
            policy,
            tls: http::tls_config()?,
            refused: Arc::new(AtomicU64::new(0)),
            refused_metric: metrics::counter(
                REFUSED_METRIC,
                "drand answers refused because they did not verify (a relay lying or broken): alert on any",
                "{answer}",
            ),
        })
    }

    /// The chain.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The relays, in the order they are asked.
    pub fn relays(&self) -> &[Relay] {
        &self.relays
    }

    /// Answers refused since this client (or a clone of it) was made.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Round `round`, verified: asks each relay in turn, up to `policy.passes` passes with a
    /// doubling pause between passes; the first verified answer wins.
    #[tracing::instrument(skip(self), fields(chain = %self.chain_hash))]
    pub async fn fetch(&self, round: u64) -> Result<VerifiedRound, FetchError> {
        if self.relays.is_empty() {
            return Err(FetchError::NoRelays);
        }
        let passes = self.policy.passes.max(1);
        let mut pause = self.policy.backoff;
        let mut refused = 0;
        let mut last = String::new();
        for pass in 1..=passes {
            for relay in self.relays.iter() {
                match self.ask(relay, round).await {
                    Outcome::Verified(verified) => {
                        tracing::debug!(%relay, round, "drand round fetched and verified");
                        return Ok(verified);
                    }
                    Outcome::Failed(why) => {
                        tracing::warn!(%relay, round, pass, failure = %why, "drand relay gave no round");
                        last = format!("{relay}: {why}");
                    }
                    Outcome::Refused(refusal) => {
                        refused += 1;
                        self.refused.fetch_add(1, Ordering::Relaxed);
                        self.refused_metric.add(
                            1,
                            &[
                                KeyValue::new("relay", relay.to_string()),
                                KeyValue::new("reason", refusal.kind()),
                            ],
                        );
                        tracing::error!(%relay, round, reason = refusal.kind(), refusal = %refusal, "drand relay answer refused: it does not verify against the chain's key");
                        last = format!("{relay}: refused: {refusal}");
                    }
                }
            }
            if pass < passes {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(self.policy.max_backoff);
            }
        }
        Err(FetchError::Unavailable {
            round,
            passes,
            refused,
            last,
        })
    }

    async fn ask(&self, relay: &Relay, round: u64) -> Outcome {
        let path = format!("/{}/public/{round}", self.chain_hash);
        let answer = match http::get(relay, &path, &self.tls, self.policy.request_timeout).await {
            Ok(answer) => answer,
            Err(error @ GetError::Timeout(_)) => return Outcome::Failed(error.to_string()),
            Err(error) => return Outcome::Failed(error.to_string()),
        };
        if !answer.status.is_success() {
            // 404 and 425: not published yet (or unknown to this relay); 5xx: down.
            return Outcome::Failed(format!("HTTP {}", answer.status));
        }
        match verify(&self.chain, round, &answer.body) {
            Ok(verified) => Outcome::Verified(verified),
            Err(refusal) => Outcome::Refused(refusal),
        }
    }
}

/// Parses a relay's answer for `round` and verifies it.
pub fn verify(chain: &Chain, round: u64, body: &[u8]) -> Result<VerifiedRound, Refusal> {
    let json: RoundJson =
        serde_json::from_slice(body).map_err(|e| Refusal::NotABeacon(e.to_string()))?;
    if json.round != round {
        return Err(Refusal::WrongRound {
            asked: round,
            answered: json.round,
        });
    }
    let beacon = Beacon::from_hex(json.round, &json.signature, json.randomness.as_deref())?;
    let randomness = chain.verify(&beacon)?;
    Ok(VerifiedRound {
        round,
        signature: *beacon.signature(),
        randomness,
    })
}

fn hex_lower(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairdeal_drand::{Schedule, TestChain};

    fn chain() -> (TestChain, Chain) {
        let test = TestChain::from_seed(&[7; 32], Schedule::new(1_000, 3).unwrap()).unwrap();
        let chain = test.chain().unwrap();
        (test, chain)
    }

    fn json(round: u64, signature: &str, randomness: &str) -> Vec<u8> {
        format!(r#"{{"round":{round},"signature":"{signature}","randomness":"{randomness}"}}"#)
            .into_bytes()
    }

    #[test]
    fn a_true_answer_verifies_and_lies_are_refused_by_kind() {
        let (test, chain) = chain();
        let b5 = test.sign(5).unwrap();
        let b6 = test.sign(6).unwrap();
        let sig5 = b5.signature().to_hex();
        let rnd5 = b5.randomness().unwrap().to_hex();
        let ok = verify(&chain, 5, &json(5, &sig5, &rnd5)).unwrap();
        assert_eq!(ok.round, 5);
        assert_eq!(ok.randomness, b5.signature().randomness());
        // Another round's beacon, under its own number or claimed as round 5.
        let e = verify(&chain, 5, &json(6, &b6.signature().to_hex(), "")).unwrap_err();
        assert_eq!(e.kind(), "wrong_round");
        let e = verify(&chain, 5, &json(5, &b6.signature().to_hex(), &rnd5)).unwrap_err();
        assert_eq!(e.kind(), "bad_signature");
        let e = verify(
            &chain,
            5,
            &json(5, &sig5, &b6.randomness().unwrap().to_hex()),
        )
        .unwrap_err();
        assert_eq!(e.kind(), "randomness_mismatch");
        let e = verify(&chain, 5, &json(5, "zz", &rnd5)).unwrap_err();
        assert_eq!(e.kind(), "bad_field");
        assert!(e.to_string().starts_with("signature:"), "{e}");
        let e = verify(&chain, 5, b"<html>").unwrap_err();
        assert_eq!(e.kind(), "not_a_beacon");
        // Without a randomness field the signature alone decides.
        let body = format!(r#"{{"round":5,"signature":"{sig5}"}}"#);
        assert!(verify(&chain, 5, body.as_bytes()).is_ok());
    }

    #[tokio::test]
    async fn no_relays_or_unreachable_relays_end_in_bounded_time() {
        let (_, chain) = chain();
        let policy = FetchPolicy {
            request_timeout: Duration::from_millis(200),
            passes: 2,
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(10),
        };
        let client = BeaconClient::new(Arc::new(chain), Vec::new(), policy).unwrap();
        assert_eq!(client.fetch(1).await, Err(FetchError::NoRelays));
        // A port nobody listens on: refused connections, two passes, then an error.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let relay = Relay::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let client = BeaconClient::new(Arc::clone(&client.chain), vec![relay], policy).unwrap();
        match client.fetch(1).await {
            Err(FetchError::Unavailable {
                round: 1,
                passes: 2,
                refused: 0,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}
