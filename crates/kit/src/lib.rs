//! fairdeal-kit: the bootstrap every fairdeal service stands on.
//!
//! Layout (one concern per module):
//! - [`propagation`]: W3C trace context across gRPC metadata, event envelopes and NATS
//!   headers.
#![forbid(unsafe_code)]

pub mod propagation;
