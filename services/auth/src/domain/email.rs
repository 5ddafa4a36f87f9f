//! Email addresses: private (never in events or logs), unique case-insensitively.

use std::fmt;

use email_address::{EmailAddress, Options};

use super::text::{caseless_key, nfkc};

/// Longest address accepted (RFC 5321's path limit less the angle brackets).
pub const MAX_LEN: usize = 254;

/// Why an email address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmailError {
    /// Empty input.
    #[error("email is empty")]
    Empty,
    /// Longer than [`MAX_LEN`] bytes.
    #[error("email is longer than {MAX_LEN} bytes")]
    TooLong,
    /// Not `local@domain.tld` (display names and IP-literal domains are refused too).
    #[error("email is not a valid address")]
    Syntax,
}

/// A syntactically valid address `local@domain.tld`. Debug and Display never show it: it is
/// personal data, kept out of logs and events.
#[derive(Clone, PartialEq, Eq)]
pub struct Email {
    /// The address mail is sent to (NFKC, surrounding whitespace removed).
    address: String,
    /// Caseless key for uniqueness. Local parts are case-sensitive in theory, never in practice,
    /// and treating `Bob@x` and `bob@x` as two accounts invites takeover confusion.
    key: String,
}

impl Email {
    /// Validates `raw`.
    pub fn parse(raw: &str) -> Result<Self, EmailError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(EmailError::Empty);
        }
        if trimmed.len() > MAX_LEN {
            return Err(EmailError::TooLong);
        }
        let address = nfkc(trimmed);
        if address.len() > MAX_LEN {
            return Err(EmailError::TooLong);
        }
        let options = Options::default()
            .without_display_text()
            .without_domain_literal()
            .with_required_tld();
        EmailAddress::parse_with_options(&address, options).map_err(|_| EmailError::Syntax)?;
        let key = caseless_key(&address);
        Ok(Self { address, key })
    }

    /// The address, for sending mail only.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The uniqueness key.
    pub fn key(&self) -> &str {
        &self.key
    }
}

impl fmt::Debug for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Email(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_ordinary_addresses() {
        let e = Email::parse("  Alice.Smith+cards@Example.COM ").unwrap();
        assert_eq!(e.address(), "Alice.Smith+cards@Example.COM");
        assert_eq!(e.key(), "alice.smith+cards@example.com");
        assert_eq!(format!("{e:?}"), "Email(<redacted>)");
    }

    #[test]
    fn refuses_bad_addresses() {
        assert_eq!(Email::parse(""), Err(EmailError::Empty));
        assert_eq!(Email::parse("   "), Err(EmailError::Empty));
        assert_eq!(Email::parse("alice"), Err(EmailError::Syntax));
        assert_eq!(Email::parse("alice@localhost"), Err(EmailError::Syntax));
        assert_eq!(
            Email::parse("Alice <alice@example.com>"),
            Err(EmailError::Syntax)
        );
        assert_eq!(Email::parse("alice@[127.0.0.1]"), Err(EmailError::Syntax));
        assert_eq!(
            Email::parse(&format!("{}@example.com", "a".repeat(300))),
            Err(EmailError::TooLong)
        );
    }

    proptest! {
        #[test]
        fn generated_addresses_parse(local in "[a-z0-9]{1,20}", domain in "[a-z]{1,20}", tld in "[a-z]{2,6}") {
            let raw = format!("{local}@{domain}.{tld}");
            let e = Email::parse(&raw.to_uppercase()).unwrap();
            prop_assert_eq!(e.key(), raw.as_str());
        }

        #[test]
        fn parse_is_total(s in "\\PC{0,300}") {
            let _ = Email::parse(&s);
        }
    }
}
