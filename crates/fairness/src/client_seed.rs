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
//! Only the formula lives here. Who may contribute, which texts are accepted and when the
//! seed is fixed are the commitment service's rules (`fairdeal-commitment`, which calls these
//! functions); `fairdeal client-seed` recomputes the seed from the recorded contributions.
//! Contributions are keyed by seat in a `BTreeMap`, so each seat has at most one and the
//! canonical order is the map's own order.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

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
