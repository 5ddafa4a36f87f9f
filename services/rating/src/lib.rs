//! # fairdeal rating service
//!
//! Rates finished Jeu du 10 and French Tarot games by SPEC 6 (crates/rating, shared with the auditor and the
//! `fairdeal rating` verifier): a durable consumer of the tables service's events applies
//! each `GameFinished` exactly once, recording one `RatingChanged` per player (stream
//! `rating-<player>`) and updating the projections in the bus's transaction; gRPC reads serve
//! a player's ratings, their history and the leaderboards per game kind.
//!
//! Layout:
//! - [`domain`]: game kinds, which games are rated, who scores what (pure).
//! - [`events`]: `GameFinished` -> domain (re-validated), domain -> `RatingChanged`.
//! - [`projection`]: the consumer, the projections (`ratings`, `rating_history`) and their
//!   rebuild from the log.
//! - [`service`]: the reads over the projections.
//! - [`grpc`]: the tonic adapter.
//! - [`startup`]: settings and the [`Application`] on the platform kit.
#![forbid(unsafe_code)]

pub mod domain;
pub mod events;
pub mod grpc;
pub mod projection;
pub mod service;
pub mod startup;

pub use startup::{Application, RatingService, RatingSettings};
