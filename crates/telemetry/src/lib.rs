//! fairdeal-telemetry: what every layer records through, below the event bus and the
//! service kit, so that recording a metric or carrying a trace across a hop links no gRPC
//! server and no configuration.
//!
//! - [`metrics`]: OpenTelemetry instruments from the one meter every fairdeal crate uses
//!   (the kit's `telemetry::init` installs the exporting provider; without it they are
//!   no-ops);
//! - [`propagation`]: W3C trace context across gRPC metadata, event envelopes and NATS
//!   headers.
//!
//! `fairdeal_kit` re-exports both under the same names, so a service writes
//! `fairdeal_kit::metrics::counter(..)` as before; the bus and the event store's callers
//! below the kit write `fairdeal_telemetry::...`.
#![forbid(unsafe_code)]

pub mod metrics;
pub mod propagation;
