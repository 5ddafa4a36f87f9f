//! The verifier's checks as a library, for tests and tools that run them without the
//! `fairdeal` binary (the end-to-end tests audit real exports with it). Offline and pure:
//! no IO besides what the caller hands in. [`drand_chain`] reads a drand chain's info (the
//! JSON of `--drand-chain`) for the audit's and `client-seed`'s drand checks.
#![forbid(unsafe_code)]

pub mod audit;
pub mod drand_chain;
