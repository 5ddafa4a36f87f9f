//! The tonic adapter: every method is public and read-only; what it returns of an event is
//! what [`crate::service`] disclosed under the visibility rule, mapped to the wire here.

use std::pin::Pin;

use fairdeal_kit::ServiceError;
use fairdeal_proto::fairdeal::ledger::v1 as pb;
use pb::ledger_service_server::LedgerService;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use fairdeal_tlog::export::{Content, Disclosure};

use crate::service::{Ledger, LedgerError};

/// Export lines per streamed message.
const LINES_PER_MESSAGE: usize = 256;

/// The tonic service.
#[derive(Debug, Clone)]
pub struct LedgerApi {
    ledger: Ledger,
}

impl LedgerApi {
    /// An API over `ledger`.
    pub fn new(ledger: Ledger) -> Self {
        Self { ledger }
    }
}

fn status(error: LedgerError) -> Status {
    Status::from(ServiceError::from(error))
}

/// The wire's name of a disclosure.
fn disclosure(d: Disclosure) -> pb::Disclosure {
    match d {
        Disclosure::Full => pb::Disclosure::Full,
        Disclosure::Body => pb::Disclosure::Body,
        Disclosure::WithheldGame => pb::Disclosure::WithheldGame,
        Disclosure::WithheldPersonal => pb::Disclosure::WithheldPersonal,
        Disclosure::Erased => pb::Disclosure::Erased,
        Disclosure::WithheldUnknown => pb::Disclosure::WithheldUnknown,
    }
}

type ExportStream = Pin<Box<dyn Stream<Item = Result<pb::ExportGameResponse, Status>> + Send>>;

#[tonic::async_trait]
impl LedgerService for LedgerApi {
    async fn get_checkpoint(
        &self,
        _request: Request<pb::GetCheckpointRequest>,
    ) -> Result<Response<pb::GetCheckpointResponse>, Status> {
        let signed = self.ledger.checkpoint().await.map_err(status)?;
        Ok(Response::new(pb::GetCheckpointResponse {
            checkpoint: signed.note,
            tree_size: signed.size,
            root_hash: signed.root.to_vec(),
        }))
    }

    async fn get_inclusion_proof(
        &self,
        request: Request<pb::GetInclusionProofRequest>,
    ) -> Result<Response<pb::GetInclusionProofResponse>, Status> {
        let r = request.into_inner();
        let inclusion = self
            .ledger
            .inclusion(&r.event_id, r.tree_size)
            .await
            .map_err(status)?;
        let content = &inclusion.event.content;
        let mut response = pb::GetInclusionProofResponse {
            leaf_index: inclusion.event.leaf_index,
            tree_size: inclusion.tree_size,
            proof: inclusion.proof.iter().map(|h| h.to_vec()).collect(),
            leaf_format: u32::from(u8::from(content.leaf_format())),
            leaf_hash: content.leaf_hash().to_vec(),
            disclosure: disclosure(content.disclosure()) as i32,
            ..Default::default()
        };
        match content {
            Content::V1Envelope { envelope } => {
                response.leaf = envelope.clone();
                response.envelope = envelope.clone();
            }
            Content::V1Sealed { .. } => {}
            Content::Full {
                leaf,
                envelope,
                body_salt,
                chain_salt,
            } => {
                response.leaf = leaf.clone();
                response.envelope = envelope.clone();
                response.body_salt = body_salt.to_vec();
                response.chain_salt = chain_salt.to_vec();
            }
            Content::Body {
                leaf,
                body,
                body_salt,
            } => {
                response.leaf = leaf.clone();
                response.body = body.clone();
                response.body_salt = body_salt.to_vec();
            }
            Content::Sealed { leaf, .. } => response.leaf = leaf.clone(),
        }
        Ok(Response::new(response))
    }

    async fn get_consistency_proof(
        &self,
        request: Request<pb::GetConsistencyProofRequest>,
    ) -> Result<Response<pb::GetConsistencyProofResponse>, Status> {
        let r = request.into_inner();
        let (old_size, new_size, proof) = self
            .ledger
            .consistency(r.old_size, r.new_size)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::GetConsistencyProofResponse {
            old_size,
            new_size,
            proof: proof.iter().map(|h| h.to_vec()).collect(),
        }))
    }

    type ExportGameStream = ExportStream;

    async fn export_game(
        &self,
        request: Request<pb::ExportGameRequest>,
    ) -> Result<Response<Self::ExportGameStream>, Status> {
        let r = request.into_inner();
        let lines = self
            .ledger
            .export_game(&r.table_id, &r.previous_tree_sizes)
            .await
            .map_err(status)?;
        let chunks: Vec<Result<pb::ExportGameResponse, Status>> = lines
            .chunks(LINES_PER_MESSAGE)
            .map(|chunk| {
                Ok(pb::ExportGameResponse {
                    lines: chunk.to_vec(),
                })
            })
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
    }

    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let s = self.ledger.status().await.map_err(status)?;
        Ok(Response::new(pb::GetStatusResponse {
            tree_size: s.tree_size,
            checkpoint_size: s.checkpoint_size,
            halted_streams: s.halted_streams,
            refused_events: s.refused_events,
        }))
    }
}
