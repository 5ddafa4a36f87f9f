//! What a table's client seed is made of, validated: players' [`Contribution`]s, the public
//! [`DelayedValue`] and the name of its [`DelayedSource`] (SPEC section 4, "Table games").
//!
//! The client seed itself is computed by `fairdeal_fairness::client_seed` (its module docs
//! give the exact bytes for auditors), which also holds the one rule of what a contribution
//! may be (`check_contribution`: 1 to 128 characters, the rule the tables service applies to
//! players too). This module holds the service's rules for the rest: UTF-8 without control
//! characters, 1 to 256 bytes for a source name, 1 to 1024 for a delayed value. All three are
//! public, so none may hold a bidirectional control or invisible formatting character
//! (`fairdeal_text::check_visible`). Stored events are decoded with [`Contribution::recorded`],
//! [`DelayedValue::recorded`] and [`DelayedSource::recorded`], the rules they were written
//! under, so every event recorded before a rule was tightened still replays.

use fairdeal_fairness::client_seed::check_contribution;

use super::DomainError;

/// Longest accepted delayed value, in bytes.
pub const MAX_DELAYED_VALUE_BYTES: usize = 1024;
/// Longest accepted name of a delayed-value source, in bytes.
pub const MAX_SOURCE_BYTES: usize = 256;

/// A player's seed contribution: `fairdeal_fairness::client_seed::check_contribution`'s rule
/// (1 to 128 characters, nothing invisible).
///
/// Contributions are public (they are part of what an auditor re-hashes), so Debug shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contribution(String);

impl Contribution {
    /// Validates a contribution.
    pub fn parse(value: &str) -> Result<Self, DomainError> {
        check_contribution(value).map_err(|e| DomainError::InvalidText {
            field: "contribution",
            reason: e.to_string(),
        })?;
        Ok(Contribution(value.to_owned()))
    }

    /// A contribution as a stored event records it: not empty, no control characters, but
    /// neither the length nor the invisible-character rule, which came later (contributions
    /// of up to 256 bytes were accepted before).
    pub fn recorded(value: &str) -> Result<Self, DomainError> {
        if value.is_empty() {
            return Err(DomainError::InvalidText {
                field: "contribution",
                reason: "must not be empty".into(),
            });
        }
        super::check_controls("contribution", value)?;
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
    /// Validates a delayed value: 1 to 1024 bytes of UTF-8 without control characters or
    /// invisible formatting characters.
    pub fn parse(value: &str) -> Result<Self, DomainError> {
        check_text("delayed_value", value, MAX_DELAYED_VALUE_BYTES)?;
        super::check_visible("delayed_value", value)?;
        Ok(DelayedValue(value.to_owned()))
    }

    /// A delayed value as a stored event records it (without the later invisible-character
    /// rule).
    pub fn recorded(value: &str) -> Result<Self, DomainError> {
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
    /// Validates a source name: 1 to 256 bytes of UTF-8 without control characters or
    /// invisible formatting characters.
    pub fn parse(value: &str) -> Result<Self, DomainError> {
        check_text("delayed_source", value, MAX_SOURCE_BYTES)?;
        super::check_visible("delayed_source", value)?;
        Ok(DelayedSource(value.to_owned()))
    }

    /// A source name as a stored event records it (without the later invisible-character
    /// rule).
    pub fn recorded(value: &str) -> Result<Self, DomainError> {
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
    super::check_bytes(field, value, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_text_is_named() {
        for (value, needle) in [
            ("", "required"),
            ("a\nb", "control"),
            (&"x".repeat(129)[..], "129 characters, at most 128"),
            ("left\u{202E}right", "U+202E"),
        ] {
            let err = Contribution::parse(value).unwrap_err().to_string();
            assert!(
                err.starts_with("contribution ") && err.contains(needle),
                "{err}"
            );
        }
        // Characters, not bytes: 128 four-byte characters are one valid contribution.
        assert!(Contribution::parse(&"\u{1F0A1}".repeat(128)).is_ok());
        assert!(DelayedValue::parse(&"9".repeat(1024)).is_ok());
        assert!(DelayedSource::parse("drand round 1").is_ok());
        for err in [
            DelayedValue::parse("7\u{2066}1").unwrap_err(),
            DelayedSource::parse("drand\u{200B}").unwrap_err(),
        ] {
            assert_eq!(err.class(), super::super::ErrorClass::InvalidArgument);
            assert!(err.to_string().contains("must not contain U+"), "{err}");
        }
    }

    #[test]
    fn recorded_values_replay_under_the_rules_they_were_written_with() {
        // Accepted before the rule spoke in characters (up to 256 bytes) or refused
        // invisible characters: still read back from the store.
        assert!(Contribution::recorded(&"x".repeat(256)).is_ok());
        assert!(Contribution::recorded("a\u{202E}b").is_ok());
        assert!(DelayedValue::recorded("7\u{2066}1").is_ok());
        assert!(DelayedSource::recorded("drand\u{200B}").is_ok());
        assert!(Contribution::recorded("").is_err());
        assert!(Contribution::recorded("a\nb").is_err());
    }
}
