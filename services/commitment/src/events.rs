//! Domain events <-> stored events (protobuf payloads of `fairdeal.commitment.v1`).
//!
//! Each aggregate implements the platform's [`Aggregate`]: its stream name, how its events
//! encode into a [`NewEvent`] (type = the payload's full protobuf name, correlation id = the table, user
//! or tournament) and decode back. Decoding re-validates every field through the domain
//! parsers, so a stored stream that no longer parses is reported, not trusted.

use fairdeal_eventstore::{NewEvent, RecordedEvent, is_event_type};
use fairdeal_fairness::commitment::{BadCommitment, Commitment, ServerSeed};
use fairdeal_fairness::deck::{Deck, UnknownDeck};
use fairdeal_platform::Aggregate;
use fairdeal_proto::fairdeal::commitment::v1 as pb;
use prost::{Message, Name};
use uuid::Uuid;

use crate::domain::client_seed::{Contribution, DelayedSource, DelayedValue};
use crate::domain::drand::{DrandBeacon, DrandRound, Timelock};
use crate::domain::pair::{ClientSeed, PairEvent, SeedPairs};
use crate::domain::table::{TableCommitment, TableEvent};
use crate::domain::tournament::{TournamentEvent, TournamentSet};
use crate::domain::{DomainError, RevealReason};

/// A stored event that does not decode into its aggregate's events.
#[derive(Debug, thiserror::Error)]
#[error("stored event {event_id} ({event_type}) does not decode: {cause}")]
pub struct DecodeError {
    /// The event.
    pub event_id: Uuid,
    /// Its type.
    pub event_type: String,
    /// What is wrong.
    #[source]
    pub cause: DecodeCause,
}

/// What about a stored event does not decode. Names the field, never a secret: a stored
/// server seed is taken as it is, never parsed, so never quoted.
#[derive(Debug, thiserror::Error)]
pub enum DecodeCause {
    /// The payload is not a message of its type.
    #[error(transparent)]
    Payload(#[from] prost::DecodeError),
    /// An id field is not a UUID.
    #[error("{field} is not a UUID")]
    NotAUuid {
        /// The field.
        field: &'static str,
    },
    /// The commitment is not one.
    #[error(transparent)]
    Commitment(#[from] BadCommitment),
    /// The deck is none this service knows.
    #[error(transparent)]
    Deck(#[from] UnknownDeck),
    /// A field the domain no longer accepts (names it).
    #[error(transparent)]
    Field(#[from] DomainError),
    /// The type is none of the aggregate's events (names the aggregate).
    #[error("not a {0} event")]
    Foreign(&'static str),
}

fn new_event<M: Name>(message: &M, correlation: Uuid) -> NewEvent {
    NewEvent::from_message(message).with_correlation_id(correlation.to_string())
}

fn bad(event: &RecordedEvent, cause: impl Into<DecodeCause>) -> DecodeError {
    DecodeError {
        event_id: event.event_id,
        event_type: event.event_type.clone(),
        cause: cause.into(),
    }
}

fn payload<M: Message + Default>(event: &RecordedEvent) -> Result<M, DecodeError> {
    M::decode(event.payload.as_slice()).map_err(|e| bad(event, e))
}

fn uuid(event: &RecordedEvent, field: &'static str, value: &str) -> Result<Uuid, DecodeError> {
    Uuid::parse_str(value).map_err(|_| bad(event, DecodeCause::NotAUuid { field }))
}

fn commitment(event: &RecordedEvent, value: &str) -> Result<Commitment, DecodeError> {
    value.parse().map_err(|e: BadCommitment| bad(event, e))
}

fn domain<T>(event: &RecordedEvent, result: Result<T, DomainError>) -> Result<T, DecodeError> {
    result.map_err(|e| bad(event, e))
}

fn optional_source(
    event: &RecordedEvent,
    value: &str,
) -> Result<Option<DelayedSource>, DecodeError> {
    if value.is_empty() {
        Ok(None)
    } else {
        domain(event, DelayedSource::recorded(value)).map(Some)
    }
}

/// `DelayedValueBound` of a table or a tournament (`subject_id`), with the drand round's fields
/// when `drand` is the round bound (0 and empty: a value bound by hand).
fn delayed_value_bound(
    subject_id: String,
    value: &DelayedValue,
    drand: Option<&DrandBeacon>,
) -> pb::DelayedValueBound {
    pb::DelayedValueBound {
        subject_id,
        value: value.as_str().to_owned(),
        drand_round: drand.map_or(0, |d| d.round),
        drand_signature: drand.map(|d| d.signature.clone()).unwrap_or_default(),
        drand_randomness: drand.map(|d| d.randomness.clone()).unwrap_or_default(),
    }
}

/// The drand round a commitment event records (none when `round` is 0).
fn drand_round(
    event: &RecordedEvent,
    chain_hash: &str,
    round: u64,
    fallback_round: u64,
) -> Result<Option<DrandRound>, DecodeError> {
    if round == 0 {
        return Ok(None);
    }
    domain(event, DrandRound::new(chain_hash, round, fallback_round)).map(Some)
}

/// The drand beacon a `DelayedValueBound` records (none when its round is 0: bound by hand).
fn bound_beacon(m: &pb::DelayedValueBound) -> Option<DrandBeacon> {
    (m.drand_round != 0).then(|| DrandBeacon {
        round: m.drand_round,
        signature: m.drand_signature.clone(),
        randomness: m.drand_randomness.clone(),
    })
}

impl Aggregate for TableCommitment {
    type Id = Uuid;
    type Event = TableEvent;
    type DecodeError = DecodeError;
    type FoldError = DomainError;
    const CATEGORY: &'static str = "commitmenttable";

    fn encode(id: &Uuid, event: &TableEvent) -> NewEvent {
        let id = *id;
        let table_id = id.to_string();
        match event {
            TableEvent::Published {
                seed_id,
                commitment,
                delayed_source,
                drand,
                ..
            } => {
                let timelock = drand.as_ref().and_then(|d| d.timelock.as_ref());
                new_event(
                    &pb::TableCommitmentPublished {
                        table_id,
                        seed_id: seed_id.to_string(),
                        commitment: commitment.to_hex(),
                        delayed_source: delayed_source
                            .as_ref()
                            .map(|s| s.as_str().to_owned())
                            .unwrap_or_default(),
                        drand_round: drand.as_ref().map_or(0, |d| d.round),
                        drand_fallback_round: drand.as_ref().map_or(0, |d| d.fallback_round),
                        drand_chain_hash: drand
                            .as_ref()
                            .map(|d| d.chain_hash.clone())
                            .unwrap_or_default(),
                        timelock_round: timelock.map_or(0, |t| t.round),
                        timelock_ciphertext: timelock
                            .map(|t| t.ciphertext.clone())
                            .unwrap_or_default(),
                        timelock_latest_end: timelock.map_or(0, |t| t.latest_end),
                    },
                    id,
                )
            }
            TableEvent::Contributed {
                seat,
                player_id,
                contribution,
            } => new_event(
                &pb::SeedContributed {
                    table_id,
                    seat: *seat,
                    player_id: player_id.to_string(),
                    contribution: contribution.as_str().to_owned(),
                },
                id,
            ),
            TableEvent::DelayedValueBound { value, drand } => {
                new_event(&delayed_value_bound(table_id, value, drand.as_ref()), id)
            }
            TableEvent::DrandStalled {
                round,
                fallback_round,
                reason,
            } => new_event(
                &pb::DrandRoundStalled {
                    table_id,
                    round: *round,
                    fallback_round: *fallback_round,
                    reason: reason.clone(),
                    ..Default::default()
                },
                id,
            ),
            TableEvent::ClientSeedFixed {
                client_seed,
                contributions_hash,
            } => new_event(
                &pb::ClientSeedFixed {
                    table_id,
                    client_seed: client_seed.clone(),
                    contributions_hash: contributions_hash.clone(),
                },
                id,
            ),
            TableEvent::Revealed {
                server_seed,
                reason,
            } => {
                let (operator, justification) = match reason {
                    RevealReason::Finished => (String::new(), String::new()),
                    RevealReason::Operator {
                        operator,
                        justification,
                    } => (operator.clone(), justification.clone()),
                };
                new_event(
                    &pb::TableSeedRevealed {
                        table_id,
                        // Revealed: this is the moment the seed becomes public.
                        server_seed: server_seed.expose_secret().to_owned(),
                        commitment: server_seed.commitment().to_hex(),
                        operator,
                        justification,
                    },
                    id,
                )
            }
        }
    }

    fn decode(event: &RecordedEvent) -> Result<TableEvent, DecodeError> {
        decode_table_event(event)
    }

    fn apply(state: Option<Self>, event: &TableEvent) -> Result<Self, DomainError> {
        Self::fold(state, event)
    }
}

fn decode_table_event(event: &RecordedEvent) -> Result<TableEvent, DecodeError> {
    let t = event.event_type.as_str();
    Ok(if is_event_type::<pb::TableCommitmentPublished>(t) {
        let m: pb::TableCommitmentPublished = payload(event)?;
        TableEvent::Published {
            table_id: uuid(event, "table_id", &m.table_id)?,
            seed_id: uuid(event, "seed_id", &m.seed_id)?,
            commitment: commitment(event, &m.commitment)?,
            delayed_source: optional_source(event, &m.delayed_source)?,
            drand: match drand_round(
                event,
                &m.drand_chain_hash,
                m.drand_round,
                m.drand_fallback_round,
            )? {
                Some(mut drand) if m.timelock_round != 0 => {
                    drand.timelock = Some(domain(
                        event,
                        Timelock::new(
                            m.timelock_round,
                            m.timelock_ciphertext,
                            m.timelock_latest_end,
                        ),
                    )?);
                    Some(drand)
                }
                drand => drand,
            },
        }
    } else if is_event_type::<pb::DrandRoundStalled>(t) {
        let m: pb::DrandRoundStalled = payload(event)?;
        TableEvent::DrandStalled {
            round: m.round,
            fallback_round: m.fallback_round,
            reason: m.reason,
        }
    } else if is_event_type::<pb::SeedContributed>(t) {
        let m: pb::SeedContributed = payload(event)?;
        TableEvent::Contributed {
            seat: m.seat,
            player_id: uuid(event, "player_id", &m.player_id)?,
            contribution: domain(event, Contribution::recorded(&m.contribution))?,
        }
    } else if is_event_type::<pb::DelayedValueBound>(t) {
        let m: pb::DelayedValueBound = payload(event)?;
        TableEvent::DelayedValueBound {
            value: domain(event, DelayedValue::recorded(&m.value))?,
            drand: bound_beacon(&m),
        }
    } else if is_event_type::<pb::ClientSeedFixed>(t) {
        let m: pb::ClientSeedFixed = payload(event)?;
        TableEvent::ClientSeedFixed {
            client_seed: m.client_seed,
            contributions_hash: m.contributions_hash,
        }
    } else if is_event_type::<pb::TableSeedRevealed>(t) {
        let m: pb::TableSeedRevealed = payload(event)?;
        let reason = if m.operator.is_empty() {
            RevealReason::Finished
        } else {
            domain(event, RevealReason::recorded(&m.operator, &m.justification))?
        };
        TableEvent::Revealed {
            server_seed: ServerSeed::new(m.server_seed),
            reason,
        }
    } else {
        return Err(bad(event, DecodeCause::Foreign("table commitment")));
    })
}

impl Aggregate for SeedPairs {
    type Id = Uuid;
    type Event = PairEvent;
    type DecodeError = DecodeError;
    type FoldError = DomainError;
    const CATEGORY: &'static str = "seedpair";

    fn encode(id: &Uuid, event: &PairEvent) -> NewEvent {
        let id = *id;
        let user_id = id.to_string();
        match event {
            PairEvent::Committed {
                index,
                seed_id,
                commitment,
                client_seed,
                ..
            } => new_event(
                &pb::SeedPairCommitted {
                    user_id,
                    index: *index,
                    seed_id: seed_id.to_string(),
                    commitment: commitment.to_hex(),
                    client_seed: client_seed.as_str().to_owned(),
                },
                id,
            ),
            PairEvent::ClientSeedChanged { index, client_seed } => new_event(
                &pb::ClientSeedChanged {
                    user_id,
                    index: *index,
                    client_seed: client_seed.as_str().to_owned(),
                },
                id,
            ),
            PairEvent::NonceConsumed {
                index,
                nonce,
                client_seed,
                bet_id,
                bet,
            } => new_event(
                &pb::BetNonceConsumed {
                    user_id,
                    index: *index,
                    nonce: *nonce,
                    client_seed: client_seed.as_str().to_owned(),
                    bet_id: bet_id.map(|id| id.to_string()).unwrap_or_default(),
                    bet: bet.clone(),
                },
                id,
            ),
            PairEvent::Rotated {
                index,
                server_seed,
                bets,
            } => new_event(
                &pb::SeedPairRotated {
                    user_id,
                    index: *index,
                    // Revealed by the rotation.
                    server_seed: server_seed.expose_secret().to_owned(),
                    commitment: server_seed.commitment().to_hex(),
                    bets: *bets,
                },
                id,
            ),
        }
    }

    fn decode(event: &RecordedEvent) -> Result<PairEvent, DecodeError> {
        decode_pair_event(event)
    }

    fn apply(state: Option<Self>, event: &PairEvent) -> Result<Self, DomainError> {
        Self::fold(state, event)
    }
}

fn decode_pair_event(event: &RecordedEvent) -> Result<PairEvent, DecodeError> {
    let t = event.event_type.as_str();
    let client_seed = |v: &str| domain(event, ClientSeed::parse(v));
    Ok(if is_event_type::<pb::SeedPairCommitted>(t) {
        let m: pb::SeedPairCommitted = payload(event)?;
        PairEvent::Committed {
            user_id: uuid(event, "user_id", &m.user_id)?,
            index: m.index,
            seed_id: uuid(event, "seed_id", &m.seed_id)?,
            commitment: commitment(event, &m.commitment)?,
            client_seed: client_seed(&m.client_seed)?,
        }
    } else if is_event_type::<pb::ClientSeedChanged>(t) {
        let m: pb::ClientSeedChanged = payload(event)?;
        PairEvent::ClientSeedChanged {
            index: m.index,
            client_seed: client_seed(&m.client_seed)?,
        }
    } else if is_event_type::<pb::BetNonceConsumed>(t) {
        let m: pb::BetNonceConsumed = payload(event)?;
        PairEvent::NonceConsumed {
            index: m.index,
            nonce: m.nonce,
            client_seed: client_seed(&m.client_seed)?,
            bet_id: if m.bet_id.is_empty() {
                None
            } else {
                Some(uuid(event, "bet_id", &m.bet_id)?)
            },
            bet: m.bet,
        }
    } else if is_event_type::<pb::SeedPairRotated>(t) {
        let m: pb::SeedPairRotated = payload(event)?;
        PairEvent::Rotated {
            index: m.index,
            server_seed: ServerSeed::new(m.server_seed),
            bets: m.bets,
        }
    } else {
        return Err(bad(event, DecodeCause::Foreign("seed pair")));
    })
}

impl Aggregate for TournamentSet {
    type Id = Uuid;
    type Event = TournamentEvent;
    type DecodeError = DecodeError;
    type FoldError = DomainError;
    const CATEGORY: &'static str = "tournament";

    fn encode(id: &Uuid, event: &TournamentEvent) -> NewEvent {
        let id = *id;
        let tournament_id = id.to_string();
        match event {
            TournamentEvent::Committed {
                seed_id,
                commitment,
                delayed_source,
                deck,
                drand,
                ..
            } => new_event(
                &pb::TournamentCommitted {
                    tournament_id,
                    seed_id: seed_id.to_string(),
                    commitment: commitment.to_hex(),
                    delayed_source: delayed_source.as_str().to_owned(),
                    deck: deck.name().to_owned(),
                    drand_round: drand.as_ref().map_or(0, |d| d.round),
                    drand_fallback_round: drand.as_ref().map_or(0, |d| d.fallback_round),
                    drand_chain_hash: drand
                        .as_ref()
                        .map(|d| d.chain_hash.clone())
                        .unwrap_or_default(),
                },
                id,
            ),
            TournamentEvent::DelayedValueBound { value, drand } => new_event(
                &delayed_value_bound(tournament_id, value, drand.as_ref()),
                id,
            ),
            TournamentEvent::DrandStalled {
                round,
                fallback_round,
                reason,
            } => new_event(
                &pb::DrandRoundStalled {
                    tournament_id,
                    round: *round,
                    fallback_round: *fallback_round,
                    reason: reason.clone(),
                    ..Default::default()
                },
                id,
            ),
            TournamentEvent::BoardsGenerated {
                session,
                first_board,
                numbers,
            } => new_event(
                &pb::BoardsGenerated {
                    tournament_id,
                    session: *session,
                    first_board: *first_board,
                    numbers: numbers.clone(),
                },
                id,
            ),
            TournamentEvent::Revealed { secret } => new_event(
                &pb::TournamentRevealed {
                    tournament_id,
                    secret: secret.expose_secret().to_owned(),
                    commitment: secret.commitment().to_hex(),
                },
                id,
            ),
        }
    }

    fn decode(event: &RecordedEvent) -> Result<TournamentEvent, DecodeError> {
        decode_tournament_event(event)
    }

    fn apply(state: Option<Self>, event: &TournamentEvent) -> Result<Self, DomainError> {
        Self::fold(state, event)
    }
}

fn decode_tournament_event(event: &RecordedEvent) -> Result<TournamentEvent, DecodeError> {
    let t = event.event_type.as_str();
    Ok(if is_event_type::<pb::TournamentCommitted>(t) {
        let m: pb::TournamentCommitted = payload(event)?;
        TournamentEvent::Committed {
            tournament_id: uuid(event, "tournament_id", &m.tournament_id)?,
            seed_id: uuid(event, "seed_id", &m.seed_id)?,
            commitment: commitment(event, &m.commitment)?,
            delayed_source: domain(event, DelayedSource::recorded(&m.delayed_source))?,
            deck: m.deck.parse::<Deck>().map_err(|e| bad(event, e))?,
            drand: drand_round(
                event,
                &m.drand_chain_hash,
                m.drand_round,
                m.drand_fallback_round,
            )?,
        }
    } else if is_event_type::<pb::DelayedValueBound>(t) {
        let m: pb::DelayedValueBound = payload(event)?;
        TournamentEvent::DelayedValueBound {
            value: domain(event, DelayedValue::recorded(&m.value))?,
            drand: bound_beacon(&m),
        }
    } else if is_event_type::<pb::DrandRoundStalled>(t) {
        let m: pb::DrandRoundStalled = payload(event)?;
        TournamentEvent::DrandStalled {
            round: m.round,
            fallback_round: m.fallback_round,
            reason: m.reason,
        }
    } else if is_event_type::<pb::BoardsGenerated>(t) {
        let m: pb::BoardsGenerated = payload(event)?;
        TournamentEvent::BoardsGenerated {
            session: m.session,
            first_board: m.first_board,
            numbers: m.numbers,
        }
    } else if is_event_type::<pb::TournamentRevealed>(t) {
        let m: pb::TournamentRevealed = payload(event)?;
        TournamentEvent::Revealed {
            secret: ServerSeed::new(m.secret),
        }
    } else {
        return Err(bad(event, DecodeCause::Foreign("tournament")));
    })
}
