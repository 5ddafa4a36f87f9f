//! drand beacons online: the IO half of using drand rounds as delayed values (the pure half,
//! verification and round arithmetic, is `fairdeal-drand`).
//!
//! A [`BeaconClient`] fetches round `r` of one chain over drand's HTTP API
//! (`GET {relay}/{chain hash}/public/{r}`, answering `{"round", "randomness", "signature"}`)
//! from a list of [`Relay`]s, in turn:
//!
//! - every request has a timeout, and a fetch makes a bounded number of passes over the
//!   relays with a doubling pause between passes ([`FetchPolicy`]), so it never waits forever;
//! - every answer is verified with [`fairdeal_drand::Chain::verify`] before it is returned: a
//!   relay that lies (another round, a signature that does not verify, a randomness that is
//!   not the signature's SHA-256, fields that do not parse) is **refused**, logged at ERROR,
//!   counted (the `fairdeal.drand.refused_beacons` metric and [`BeaconClient::refused`]), and
//!   the next relay is asked;
//! - a round not published yet (drand's relays answer 404 or 425), a relay down (5xx, refused
//!   connection, timeout) are ordinary failures: the next relay is asked, then the next pass.
//!
//! Layout: [`relay`] (a relay's URL, parsed once), [`http`] (one bounded GET over HTTP/1.1,
//! TLS for `https`), [`client`] (the fetch loop and verification).
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod client;
pub mod http;
pub mod relay;

pub use client::{BeaconClient, FetchError, FetchPolicy, Refusal, VerifiedRound};
pub use relay::{Relay, RelayError};
