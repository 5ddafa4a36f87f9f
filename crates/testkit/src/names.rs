//! Names no other test uses, so tests can share one NATS and one Redis server: each test
//! publishes under its own subject prefix and keeps its keys under its own namespace.
//!
//! Both end in a UUIDv7 (time-ordered), so leftovers of a failed test sort by age.

use uuid::Uuid;

/// A NATS subject prefix no other test uses: `t.<tag>.<uuid>` (the UUID in simple form).
/// Every part is a valid NATS token, so `<prefix>.events.>` is a valid filter and the
/// JetStream stream names derived from it are valid too.
///
/// # Panics
///
/// When `tag` is not a NATS token of ASCII letters, digits, `-` and `_` (a mistake in the
/// test, not in its input).
pub fn subject_prefix(tag: &str) -> String {
    assert_token(tag);
    format!("t.{tag}.{}", Uuid::now_v7().simple())
}

/// A Redis key namespace no other test uses: `fairdeal-test:<tag>:<uuid>`. Its keys are
/// `<namespace>:...`; the code that wrote them knows how to delete them.
///
/// # Panics
///
/// When `tag` is not made of ASCII letters, digits, `-` and `_`.
pub fn redis_namespace(tag: &str) -> String {
    assert_token(tag);
    format!("fairdeal-test:{tag}:{}", Uuid::now_v7().simple())
}

/// Whether `token` is non-empty ASCII letters, digits, `-` and `_`: a NATS subject token
/// without wildcards, and harmless in a Redis key.
fn is_token(token: &str) -> bool {
    !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn assert_token(tag: &str) {
    assert!(
        is_token(tag),
        "test tag {tag:?} must be ASCII letters, digits, '-' or '_'"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_valid_distinct_nats_subjects() {
        let (a, b) = (subject_prefix("auth"), subject_prefix("auth"));
        assert_ne!(a, b);
        let tokens: Vec<&str> = a.split('.').collect();
        assert_eq!(tokens.len(), 3, "{a}");
        assert_eq!(&tokens[..2], ["t", "auth"]);
        assert!(tokens.iter().all(|t| is_token(t)), "{a}");
        assert_eq!(tokens[2].len(), 32);
    }

    #[test]
    fn namespaces_are_distinct() {
        let (a, b) = (redis_namespace("limits"), redis_namespace("limits"));
        assert_ne!(a, b);
        assert!(a.starts_with("fairdeal-test:limits:"), "{a}");
    }

    #[test]
    #[should_panic(expected = "must be ASCII letters")]
    fn a_tag_with_a_dot_is_refused() {
        subject_prefix("a.b");
    }

    #[test]
    fn tokens_exclude_wildcards_and_separators() {
        for bad in ["", "*", ">", "a b", "a.b", "ä"] {
            assert!(!is_token(bad), "{bad:?}");
        }
        assert!(is_token("pg-1_x"));
    }
}
