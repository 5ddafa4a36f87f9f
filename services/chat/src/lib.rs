//! # fairdeal chat service
//!
//! Channels `lobby` (every logged-in player) and `table-<uuid>` (the table's seated players
//! and spectators): live subscriptions, posting while connected, history pages, moderation
//! (remove a message, mute a user) and a per-user rate limit (SPEC 7). Each channel is one
//! event stream (`chat-lobby`, `chat-table-<uuid>`); a message is one event on it, written
//! in the same transaction as its history row. Its text is sealed in the event under a key
//! of the message's own, kept beside it: removing the message, or deleting its author's
//! account, deletes the key and erases the text for good (crypto-shredding, crates/shred).
//!
//! Layout:
//! - [`domain`]: the rules, pure: channel names, message text, reasons, mute lengths.
//! - [`events`]: the chat's events <-> protobuf (`fairdeal.chat.v1`).
//! - [`store`]: the tables and the writes (event + read model + the message's key in one
//!   transaction), both backends.
//! - [`members`]: table-channel membership and read-only channels, projected from the
//!   tables service's events by the `chat-members` consumer (exactly once).
//! - [`accounts`]: a deleted account's lines erased, from the auth service's events by the
//!   `chat-accounts` consumer (exactly once), and the database's files scrubbed after.
//! - [`presence`]: who holds an open subscription (Redis or memory).
//! - [`hub`]: this replica's fan-out of new channel events to its subscribers, their texts
//!   opened with their keys.
//! - [`service`]: the use cases and their errors.
//! - [`grpc`]: the tonic adapter: caller, roles, parsing, status mapping.
//! - [`startup`]: settings and the [`Application`] on the platform kit.
#![forbid(unsafe_code)]

pub mod accounts;
pub mod domain;
pub mod events;
pub mod grpc;
pub mod hub;
pub mod members;
pub mod presence;
pub mod service;
pub mod startup;
pub mod store;

pub use startup::{Application, ChatService, ChatSettings};
