//! drand beacons, offline: the pure half of using the League of Entropy's public randomness
//! as a delayed value (SPEC section 4) and as a timelock.
//!
//! drand's "quicknet" chain publishes a BLS signature of every round, one round every 3 s,
//! under the scheme `bls-unchained-g1-rfc9380`: the message of round `r` is
//! `SHA-256(r as 8 big-endian bytes)`, hashed to G1 with RFC 9380 (DST
//! `BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_`), signed by the group key on G2. A round's
//! randomness is `SHA-256(signature)`. Nobody knows a round's signature before the network
//! produces it, and once it is out anyone can check it with the chain's public key alone.
//!
//! Layout, one job per module:
//! - [`chain`]: a chain's public parameters ([`ChainInfo`]), quicknet's built in
//!   ([`QUICKNET`]), and [`Chain`], the parsed form that verifies rounds and encrypts to them;
//! - [`round`]: round arithmetic on a chain's [`Schedule`] (the round at a time, the time of a
//!   round, the first round at or after a time plus a margin); time is always passed in;
//! - [`beacon`]: a round's [`Beacon`] (round, [`Signature`], optional [`Randomness`]) parsed
//!   from hex, each error naming the field;
//! - [`timelock`]: encryption to a round and decryption with its signature, in drand/tlock's
//!   age format (what drand's `tle` tool reads and writes);
//! - [`test_chain`]: a local chain in the same scheme, with its own key, for tests and a local
//!   test beacon. It is not drand and its rounds prove nothing about time.
//!
//! Nothing here reads the network or the clock. Encryption draws its randomness from the
//! operating system (through the `age` and `tlock` crates); everything else is deterministic.
#![forbid(unsafe_code)]

pub mod beacon;
pub mod chain;
pub mod round;
pub mod test_chain;
pub mod timelock;

pub use beacon::{Beacon, BeaconError, BeaconField, FieldProblem, Randomness, Signature};
pub use chain::{
    Chain, ChainInfo, PublicKeyError, QUICKNET, QUICKNET_CHAIN_HASH, Scheme, VerifyError,
};
pub use round::{RoundError, Schedule};
pub use test_chain::{TestChain, TestChainError};
pub use timelock::TimelockError;
