//! # fairdeal dealing/outcomes service
//!
//! Deals a table's hands (any deck of the fairness crate, Tarot duplicate selection with
//! its candidate log) and single-player outcomes from the seeds the commitment service
//! holds, records each as an event, and offers public verification that needs no trust in
//! the operator: recompute any deal or outcome from revealed seeds, map distribution numbers
//! to deals and back, explain every step.
//!
//! Layout:
//! - [`verify`]: pure verification over the fairness crate (the public RPCs).
//! - [`service`]: the use cases (deal a hand, deal a duplicate, place a bet).
//! - [`grpc`]: the tonic adapter with authorization.
//! - [`startup`]: settings and the [`Application`] on the platform kit.
#![forbid(unsafe_code)]

pub mod grpc;
pub mod service;
pub mod startup;
pub mod verify;

pub use startup::{Application, DealingService, DealingSettings};
