//! Usernames: public, unique case-insensitively after normalisation, and ASCII only.
//!
//! A username is shown to other players, so it must not impersonate another one. Allowing
//! every Unicode letter lets `pаypal` (Cyrillic `а`) and `gοogle` (Greek `ο`) register beside
//! `paypal` and `google`, and no normalisation merges them (they are different letters).
//! The alphabet is therefore ASCII letters, digits, `_`, `-` and `.`, checked after NFKC (so a
//! full-width `ａｌｉｃｅ` is still accepted and becomes `alice`), and uniqueness is by the
//! caseless key (so `Alice` and `alice` are one name). docs/decisions.md says why this and not
//! a confusable skeleton. The ASCII alphabet already excludes every bidirectional control and
//! invisible formatting character; they are still checked first, by the platform's one rule
//! for text others read (`fairdeal_text::check_visible`), so the refusal names the character
//! as it does for every other such field.

use std::fmt;

use super::text::{caseless_key, nfkc};

/// Most bytes accepted before any Unicode work (oversized input is refused cheaply).
pub const MAX_INPUT_BYTES: usize = 256;
/// Fewest characters after normalisation.
pub const MIN_CHARS: usize = 3;
/// Most characters after normalisation.
pub const MAX_CHARS: usize = 32;

/// Why a username was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsernameError {
    /// Empty input.
    #[error("username is empty")]
    Empty,
    /// Shorter than [`MIN_CHARS`] or longer than [`MAX_CHARS`] (or [`MAX_INPUT_BYTES`]).
    #[error("username must be {MIN_CHARS} to {MAX_CHARS} characters")]
    Length,
    /// A character other than an ASCII letter, a digit, `_`, `-` or `.` (after NFKC).
    #[error("username may contain only ASCII letters (a-z, A-Z), digits, '_', '-' and '.'")]
    Character,
    /// Starts or ends with punctuation.
    #[error("username must start and end with a letter or digit")]
    Edge,
    /// A bidirectional control, invisible formatting character or line separator.
    #[error("username {0}")]
    Hidden(fairdeal_text::Hidden),
}

/// A valid username: 3 to 32 ASCII letters, digits, `_`, `-`, `.` (after NFKC), starting and
/// ending with a letter or digit.
#[derive(Clone, PartialEq, Eq)]
pub struct Username {
    /// NFKC form, shown to other players.
    display: String,
    /// Caseless key: what uniqueness and login lookups compare.
    key: String,
}

impl Username {
    /// Validates `raw`.
    pub fn parse(raw: &str) -> Result<Self, UsernameError> {
        if raw.is_empty() {
            return Err(UsernameError::Empty);
        }
        if raw.len() > MAX_INPUT_BYTES {
            return Err(UsernameError::Length);
        }
        fairdeal_text::check_visible(raw).map_err(UsernameError::Hidden)?;
        let display = nfkc(raw);
        let count = display.chars().count();
        if !(MIN_CHARS..=MAX_CHARS).contains(&count) {
            return Err(UsernameError::Length);
        }
        if !display
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(UsernameError::Character);
        }
        let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        if !edge_ok(display.chars().next()) || !edge_ok(display.chars().next_back()) {
            return Err(UsernameError::Edge);
        }
        let key = caseless_key(&display);
        Ok(Self { display, key })
    }

    /// The caseless key of any text, valid username or not: login and rate limiting use it so a
    /// mistyped or unknown name is treated exactly like a known one.
    pub fn key_of(raw: &str) -> String {
        let bounded = &raw[..raw.floor_char_boundary(MAX_INPUT_BYTES)];
        caseless_key(bounded)
    }

    /// The display form.
    pub fn as_str(&self) -> &str {
        &self.display
    }

    /// The uniqueness key.
    pub fn key(&self) -> &str {
        &self.key
    }
}

impl fmt::Debug for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Username({:?})", self.display)
    }
}

impl fmt::Display for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_and_normalises() {
        let u = Username::parse("Ａｌｉｃｅ_99").unwrap();
        assert_eq!(u.as_str(), "Alice_99");
        assert_eq!(u.key(), "alice_99");
        assert_eq!(
            Username::parse("Zoe.b").unwrap().key(),
            Username::parse("ZOE.B").unwrap().key()
        );
    }

    #[test]
    fn look_alikes_from_other_scripts_are_refused() {
        // Cyrillic а (U+0430), Greek ο (U+03BF), Cyrillic і (U+0456), Latin ı (U+0131),
        // Cherokee Ꭺ (U+13AA), a Latin letter with a combining accent, and a letter NFKC does
        // not fold to ASCII (ł).
        for name in [
            "p\u{430}ypal",
            "g\u{3bf}ogle",
            "l\u{456}nkedin",
            "b\u{131}tcoin",
            "\u{13aa}dmin",
            "Zoe\u{301}.b",
            "Zoë.b",
            "pawe\u{142}",
        ] {
            assert_eq!(
                Username::parse(name),
                Err(UsernameError::Character),
                "{name}"
            );
        }
        // Compatibility forms that NFKC folds to ASCII are that ASCII name.
        assert_eq!(Username::parse("ｐａｙｐａｌ").unwrap().key(), "paypal");
        let message = UsernameError::Character.to_string();
        assert!(message.starts_with("username") && message.contains("ASCII"));
    }

    #[test]
    fn refusals_name_the_problem() {
        assert_eq!(Username::parse(""), Err(UsernameError::Empty));
        assert_eq!(Username::parse("ab"), Err(UsernameError::Length));
        assert_eq!(Username::parse(&"a".repeat(33)), Err(UsernameError::Length));
        assert_eq!(
            Username::parse(&"a".repeat(1000)),
            Err(UsernameError::Length)
        );
        assert_eq!(Username::parse("al ice"), Err(UsernameError::Character));
        assert_eq!(Username::parse("al\u{0}ice"), Err(UsernameError::Character));
        assert_eq!(Username::parse("_alice"), Err(UsernameError::Edge));
        assert_eq!(Username::parse("alice."), Err(UsernameError::Edge));
        // Bidirectional controls and invisible characters are named as in every other text
        // others read.
        for c in ['\u{202E}', '\u{200F}', '\u{200B}', '\u{3164}', '\u{E0061}'] {
            assert_eq!(
                Username::parse(&format!("ali{c}ce")),
                Err(UsernameError::Hidden(fairdeal_text::Hidden(c))),
                "U+{:04X}",
                u32::from(c)
            );
        }
        assert!(
            UsernameError::Hidden(fairdeal_text::Hidden('\u{202E}'))
                .to_string()
                .starts_with("username must not contain U+202E")
        );
    }

    proptest! {
        #[test]
        fn valid_ascii_names_parse_and_keys_are_lowercase(s in "[a-zA-Z0-9][a-zA-Z0-9_.-]{1,30}[a-zA-Z0-9]") {
            let u = Username::parse(&s).unwrap();
            prop_assert_eq!(u.as_str(), s.as_str());
            prop_assert_eq!(u.key(), s.to_lowercase());
        }

        #[test]
        fn parse_is_total_and_keys_agree(s in "\\PC{0,40}") {
            if let Ok(u) = Username::parse(&s) {
                prop_assert!(u.as_str().is_ascii());
                prop_assert_eq!(Username::key_of(&s), u.key().to_owned());
                // Reparsing the display form gives the same name.
                prop_assert_eq!(Username::parse(u.as_str()).unwrap(), u);
            }
        }

        #[test]
        fn key_of_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let s = String::from_utf8_lossy(&bytes);
            let _ = Username::key_of(&s);
        }
    }
}
