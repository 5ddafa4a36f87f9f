//! The verifier's checks as a library, for tests and tools that run them without the
//! `fairdeal` binary (the end-to-end tests audit real exports with it). Offline and pure:
//! no IO besides what the caller hands in.
#![forbid(unsafe_code)]

pub mod audit;
