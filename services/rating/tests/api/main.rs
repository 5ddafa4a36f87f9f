//! End-to-end tests of the rating service: its consumer of the tables' events and its reads
//! over gRPC, on the embedded SQLite default and on PostgreSQL with NATS.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod consume;
mod crash;
mod harness;
mod reads;
mod tarot;
