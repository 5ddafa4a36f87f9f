//! Refresh-token rotation with reuse detection (OAuth 2.0 Security BCP, section 4.14).
//!
//! Each login starts a *family*. Every refresh spends the presented token and issues the next
//! one in the same family. A spent token presented again means two parties hold the family
//! (the token was stolen, or a client replayed it): the whole family is revoked, so neither can
//! continue and the user must log in again.

use uuid::Uuid;

/// What storage knows about one refresh token (looked up by its hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshRecord {
    /// The family (one per login).
    pub family_id: Uuid,
    /// The user the family belongs to.
    pub user_id: Uuid,
    /// When this token stops being accepted (seconds since the epoch).
    pub expires_at: i64,
    /// When the family stops, however often it is rotated (seconds since the epoch).
    pub family_expires_at: i64,
    /// Whether this token was already exchanged.
    pub spent: bool,
    /// Whether the family was revoked (logout, reuse, password change).
    pub family_revoked: bool,
}

/// What to do with a presented refresh token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshDecision {
    /// Spend it and issue the next token of the family for `user_id`.
    Rotate {
        /// The family continued.
        family_id: Uuid,
        /// Its user.
        user_id: Uuid,
    },
    /// A spent token came back: revoke the family, refuse.
    ReuseDetected {
        /// The family to revoke.
        family_id: Uuid,
        /// Its user.
        user_id: Uuid,
    },
    /// Unknown, expired or revoked: refuse, change nothing.
    Refuse,
}

impl RefreshDecision {
    /// Decides at time `now` (seconds since the epoch).
    pub fn decide(record: Option<&RefreshRecord>, now: i64) -> Self {
        let Some(r) = record else { return Self::Refuse };
        if r.family_revoked {
            Self::Refuse
        } else if r.spent {
            Self::ReuseDetected {
                family_id: r.family_id,
                user_id: r.user_id,
            }
        } else if now >= r.expires_at || now >= r.family_expires_at {
            Self::Refuse
        } else {
            Self::Rotate {
                family_id: r.family_id,
                user_id: r.user_id,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RefreshRecord {
        RefreshRecord {
            family_id: Uuid::from_u128(1),
            user_id: Uuid::from_u128(2),
            expires_at: 100,
            family_expires_at: 1000,
            spent: false,
            family_revoked: false,
        }
    }

    #[test]
    fn decisions() {
        let r = record();
        let (family_id, user_id) = (r.family_id, r.user_id);
        assert_eq!(RefreshDecision::decide(None, 0), RefreshDecision::Refuse);
        assert_eq!(
            RefreshDecision::decide(Some(&r), 50),
            RefreshDecision::Rotate { family_id, user_id }
        );
        assert_eq!(
            RefreshDecision::decide(Some(&r), 100),
            RefreshDecision::Refuse
        );
        let spent = RefreshRecord {
            spent: true,
            ..r.clone()
        };
        assert_eq!(
            RefreshDecision::decide(Some(&spent), 50),
            RefreshDecision::ReuseDetected { family_id, user_id }
        );
        // Reuse is detected even after expiry: the theft signal matters more than the age.
        assert_eq!(
            RefreshDecision::decide(Some(&spent), 500),
            RefreshDecision::ReuseDetected { family_id, user_id }
        );
        let revoked = RefreshRecord {
            family_revoked: true,
            spent: true,
            ..r.clone()
        };
        assert_eq!(
            RefreshDecision::decide(Some(&revoked), 50),
            RefreshDecision::Refuse
        );
        let old_family = RefreshRecord {
            expires_at: 2000,
            ..r
        };
        assert_eq!(
            RefreshDecision::decide(Some(&old_family), 1000),
            RefreshDecision::Refuse
        );
    }
}
