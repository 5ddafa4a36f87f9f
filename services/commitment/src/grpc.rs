//! The gRPC adapter: authorization, request parsing, and domain state -> wire messages.
//!
//! Who may call what (see `proto/fairdeal/commitment/v1/commitment.proto`):
//! - public reads (`GetTableCommitment`, `GetTournament`) pass the auth layer anonymously;
//! - seed-pair methods act for the calling player only (a service may name any user);
//! - everything else is internal: a service token, and for the two methods that hand out a
//!   server seed before its reveal (`GetTableDealingSeeds`, `ReserveBet`) the `dealing`
//!   service's token specifically.

use fairdeal_authn::Caller;
use fairdeal_fairness::deck::Deck;
use fairdeal_kit::ServiceError;
use fairdeal_proto::fairdeal::commitment::v1 as pb;
use pb::commitment_service_server::CommitmentService;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::domain::RevealReason;
use crate::domain::client_seed::{Contribution, DelayedSource, DelayedValue};
use crate::domain::drand::{DrandBeacon, DrandRound};
use crate::domain::pair::{BetRequest, ClientSeed, PairEvent, SeedPairs};
use crate::domain::table::TableCommitment;
use crate::domain::tournament::TournamentSet;
use crate::drand::{MAX_TIMELOCK_SECONDS, MIN_TIMELOCK_SECONDS};
use crate::service::{CommitmentError, Commitments};

/// The only service allowed to read unrevealed seeds.
pub const DEALING_SERVICE: &str = "dealing";

/// Methods anyone may call without a token.
pub const PUBLIC_METHODS: [&str; 2] = [
    "/fairdeal.commitment.v1.CommitmentService/GetTableCommitment",
    "/fairdeal.commitment.v1.CommitmentService/GetTournament",
];

/// The tonic service.
#[derive(Clone, Debug)]
pub struct CommitmentApi {
    /// The use cases.
    service: Commitments,
}

impl CommitmentApi {
    /// An API over `service`.
    pub fn new(service: Commitments) -> Self {
        CommitmentApi { service }
    }
}

fn status(error: CommitmentError) -> Status {
    Status::from(ServiceError::from(error))
}

/// A UUID field, bounded and named (see [`crate::domain::parse_uuid`]).
fn parse_uuid(field: &'static str, value: &str) -> Result<Uuid, Status> {
    domain(crate::domain::parse_uuid(field, value))
}

fn domain<T>(result: Result<T, crate::domain::DomainError>) -> Result<T, Status> {
    result.map_err(|e| status(e.into()))
}

fn require_service<T>(request: &Request<T>) -> Result<(), Status> {
    Caller::from_request(request)?.require_service().map(|_| ())
}

fn require_dealing<T>(request: &Request<T>) -> Result<(), Status> {
    let name = Caller::from_request(request)?.require_service()?;
    if name == DEALING_SERVICE {
        Ok(())
    } else {
        Err(Status::permission_denied(
            "only the dealing service may read unrevealed seeds",
        ))
    }
}

/// The user a seed-pair call acts for: a player acts for themself (an explicit `user_id`
/// must be their own); a service must name the user.
fn acting_user<T>(request: &Request<T>, user_id: &str) -> Result<Uuid, Status> {
    match Caller::from_request(request)? {
        Caller::Player(me) => {
            if user_id.is_empty() || parse_uuid("user_id", user_id)? == *me {
                Ok(*me)
            } else {
                Err(Status::permission_denied("not your account"))
            }
        }
        Caller::Service(_) => parse_uuid("user_id", user_id),
    }
}

/// The public view of a table's commitment.
pub fn table_message(state: &TableCommitment) -> pb::TableCommitment {
    let (server_seed, reveal_reason) = match &state.revealed {
        Some((seed, reason)) => (
            seed.expose_secret().to_owned(),
            match reason {
                RevealReason::Finished => "finished",
                RevealReason::Operator { .. } => "operator",
            }
            .to_owned(),
        ),
        None => (String::new(), String::new()),
    };
    let timelock = state.drand.as_ref().and_then(|d| d.timelock.as_ref());
    let drand = DrandShown::of(
        state.drand.as_ref(),
        state.drand_stalled,
        state.drand_beacon.as_ref(),
    );
    pb::TableCommitment {
        table_id: state.table_id.to_string(),
        commitment: state.commitment.to_hex(),
        short_code: state.commitment.short_code(),
        delayed_source: state
            .delayed_source
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        delayed_value: state
            .delayed_value
            .as_ref()
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default(),
        contributions: state
            .contributions
            .iter()
            .map(|(seat, (player, c))| pb::Contribution {
                seat: *seat,
                player_id: player.to_string(),
                contribution: c.as_str().to_owned(),
            })
            .collect(),
        client_seed: state.client_seed.clone().unwrap_or_default(),
        server_seed,
        reveal_reason,
        drand_round: drand.round,
        drand_fallback_round: drand.fallback_round,
        drand_chain_hash: drand.chain_hash,
        drand_stalled: drand.stalled,
        drand_bound_round: drand.bound_round,
        drand_signature: drand.signature,
        timelock_round: timelock.map_or(0, |t| t.round),
        timelock_ciphertext: timelock.map(|t| t.ciphertext.clone()).unwrap_or_default(),
        timelock_latest_end: timelock.map_or(0, |t| t.latest_end),
    }
}

fn pair_message(state: &SeedPairs) -> pb::SeedPair {
    pb::SeedPair {
        user_id: state.user_id.to_string(),
        index: state.index,
        commitment: state.commitment.to_hex(),
        short_code: state.commitment.short_code(),
        client_seed: state.client_seed.as_str().to_owned(),
        next_nonce: state.next_nonce,
    }
}

/// The drand fields a table's and a tournament's public messages show (0 and empty: none).
struct DrandShown {
    round: u64,
    fallback_round: u64,
    chain_hash: String,
    stalled: bool,
    bound_round: u64,
    signature: String,
}

impl DrandShown {
    /// A state's drand round, whether it stalled, and the beacon bound.
    fn of(round: Option<&DrandRound>, stalled: bool, beacon: Option<&DrandBeacon>) -> Self {
        DrandShown {
            round: round.map_or(0, |d| d.round),
            fallback_round: round.map_or(0, |d| d.fallback_round),
            chain_hash: round.map(|d| d.chain_hash.clone()).unwrap_or_default(),
            stalled,
            bound_round: beacon.map_or(0, |b| b.round),
            signature: beacon.map(|b| b.signature.clone()).unwrap_or_default(),
        }
    }
}

fn tournament_message(state: &TournamentSet) -> pb::Tournament {
    let drand = DrandShown::of(
        state.drand.as_ref(),
        state.drand_stalled,
        state.drand_beacon.as_ref(),
    );
    pb::Tournament {
        tournament_id: state.tournament_id.to_string(),
        commitment: state.commitment.to_hex(),
        short_code: state.commitment.short_code(),
        deck: state.deck.name().to_owned(),
        delayed_source: state.delayed_source.as_str().to_owned(),
        delayed_value: state
            .delayed_value
            .as_ref()
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default(),
        secret: state
            .revealed
            .as_ref()
            .map(|s| s.expose_secret().to_owned())
            .unwrap_or_default(),
        drand_round: drand.round,
        drand_fallback_round: drand.fallback_round,
        drand_chain_hash: drand.chain_hash,
        drand_stalled: drand.stalled,
        drand_bound_round: drand.bound_round,
        drand_signature: drand.signature,
    }
}

#[tonic::async_trait]
impl CommitmentService for CommitmentApi {
    async fn create_table_commitment(
        &self,
        request: Request<pb::CreateTableCommitmentRequest>,
    ) -> Result<Response<pb::CreateTableCommitmentResponse>, Status> {
        require_service(&request)?;
        let r = request.into_inner();
        let table_id = parse_uuid("table_id", &r.table_id)?;
        let source = if r.delayed_source.is_empty() {
            None
        } else {
            Some(domain(DelayedSource::parse(&r.delayed_source))?)
        };
        let timelock = match r.timelock_seconds {
            0 => None,
            seconds @ MIN_TIMELOCK_SECONDS..=MAX_TIMELOCK_SECONDS => Some(seconds),
            seconds => {
                return Err(Status::invalid_argument(format!(
                    "timelock_seconds {seconds} must be 0 (none) or {MIN_TIMELOCK_SECONDS} to {MAX_TIMELOCK_SECONDS}"
                )));
            }
        };
        let state = self
            .service
            .create_table(table_id, source, timelock)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::CreateTableCommitmentResponse {
            table: Some(table_message(&state)),
        }))
    }

    async fn get_table_commitment(
        &self,
        request: Request<pb::GetTableCommitmentRequest>,
    ) -> Result<Response<pb::GetTableCommitmentResponse>, Status> {
        let table_id = parse_uuid("table_id", &request.get_ref().table_id)?;
        let state = self.service.table(table_id).await.map_err(status)?;
        Ok(Response::new(pb::GetTableCommitmentResponse {
            table: Some(table_message(&state)),
        }))
    }

    async fn contribute_seed(
        &self,
        request: Request<pb::ContributeSeedRequest>,
    ) -> Result<Response<pb::ContributeSeedResponse>, Status> {
        require_service(&request)?;
        let r = request.into_inner();
        let table_id = parse_uuid("table_id", &r.table_id)?;
        let player_id = parse_uuid("player_id", &r.player_id)?;
        let contribution = domain(Contribution::parse(&r.contribution))?;
        let state = self
            .service
            .contribute(table_id, r.seat, player_id, contribution)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ContributeSeedResponse {
            table: Some(table_message(&state)),
        }))
    }

    async fn bind_table_delayed_value(
        &self,
        request: Request<pb::BindTableDelayedValueRequest>,
    ) -> Result<Response<pb::BindTableDelayedValueResponse>, Status> {
        require_service(&request)?;
        let r = request.into_inner();
        let table_id = parse_uuid("table_id", &r.table_id)?;
        let value = domain(DelayedValue::parse(&r.value))?;
        let state = self
            .service
            .bind_table_value(table_id, value)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::BindTableDelayedValueResponse {
            table: Some(table_message(&state)),
        }))
    }

    async fn get_table_dealing_seeds(
        &self,
        request: Request<pb::GetTableDealingSeedsRequest>,
    ) -> Result<Response<pb::GetTableDealingSeedsResponse>, Status> {
        require_dealing(&request)?;
        let table_id = parse_uuid("table_id", &request.get_ref().table_id)?;
        let (seed, client_seed, state) =
            self.service.dealing_seeds(table_id).await.map_err(status)?;
        Ok(Response::new(pb::GetTableDealingSeedsResponse {
            // The one place an unrevealed seed leaves the service: to the dealing service.
            server_seed: seed.expose_secret().to_owned(),
            client_seed,
            commitment: state.commitment.to_hex(),
        }))
    }

    async fn reveal_table_seed(
        &self,
        request: Request<pb::RevealTableSeedRequest>,
    ) -> Result<Response<pb::RevealTableSeedResponse>, Status> {
        require_service(&request)?;
        let r = request.into_inner();
        let table_id = parse_uuid("table_id", &r.table_id)?;
        let reason = if r.operator.is_empty() && r.justification.is_empty() {
            RevealReason::Finished
        } else {
            domain(RevealReason::operator(&r.operator, &r.justification))?
        };
        let state = self
            .service
            .reveal_table(table_id, reason.clone())
            .await
            .map_err(status)?;
        if let RevealReason::Operator {
            operator,
            justification,
        } = &reason
        {
            // Audited: the event records it too; the log makes it visible at once. Both
            // fields are bounded (64 and 500 characters) and free of control characters.
            tracing::warn!(%table_id, %operator, %justification, "operator reveal of a table seed");
        }
        Ok(Response::new(pb::RevealTableSeedResponse {
            table: Some(table_message(&state)),
        }))
    }

    async fn get_seed_pair(
        &self,
        request: Request<pb::GetSeedPairRequest>,
    ) -> Result<Response<pb::GetSeedPairResponse>, Status> {
        let user = acting_user(&request, &request.get_ref().user_id)?;
        let state = self.service.pair(user).await.map_err(status)?;
        Ok(Response::new(pb::GetSeedPairResponse {
            pair: Some(pair_message(&state)),
        }))
    }

    async fn set_client_seed(
        &self,
        request: Request<pb::SetClientSeedRequest>,
    ) -> Result<Response<pb::SetClientSeedResponse>, Status> {
        let user = acting_user(&request, &request.get_ref().user_id)?;
        let client_seed = domain(ClientSeed::parse(&request.get_ref().client_seed))?;
        let state = self
            .service
            .set_client_seed(user, client_seed)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::SetClientSeedResponse {
            pair: Some(pair_message(&state)),
        }))
    }

    async fn rotate_seed_pair(
        &self,
        request: Request<pb::RotateSeedPairRequest>,
    ) -> Result<Response<pb::RotateSeedPairResponse>, Status> {
        let user = acting_user(&request, &request.get_ref().user_id)?;
        let (revealed, state) = self.service.rotate(user).await.map_err(status)?;
        let revealed = match revealed {
            PairEvent::Rotated {
                index,
                server_seed,
                bets,
            } => pb::RevealedSeedPair {
                user_id: user.to_string(),
                index,
                commitment: server_seed.commitment().to_hex(),
                server_seed: server_seed.expose_secret().to_owned(),
                bets,
            },
            _ => return Err(Status::internal("rotation did not reveal")),
        };
        Ok(Response::new(pb::RotateSeedPairResponse {
            revealed: Some(revealed),
            pair: Some(pair_message(&state)),
        }))
    }

    async fn get_revealed_seed_pair(
        &self,
        request: Request<pb::GetRevealedSeedPairRequest>,
    ) -> Result<Response<pb::GetRevealedSeedPairResponse>, Status> {
        let user = acting_user(&request, &request.get_ref().user_id)?;
        let index = request.get_ref().index;
        let (seed, bets) = self
            .service
            .revealed_pair(user, index)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::GetRevealedSeedPairResponse {
            revealed: Some(pb::RevealedSeedPair {
                user_id: user.to_string(),
                index,
                commitment: seed.commitment().to_hex(),
                server_seed: seed.expose_secret().to_owned(),
                bets,
            }),
        }))
    }

    async fn reserve_bet(
        &self,
        request: Request<pb::ReserveBetRequest>,
    ) -> Result<Response<pb::ReserveBetResponse>, Status> {
        require_dealing(&request)?;
        let r = request.get_ref();
        let user = parse_uuid("user_id", &r.user_id)?;
        let bet = domain(BetRequest::parse(&r.bet_id, &r.bet))?;
        let (bet, seed, state) = self.service.reserve_bet(user, bet).await.map_err(status)?;
        Ok(Response::new(pb::ReserveBetResponse {
            index: bet.index,
            nonce: bet.nonce,
            client_seed: bet.client_seed.as_str().to_owned(),
            server_seed: seed.expose_secret().to_owned(),
            commitment: state.commitment.to_hex(),
        }))
    }

    async fn commit_tournament(
        &self,
        request: Request<pb::CommitTournamentRequest>,
    ) -> Result<Response<pb::CommitTournamentResponse>, Status> {
        require_service(&request)?;
        let r = request.into_inner();
        let id = parse_uuid("tournament_id", &r.tournament_id)?;
        // The deck name is bounded by its parse: one of six short names (an unknown one is
        // quoted cut to 16 characters).
        let deck: Deck = r
            .deck
            .parse()
            .map_err(|e| Status::invalid_argument(format!("deck: {e}")))?;
        // Empty: a drand round (drand on), INVALID_ARGUMENT naming the field otherwise.
        let source = if r.delayed_source.is_empty() {
            None
        } else {
            Some(domain(DelayedSource::parse(&r.delayed_source))?)
        };
        let state = self
            .service
            .commit_tournament(id, deck, source)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::CommitTournamentResponse {
            tournament: Some(tournament_message(&state)),
        }))
    }

    async fn get_tournament(
        &self,
        request: Request<pb::GetTournamentRequest>,
    ) -> Result<Response<pb::GetTournamentResponse>, Status> {
        let id = parse_uuid("tournament_id", &request.get_ref().tournament_id)?;
        let state = self.service.tournament(id).await.map_err(status)?;
        Ok(Response::new(pb::GetTournamentResponse {
            tournament: Some(tournament_message(&state)),
        }))
    }

    async fn bind_tournament_delayed_value(
        &self,
        request: Request<pb::BindTournamentDelayedValueRequest>,
    ) -> Result<Response<pb::BindTournamentDelayedValueResponse>, Status> {
        require_service(&request)?;
        let r = request.into_inner();
        let id = parse_uuid("tournament_id", &r.tournament_id)?;
        let value = domain(DelayedValue::parse(&r.value))?;
        let state = self
            .service
            .bind_tournament_value(id, value)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::BindTournamentDelayedValueResponse {
            tournament: Some(tournament_message(&state)),
        }))
    }

    async fn generate_boards(
        &self,
        request: Request<pb::GenerateBoardsRequest>,
    ) -> Result<Response<pb::GenerateBoardsResponse>, Status> {
        require_service(&request)?;
        let r = request.into_inner();
        let id = parse_uuid("tournament_id", &r.tournament_id)?;
        let boards = self
            .service
            .generate_boards(id, r.session, r.first_board, r.count)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::GenerateBoardsResponse {
            boards: boards
                .into_iter()
                .map(|b| pb::Board {
                    board: b.board,
                    hands: b
                        .hands
                        .into_iter()
                        .map(|h| pb::Hand {
                            cards: h.into_iter().map(str::to_owned).collect(),
                        })
                        .collect(),
                    chien: b.chien.into_iter().map(str::to_owned).collect(),
                    number: b.number,
                })
                .collect(),
        }))
    }

    async fn reveal_tournament(
        &self,
        request: Request<pb::RevealTournamentRequest>,
    ) -> Result<Response<pb::RevealTournamentResponse>, Status> {
        require_service(&request)?;
        let id = parse_uuid("tournament_id", &request.get_ref().tournament_id)?;
        let state = self.service.reveal_tournament(id).await.map_err(status)?;
        Ok(Response::new(pb::RevealTournamentResponse {
            tournament: Some(tournament_message(&state)),
        }))
    }
}
