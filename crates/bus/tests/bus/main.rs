//! Integration tests of the bus against real servers: NATS with JetStream and PostgreSQL (a
//! superuser; `cargo xtask test` starts throwaway ones, `fairdeal-testkit` names them), plus
//! SQLite files. Every test gets a fresh database, subject prefix and streams, and removes
//! them afterwards.
//!
//! - `conformance`: the bus half of the conformance suite, once per deployment
//!   (PostgreSQL + JetStream, SQLite + in-process).
//! - `fault`: 10,000 events under load while relay and consumer tasks are killed and
//!   restarted; every event must be applied exactly once, in order.
//! - `jetstream`: what the relay puts on the wire.
//! - `trace`: the handling span joins the trace that appended the event.

// Test support panics on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod conformance;
mod fault;
mod jetstream;
mod support;
mod trace;
