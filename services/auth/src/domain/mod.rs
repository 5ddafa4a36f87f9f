//! The auth domain, pure and total: no IO, no tonic, no sqlx. Every input is parsed into a
//! type that cannot hold an invalid value, and bad input is a typed error naming the field.
//!
//! - [`text`]: Unicode normalisation and the caseless key used for uniqueness.
//! - [`username`], [`email`], [`password`]: the validating newtypes of registration and login.
//! - [`hashing`]: Argon2id password hashes, with the dummy hash that keeps unknown users as slow
//!   as known ones.
//! - [`secret_token`]: opaque random tokens (refresh, email confirmation, password reset) that
//!   are stored only as SHA-256 hashes.
//! - [`refresh`]: the rotation rule of refresh-token families (reuse revokes the family).
//! - [`lockout`]: the escalating brute-force lockout, as a pure state transition shared by the
//!   in-memory and Redis limiters.

pub mod email;
pub mod hashing;
pub mod lockout;
pub mod password;
pub mod refresh;
pub mod secret_token;
pub mod text;
pub mod username;

pub use email::{Email, EmailError};
pub use hashing::{HashError, HashParams, PasswordHash, PasswordHasher};
pub use lockout::{LockoutPolicy, LockoutState, PENDING_TTL_SECS, RetryAfter};
pub use password::{Password, PasswordError};
pub use refresh::{RefreshDecision, RefreshRecord};
pub use secret_token::{SecretToken, SecretTokenError, TokenHash};
pub use username::{Username, UsernameError};
