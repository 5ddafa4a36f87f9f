//! `fairdeal-health-probe [ADDR] [SERVICE]`: asks a gRPC server's `grpc.health.v1.Health`
//! service whether it is serving, for container health checks (docker-compose's
//! `healthcheck`, where Kubernetes' built-in `grpc` probe is not available).
//!
//! - `ADDR`: `http://host:port` (default `http://127.0.0.1:50051`, a service's own port
//!   inside its container; the container's `FAIRDEAL_LISTEN_ADDR` port when set).
//! - `SERVICE`: the gRPC service name to ask about (default `""`: the whole server).
//!
//! Exit status: 0 SERVING; 1 not serving, unreachable or no answer within 3 seconds; 2 bad
//! arguments. One line on stderr says why it failed. No dependencies beyond tonic, so it adds
//! under a megabyte to the image.
#![forbid(unsafe_code)]
#![allow(clippy::print_stderr)] // A command-line probe: its one output is the reason it failed.

use std::process::ExitCode;
use std::time::Duration;

use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// How long the whole check may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// The address asked when none is given: the port of `FAIRDEAL_LISTEN_ADDR` (what the
/// service in this container binds) on the loopback interface, else 50051.
fn default_address() -> String {
    let port = std::env::var("FAIRDEAL_LISTEN_ADDR")
        .ok()
        .and_then(|addr| addr.parse::<std::net::SocketAddr>().ok())
        .map_or(50051, |addr| addr.port());
    format!("http://127.0.0.1:{port}")
}

async fn check(address: String, service: String) -> Result<(), String> {
    let endpoint = Endpoint::from_shared(address.clone())
        .map_err(|e| format!("invalid address {address:?}: {e}"))?
        .connect_timeout(TIMEOUT)
        .timeout(TIMEOUT);
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| format!("{address}: cannot connect: {e}"))?;
    let response = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: service.clone(),
        })
        .await
        .map_err(|status| {
            format!(
                "{address}: health check failed: {:?} {}",
                status.code(),
                status.message()
            )
        })?;
    let status = response.into_inner().status;
    if status == ServingStatus::Serving as i32 {
        Ok(())
    } else {
        let name = ServingStatus::try_from(status)
            .map_or_else(|_| status.to_string(), |s| s.as_str_name().to_owned());
        Err(format!("{address}: service {service:?} is {name}"))
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() > 2 || args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: fairdeal-health-probe [http://host:port] [grpc.service.Name]");
        return ExitCode::from(2);
    }
    let address = args.first().cloned().unwrap_or_else(default_address);
    let service = args.get(1).cloned().unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(check(address, service)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            eprintln!("{reason}");
            ExitCode::FAILURE
        }
    }
}
