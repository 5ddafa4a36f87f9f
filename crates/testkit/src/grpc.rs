//! Waiting for a gRPC server to serve, through the standard health protocol
//! (`grpc.health.v1.Health/Watch`), instead of sleeping.

use std::time::Duration;

use tokio::time::Instant;
use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::Error;

/// How long [`wait_until_serving`] waits before failing: never reached by a server that
/// starts, it turns a hang into a failure.
pub const SERVING_PATIENCE: Duration = Duration::from_secs(30);

/// Pause between connection attempts while nothing listens at the URL yet.
const CONNECT_RETRY: Duration = Duration::from_millis(20);

/// Waits until the server at `url` (`http://127.0.0.1:<port>`) reports `service` SERVING
/// (`""`: the whole server), at most [`SERVING_PATIENCE`].
///
/// A server bound to port 0 before it runs (as the kit's `Application` is) accepts the
/// connection at once and answers once it serves; the health stream then says SERVING the
/// moment it is so, with no polling. Only a server not yet bound is retried, every 20 ms.
pub async fn wait_until_serving(url: &str, service: &str) -> Result<(), Error> {
    let not_serving = |reason: String| Error::NotServing {
        url: url.to_owned(),
        service: service.to_owned(),
        reason,
    };
    let endpoint = Endpoint::from_shared(url.to_owned()).map_err(|e| not_serving(e.to_string()))?;
    let deadline = Instant::now() + SERVING_PATIENCE;
    match tokio::time::timeout_at(deadline, watch_until_serving(&endpoint, service, deadline)).await
    {
        Ok(result) => result.map_err(not_serving),
        Err(_) => Err(not_serving(format!(
            "still not SERVING after {SERVING_PATIENCE:?}"
        ))),
    }
}

async fn watch_until_serving(
    endpoint: &Endpoint,
    service: &str,
    deadline: Instant,
) -> Result<(), String> {
    let channel = loop {
        match endpoint.connect().await {
            Ok(channel) => break channel,
            // Nothing listens yet: there is no signal to wait on but the listener itself.
            Err(_) if Instant::now() + CONNECT_RETRY < deadline => {
                tokio::time::sleep(CONNECT_RETRY).await;
            }
            Err(error) => return Err(format!("cannot connect: {error}")),
        }
    };
    let mut statuses = HealthClient::new(channel)
        .watch(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await
        .map_err(|status| format!("Health/Watch: {status}"))?
        .into_inner();
    while let Some(update) = statuses
        .message()
        .await
        .map_err(|status| format!("Health/Watch: {status}"))?
    {
        if update.status() == ServingStatus::Serving {
            return Ok(());
        }
    }
    Err("the health stream ended before SERVING".to_owned())
}
