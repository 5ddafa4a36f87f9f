//! The gRPC codec of every fairdeal client and server: prost's, except that a message
//! that does not decode (truncated, invalid UTF-8 in a `string` field, a wrong wire type) is
//! INVALID_ARGUMENT naming what is wrong, where tonic's default says INTERNAL ("failed to
//! decode Protobuf message"). A malformed request is the caller's mistake, and INTERNAL would
//! tell them the server is broken (and page an operator). The same codec serves clients, where
//! an undecodable *response* is reported the same way; fairdeal servers never send one.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Longest decode error text passed to the caller.
const MAX_DETAIL: usize = 200;

/// The codec named in the generated code (`codec_path`).
#[derive(Debug, Clone)]
pub struct Codec<T, U> {
    /// Prost's codec, which does the work.
    inner: ProstCodec<T, U>,
}

impl<T, U> Default for Codec<T, U> {
    fn default() -> Self {
        Self {
            inner: ProstCodec::default(),
        }
    }
}

impl<T, U> tonic::codec::Codec for Codec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = Decoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        Decoder {
            inner: self.inner.decoder(),
            _message: PhantomData,
        }
    }
}

/// Prost's decoder with decode failures as INVALID_ARGUMENT.
#[derive(Debug)]
pub struct Decoder<U> {
    /// Prost's decoder.
    inner: ProstDecoder<U>,
    /// The message type.
    _message: PhantomData<U>,
}

impl<U: Message + Default> tonic::codec::Decoder for Decoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.inner
            .decode(buf)
            .map_err(|status| malformed(status.message()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

/// The status of a message that does not decode: INVALID_ARGUMENT with prost's reason (which
/// names the message and field, e.g. `LoginRequest.username: invalid string value: data is
/// not UTF-8 encoded`), cut to [`MAX_DETAIL`] characters.
pub fn malformed(detail: &str) -> Status {
    let detail: String = detail.chars().take(MAX_DETAIL).collect();
    Status::invalid_argument(format!("malformed message: {detail}"))
}
