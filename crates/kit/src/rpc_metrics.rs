//! The server's per-call metric: [`crate::metrics::RPC_DURATION`] by service, method and
//! gRPC status, recorded by a tower layer every [`crate::Application`] installs.
//!
//! A call ends when its status is known: in the response headers for a "trailers-only"
//! answer (every error a handler returns), else in the trailers after the body (every
//! success, and a stream's end). The body is wrapped to catch the trailers, so a server
//! stream (a table's `Watch`) is measured over its whole life, not to its first message. A
//! response dropped before its status (the client went away) counts as CANCELLED.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http_body::{Frame, SizeHint};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use tonic::body::Body;

use crate::metrics;

/// gRPC status code CANCELLED.
const CANCELLED: i64 = 1;
/// gRPC status code UNKNOWN.
const UNKNOWN: i64 = 2;

/// Tower layer recording every call's duration and status.
#[derive(Debug, Clone)]
pub(crate) struct RpcMetricsLayer {
    /// `rpc.server.call.duration`.
    duration: Histogram<f64>,
}

impl RpcMetricsLayer {
    /// Instruments from the process's meter provider (call after telemetry is installed).
    pub(crate) fn new() -> Self {
        Self {
            duration: metrics::latency(
                metrics::RPC_DURATION,
                "Duration of gRPC calls served, by service, method and status",
            ),
        }
    }
}

impl<S> tower::Layer<S> for RpcMetricsLayer {
    type Service = RpcMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RpcMetrics {
            inner,
            duration: self.duration.clone(),
        }
    }
}

/// The service made by [`RpcMetricsLayer`].
#[derive(Debug, Clone)]
pub(crate) struct RpcMetrics<S> {
    /// The routes.
    inner: S,
    /// `rpc.server.call.duration`.
    duration: Histogram<f64>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> tower::Service<http::Request<Body>> for RpcMetrics<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let mut call = Call::start(self.duration.clone(), request.uri().path());
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            if let Some(code) = grpc_status(response.headers()) {
                call.finish(code);
                return Ok(response);
            }
            Ok(response.map(|body| Body::new(MeteredBody { inner: body, call })))
        })
    }
}

/// One call being measured; records once, at the status or when dropped.
#[derive(Debug)]
struct Call {
    /// Where to record.
    duration: Histogram<f64>,
    /// `rpc.system`, `rpc.service`, `rpc.method`.
    attributes: Arc<[KeyValue; 3]>,
    /// When the request arrived.
    started: Instant,
    /// Whether it was recorded.
    done: bool,
}

impl Call {
    fn start(duration: Histogram<f64>, path: &str) -> Self {
        let name = path.trim_start_matches('/');
        let (service, method) = name.split_once('/').unwrap_or((name, ""));
        Self {
            duration,
            attributes: Arc::new([
                KeyValue::new("rpc.system", "grpc"),
                KeyValue::new("rpc.service", service.to_owned()),
                KeyValue::new("rpc.method", method.to_owned()),
            ]),
            started: Instant::now(),
            done: false,
        }
    }

    fn finish(&mut self, code: i64) {
        if self.done {
            return;
        }
        self.done = true;
        let [system, service, method] = &*self.attributes;
        self.duration.record(
            self.started.elapsed().as_secs_f64(),
            &[
                system.clone(),
                service.clone(),
                method.clone(),
                KeyValue::new("rpc.grpc.status_code", code),
            ],
        );
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.finish(CANCELLED);
    }
}

/// The `grpc-status` of a header or trailer map.
fn grpc_status(headers: &http::HeaderMap) -> Option<i64> {
    let value = headers.get("grpc-status")?;
    Some(
        value
            .to_str()
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(UNKNOWN),
    )
}

/// A response body that records the call when its trailers (or its end) go by.
struct MeteredBody {
    /// The service's body.
    inner: Body,
    /// The call to record.
    call: Call,
}

impl http_body::Body for MeteredBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(grpc_status) {
                    this.call.finish(code);
                }
            }
            Poll::Ready(Some(Err(_))) => this.call.finish(UNKNOWN),
            // Ended without trailers: no status was sent.
            Poll::Ready(None) => this.call.finish(UNKNOWN),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_from_headers() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(grpc_status(&headers), None);
        headers.insert("grpc-status", http::HeaderValue::from_static("5"));
        assert_eq!(grpc_status(&headers), Some(5));
        headers.insert("grpc-status", http::HeaderValue::from_static("x"));
        assert_eq!(grpc_status(&headers), Some(UNKNOWN));
    }
}
