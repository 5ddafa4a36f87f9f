//! End-to-end tests of the tables service over gRPC, with the commitment and dealing
//! services it calls, on the embedded SQLite default and on PostgreSQL with NATS.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod clocks;
mod crash;
mod harness;
mod lobby;
mod moves;
mod play;
mod replicas;
mod resume;
mod rules;
mod scale;
mod spectate;
mod tarot;
mod variants;
mod watch;
