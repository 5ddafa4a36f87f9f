//! The gRPC adapter: authorization and wire mapping.
//!
//! - `DealHand`, `DealDuplicate`: internal (service token); players get PERMISSION_DENIED.
//! - `PlaceBet`: a player, for themself.
//! - `Verify*`, `DealFromNumber`, `NumberOfDeal`: public, no token needed.

use fairdeal_authn::Caller;
use fairdeal_kit::ServiceError;
use fairdeal_proto::fairdeal::dealing::v1 as pb;
use pb::dealing_service_server::DealingService;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::service::{Dealer, DealingError, DealtHand};
use crate::verify::{self, VerifyError};

/// Methods anyone may call without a token.
pub const PUBLIC_METHODS: [&str; 5] = [
    "/fairdeal.dealing.v1.DealingService/VerifyDeal",
    "/fairdeal.dealing.v1.DealingService/VerifyOutcome",
    "/fairdeal.dealing.v1.DealingService/VerifyDuplicate",
    "/fairdeal.dealing.v1.DealingService/DealFromNumber",
    "/fairdeal.dealing.v1.DealingService/NumberOfDeal",
];

/// The tonic service.
#[derive(Clone, Debug)]
pub struct DealingApi {
    /// The use cases.
    dealer: Dealer,
}

impl DealingApi {
    /// An API over `dealer`.
    pub fn new(dealer: Dealer) -> Self {
        DealingApi { dealer }
    }
}

fn status(error: DealingError) -> Status {
    Status::from(ServiceError::from(error))
}

fn invalid(error: VerifyError) -> Status {
    Status::invalid_argument(error.to_string())
}

/// A UUID field, bounded and named (see [`verify::parse_uuid`]).
fn parse_uuid(field: &'static str, value: &str) -> Result<Uuid, Status> {
    verify::parse_uuid(field, value).map_err(invalid)
}

fn hand_response(table_id: &str, hand: u64, dealt: DealtHand) -> pb::DealHandResponse {
    pb::DealHandResponse {
        table_id: table_id.to_owned(),
        hand,
        salt: hand.to_string(),
        commitment: dealt.commitment,
        client_seed: dealt.client_seed,
        deal: Some(verify::deal_message(&dealt.deal)),
    }
}

#[tonic::async_trait]
impl DealingService for DealingApi {
    async fn deal_hand(
        &self,
        request: Request<pb::DealHandRequest>,
    ) -> Result<Response<pb::DealHandResponse>, Status> {
        Caller::from_request(&request)?.require_service()?;
        let r = request.into_inner();
        let table_id = parse_uuid("table_id", &r.table_id)?;
        let deck = verify::deck(&r.deck).map_err(invalid)?;
        let dealt = self
            .dealer
            .deal_hand(table_id, deck, r.hand)
            .await
            .map_err(status)?;
        Ok(Response::new(hand_response(&r.table_id, r.hand, dealt)))
    }

    async fn deal_duplicate(
        &self,
        request: Request<pb::DealDuplicateRequest>,
    ) -> Result<Response<pb::DealDuplicateResponse>, Status> {
        Caller::from_request(&request)?.require_service()?;
        let r = request.into_inner();
        let table_id = parse_uuid("table_id", &r.table_id)?;
        let dealt = self
            .dealer
            .deal_duplicate(table_id, r.hand)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::DealDuplicateResponse {
            table_id: r.table_id,
            hand: r.hand,
            commitment: dealt.commitment,
            client_seed: dealt.client_seed,
            deal: Some(verify::deal_message(&dealt.deal)),
            candidates: dealt.candidates,
        }))
    }

    async fn place_bet(
        &self,
        request: Request<pb::PlaceBetRequest>,
    ) -> Result<Response<pb::PlaceBetResponse>, Status> {
        let user = Caller::from_request(&request)?.player_id()?;
        // Options are validated before a nonce is consumed.
        let round = verify::round(request.get_ref().options.as_ref()).map_err(invalid)?;
        let bet_id = match request.get_ref().bet_id.as_str() {
            "" => Uuid::now_v7(),
            id => parse_uuid("bet_id", id)?,
        };
        let issued = self
            .dealer
            .place_bet(user, round, bet_id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::PlaceBetResponse {
            bet_id: issued.bet_id.to_string(),
            user_id: user.to_string(),
            pair_index: issued.pair_index,
            nonce: issued.nonce,
            commitment: issued.commitment,
            client_seed: issued.client_seed,
            result_json: verify::outcome_json(&issued.outcome).map_err(invalid)?,
            result_text: issued.outcome.to_string(),
        }))
    }

    async fn verify_deal(
        &self,
        request: Request<pb::VerifyDealRequest>,
    ) -> Result<Response<pb::VerifyDealResponse>, Status> {
        verify::verify_deal(request.get_ref())
            .map(Response::new)
            .map_err(invalid)
    }

    async fn verify_outcome(
        &self,
        request: Request<pb::VerifyOutcomeRequest>,
    ) -> Result<Response<pb::VerifyOutcomeResponse>, Status> {
        verify::verify_outcome(request.get_ref())
            .map(Response::new)
            .map_err(invalid)
    }

    async fn verify_duplicate(
        &self,
        request: Request<pb::VerifyDuplicateRequest>,
    ) -> Result<Response<pb::VerifyDuplicateResponse>, Status> {
        let r = request.into_inner();
        // A selection examines ~2.5 candidates on average but may run to thousands: off the
        // async workers.
        tokio::task::spawn_blocking(move || verify::verify_duplicate(&r))
            .await
            .map_err(|_| Status::internal("verification task failed"))?
            .map(Response::new)
            .map_err(invalid)
    }

    async fn deal_from_number(
        &self,
        request: Request<pb::DealFromNumberRequest>,
    ) -> Result<Response<pb::DealFromNumberResponse>, Status> {
        verify::deal_from_number(request.get_ref())
            .map(Response::new)
            .map_err(invalid)
    }

    async fn number_of_deal(
        &self,
        request: Request<pb::NumberOfDealRequest>,
    ) -> Result<Response<pb::NumberOfDealResponse>, Status> {
        verify::number_of_deal(request.get_ref())
            .map(Response::new)
            .map_err(invalid)
    }
}
