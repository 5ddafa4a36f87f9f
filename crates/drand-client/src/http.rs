//! One GET to a relay over HTTP/1.1 (TLS for `https` relays, with Mozilla's roots), with a
//! timeout over the whole exchange and a bounded body: a relay cannot hold a fetch or fill
//! memory. One connection per request: a table fetches one round, rarely.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::relay::Relay;

/// Largest response body read (a beacon is about 250 bytes, a chain's info about 600).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Why a GET gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    /// No answer within the timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The connection could not be made or broke.
    #[error("connection: {0}")]
    Connect(#[from] std::io::Error),
    /// The TLS server name is not valid.
    #[error("{0:?} is not a valid TLS server name")]
    ServerName(String),
    /// HTTP failed (a malformed response, a closed connection).
    #[error("http: {0}")]
    Http(#[from] hyper::Error),
    /// The request could not be built (a path that is not one).
    #[error("request: {0}")]
    Request(#[from] http::Error),
    /// The body is larger than [`MAX_BODY_BYTES`] or broke off.
    #[error("body: {0}")]
    Body(String),
}

/// What a relay answered.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: http::StatusCode,
    /// The body (at most [`MAX_BODY_BYTES`]).
    pub body: Bytes,
}

/// The TLS settings of https relays: ring's provider, Mozilla's roots (webpki-roots), no
/// client certificate.
pub fn tls_config() -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

/// `GET {relay}{path}`, the whole exchange within `timeout`.
pub async fn get(
    relay: &Relay,
    path: &str,
    tls: &Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> Result<Answer, GetError> {
    tokio::time::timeout(timeout, exchange(relay, path, tls))
        .await
        .map_err(|_| GetError::Timeout(timeout))?
}

async fn exchange(
    relay: &Relay,
    path: &str,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<Answer, GetError> {
    let tcp = TcpStream::connect((relay.host(), relay.port())).await?;
    tcp.set_nodelay(true)?;
    if relay.is_https() {
        let name = ServerName::try_from(relay.host().to_owned())
            .map_err(|_| GetError::ServerName(relay.host().to_owned()))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
            .connect(name, tcp)
            .await?;
        send(stream, relay, path).await
    } else {
        send(tcp, relay, path).await
    }
}

async fn send<S>(stream: S, relay: &Relay, path: &str) -> Result<Answer, GetError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    // The connection task ends with the exchange (the sender is dropped) or the timeout.
    let driver = tokio::spawn(connection);
    let host = if relay.port() == 80 || relay.port() == 443 {
        relay.host().to_owned()
    } else {
        format!("{}:{}", relay.host(), relay.port())
    };
    let request = http::Request::get(relay.path(path))
        .header(http::header::HOST, host)
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::USER_AGENT, "fairdeal-drand-client")
        .body(Empty::<Bytes>::new())?;
    let result = async {
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_BODY_BYTES)
            .collect()
            .await
            .map_err(|e| GetError::Body(e.to_string()))?
            .to_bytes();
        Ok(Answer { status, body })
    }
    .await;
    driver.abort();
    result
}
