//! Channels to other fairdeal services, from the URL in a setting.
//!
//! - `http://host:port` (or `https://`): one lazily opened HTTP/2 connection. Behind a
//!   Kubernetes ClusterIP Service that is one pod for the connection's whole life: gRPC
//!   multiplexes every call on it.
//! - `dns:///host:port` (the gRPC naming convention): the name is resolved now and every
//!   [`RESOLVE_INTERVAL`], and calls are spread over every address it returns (tonic's
//!   balancer: power of two choices, but its connections report no load, so in effect each
//!   call goes to a random address). Behind a headless Service (`clusterIP: None`) that is
//!   every ready pod, so a scaled-out peer shares the load and a stopped pod leaves the set.
//!   The connections are plaintext HTTP/2, as `http://` (in-cluster traffic; a mesh adds mTLS).
//!
//! Resolution failures keep the last known addresses (and are logged): a DNS hiccup must not
//! empty the set and leave calls waiting for an endpoint that never comes. The resolving
//! task ends when the channel and all its clones are dropped.

use std::collections::HashSet;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::mpsc::Sender;
use tonic::transport::channel::Change;
use tonic::transport::{Channel, Endpoint};

/// How often a `dns:///` name is resolved again.
pub const RESOLVE_INTERVAL: Duration = Duration::from_secs(10);

/// Queued endpoint changes of a balanced channel.
const CHANGE_CAPACITY: usize = 64;

/// A URL setting that does not name a reachable service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ClientError {
    /// The setting.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

/// Where a URL setting points, checked (no connection, no runtime needed).
#[derive(Debug, Clone)]
pub enum Target {
    /// `http(s)://host:port`: one connection.
    Direct(Box<Endpoint>),
    /// `dns:///host:port`: every address of the name, balanced.
    Dns {
        /// The name.
        host: String,
        /// The port.
        port: u16,
    },
}

impl Target {
    /// Checks the setting `field` holding `url`.
    pub fn parse(field: &'static str, url: &str) -> Result<Target, ClientError> {
        match url.strip_prefix("dns:///") {
            Some(authority) => {
                let (host, port) = host_and_port(field, authority)?;
                Ok(Target::Dns {
                    host: host.to_owned(),
                    port,
                })
            }
            None => Endpoint::from_shared(url.to_owned())
                .map(|endpoint| Target::Direct(Box::new(endpoint)))
                .map_err(|e| ClientError {
                    field,
                    reason: format!("{e} (expected http://host:port or dns:///host:port)"),
                }),
        }
    }

    /// The channel (see the module documentation). Nothing is connected yet: calls fail
    /// UNAVAILABLE until the peer is up, so services can start in any order. Needs a Tokio
    /// runtime (the connection, and for `dns:///` the resolver, are tasks); `field` names
    /// the setting in errors and logs.
    pub fn channel(self, field: &'static str) -> Result<Channel, ClientError> {
        // Checked here rather than left to `connect_lazy`, which would panic outside one.
        tokio::runtime::Handle::try_current().map_err(|_| ClientError {
            field,
            reason: "a channel needs a Tokio runtime".into(),
        })?;
        match self {
            Target::Direct(endpoint) => Ok(endpoint.connect_lazy()),
            Target::Dns { host, port } => {
                let target = format!("{host}:{port}");
                balanced(field, move || {
                    let target = target.clone();
                    async move { tokio::net::lookup_host(target).await.map(Iterator::collect) }
                })
            }
        }
    }
}

/// The channel for the setting `field` holding `url`: [`Target::parse`], then
/// [`Target::channel`].
pub fn channel(field: &'static str, url: &str) -> Result<Channel, ClientError> {
    Target::parse(field, url)?.channel(field)
}

/// `host:port` of a `dns:///` URL, checked.
fn host_and_port<'a>(
    field: &'static str,
    authority: &'a str,
) -> Result<(&'a str, u16), ClientError> {
    let invalid = |reason: &str| ClientError {
        field,
        reason: format!("{reason} in dns:///{authority} (expected dns:///host:port)"),
    };
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| invalid("no port"))?;
    if host.is_empty() || host.contains('/') {
        return Err(invalid("no host name"));
    }
    let port = port
        .parse::<u16>()
        .map_err(|_| invalid("not a port number"))?;
    Ok((host, port))
}

/// A channel balanced over the addresses `resolve` returns, resolved again every
/// [`RESOLVE_INTERVAL`].
pub fn balanced<R, F>(field: &'static str, resolve: R) -> Result<Channel, ClientError>
where
    R: Fn() -> F + Send + 'static,
    F: Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'static,
{
    balanced_every(field, resolve, RESOLVE_INTERVAL)
}

/// [`balanced`], resolving every `interval`.
fn balanced_every<R, F>(
    field: &'static str,
    resolve: R,
    interval: Duration,
) -> Result<Channel, ClientError>
where
    R: Fn() -> F + Send + 'static,
    F: Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'static,
{
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| ClientError {
        field,
        reason: "dns:/// needs a Tokio runtime".into(),
    })?;
    let (channel, changes) = Channel::balance_channel::<SocketAddr>(CHANGE_CAPACITY);
    runtime.spawn(follow(field, resolve, changes, interval));
    Ok(channel)
}

/// Keeps the channel's endpoints equal to the resolved addresses until the channel is gone.
async fn follow<R, F>(
    field: &'static str,
    resolve: R,
    changes: Sender<Change<SocketAddr, Endpoint>>,
    interval: Duration,
) where
    R: Fn() -> F,
    F: Future<Output = std::io::Result<Vec<SocketAddr>>>,
{
    let mut known: HashSet<SocketAddr> = HashSet::new();
    loop {
        match resolve().await {
            Ok(found) if !found.is_empty() => {
                let found: HashSet<SocketAddr> = found.into_iter().collect();
                for gone in known.difference(&found) {
                    if changes.send(Change::Remove(*gone)).await.is_err() {
                        return;
                    }
                }
                for new in found.difference(&known) {
                    let endpoint = match Endpoint::from_shared(format!("http://{new}")) {
                        Ok(endpoint) => endpoint,
                        Err(error) => {
                            tracing::warn!(field, %new, %error, "resolved address not usable");
                            continue;
                        }
                    };
                    if changes.send(Change::Insert(*new, endpoint)).await.is_err() {
                        return;
                    }
                }
                if found != known {
                    tracing::info!(field, addresses = found.len(), "peer addresses changed");
                }
                known = found;
            }
            Ok(_) => tracing::warn!(field, "name resolved to no address; keeping the last known"),
            Err(error) => {
                tracing::warn!(field, %error, "name not resolved; keeping the last known addresses");
            }
        }
        tokio::select! {
            () = changes.closed() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use tonic::service::interceptor::InterceptedService;
    use tonic::transport::server::TcpIncoming;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;

    use super::*;

    #[test]
    fn settings_are_checked_naming_the_field() {
        for bad in [
            "dns:///nohost",
            "dns:///:50051",
            "dns:///svc:http",
            "dns:///a/b:1",
        ] {
            let error =
                host_and_port("commitment_url", bad.trim_start_matches("dns:///")).unwrap_err();
            assert_eq!(error.field, "commitment_url", "{bad}");
        }
        assert_eq!(
            host_and_port("x", "commitment-pods.fairdeal.svc:50051"),
            Ok(("commitment-pods.fairdeal.svc", 50051))
        );
        let error = channel("auth_url", "not a url").unwrap_err();
        assert!(error.to_string().starts_with("auth_url:"), "{error}");
    }

    /// A health server on 127.0.0.1 counting the calls it serves.
    async fn counting_server() -> (SocketAddr, Arc<AtomicU64>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(AtomicU64::new(0));
        let counter = calls.clone();
        let (_reporter, health) = tonic_health::server::health_reporter();
        let counted = InterceptedService::new(health, move |request| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(request)
        });
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(counted)
                .serve_with_incoming(TcpIncoming::from(listener)),
        );
        (addr, calls)
    }

    async fn check(client: &mut HealthClient<Channel>, times: usize) {
        for _ in 0..times {
            client
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .unwrap();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_spread_over_the_resolved_addresses_and_follow_changes() {
        let (a, a_calls) = counting_server().await;
        let (b, b_calls) = counting_server().await;
        let addresses = Arc::new(Mutex::new(vec![a, b]));
        let resolved = addresses.clone();
        // Counts resolutions, so the test waits for the resolver instead of sleeping.
        let (resolutions_tx, mut resolutions) = tokio::sync::watch::channel(0u64);
        let channel = balanced_every(
            "peer_url",
            move || {
                let now = resolved.lock().unwrap().clone();
                resolutions_tx.send_modify(|n| *n += 1);
                async move { Ok(now) }
            },
            Duration::from_millis(50),
        )
        .unwrap();
        // Waits until the resolver has seen the current addresses and handed the balancer
        // its changes: the resolution under way may have read the old ones, the next one
        // reads the new ones, and the one after starts only once those changes are sent.
        let mut resolved_again = async || {
            let seen = *resolutions.borrow_and_update();
            resolutions.wait_for(|n| *n >= seen + 2).await.unwrap();
        };
        let mut client = HealthClient::new(channel);
        check(&mut client, 200).await;
        let (on_a, on_b) = (
            a_calls.load(Ordering::SeqCst),
            b_calls.load(Ordering::SeqCst),
        );
        assert_eq!(on_a + on_b, 200);
        // Each call goes to a random peer: each gets about half.
        assert!(on_a >= 40 && on_b >= 40, "a {on_a}, b {on_b}");

        // `a` leaves the name: after the next resolution only `b` is called.
        *addresses.lock().unwrap() = vec![b];
        resolved_again().await;
        let before = (
            a_calls.load(Ordering::SeqCst),
            b_calls.load(Ordering::SeqCst),
        );
        check(&mut client, 50).await;
        assert_eq!(a_calls.load(Ordering::SeqCst), before.0);
        assert_eq!(b_calls.load(Ordering::SeqCst), before.1 + 50);

        // A failed or empty resolution keeps the last known address.
        addresses.lock().unwrap().clear();
        resolved_again().await;
        check(&mut client, 10).await;
        assert_eq!(b_calls.load(Ordering::SeqCst), before.1 + 60);
    }

    #[test]
    fn dns_urls_need_a_runtime_and_say_so() {
        let error = channel("auth_url", "dns:///auth:50051").unwrap_err();
        assert!(error.reason.contains("runtime"), "{error}");
        // Checking alone needs none.
        assert!(matches!(
            Target::parse("auth_url", "dns:///auth:50051"),
            Ok(Target::Dns { port: 50051, .. })
        ));
        assert!(matches!(
            Target::parse("auth_url", "http://auth:50051"),
            Ok(Target::Direct(_))
        ));
    }
}
