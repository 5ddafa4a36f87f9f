//! What is wrong with a message that does not map to an engine's types.

/// A field of a message that does not map to the engine's types: which one and why.
///
/// Displayed as "`field`: reason", e.g. `command.next_turn.seat: 4 is out of range (0..=3)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct WireError {
    /// The field by its protobuf name, with its path from the message that was read when it
    /// is nested (`command.next_turn.seat`, `game.tricks.cards`).
    pub field: String,
    /// What is wrong with its value.
    pub reason: Reason,
}

/// Why a field does not map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reason {
    /// A required field (or a oneof) is absent.
    #[error("missing")]
    Missing,
    /// A number outside the values the field may hold (an enum's number the mapping does
    /// not know counts: a newer protocol, or a corrupt message).
    #[error("{value} is out of range ({range})")]
    OutOfRange {
        /// The value found.
        value: i64,
        /// The values allowed, e.g. `0..=3`.
        range: &'static str,
    },
    /// A text that is none of the values the field may hold.
    #[error("{value:?} is not a {what}")]
    Unrecognised {
        /// What the field holds, e.g. `card code`.
        what: &'static str,
        /// The text found.
        value: String,
    },
    /// A list of a fixed length with another.
    #[error("has {actual} entries, needs {expected}")]
    Length {
        /// Entries the field must have.
        expected: usize,
        /// Entries it has.
        actual: usize,
    },
    /// A rule of the message's own (its protobuf comments) is broken.
    #[error("{0}")]
    Invalid(&'static str),
}

impl WireError {
    /// `field` is wrong for `reason`.
    pub fn new(field: impl Into<String>, reason: Reason) -> Self {
        WireError {
            field: field.into(),
            reason,
        }
    }

    /// `field` is absent.
    pub fn missing(field: impl Into<String>) -> Self {
        WireError::new(field, Reason::Missing)
    }

    /// The same error, its field read inside `parent`: `seat` inside `game.trick` is
    /// `game.trick.seat`.
    #[must_use]
    pub fn within(mut self, parent: &str) -> Self {
        self.field = format!("{parent}.{}", self.field);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_field_then_the_reason() {
        let e = WireError::new(
            "seat",
            Reason::OutOfRange {
                value: 4,
                range: "0..=3",
            },
        )
        .within("next_turn")
        .within("command");
        assert_eq!(e.field, "command.next_turn.seat");
        assert_eq!(
            e.to_string(),
            "command.next_turn.seat: 4 is out of range (0..=3)"
        );
        assert_eq!(WireError::missing("bid").to_string(), "bid: missing");
    }
}
