//! End-to-end tests of the chat service on both backends: the embedded default (SQLite,
//! in-process bus, memory presence and limits) and PostgreSQL + NATS JetStream + Redis.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod access;
mod crash;
mod erasure;
mod harness;
mod limits;
mod messaging;
mod moderation;
