//! # fairdeal chat service
//!
//! Channels `lobby` (every logged-in player) and `table-<uuid>` (the table's seated players
//! and spectators): live subscriptions, posting while connected, history pages, moderation
//! (remove a message, mute a user) and a per-user rate limit (SPEC 7). Each channel is one
//! event stream (`chat-lobby`, `chat-table-<uuid>`); a message is one event on it, written
//! in the same transaction as its history row.
//!
//! Layout:
//! - [`domain`]: the rules, pure: channel names, message text, reasons, mute lengths.
//! - [`events`]: the chat's events <-> protobuf (`fairdeal.chat.v1`).
//! - [`store`]: the tables and the writes (event + read model in one transaction), both
//!   backends.
//! - [`members`]: table-channel membership and read-only channels, projected from the
//!   tables service's events by the `chat-members` consumer (exactly once).
//! - [`presence`]: who holds an open subscription (Redis or memory).
//! - [`hub`]: this replica's fan-out of new channel events to its subscribers.
//! - [`service`]: the use cases and their errors.
//! - [`grpc`]: the tonic adapter: caller, roles, parsing, status mapping.
//! - [`startup`]: settings and the [`Application`] on the platform kit.
#![forbid(unsafe_code)]

pub mod domain;
pub mod events;
pub mod grpc;
pub mod hub;
pub mod members;
pub mod presence;
pub mod service;
pub mod startup;
pub mod store;

pub use startup::{Application, ChatSettings};
