//! End-to-end tests of the commitment and dealing services over gRPC, on PostgreSQL and on
//! the embedded SQLite default, with every deal and outcome re-derived by the `fairdeal` CLI.
//! What the commitment service does alone is tested in services/commitment/tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod authz;
mod concurrency;
mod keys;
mod limits;
mod pair;
mod reflection;
mod table;
