//! The dealing use cases: table hands (plain and Tarot duplicate) and single-player bets,
//! each recorded as an event in this service's own log.
//!
//! Seeds come from the commitment service's internal methods, called with this service's
//! token; they live only in local variables for the length of one request and never reach
//! an event, a log field or an error.
//!
//! Hands of a table are dealt in order: stream `deals-<table>` holds one `HandDealt` per
//! hand, so hand `h` is event version `h + 1`. Asking for a dealt hand again returns the
//! same deal (recomputed and checked against the recorded distribution number); asking for
//! a hand beyond the next is refused.

use std::sync::Arc;

use fairdeal_authn::{TokenProvider, attach_bearer};
use fairdeal_eventstore::{
    EventError, EventStore, ExpectedVersion, NewEvent, RecordedEvent, StoreError, StreamId,
};
use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_fairness::outcome::{Outcome, Round};
use fairdeal_kit::ServiceError;
use fairdeal_kit::propagation::{TraceContextInterceptor, traced as traced_channel};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1 as pb;
use prost::{Message, Name};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use uuid::Uuid;

use fairdeal_platform::{Aggregate, CorruptStream, Decision, RunError, Streams};

use crate::verify::{self, VerifyError};

/// Everything a dealing use case can fail with.
#[derive(Debug, thiserror::Error)]
pub enum DealingError {
    /// A request field is invalid.
    #[error(transparent)]
    Invalid(#[from] VerifyError),
    /// The state does not allow the request.
    #[error("{0}")]
    FailedPrecondition(String),
    /// The commitment service refused or failed.
    #[error("commitment service: {}", .0.message())]
    Upstream(Status),
    /// The event store failed.
    #[error("event store: {0}")]
    Store(#[from] StoreError),
    /// A stream id could not be formed.
    #[error("stream id: {0}")]
    Stream(#[from] EventError),
    /// A recorded event does not decode or disagrees with the recomputation.
    #[error("recorded deal inconsistent: {0}")]
    Corrupt(String),
    /// The access token could not be attached.
    #[error("service token unusable")]
    Token,
    /// No access token could be obtained from the auth service.
    #[error(transparent)]
    NoToken(#[from] fairdeal_authn::TokenUnavailable),
    /// Writers in other processes kept winning.
    #[error("too many concurrent deals on {stream}, now at version {version}; re-read and retry")]
    Contended {
        /// The table's deals stream.
        stream: StreamId,
        /// Its version when the runner gave up.
        version: u64,
    },
    /// The table's deals stream does not decode or fold.
    #[error(transparent)]
    CorruptStream(#[from] CorruptStream),
}

impl From<RunError<DealingError>> for DealingError {
    fn from(error: RunError<DealingError>) -> Self {
        match error {
            RunError::Rejected(e) => e,
            RunError::Contended { stream, version } => DealingError::Contended { stream, version },
            RunError::Corrupt(e) => DealingError::CorruptStream(e),
            RunError::Stream(e) => DealingError::Stream(e),
            RunError::Store(e) => DealingError::Store(e),
        }
    }
}

impl From<DealingError> for ServiceError {
    fn from(error: DealingError) -> Self {
        match error {
            DealingError::Invalid(e) => ServiceError::InvalidArgument(e.to_string()),
            DealingError::FailedPrecondition(m) => ServiceError::FailedPrecondition(m),
            DealingError::Upstream(status) => match status.code() {
                // The commitment service's verdicts pass through unchanged: a lasting
                // condition (a seed sealed under a key missing from its key ring, a revealed
                // table) stays FAILED_PRECONDITION, never UNAVAILABLE, so callers do not
                // retry what cannot succeed.
                Code::InvalidArgument => ServiceError::InvalidArgument(status.message().into()),
                Code::NotFound => ServiceError::NotFound(status.message().into()),
                Code::AlreadyExists => ServiceError::AlreadyExists(status.message().into()),
                Code::FailedPrecondition => {
                    ServiceError::FailedPrecondition(status.message().into())
                }
                Code::Aborted => ServiceError::Conflict(status.message().into()),
                // Transient: the commitment service is down, overloaded or too slow (a broken
                // connection may surface as UNKNOWN).
                Code::Unavailable
                | Code::Unknown
                | Code::DeadlineExceeded
                | Code::Cancelled
                | Code::ResourceExhausted => ServiceError::Unavailable {
                    message: "commitment service unavailable".into(),
                    cause: Some(Box::new(DealingError::Upstream(status))),
                },
                // A fault on either side (a bug there, or this service's token refused even
                // after renewal): retrying does not help, so INTERNAL, logged.
                _ => ServiceError::internal(DealingError::Upstream(status)),
            },
            DealingError::Store(e) if e.is_conflict() => ServiceError::Conflict(e.to_string()),
            contended @ DealingError::Contended { .. } => {
                ServiceError::Conflict(contended.to_string())
            }
            DealingError::Store(StoreError::Database(e)) => {
                ServiceError::unavailable("database unavailable", e)
            }
            DealingError::NoToken(e) => ServiceError::unavailable("auth service unavailable", e),
            other => ServiceError::internal(other),
        }
    }
}

/// A dealt table hand.
#[derive(Debug, Clone)]
pub struct DealtHand {
    /// The deal.
    pub deal: Deal,
    /// The commitment of the server seed used.
    pub commitment: String,
    /// The client seed used.
    pub client_seed: String,
    /// For duplicate deals, every candidate (the accepted one last).
    pub candidates: Vec<pb::Candidate>,
}

/// An issued single-player outcome.
#[derive(Debug, Clone)]
pub struct IssuedOutcome {
    /// The bet's idempotency key.
    pub bet_id: Uuid,
    /// The seed pair and counter used.
    pub pair_index: u64,
    /// The counter value (salt).
    pub nonce: u64,
    /// The server seed's commitment.
    pub commitment: String,
    /// The client seed.
    pub client_seed: String,
    /// The result.
    pub outcome: Outcome,
}

/// The commitment service's client, every call traced.
type CommitmentClient =
    CommitmentServiceClient<InterceptedService<Channel, TraceContextInterceptor>>;

/// The dealing use cases.
#[derive(Clone, Debug)]
pub struct Dealer {
    /// This service's event log.
    store: Arc<dyn EventStore>,
    /// The tables' deal streams.
    deals: Streams<TableDeals>,
    /// The commitment service.
    commitment: CommitmentClient,
    /// This service's access token (role service, name `dealing`).
    tokens: Arc<dyn TokenProvider>,
}

/// Seeds of one table hand, from the commitment service. Not Debug: it holds the seed.
struct TableSeeds {
    server_seed: String,
    client_seed: String,
    commitment: String,
}

impl Dealer {
    /// Use cases over `store`, calling the commitment service on `channel` with the tokens
    /// of `tokens`.
    pub fn new(
        store: Arc<dyn EventStore>,
        channel: Channel,
        tokens: Arc<dyn TokenProvider>,
    ) -> Self {
        Dealer {
            deals: Streams::new(Arc::clone(&store)),
            store,
            // Every call carries the trace context, so one trace spans both services.
            commitment: CommitmentServiceClient::new(traced_channel(channel)),
            tokens,
        }
    }

    /// Calls the commitment service with this service's token. A call refused as
    /// unauthenticated (the token expired early, or its signing key was withdrawn) is
    /// repeated once with a renewed token; the refused call changed nothing.
    async fn call_commitment<T, R, F, Fut>(&self, message: T, call: F) -> Result<R, DealingError>
    where
        T: Clone,
        F: Fn(CommitmentClient, Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let mut retried = false;
        loop {
            let token = self.tokens.token().await?;
            let mut request = Request::new(message.clone());
            attach_bearer(&mut request, &token).map_err(|_| DealingError::Token)?;
            match call(self.commitment.clone(), request).await {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) if status.code() == Code::Unauthenticated && !retried => {
                    tracing::warn!("commitment service refused the service token; renewing it");
                    self.tokens.refused(&token);
                    retried = true;
                }
                Err(status) => return Err(DealingError::Upstream(status)),
            }
        }
    }

    async fn table_seeds(&self, table_id: Uuid) -> Result<TableSeeds, DealingError> {
        let message = cpb::GetTableDealingSeedsRequest {
            table_id: table_id.to_string(),
        };
        let r = self
            .call_commitment(message, |mut c, r| async move {
                c.get_table_dealing_seeds(r).await
            })
            .await?;
        Ok(TableSeeds {
            server_seed: r.server_seed,
            client_seed: r.client_seed,
            commitment: r.commitment,
        })
    }

    /// Deals hand `hand` of `table_id` with `deck` (salt = hand).
    #[tracing::instrument(skip(self), fields(table_id = %table_id, deck = %deck, hand))]
    pub async fn deal_hand(
        &self,
        table_id: Uuid,
        deck: Deck,
        hand: u64,
    ) -> Result<DealtHand, DealingError> {
        self.deal_with(table_id, deck, hand, |seeds| {
            let salt = hand.to_string();
            let deal = Deal::from_seeds(deck, &seeds.server_seed, &seeds.client_seed, &salt);
            Ok((deal, salt, Vec::new()))
        })
        .await
    }

    /// Tarot duplicate selection for hand `hand` (deck tarot4).
    #[tracing::instrument(skip(self), fields(table_id = %table_id, hand))]
    pub async fn deal_duplicate(
        &self,
        table_id: Uuid,
        hand: u64,
    ) -> Result<DealtHand, DealingError> {
        self.deal_with(table_id, Deck::Tarot4, hand, |seeds| {
            let selection = verify::select_duplicate(&seeds.server_seed, &seeds.client_seed, hand)?;
            let candidates = selection
                .candidates()
                .map(verify::candidate_message)
                .collect();
            Ok((selection.accepted.deal, selection.accepted.salt, candidates))
        })
        .await
    }

    async fn deal_with(
        &self,
        table_id: Uuid,
        deck: Deck,
        hand: u64,
        compute: impl Fn(&TableSeeds) -> Result<(Deal, String, Vec<pb::Candidate>), DealingError>,
    ) -> Result<DealtHand, DealingError> {
        let dealt_count = |deals: &fairdeal_platform::Snapshot<TableDeals>| deals.version;
        let compute = &compute;
        let executed = self
            .deals
            .execute_with(
                &table_id,
                dealt_count,
                |dealt| async move {
                    if hand > dealt {
                        return Err(DealingError::FailedPrecondition(format!(
                            "hand {hand} cannot be dealt before hand {dealt}"
                        )));
                    }
                    // Fixes the client seed on the table's first deal; refused after the
                    // reveal.
                    let seeds = self.table_seeds(table_id).await?;
                    let computed = compute(&seeds)?;
                    Ok((seeds, computed))
                },
                |deals, (seeds, (deal, salt, candidates))| {
                    let number = deal.distribution_number().to_string();
                    let recorded = deals
                        .state
                        .as_ref()
                        .and_then(|d| d.hands.get(usize::try_from(hand).ok()?));
                    let result = DealtHand {
                        deal,
                        commitment: seeds.commitment.clone(),
                        client_seed: seeds.client_seed.clone(),
                        candidates,
                    };
                    if let Some(recorded) = recorded {
                        // Already dealt: the recorded hand must be this very deal.
                        if recorded.deck != deck.name() {
                            return Err(DealingError::FailedPrecondition(format!(
                                "hand {hand} was dealt as {}, not {deck}",
                                recorded.deck
                            )));
                        }
                        if recorded.distribution_number != number {
                            return Err(DealingError::Corrupt(format!(
                                "hand {hand} recomputes to another deal"
                            )));
                        }
                        return Ok(Decision::nothing(result));
                    }
                    if hand != deals.version {
                        return Err(DealingError::FailedPrecondition(format!(
                            "hand {hand} cannot be dealt before hand {}",
                            deals.version
                        )));
                    }
                    let rejected = u32::try_from(result.candidates.len().saturating_sub(1))
                        .unwrap_or(u32::MAX);
                    let event = pb::HandDealt {
                        table_id: table_id.to_string(),
                        hand,
                        deck: deck.name().to_owned(),
                        salt: hand.to_string(),
                        commitment: seeds.commitment,
                        client_seed: seeds.client_seed,
                        distribution_number: number,
                        rejected_candidates: rejected,
                        candidate_salt: salt,
                    };
                    Ok(Decision::new(vec![event], result))
                },
            )
            .await?;
        Ok(executed.reply)
    }

    /// Plays `round` for `user_id` with the next nonce of their seed pair.
    #[tracing::instrument(skip(self, round), fields(user_id = %user_id, game = %round.game()))]
    ///
    /// Retrying with the same `bet_id` (after an error or a lost reply) gets the same bet:
    /// the commitment service hands out the nonce it reserved for that id, and the
    /// `OutcomeIssued` event's id is derived from `(user, pair, nonce)`, so the bet is
    /// recorded once whether or not the first attempt got as far as the append.
    pub async fn place_bet(
        &self,
        user_id: Uuid,
        round: Round,
        bet_id: Uuid,
    ) -> Result<IssuedOutcome, DealingError> {
        let described = round.to_string();
        let message = cpb::ReserveBetRequest {
            user_id: user_id.to_string(),
            bet_id: bet_id.to_string(),
            bet: described.clone(),
        };
        let bet = self
            .call_commitment(message, |mut c, r| async move { c.reserve_bet(r).await })
            .await?;
        let outcome = round.from_seeds(&bet.server_seed, &bet.client_seed, &bet.nonce.to_string());
        let event = pb::OutcomeIssued {
            user_id: user_id.to_string(),
            pair_index: bet.index,
            nonce: bet.nonce,
            commitment: bet.commitment.clone(),
            client_seed: bet.client_seed.clone(),
            game: round.game().name().to_owned(),
            result_json: verify::outcome_json(&outcome)?,
            bet: described,
            bet_id: bet_id.to_string(),
        };
        let stream = StreamId::of("outcomes", user_id)?;
        let recorded =
            traced(&event, user_id).with_event_id(outcome_event_id(user_id, bet.index, bet.nonce));
        match self
            .store
            .append(&stream, ExpectedVersion::Any, vec![recorded])
            .await
        {
            // A retry of a bet already recorded: the commitment service gave it the same
            // nonce for the same game, so the stored event holds this very result.
            Ok(_) | Err(StoreError::DuplicateEventId { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(IssuedOutcome {
            bet_id,
            pair_index: bet.index,
            nonce: bet.nonce,
            commitment: bet.commitment,
            client_seed: bet.client_seed,
            outcome,
        })
    }
}

/// The hands dealt at one table: stream `deals-<table>`, one `HandDealt` per hand, so hand
/// `h` is version `h + 1`.
#[derive(Debug, Clone, Default)]
pub struct TableDeals {
    /// Each dealt hand, in order.
    hands: Vec<RecordedHand>,
}

/// What a recorded hand is checked against when it is asked for again.
#[derive(Debug, Clone)]
struct RecordedHand {
    /// The deck it was dealt from.
    deck: String,
    /// Its distribution number.
    distribution_number: String,
}

/// Why a stored event of a deals stream is not a `HandDealt`.
#[derive(Debug, thiserror::Error)]
pub enum StoredDealError {
    /// Its type is another message's.
    #[error("not a HandDealt event")]
    NotHandDealt,
    /// Its payload is not a `HandDealt`.
    #[error(transparent)]
    Payload(#[from] prost::DecodeError),
}

/// A `HandDealt` that does not follow a table's deals: hands are recorded in order, once.
#[derive(Debug, thiserror::Error)]
#[error("hand {hand} recorded after {recorded} hands")]
pub struct HandOutOfOrder {
    /// The hand the event names.
    pub hand: u64,
    /// The hands recorded before it.
    pub recorded: usize,
}

impl Aggregate for TableDeals {
    const CATEGORY: &'static str = "deals";
    type Id = Uuid;
    type Event = pb::HandDealt;
    type DecodeError = StoredDealError;
    type FoldError = HandOutOfOrder;

    fn encode(id: &Uuid, event: &pb::HandDealt) -> NewEvent {
        NewEvent::from_message(event).with_correlation_id(id.to_string())
    }

    fn decode(event: &RecordedEvent) -> Result<pb::HandDealt, StoredDealError> {
        if !event.is::<pb::HandDealt>() {
            return Err(StoredDealError::NotHandDealt);
        }
        Ok(pb::HandDealt::decode(event.payload.as_slice())?)
    }

    fn apply(state: Option<Self>, event: &pb::HandDealt) -> Result<Self, HandOutOfOrder> {
        let mut deals = state.unwrap_or_default();
        if usize::try_from(event.hand).ok() != Some(deals.hands.len()) {
            return Err(HandOutOfOrder {
                hand: event.hand,
                recorded: deals.hands.len(),
            });
        }
        deals.hands.push(RecordedHand {
            deck: event.deck.clone(),
            distribution_number: event.distribution_number.clone(),
        });
        Ok(deals)
    }
}

/// Namespace of the `OutcomeIssued` event ids (UUIDv5).
const OUTCOME_EVENT_NAMESPACE: Uuid = Uuid::from_u128(0x5d0c_7a1e_3b4f_4c8a_9e21_6f0b_d2a4_c713);

/// The id of the `OutcomeIssued` event of nonce `nonce` of the user's pair `pair`: one bet,
/// one id, so a retried bet cannot be recorded twice. (A UUIDv5 never equals the UUIDv7 ids
/// of other events: the version bits differ.)
pub fn outcome_event_id(user_id: Uuid, pair: u64, nonce: u64) -> Uuid {
    Uuid::new_v5(
        &OUTCOME_EVENT_NAMESPACE,
        format!("{user_id}/{pair}/{nonce}").as_bytes(),
    )
}

/// An event of `message`, correlated to `correlation`, carrying the current trace context.
fn traced<M: Name>(message: &M, correlation: Uuid) -> NewEvent {
    let mut trace = std::collections::BTreeMap::new();
    fairdeal_kit::propagation::inject_current(&mut trace);
    NewEvent::from_message(message)
        .with_correlation_id(correlation.to_string())
        .with_trace_context(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(status: Status) -> Code {
        ServiceError::from(DealingError::Upstream(status)).code()
    }

    #[test]
    fn commitment_verdicts_keep_their_code_and_only_transient_ones_are_unavailable() {
        // A seed sealed under a key missing from the commitment service's ring is lasting.
        let missing_key = Status::failed_precondition(
            "the server seed is sealed under key id \"k2\", which is not in this service's seed key ring",
        );
        let e = ServiceError::from(DealingError::Upstream(missing_key));
        assert_eq!(e.code(), Code::FailedPrecondition);
        assert!(e.to_string().contains("\"k2\""), "{e}");
        for (upstream, ours) in [
            (Status::invalid_argument("x"), Code::InvalidArgument),
            (Status::not_found("x"), Code::NotFound),
            (Status::already_exists("x"), Code::AlreadyExists),
            (Status::aborted("x"), Code::Aborted),
            (Status::unavailable("x"), Code::Unavailable),
            (Status::deadline_exceeded("x"), Code::Unavailable),
            (Status::resource_exhausted("x"), Code::Unavailable),
            (Status::internal("x"), Code::Internal),
            (Status::unauthenticated("x"), Code::Internal),
            (Status::permission_denied("x"), Code::Internal),
            (Status::unimplemented("x"), Code::Internal),
        ] {
            assert_eq!(code_of(upstream.clone()), ours, "{upstream:?}");
        }
    }
}
