//! A relay's base URL, parsed once: `http://host[:port][/path]` or `https://...`.

use std::fmt;

/// Why a relay URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelayError {
    /// Not a URL.
    #[error("{url:?} is not a URL")]
    NotAUrl {
        /// The text given.
        url: String,
    },
    /// A scheme other than http and https.
    #[error("{url:?}: only http:// and https:// relays are supported")]
    Scheme {
        /// The text given.
        url: String,
    },
    /// No host.
    #[error("{url:?} has no host")]
    NoHost {
        /// The text given.
        url: String,
    },
    /// A query or fragment, which drand's paths cannot follow.
    #[error("{url:?} must not have a query or fragment")]
    Query {
        /// The text given.
        url: String,
    },
}

/// One relay of a chain (e.g. `https://api.drand.sh`, or a local test beacon).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    /// TLS or not.
    https: bool,
    /// The host name or address, as the `Host` header and TLS server name take it.
    host: String,
    /// The port (80 or 443 unless given).
    port: u16,
    /// A path prefix before `/{chain hash}/...`, without a trailing slash (often empty).
    base_path: String,
}

impl Relay {
    /// Parses a relay's base URL.
    pub fn parse(url: &str) -> Result<Self, RelayError> {
        let trimmed = url.trim();
        if trimmed.contains('?') || trimmed.contains('#') {
            return Err(RelayError::Query { url: url.into() });
        }
        let uri: http::Uri = trimmed
            .parse()
            .map_err(|_| RelayError::NotAUrl { url: url.into() })?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(RelayError::Scheme { url: url.into() }),
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| RelayError::NoHost { url: url.into() })?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let base_path = uri.path().trim_end_matches('/').to_owned();
        Ok(Self {
            https,
            host,
            port,
            base_path,
        })
    }

    /// Whether requests use TLS.
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The host.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The path of `suffix` (which starts with `/`) on this relay.
    pub fn path(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.base_path)
    }
}

impl fmt::Display for Relay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        if self.host.contains(':') {
            write!(
                f,
                "{scheme}://[{}]:{}{}",
                self.host, self.port, self.base_path
            )
        } else {
            write!(
                f,
                "{scheme}://{}:{}{}",
                self.host, self.port, self.base_path
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relays_parse_with_default_ports_and_paths() {
        let r = Relay::parse("https://api.drand.sh").unwrap();
        assert!(r.is_https());
        assert_eq!((r.host(), r.port()), ("api.drand.sh", 443));
        assert_eq!(r.path("/x/public/1"), "/x/public/1");
        let r = Relay::parse("http://127.0.0.1:8080/drand/").unwrap();
        assert!(!r.is_https());
        assert_eq!(r.port(), 8080);
        assert_eq!(r.path("/info"), "/drand/info");
        assert_eq!(r.to_string(), "http://127.0.0.1:8080/drand");
        let r = Relay::parse("http://[::1]:9/").unwrap();
        assert_eq!(r.host(), "::1");
        assert_eq!(r.to_string(), "http://[::1]:9");
    }

    #[test]
    fn bad_relays_are_refused() {
        assert!(matches!(
            Relay::parse("ftp://x"),
            Err(RelayError::Scheme { .. })
        ));
        assert!(matches!(
            Relay::parse("api.drand.sh"),
            Err(RelayError::Scheme { .. }) | Err(RelayError::NotAUrl { .. })
        ));
        assert!(matches!(
            Relay::parse("http://x/?a=1"),
            Err(RelayError::Query { .. })
        ));
        assert!(matches!(
            Relay::parse("not a url"),
            Err(RelayError::NotAUrl { .. })
        ));
    }
}
