//! Passwords: normalised, bounded, checked for strength when chosen; never shown.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};

use super::text::nfkc;

/// Most bytes accepted before any work (oversized input is refused, not hashed).
pub const MAX_INPUT_BYTES: usize = 1024;
/// Fewest characters of a new password (NIST SP 800-63B asks at least 8; we ask 10).
pub const MIN_CHARS: usize = 10;
/// Most characters of a new password.
pub const MAX_CHARS: usize = 128;

/// Why a password was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// Empty input.
    #[error("password is empty")]
    Empty,
    /// Longer than accepted.
    #[error("password must be at most {MAX_CHARS} characters")]
    TooLong,
    /// A new password shorter than [`MIN_CHARS`].
    #[error("password must be at least {MIN_CHARS} characters")]
    TooShort,
    /// A new password that is easy to guess (zxcvbn score below 3), e.g. common or built from
    /// the username.
    #[error("password is too easy to guess{0}")]
    TooWeak(String),
}

/// A password as typed (NFKC-normalised so the same password typed on different keyboards
/// hashes the same). Debug never shows it.
#[derive(Clone)]
pub struct Password(SecretString);

impl Password {
    /// A password offered at login: only bounded, never judged (old passwords stay usable).
    pub fn candidate(raw: &str) -> Result<Self, PasswordError> {
        if raw.is_empty() {
            return Err(PasswordError::Empty);
        }
        if raw.len() > MAX_INPUT_BYTES {
            return Err(PasswordError::TooLong);
        }
        Ok(Self(SecretString::from(nfkc(raw))))
    }

    /// A newly chosen password: 10 to 128 characters and hard to guess, also given the user's
    /// own name and address (zxcvbn penalises passwords built from them).
    pub fn new_choice(raw: &str, user_inputs: &[&str]) -> Result<Self, PasswordError> {
        let password = Self::candidate(raw)?;
        let text = password.0.expose_secret();
        let chars = text.chars().count();
        if chars < MIN_CHARS {
            return Err(PasswordError::TooShort);
        }
        if chars > MAX_CHARS {
            return Err(PasswordError::TooLong);
        }
        let estimate = zxcvbn::zxcvbn(text, user_inputs);
        if u8::from(estimate.score()) < 3 {
            let hint = estimate
                .feedback()
                .and_then(|f| f.warning())
                .map(|w| format!(": {w}"))
                .unwrap_or_default();
            return Err(PasswordError::TooWeak(hint));
        }
        Ok(password)
    }

    /// The normalised password bytes, for hashing only.
    pub fn expose(&self) -> &[u8] {
        self.0.expose_secret().as_bytes()
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strength_rules() {
        assert_eq!(
            Password::new_choice("", &[]).unwrap_err(),
            PasswordError::Empty
        );
        assert_eq!(
            Password::new_choice("short", &[]).unwrap_err(),
            PasswordError::TooShort
        );
        assert!(matches!(
            Password::new_choice("password123", &[]),
            Err(PasswordError::TooWeak(_))
        ));
        assert!(matches!(
            Password::new_choice("alicealice1", &["alice"]),
            Err(PasswordError::TooWeak(_))
        ));
        assert_eq!(
            Password::new_choice(&"x".repeat(200), &[]).unwrap_err(),
            PasswordError::TooLong
        );
        assert!(Password::new_choice("correct horse battery staple", &[]).is_ok());
    }

    #[test]
    fn candidates_are_normalised_and_bounded() {
        assert_eq!(Password::candidate("ｐａｓｓ").unwrap().expose(), b"pass");
        assert_eq!(
            Password::candidate(&"x".repeat(2000)).unwrap_err(),
            PasswordError::TooLong
        );
        let p = Password::candidate("hunter2hunter2").unwrap();
        assert!(!format!("{p:?}").contains("hunter"));
    }

    proptest! {
        // Few cases: zxcvbn is slow in debug builds, and totality needs breadth, not volume.
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn new_choice_is_total(s in "\\PC{0,140}") {
            let _ = Password::new_choice(&s, &["alice"]);
        }
    }
}
