//! The auth service's events: what [`AuthStore`](crate::store::AuthStore) appends, as values,
//! and their protobuf form (`proto/fairdeal/auth/v1/events.proto`).
//!
//! Only ids, the public username and enum reasons: never a password, hash, token or email.

use std::collections::BTreeMap;
use std::time::SystemTime;

use fairdeal_eventstore::{NewEvent, StreamId};
use fairdeal_proto::fairdeal::auth::v1 as pb;
use uuid::Uuid;

/// Why a refresh-token family was revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revocation {
    /// Logout.
    Logout,
    /// A spent token came back.
    ReuseDetected,
    /// The password changed (or was reset).
    PasswordChanged,
}

impl Revocation {
    /// Its name in the `revoked_reason` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Revocation::Logout => "logout",
            Revocation::ReuseDetected => "reuse_detected",
            Revocation::PasswordChanged => "password_changed",
        }
    }
}

/// One state change of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthEvent {
    /// An account was created.
    Registered {
        /// The account.
        user_id: Uuid,
        /// Its public username.
        username: String,
    },
    /// Its address was confirmed.
    EmailConfirmed {
        /// The account.
        user_id: Uuid,
    },
    /// A login started a refresh family.
    LoggedIn {
        /// The account.
        user_id: Uuid,
        /// The family.
        family_id: Uuid,
    },
    /// A refresh family was revoked.
    FamilyRevoked {
        /// The account.
        user_id: Uuid,
        /// The family.
        family_id: Uuid,
        /// Why.
        reason: Revocation,
    },
    /// The password was changed (`reset`: with an emailed token).
    PasswordChanged {
        /// The account.
        user_id: Uuid,
        /// Whether by reset token rather than with the current password.
        reset: bool,
    },
    /// A reset link was mailed.
    PasswordResetRequested {
        /// The account.
        user_id: Uuid,
    },
}

impl AuthEvent {
    /// The account the event belongs to.
    pub fn user_id(&self) -> Uuid {
        match self {
            AuthEvent::Registered { user_id, .. }
            | AuthEvent::EmailConfirmed { user_id }
            | AuthEvent::LoggedIn { user_id, .. }
            | AuthEvent::FamilyRevoked { user_id, .. }
            | AuthEvent::PasswordChanged { user_id, .. }
            | AuthEvent::PasswordResetRequested { user_id } => *user_id,
        }
    }

    /// The account's stream, `user-<uuid>`.
    pub fn stream_id(user_id: Uuid) -> Result<StreamId, fairdeal_eventstore::EventError> {
        StreamId::of("user", user_id)
    }

    /// The event as the event store takes it: protobuf payload typed by its full name,
    /// correlated to the account, with the current trace context.
    pub fn to_new_event(&self, occurred_at: SystemTime) -> NewEvent {
        let event = match self {
            AuthEvent::Registered { user_id, username } => {
                NewEvent::from_message(&pb::UserRegistered { user_id: user_id.to_string(), username: username.clone() })
            }
            AuthEvent::EmailConfirmed { user_id } => NewEvent::from_message(&pb::EmailConfirmed { user_id: user_id.to_string() }),
            AuthEvent::LoggedIn { user_id, family_id } => NewEvent::from_message(&pb::LoggedIn {
                user_id: user_id.to_string(),
                family_id: family_id.to_string(),
            }),
            AuthEvent::FamilyRevoked { user_id, family_id, reason } => {
                let reason = match reason {
                    Revocation::Logout => pb::RevocationReason::Logout,
                    Revocation::ReuseDetected => pb::RevocationReason::ReuseDetected,
                    Revocation::PasswordChanged => pb::RevocationReason::PasswordChanged,
                };
                NewEvent::from_message(&pb::RefreshFamilyRevoked {
                    user_id: user_id.to_string(),
                    family_id: family_id.to_string(),
                    reason: reason.into(),
                })
            }
            AuthEvent::PasswordChanged { user_id, reset } => NewEvent::from_message(&pb::PasswordChanged {
                user_id: user_id.to_string(),
                kind: if *reset { pb::PasswordChangeKind::Reset } else { pb::PasswordChangeKind::Change }.into(),
            }),
            AuthEvent::PasswordResetRequested { user_id } => {
                NewEvent::from_message(&pb::PasswordResetRequested { user_id: user_id.to_string() })
            }
        };
        let mut trace = BTreeMap::new();
        fairdeal_kit::propagation::inject_current(&mut trace);
        event
            .with_occurred_at(occurred_at)
            .with_correlation_id(format!("user-{}", self.user_id()))
            .with_trace_context(trace)
    }
}
