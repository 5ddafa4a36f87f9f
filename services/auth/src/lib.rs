//! The fairdeal auth service: player accounts, email confirmation, login, access and refresh
//! tokens, brute-force limits, and the public keys every other service verifies tokens with.
//!
//! Layout, from the inside out:
//! - [`domain`]: pure rules and validating types (usernames, emails, passwords, Argon2id,
//!   secret tokens, refresh rotation, lockout).
//! - [`limits`]: the attempt limiter port and request quotas, in memory or in Redis.
//! - [`store`]: accounts, credentials, keys and the mail outbox on PostgreSQL or SQLite, each
//!   change appended to the event log in the same transaction ([`events`] lists them). Each
//!   account has a key of its own that its username is sealed under in the events; deleting
//!   the account deletes the key (crypto-shredding, `fairdeal_shred`).
//! - [`keyring`]: Ed25519 signing keys, rotation and publication.
//! - [`mail`]: mail texts, SMTP or mailbox-directory transport, the outbox dispatcher.
//! - [`mail_requests`]: password-reset and confirmation mails asked for, answered at once and
//!   done by a background task, so the reply says nothing about which addresses have accounts.
//! - [`accounts`]: the use cases, transport-free.
//! - [`grpc`]: the `fairdeal.auth.v1.AuthService` server, translating messages and errors.
//! - [`config`] and [`startup`]: settings and `Application::build` / `run_until_stopped`.
//!
//! Access tokens are verified elsewhere with the `fairdeal-authn` crate.
#![forbid(unsafe_code)]

pub mod accounts;
pub mod config;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod keyring;
pub mod limits;
pub mod mail;
pub mod mail_requests;
pub mod startup;
pub mod store;

pub use startup::{Application, AuthService};
