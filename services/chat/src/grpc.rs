//! The gRPC adapter: the caller (a player token; services are refused; the moderator role
//! for moderation), request parsing into domain types (INVALID_ARGUMENT naming the field
//! and the rule, values quoted through `fairdeal_kit::status::shown`), and the wire
//! mapping of answers and errors.

use std::pin::Pin;

use fairdeal_authn::{Caller, Moderator};
use fairdeal_kit::ServiceError;
use fairdeal_kit::status::shown;
use fairdeal_proto::fairdeal::chat::v1 as pb;
use pb::chat_service_server::ChatService;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::domain::{Channel, MessageText, MuteDuration, MuteScope, Reason};
use crate::service::{Chat, ChatError, message_of};

/// Default page of `History`.
pub const DEFAULT_PAGE: u32 = 50;
/// Largest page of `History`.
pub const MAX_PAGE: u32 = 100;

/// The tonic service.
#[derive(Clone, Debug)]
pub struct ChatApi {
    /// The use cases.
    chat: Chat,
}

impl ChatApi {
    /// An API over `chat`.
    pub fn new(chat: Chat) -> Self {
        ChatApi { chat }
    }
}

/// The calling player (service tokens are refused: every method acts for a player).
fn player<T>(request: &Request<T>) -> Result<Uuid, Status> {
    Caller::from_request(request)?.player_id()
}

fn invalid(field: &'static str, reason: impl std::fmt::Display) -> Status {
    Status::from(ServiceError::InvalidArgument(format!("{field}: {reason}")))
}

fn channel(value: &str) -> Result<Channel, Status> {
    Channel::parse(value).map_err(|e| {
        if value.is_empty() {
            invalid("channel", e)
        } else {
            invalid("channel", format!("\"{}\" {e}", shown(value)))
        }
    })
}

fn uuid(field: &'static str, value: &str) -> Result<Uuid, Status> {
    if value.len() > 36 {
        return Err(invalid(field, "is not a UUID (36 characters)"));
    }
    Uuid::try_parse(value)
        .map_err(|_| invalid(field, format!("\"{}\" is not a UUID", shown(value))))
}

/// The wire status of a use case's failure; a rate limit carries `retry-after`.
fn status(error: ChatError) -> Status {
    let retry_after = match &error {
        ChatError::RateLimited { retry_after, .. } => Some(*retry_after),
        _ => None,
    };
    match &error {
        // A caller's doing: worth a debug line, not a warning.
        ChatError::Unavailable { .. } => {}
        other => tracing::debug!(error = %other, "request refused"),
    }
    let mut status = Status::from(ServiceError::from(error));
    if let Some(seconds) = retry_after {
        status
            .metadata_mut()
            .insert("retry-after", seconds.max(1).into());
    }
    status
}

type SubscribeStream =
    Pin<Box<dyn Stream<Item = Result<pb::SubscribeResponse, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl ChatService for ChatApi {
    type SubscribeStream = SubscribeStream;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let user = player(&request)?;
        let channel = channel(&request.get_ref().channel)?;
        let items = self.chat.subscribe(user, channel).await.map_err(status)?;
        Ok(Response::new(Box::pin(ReceiverStream::new(items))))
    }

    async fn post(
        &self,
        request: Request<pb::PostRequest>,
    ) -> Result<Response<pb::PostResponse>, Status> {
        let user = player(&request)?;
        let r = request.get_ref();
        let channel = channel(&r.channel)?;
        let text = MessageText::parse(&r.text).map_err(|e| invalid("text", e))?;
        let stored = self.chat.post(user, channel, text).await.map_err(status)?;
        Ok(Response::new(pb::PostResponse {
            message: Some(message_of(&stored)),
        }))
    }

    async fn history(
        &self,
        request: Request<pb::HistoryRequest>,
    ) -> Result<Response<pb::HistoryResponse>, Status> {
        let user = player(&request)?;
        let r = request.get_ref();
        let channel = channel(&r.channel)?;
        let before = match r.before_message_id.as_str() {
            "" => None,
            id => Some(uuid("before_message_id", id)?),
        };
        let limit = match r.limit {
            0 => DEFAULT_PAGE,
            n @ 1..=MAX_PAGE => n,
            n => {
                return Err(invalid(
                    "limit",
                    format!("{n} is out of range (1..={MAX_PAGE})"),
                ));
            }
        };
        let (messages, more) = self
            .chat
            .history(user, channel, before, limit)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::HistoryResponse {
            messages: messages.iter().map(message_of).collect(),
            more,
        }))
    }

    async fn remove_message(
        &self,
        request: Request<pb::RemoveMessageRequest>,
    ) -> Result<Response<pb::RemoveMessageResponse>, Status> {
        let moderator = Moderator::from_request(&request)?;
        let r = request.get_ref();
        let channel = channel(&r.channel)?;
        let message_id = uuid("message_id", &r.message_id)?;
        let reason = Reason::parse(&r.reason).map_err(|e| invalid("reason", e))?;
        self.chat
            .remove(moderator, channel, message_id, reason)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::RemoveMessageResponse {}))
    }

    async fn mute(
        &self,
        request: Request<pb::MuteRequest>,
    ) -> Result<Response<pb::MuteResponse>, Status> {
        let moderator = Moderator::from_request(&request)?;
        let r = request.get_ref();
        let user = uuid("user_id", &r.user_id)?;
        let scope = match r.channel.as_str() {
            "" => MuteScope::Everywhere,
            name => MuteScope::Channel(channel(name)?),
        };
        let duration =
            MuteDuration::parse(r.duration_seconds).map_err(|e| invalid("duration_seconds", e))?;
        let reason = Reason::parse(&r.reason).map_err(|e| invalid("reason", e))?;
        let until = self
            .chat
            .mute(moderator, user, scope, duration, reason)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::MuteResponse { until: Some(until) }))
    }
}
