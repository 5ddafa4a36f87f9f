//! What a table's client seed is made of, validated: players' [`Contribution`]s, the public
//! [`DelayedValue`] and the name of its [`DelayedSource`] (SPEC section 4, "Table games").
//!
//! The client seed itself is computed by `fairdeal_fairness::client_seed` (its module docs
//! give the exact bytes for auditors); this module holds the service's rules for what it
//! accepts: UTF-8 without control characters, 1 to 256 bytes for a contribution or a source
//! name, 1 to 1024 for a delayed value.

use super::DomainError;

/// Longest accepted contribution, in bytes.
pub const MAX_CONTRIBUTION_BYTES: usize = 256;
/// Longest accepted delayed value, in bytes.
pub const MAX_DELAYED_VALUE_BYTES: usize = 1024;
/// Longest accepted name of a delayed-value source, in bytes.
pub const MAX_SOURCE_BYTES: usize = 256;

/// A player's seed contribution: 1 to 256 bytes of UTF-8 without control characters.
///
/// Contributions are public (they are part of what an auditor re-hashes), so Debug shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contribution(String);

impl Contribution {
    /// Validates a contribution.
    pub fn parse(value: &str) -> Result<Self, DomainError> {
        check_text("contribution", value, MAX_CONTRIBUTION_BYTES)?;
        Ok(Contribution(value.to_owned()))
    }

    /// The contribution's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A public delayed value (a lottery draw, a beacon round's output), as published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayedValue(String);

impl DelayedValue {
    /// Validates a delayed value: 1 to 1024 bytes of UTF-8 without control characters.
    pub fn parse(value: &str) -> Result<Self, DomainError> {
        check_text("delayed_value", value, MAX_DELAYED_VALUE_BYTES)?;
        Ok(DelayedValue(value.to_owned()))
    }

    /// The value's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The name of a delayed-value source, fixed before its value is known (e.g.
/// `"drand quicknet round 12345678"` or `"EuroMillions draw 2026-11-24"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayedSource(String);

impl DelayedSource {
    /// Validates a source name: 1 to 256 bytes of UTF-8 without control characters.
    pub fn parse(value: &str) -> Result<Self, DomainError> {
        check_text("delayed_source", value, MAX_SOURCE_BYTES)?;
        Ok(DelayedSource(value.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Rejects empty, over-long and control-character text, naming the field.
fn check_text(field: &'static str, value: &str, max: usize) -> Result<(), DomainError> {
    if value.is_empty() {
        return Err(DomainError::InvalidText {
            field,
            reason: "must not be empty".into(),
        });
    }
    if value.len() > max {
        return Err(DomainError::InvalidText {
            field,
            reason: format!("is {} bytes, at most {max} allowed", value.len()),
        });
    }
    if value.chars().any(char::is_control) {
        return Err(DomainError::InvalidText {
            field,
            reason: "must not contain control characters".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_text_is_named() {
        for (value, needle) in [
            ("", "empty"),
            ("a\nb", "control"),
            (&"x".repeat(257)[..], "257 bytes"),
        ] {
            let err = Contribution::parse(value).unwrap_err().to_string();
            assert!(
                err.contains("contribution") && err.contains(needle),
                "{err}"
            );
        }
        assert!(DelayedValue::parse(&"9".repeat(1024)).is_ok());
        assert!(DelayedSource::parse("drand round 1").is_ok());
    }
}
