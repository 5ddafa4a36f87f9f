//! A relayed `Watch` passes the owner's messages on as the owner encoded them (issue 33, what
//! a hop costs): the relaying replica reads only each message's `version` (to open the watch
//! again from there) and writes the owner's bytes to its client unchanged, where it used to
//! decode every message and encode it again. tonic's generated server only encodes
//! `WatchResponse` values, so the `Watch` method is served beside it ([`WithWatch`]), with a
//! codec that writes either a value or bytes ([`FrameCodec`]); the owner is read with a codec
//! that keeps the bytes ([`EncodedCodec`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes};
use fairdeal_proto::codec::{Codec as ProtoCodec, Decoder as ProtoDecoder, malformed};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use futures::future::BoxFuture;
use prost::Message;
use tonic::body::Body;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::server::{NamedService, ServerStreamingService};
use tonic::transport::Channel;
use tonic::{Request, Response, Status, Streaming};

use crate::grpc::TablesApi;

/// The `Watch` method's path.
pub const WATCH_PATH: &str = "/fairdeal.tables.v1.TablesService/Watch";

/// One message of a watch stream: a value encoded here, or a message another replica
/// encoded.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // A value of one step, moved on at once (boxing costs an allocation a message).
pub enum WatchFrame {
    /// Encoded here.
    Value(pb::WatchResponse),
    /// As the table's owner encoded it.
    Encoded(Encoded),
}

impl WatchFrame {
    /// The version of the event it carries.
    pub fn version(&self) -> u64 {
        match self {
            WatchFrame::Value(message) => message.version,
            WatchFrame::Encoded(encoded) => encoded.version,
        }
    }

    /// The message as a value (decoding what another replica encoded).
    pub fn into_value(self) -> Result<pb::WatchResponse, Status> {
        match self {
            WatchFrame::Value(message) => Ok(message),
            WatchFrame::Encoded(encoded) => pb::WatchResponse::decode(encoded.bytes)
                .map_err(|error| malformed(&error.to_string())),
        }
    }
}

/// A `WatchResponse` as another replica encoded it, its version read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// `WatchResponse.version`.
    pub version: u64,
    /// The whole message.
    pub bytes: Bytes,
}

/// The one field of a `WatchResponse` a relay reads (prost skips the others without
/// decoding them).
#[derive(Clone, PartialEq, Message)]
struct VersionOnly {
    /// `WatchResponse.version`.
    #[prost(uint64, tag = "1")]
    version: u64,
}

/// The server's codec of `Watch`: reads a `WatchRequest` (malformed: INVALID_ARGUMENT, as
/// every fairdeal method), writes [`WatchFrame`]s.
#[derive(Debug, Default)]
pub struct FrameCodec {
    /// The codec of every other method, whose decoder this one uses.
    proto: ProtoCodec<pb::WatchResponse, pb::WatchRequest>,
}

impl Codec for FrameCodec {
    type Encode = WatchFrame;
    type Decode = pb::WatchRequest;
    type Encoder = FrameEncoder;
    type Decoder = ProtoDecoder<pb::WatchRequest>;

    fn encoder(&mut self) -> Self::Encoder {
        FrameEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        self.proto.decoder()
    }
}

/// Writes a [`WatchFrame`]: a value encoded, bytes as they are.
#[derive(Debug, Default)]
pub struct FrameEncoder;

impl Encoder for FrameEncoder {
    type Item = WatchFrame;
    type Error = Status;

    fn encode(&mut self, item: WatchFrame, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        match item {
            WatchFrame::Value(message) => message
                .encode(dst)
                .map_err(|error| Status::internal(format!("encoding a watch message: {error}"))),
            WatchFrame::Encoded(encoded) => {
                dst.put(encoded.bytes);
                Ok(())
            }
        }
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// The relaying replica's codec of `Watch`: writes the `WatchRequest`, keeps each message's
/// bytes and reads its version.
#[derive(Debug, Default)]
pub struct EncodedCodec {
    /// The codec of every other method, whose encoder this one uses.
    proto: ProtoCodec<pb::WatchRequest, pb::WatchResponse>,
}

impl Codec for EncodedCodec {
    type Encode = pb::WatchRequest;
    type Decode = Encoded;
    type Encoder = <ProtoCodec<pb::WatchRequest, pb::WatchResponse> as Codec>::Encoder;
    type Decoder = EncodedDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        self.proto.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        EncodedDecoder
    }
}

/// Keeps a message's bytes, its version read.
#[derive(Debug, Default)]
pub struct EncodedDecoder;

impl Decoder for EncodedDecoder {
    type Item = Encoded;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Encoded>, Status> {
        let bytes = buf.copy_to_bytes(buf.remaining());
        let version = VersionOnly::decode(bytes.clone())
            .map_err(|error| malformed(&error.to_string()))?
            .version;
        Ok(Some(Encoded { version, bytes }))
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// Opens `request`'s watch at the replica behind `channel`, its messages kept as encoded.
pub async fn watch_encoded(
    channel: Channel,
    request: Request<pb::WatchRequest>,
) -> Result<Response<Streaming<Encoded>>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|error| Status::unavailable(format!("table owner not ready: {error}")))?;
    let path = http::uri::PathAndQuery::from_static(WATCH_PATH);
    grpc.server_streaming(request, path, EncodedCodec::default())
        .await
}

/// The tables' gRPC service (`inner`, the generated one) with `Watch` served by
/// [`TablesApi::watch_frames`] through [`FrameCodec`].
#[derive(Debug, Clone)]
pub struct WithWatch<S> {
    /// The generated service, which serves every other method.
    inner: S,
    /// The API, which serves `Watch`.
    api: TablesApi,
}

impl<S> WithWatch<S> {
    /// `inner` with `Watch` served by `api`.
    pub fn new(inner: S, api: TablesApi) -> Self {
        WithWatch { inner, api }
    }
}

impl<S: NamedService> NamedService for WithWatch<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<http::Request<Body>> for WithWatch<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if request.uri().path() == WATCH_PATH {
            let method = WatchMethod(self.api.clone());
            return Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(FrameCodec::default());
                Ok(grpc.server_streaming(method, request).await)
            });
        }
        Box::pin(self.inner.call(request))
    }
}

/// The stream of a `Watch` as [`WithWatch`] serves it.
pub type FrameStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<WatchFrame, Status>> + Send>>;

/// `Watch`, served by the API.
struct WatchMethod(TablesApi);

impl ServerStreamingService<pb::WatchRequest> for WatchMethod {
    type Response = WatchFrame;
    type ResponseStream = FrameStream;
    type Future = BoxFuture<'static, Result<Response<FrameStream>, Status>>;

    fn call(&mut self, request: Request<pb::WatchRequest>) -> Self::Future {
        let api = self.0.clone();
        Box::pin(async move { api.watch_frames(request).await })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn message() -> pb::WatchResponse {
        pb::WatchResponse {
            version: 42,
            event: None,
            view: Some(pb::TableView {
                version: 41,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_relayed_message_reads_its_version_and_decodes_to_the_value_encoded() {
        let bytes = Bytes::from(message().encode_to_vec());
        let version = VersionOnly::decode(bytes.clone()).unwrap().version;
        assert_eq!(version, 42);
        let frame = WatchFrame::Encoded(Encoded { version, bytes });
        assert_eq!(frame.version(), 42);
        assert_eq!(frame.into_value().unwrap(), message());
    }

    #[test]
    fn bytes_that_are_no_watch_message_are_invalid_argument() {
        let frame = WatchFrame::Encoded(Encoded {
            version: 0,
            bytes: Bytes::from_static(&[0x0a, 0xff]),
        });
        assert_eq!(
            frame.into_value().unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }
}
