//! Integration tests of the kit: one test binary (one link) with a module per concern.
//! `support` holds the in-process test server and its tiny hand-written gRPC service.

// Test helpers outside #[test] functions panic on setup failure on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod config;
mod metrics;
mod server;
mod support;
mod trace;
