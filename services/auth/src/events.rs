//! The auth service's events: what [`AuthStore`](crate::store::AuthStore) appends, as values.
//! Their protobuf form (`proto/fairdeal/auth/v1/events.proto`) is written by the store.
//!
//! Only ids, the public username and enum reasons: never a password, hash, token or email.

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
}
