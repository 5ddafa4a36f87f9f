//! The auth service's events: what [`AuthStore`](crate::store::AuthStore) appends, as values.
//! Their protobuf form (`proto/fairdeal/auth/v1/events.proto`) is written by the store.
//!
//! Only ids, enum reasons and the username sealed under the account's own key
//! (crypto-shredding, `fairdeal_shred`): never a password, hash, token or email, and no
//! personal content in plain text, so that deleting the account's key erases it from every
//! copy of the log.

use fairdeal_shred::{ShredError, SubjectKey};
use uuid::Uuid;

/// The associated data `UserRegistered.sealed_username` is sealed with: the field and the
/// account, so sealed bytes copied into another event or account do not open.
pub fn sealed_username_context(user_id: Uuid) -> String {
    format!("fairdeal.auth.v1.UserRegistered.sealed_username/{user_id}")
}

/// `username` sealed under the account's `key`, for `UserRegistered.sealed_username`.
pub fn seal_username(
    key: &SubjectKey,
    user_id: Uuid,
    username: &str,
) -> Result<Vec<u8>, ShredError> {
    key.seal(
        sealed_username_context(user_id).as_bytes(),
        username.as_bytes(),
    )
}

/// The username in `UserRegistered.sealed_username`, opened with the account's `key` (which
/// no longer exists once the account is deleted).
pub fn open_username(key: &SubjectKey, user_id: Uuid, sealed: &[u8]) -> Result<String, ShredError> {
    key.open_text(sealed_username_context(user_id).as_bytes(), sealed)
}

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
        /// Its username, sealed with [`seal_username`] under the account's key.
        sealed_username: Vec<u8>,
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
    /// The account was deleted by its owner (its key with it).
    AccountDeleted {
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
            | AuthEvent::PasswordResetRequested { user_id }
            | AuthEvent::AccountDeleted { user_id } => *user_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_open_only_for_their_account() {
        let key = SubjectKey::generate().unwrap();
        let user = Uuid::now_v7();
        let sealed = seal_username(&key, user, "zoé-42").unwrap();
        assert!(!sealed.windows(3).any(|w| w == b"zo\xc3"));
        assert_eq!(open_username(&key, user, &sealed).unwrap(), "zoé-42");
        // Another account's context or key: refused.
        assert_eq!(
            open_username(&key, Uuid::now_v7(), &sealed).unwrap_err(),
            ShredError::Open
        );
        let other = SubjectKey::generate().unwrap();
        assert_eq!(
            open_username(&other, user, &sealed).unwrap_err(),
            ShredError::Open
        );
        assert_eq!(
            sealed_username_context(user),
            format!("fairdeal.auth.v1.UserRegistered.sealed_username/{user}")
        );
    }
}
