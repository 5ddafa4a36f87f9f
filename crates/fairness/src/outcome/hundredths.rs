//! [`Hundredths`]: the exact two-place decimals of dice, crash and overgo results.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A decimal with exactly two places, held as an integer count of hundredths.
///
/// Written as `"<integer>.<two digits>"`; serialised as that string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Hundredths(pub u64);

impl fmt::Display for Hundredths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// Text that is not a decimal with exactly two places.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a decimal with exactly two places (like \"1.90\")")]
pub struct BadHundredths(pub String);

impl FromStr for Hundredths {
    type Err = BadHundredths;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadHundredths(s.to_owned());
        let (whole, frac) = s.split_once('.').ok_or_else(bad)?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || frac.len() != 2 || !digits(frac) {
            return Err(bad());
        }
        let whole: u64 = whole.parse().map_err(|_| bad())?;
        let frac: u64 = frac.parse().map_err(|_| bad())?;
        whole
            .checked_mul(100)
            .and_then(|w| w.checked_add(frac))
            .map(Hundredths)
            .ok_or_else(bad)
    }
}

impl From<Hundredths> for String {
    fn from(h: Hundredths) -> String {
        h.to_string()
    }
}

impl TryFrom<String> for Hundredths {
    type Error = BadHundredths;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hundredths_parse_strictly() {
        assert_eq!("0.00".parse(), Ok(Hundredths(0)));
        assert_eq!("950000.00".parse(), Ok(Hundredths(95_000_000)));
        for bad in [
            "1",
            "1.0",
            "1.000",
            ".50",
            "1.5x",
            "-1.00",
            "1,00",
            "99999999999999999999.00",
        ] {
            assert!(bad.parse::<Hundredths>().is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn hundredths_text_round_trips(v in any::<u64>()) {
            let h = Hundredths(v);
            prop_assert_eq!(h.to_string().parse::<Hundredths>(), Ok(h));
        }
    }
}
