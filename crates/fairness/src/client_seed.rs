//! The table client seed (SPEC section 4, "Table games"): the SHA-256 of the seated players'
//! own seed contributions, in one canonical form, joined with an optional public delayed
//! value.
//!
//! # The exact format (for auditors)
//!
//! Contributions are taken in ascending seat order. Each one is written as
//!
//! ```text
//! <seat in decimal> ":" <byte length of the contribution in decimal> ":" <contribution UTF-8 bytes> "\n"
//! ```
//!
//! and the lines are concatenated (no separator, no header). The length prefix makes the
//! encoding unambiguous whatever a contribution contains. Then
//!
//! ```text
//! contributions_hash = lowercase hex SHA-256(concatenation)        -- 64 characters
//! client_seed        = contributions_hash                          -- no delayed value
//! client_seed        = contributions_hash ":" delayed_value        -- with a delayed value
//! ```
//!
//! With no contribution at all the concatenation is empty and the hash is
//! `e3b0c442...b855` (SHA-256 of nothing): the client seed is still fixed and public, it
//! just carries no player entropy. The delayed value is appended in clear rather than hashed
//! in, so anyone can see in the client seed itself which public value was used.
//!
//! Example: seats 0 and 2 contribute `"alpha"` and `"zz"`, no delayed value:
//! `SHA-256("0:5:alpha\n2:2:zz\n")`.
//!
//! # What a contribution may be
//!
//! One rule, [`check_contribution`], which both edges that take a contribution apply: the
//! tables service (from the player) and the commitment service (from the tables service).
//! A contribution is 1 to [`MAX_CONTRIBUTION_CHARS`] characters (Unicode scalar values, what
//! a player types and the protos promise; up to 512 bytes of UTF-8), without control
//! characters, nor the bidirectional controls and invisible formatting characters
//! `fairdeal_text::check_visible` refuses (contributions are public: other players and
//! auditors read them). The unit of the rule is characters; the formula above still writes
//! each contribution's length in bytes, as documented.
//!
//! Who may contribute and when the seed is fixed are the commitment service's rules
//! (`fairdeal-commitment`, which calls these functions); `fairdeal client-seed` recomputes the
//! seed from the recorded contributions. Contributions are keyed by seat in a `BTreeMap`, so
//! each seat has at most one and the canonical order is the map's own order.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// Longest accepted seed contribution, in characters (Unicode scalar values).
pub const MAX_CONTRIBUTION_CHARS: usize = 128;

/// Why a contribution is refused; the messages follow the field's name and speak in
/// characters, the rule's unit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContributionError {
    /// Nothing given.
    #[error("is required (1 to {MAX_CONTRIBUTION_CHARS} characters)")]
    Empty,
    /// Over [`MAX_CONTRIBUTION_CHARS`] characters.
    #[error("is {0} characters, at most {MAX_CONTRIBUTION_CHARS} allowed")]
    TooLong(usize),
    /// A control character.
    #[error("must not contain control characters")]
    Control,
    /// A bidirectional control or invisible formatting character.
    #[error(transparent)]
    Hidden(#[from] fairdeal_text::Hidden),
}

/// Checks a seed contribution against the one rule (see the module docs). Linear in the
/// value's length.
pub fn check_contribution(value: &str) -> Result<(), ContributionError> {
    if value.is_empty() {
        return Err(ContributionError::Empty);
    }
    // A character is at least one byte: a short value is never counted.
    if value.len() > MAX_CONTRIBUTION_CHARS {
        let count = value.chars().count();
        if count > MAX_CONTRIBUTION_CHARS {
            return Err(ContributionError::TooLong(count));
        }
    }
    if value.chars().any(char::is_control) {
        return Err(ContributionError::Control);
    }
    fairdeal_text::check_visible(value)?;
    Ok(())
}

/// The canonical bytes of a set of contributions, keyed by seat (see the module docs).
pub fn canonical_contributions<S: AsRef<str>>(contributions: &BTreeMap<u32, S>) -> Vec<u8> {
    let mut bytes = Vec::new();
    // A BTreeMap iterates in ascending key order: the canonical seat order.
    for (seat, contribution) in contributions {
        let text = contribution.as_ref();
        bytes.extend_from_slice(format!("{seat}:{}:", text.len()).as_bytes());
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'\n');
    }
    bytes
}

/// Lowercase hex SHA-256 of [`canonical_contributions`].
pub fn contributions_hash<S: AsRef<str>>(contributions: &BTreeMap<u32, S>) -> String {
    hex::encode(Sha256::digest(canonical_contributions(contributions)))
}

/// The client seed of a table: [`contributions_hash`], followed by `":"` and the delayed
/// value when there is one (see the module docs).
pub fn table_client_seed<S: AsRef<str>>(
    contributions: &BTreeMap<u32, S>,
    delayed_value: Option<&str>,
) -> String {
    let hash = contributions_hash(contributions);
    match delayed_value {
        Some(value) => format!("{hash}:{value}"),
        None => hash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contributions<'a>(items: &[(u32, &'a str)]) -> BTreeMap<u32, &'a str> {
        items.iter().copied().collect()
    }

    #[test]
    fn documented_example() {
        let c = contributions(&[(2, "zz"), (0, "alpha")]);
        assert_eq!(canonical_contributions(&c), b"0:5:alpha\n2:2:zz\n");
        let expected = hex::encode(Sha256::digest(b"0:5:alpha\n2:2:zz\n"));
        assert_eq!(table_client_seed(&c, None), expected);
        let dv = "07 12 23 34 45";
        assert_eq!(
            table_client_seed(&c, Some(dv)),
            format!("{expected}:07 12 23 34 45")
        );
    }

    #[test]
    fn no_contribution_hashes_nothing() {
        assert_eq!(
            table_client_seed(&BTreeMap::<u32, &str>::new(), None),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn lengths_are_counted_in_bytes() {
        // "é" is 2 bytes in UTF-8: the prefix counts bytes, not characters.
        let c = contributions(&[(1, "é")]);
        assert_eq!(canonical_contributions(&c), "1:2:é\n".as_bytes());
        assert_eq!(contributions_hash(&c), table_client_seed(&c, None));
    }

    #[test]
    fn contributions_are_bounded_in_characters() {
        // 100 euro signs are 300 bytes, 128 playing cards 512: both within the rule, and the
        // formula still counts their bytes.
        let euros = "€".repeat(100);
        assert_eq!(check_contribution(&euros), Ok(()));
        let cards = "\u{1F0A1}".repeat(MAX_CONTRIBUTION_CHARS);
        assert_eq!(cards.len(), 512);
        assert_eq!(check_contribution(&cards), Ok(()));
        assert_eq!(
            canonical_contributions(&contributions(&[(0, euros.as_str())])),
            format!("0:300:{euros}\n").as_bytes()
        );
        assert_eq!(check_contribution(&"x".repeat(128)), Ok(()));
        let over = "\u{1F0A1}".repeat(MAX_CONTRIBUTION_CHARS + 1);
        assert_eq!(
            check_contribution(&over),
            Err(ContributionError::TooLong(129))
        );
        assert_eq!(
            ContributionError::TooLong(129).to_string(),
            "is 129 characters, at most 128 allowed"
        );
        assert_eq!(check_contribution(""), Err(ContributionError::Empty));
        assert_eq!(check_contribution("a\nb"), Err(ContributionError::Control));
        assert_eq!(
            check_contribution("lucky\u{202E}7"),
            Err(ContributionError::Hidden(fairdeal_text::Hidden('\u{202E}')))
        );
        assert!(
            check_contribution("a\u{200B}b")
                .unwrap_err()
                .to_string()
                .starts_with("must not contain U+200B")
        );
    }

    proptest! {
        // The encoding is injective: different contribution sets give different bytes
        // (length prefixes keep "1:a" + "b" apart from "1:ab").
        #[test]
        fn canonical_bytes_are_injective(
            a in proptest::collection::btree_map(0u32..8, "[a-z:0-9\n]{1,6}", 0..4),
            b in proptest::collection::btree_map(0u32..8, "[a-z:0-9\n]{1,6}", 0..4),
        ) {
            // Any text is accepted here, so ':' and '\n' stress the encoding directly.
            prop_assert_eq!(a == b, canonical_contributions(&a) == canonical_contributions(&b));
        }
    }
}
