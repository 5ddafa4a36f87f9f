//! End-to-end tests of the commitment service alone over gRPC, on PostgreSQL and on the
//! embedded SQLite default. The tests that need the dealing service too (deals from committed
//! seeds, bets) are in services/dealing/tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod concurrency;
mod drand;
mod drand_restart;
mod drand_tournament;
mod harness;
mod tournament;
