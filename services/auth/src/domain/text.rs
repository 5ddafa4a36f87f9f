//! Unicode handling shared by the newtypes.
//!
//! Two forms of every identifier: the *display* form (NFKC, as the user typed it otherwise) and
//! the *key* form used for uniqueness, Unicode's compatibility caseless match
//! (`NFKC(casefold(NFKC(casefold(NFD(x)))))`, Unicode 3.13 D146 with composed output), so
//! `ALICE`, `alice`, `ａｌｉｃｅ` (full width) and `Alice` written with a combining accent vs a
//! precomposed one all collide.

use unicode_normalization::UnicodeNormalization;

/// NFKC normal form.
pub fn nfkc(s: &str) -> String {
    s.nfkc().collect()
}

/// The caseless key of `s`; equal keys mean "the same name" for uniqueness.
pub fn caseless_key(s: &str) -> String {
    let nfd: String = s.nfd().collect();
    let once = nfkc(&caseless::default_case_fold_str(&nfd));
    nfkc(&caseless::default_case_fold_str(&once))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn width_case_and_composition_collide() {
        let k = caseless_key("alice");
        assert_eq!(caseless_key("ALICE"), k);
        assert_eq!(caseless_key("ａｌｉｃｅ"), k);
        assert_eq!(caseless_key("Jose\u{301}"), caseless_key("jos\u{e9}"));
        assert_eq!(caseless_key("straße"), caseless_key("STRASSE"));
    }

    proptest! {
        #[test]
        fn key_is_idempotent(s in "\\PC{0,24}") {
            let k = caseless_key(&s);
            prop_assert_eq!(caseless_key(&k), k.clone());
        }

        #[test]
        fn key_ignores_ascii_case(s in "[a-zA-Z0-9_.-]{0,24}") {
            prop_assert_eq!(caseless_key(&s.to_uppercase()), caseless_key(&s.to_lowercase()));
        }
    }
}
