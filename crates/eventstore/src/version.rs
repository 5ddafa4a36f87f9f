//! [`ExpectedVersion`]: what an appender believes a stream's version is (optimistic
//! concurrency). Both the [`crate::store::EventStore`] trait, which takes it, and
//! [`crate::StoreError::Conflict`], which reports it back, use it from here.

use std::fmt;

/// What the appender believes the stream's current version is (optimistic concurrency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExpectedVersion {
    /// Append whatever the current version is (retried internally on a race).
    Any,
    /// The stream must not exist yet (its first event becomes version 1).
    NoStream,
    /// The stream's last event must be this version. `Exact(0)` means the same as `NoStream`.
    Exact(u64),
}

impl ExpectedVersion {
    /// Whether a stream whose last version is `current` (0: no stream) satisfies this
    /// expectation.
    pub fn matches(self, current: u64) -> bool {
        match self {
            Self::Any => true,
            Self::NoStream => current == 0,
            Self::Exact(v) => current == v,
        }
    }
}

impl fmt::Display for ExpectedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("any version"),
            Self::NoStream => f.write_str("no stream"),
            Self::Exact(v) => write!(f, "version {v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations() {
        assert!(ExpectedVersion::Any.matches(0));
        assert!(ExpectedVersion::Any.matches(7));
        assert!(ExpectedVersion::NoStream.matches(0));
        assert!(!ExpectedVersion::NoStream.matches(1));
        assert!(ExpectedVersion::Exact(0).matches(0));
        assert!(ExpectedVersion::Exact(3).matches(3));
        assert!(!ExpectedVersion::Exact(3).matches(4));
    }
}
