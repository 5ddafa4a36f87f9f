//! End-to-end tests of the auth service: each test spawns the real service on port 0 against
//! the embedded default (SQLite file, in-memory limits, mailbox directory) and against real
//! servers on 127.0.0.1 (PostgreSQL with a fresh database, Redis with a fresh key namespace),
//! and talks to it over gRPC. Time is a manual clock the test moves: expiry and lockout windows
//! pass instantly. The only waits are short bounded polls for background tasks (the mail
//! dispatcher, the JetStream relay).
// Test helpers outside #[test] functions may unwrap too: a failure is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod authn_layer;
mod deletion;
mod flows;
mod helpers;
mod limits;
mod mail;
mod validation;
