//! The access token a service sends when it calls another one.
//!
//! A [`TokenProvider`] hands out the current token. In production it is a [`ServiceTokens`]:
//! it obtains a token from the auth service (`IssueServiceToken`, presenting the service's
//! name and secret), keeps it, and obtains the next one when three quarters of its life have
//! passed, so a running service never sends an expired token and the auth service sees one
//! call per token lifetime, not one per request. Concurrent callers that find the token due
//! wait for a single renewal. When the auth service is unreachable at renewal time the old
//! token is used while it is still valid (the failure is logged); only then do calls fail.
//!
//! A callee may still refuse a token (its signing key withdrawn, say): the caller reports
//! it with [`TokenProvider::refused`] and asks again; the provider renews at most once per
//! [`MIN_RENEWAL_INTERVAL`] for that reason, so a callee that refuses every token cannot
//! turn each request into a call to the auth service.
//!
//! [`StaticToken`] is a fixed token (tests, or a token handed over by an operator; it is not
//! renewed and stops working when it expires).

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use fairdeal_proto::fairdeal::auth::v1::IssueServiceTokenRequest;
use fairdeal_proto::fairdeal::auth::v1::auth_service_client::AuthServiceClient;
use tonic::transport::Channel;

use crate::clock::{Clock, SystemClock};
use crate::token::AccessToken;

/// Renewals because a callee refused the token happen at most this often.
pub const MIN_RENEWAL_INTERVAL: Duration = Duration::from_secs(5);

/// Why no token could be had. The message never contains the secret or a token.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no service token: {0}")]
pub struct TokenUnavailable(pub String);

/// Source of the token a service sends with its calls.
#[async_trait]
pub trait TokenProvider: Send + Sync + fmt::Debug {
    /// The token to send now.
    async fn token(&self) -> Result<AccessToken, TokenUnavailable>;

    /// A callee refused `token` as unauthenticated: forget it, so that the next
    /// [`TokenProvider::token`] obtains a fresh one (rate limited).
    fn refused(&self, token: &AccessToken);
}

/// A fixed token, never renewed.
#[derive(Debug, Clone)]
pub struct StaticToken(AccessToken);

impl StaticToken {
    /// A provider always handing out `token`.
    pub fn new(token: AccessToken) -> Self {
        Self(token)
    }
}

#[async_trait]
impl TokenProvider for StaticToken {
    async fn token(&self) -> Result<AccessToken, TokenUnavailable> {
        Ok(self.0.clone())
    }

    fn refused(&self, _token: &AccessToken) {}
}

/// A token just issued, with its validity.
///
/// Times are kept to the sub-second (not whole Unix seconds): with short lifetimes, whole
/// seconds would put the renewal point up to a second late, at the expiry itself.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The token.
    pub token: AccessToken,
    /// When it was obtained.
    pub issued_at: SystemTime,
    /// When it expires.
    pub expires_at: SystemTime,
}

/// Where [`ServiceTokens`] gets new tokens: the auth service ([`GrpcTokenIssuer`]), or a
/// fake in tests.
#[async_trait]
pub trait TokenIssuer: Send + Sync + fmt::Debug {
    /// Issues a new token; `now` is the caller's clock, used when the answer lacks times.
    async fn issue(&self, now: SystemTime) -> Result<IssuedToken, TokenUnavailable>;
}

/// The service's secret; Debug never shows it.
#[derive(Clone)]
struct ServiceSecret(Vec<u8>);

impl fmt::Debug for ServiceSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServiceSecret(<redacted>)")
    }
}

/// Issues tokens with the auth service's `IssueServiceToken`.
#[derive(Debug, Clone)]
pub struct GrpcTokenIssuer {
    /// Client of the auth service (its channel reconnects by itself).
    client: AuthServiceClient<Channel>,
    /// This service's configured name (the token's subject).
    name: String,
    /// This service's secret, as the auth service knows its SHA-256.
    secret: ServiceSecret,
}

impl GrpcTokenIssuer {
    /// An issuer for service `name` with `secret`, over `channel` to the auth service.
    pub fn new(channel: Channel, name: &str, secret: &[u8]) -> Self {
        Self {
            client: AuthServiceClient::new(channel),
            name: name.to_owned(),
            secret: ServiceSecret(secret.to_vec()),
        }
    }

    /// An issuer for the auth service at `url` (`http://auth:50051`, or `dns:///auth:50051`
    /// balanced over every address; see [`fairdeal_kit::client`]), connecting on first use so
    /// a service can start before the auth service is up.
    #[cfg(feature = "service")]
    pub fn lazy(url: &str, name: &str, secret: &[u8]) -> Result<Self, TokenUnavailable> {
        let channel = fairdeal_kit::client::channel("auth_url", url)
            .map_err(|e| TokenUnavailable(e.to_string()))?;
        Ok(Self::new(channel, name, secret))
    }
}

#[async_trait]
impl TokenIssuer for GrpcTokenIssuer {
    async fn issue(&self, now: SystemTime) -> Result<IssuedToken, TokenUnavailable> {
        let response = self
            .client
            .clone()
            .issue_service_token(IssueServiceTokenRequest {
                service_name: self.name.clone(),
                secret: self.secret.0.clone(),
            })
            .await
            .map_err(|status| {
                TokenUnavailable(format!(
                    "IssueServiceToken for {:?}: {:?}: {}",
                    self.name,
                    status.code(),
                    status.message()
                ))
            })?
            .into_inner();
        if response.access_token.is_empty() {
            return Err(TokenUnavailable(
                "IssueServiceToken returned no token".into(),
            ));
        }
        let expires_at = response
            .expires_at
            .and_then(|t| {
                let seconds = u64::try_from(t.seconds).ok()?;
                let nanos = u32::try_from(t.nanos).ok()?;
                UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))
            })
            .ok_or_else(|| TokenUnavailable("IssueServiceToken returned no valid expiry".into()))?;
        Ok(IssuedToken {
            token: AccessToken::new(response.access_token),
            issued_at: now,
            expires_at,
        })
    }
}

/// Tokens from a [`TokenIssuer`], kept and renewed ahead of their expiry.
#[derive(Debug)]
pub struct ServiceTokens {
    /// Where tokens come from.
    issuer: Arc<dyn TokenIssuer>,
    /// Time, for renewal and expiry.
    clock: Arc<dyn Clock>,
    /// The current token; readers never wait on a renewal unless theirs is due.
    current: RwLock<Option<IssuedToken>>,
    /// Held during a renewal, so concurrent callers coalesce into one call; holds the Unix
    /// time of the last renewal forced by [`TokenProvider::refused`].
    renewing: tokio::sync::Mutex<Option<SystemTime>>,
    /// Set by [`TokenProvider::refused`]: the current token must be replaced.
    refused: RwLock<Option<AccessToken>>,
}

impl ServiceTokens {
    /// Tokens from `issuer`, timed by the system clock.
    pub fn new(issuer: Arc<dyn TokenIssuer>) -> Self {
        Self::with_clock(issuer, Arc::new(SystemClock))
    }

    /// Tokens from `issuer`, timed by `clock`.
    pub fn with_clock(issuer: Arc<dyn TokenIssuer>, clock: Arc<dyn Clock>) -> Self {
        Self {
            issuer,
            clock,
            current: RwLock::new(None),
            renewing: tokio::sync::Mutex::new(None),
            refused: RwLock::new(None),
        }
    }

    /// The current token if it can be sent as is at `now`.
    fn usable(&self, now: SystemTime) -> Option<AccessToken> {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        let issued = current.as_ref()?;
        let refused = self.refused.read().unwrap_or_else(PoisonError::into_inner);
        if refused.as_ref() == Some(&issued.token) {
            return None;
        }
        (now < renew_at(issued)).then(|| issued.token.clone())
    }
}

/// When a token is due for renewal: after three quarters of its lifetime (at once when
/// its expiry is not after its issue, as with a skewed clock).
fn renew_at(token: &IssuedToken) -> SystemTime {
    let life = token
        .expires_at
        .duration_since(token.issued_at)
        .unwrap_or(Duration::ZERO);
    token.issued_at + (life - life / 4)
}

#[async_trait]
impl TokenProvider for ServiceTokens {
    async fn token(&self) -> Result<AccessToken, TokenUnavailable> {
        if let Some(token) = self.usable(self.clock.now()) {
            return Ok(token);
        }
        let mut last_forced = self.renewing.lock().await;
        let now = self.clock.now();
        // Another caller may have renewed while this one waited.
        if let Some(token) = self.usable(now) {
            return Ok(token);
        }
        let previous = self
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let was_refused = {
            let refused = self.refused.read().unwrap_or_else(PoisonError::into_inner);
            previous
                .as_ref()
                .is_some_and(|p| refused.as_ref() == Some(&p.token))
        };
        if was_refused {
            if let (Some(at), Some(p)) = (*last_forced, &previous)
                && now < at + MIN_RENEWAL_INTERVAL
                && now < p.expires_at
            {
                // Renewed for a refusal moments ago: the callee's problem is not the token.
                return Ok(p.token.clone());
            }
            *last_forced = Some(now);
        }
        match self.issuer.issue(now).await {
            Ok(issued) => {
                tracing::debug!(
                    expires_at = crate::clock::unix_seconds(issued.expires_at),
                    "service token obtained from the auth service"
                );
                let token = issued.token.clone();
                *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(issued);
                *self.refused.write().unwrap_or_else(PoisonError::into_inner) = None;
                Ok(token)
            }
            Err(error) => match previous {
                Some(p) if now < p.expires_at && !was_refused => {
                    tracing::warn!(
                        error = %error,
                        expires_at = crate::clock::unix_seconds(p.expires_at),
                        "service token not renewed; the current one is used until it expires"
                    );
                    Ok(p.token)
                }
                _ => Err(error),
            },
        }
    }

    fn refused(&self, token: &AccessToken) {
        *self.refused.write().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::clock::ManualClock;

    /// Issues `t1`, `t2`, ... living `life` seconds; can be made to fail.
    #[derive(Debug)]
    struct FakeIssuer {
        issued: AtomicU64,
        life: Duration,
        down: AtomicBool,
        delay: Mutex<Duration>,
    }

    impl FakeIssuer {
        fn new(life: Duration) -> Arc<Self> {
            Arc::new(Self {
                issued: AtomicU64::new(0),
                life,
                down: AtomicBool::new(false),
                delay: Mutex::new(Duration::ZERO),
            })
        }
        fn count(&self) -> u64 {
            self.issued.load(Ordering::SeqCst)
        }
    }

    #[async_trait]
    impl TokenIssuer for FakeIssuer {
        async fn issue(&self, now: SystemTime) -> Result<IssuedToken, TokenUnavailable> {
            let delay = *self.delay.lock().unwrap();
            tokio::time::sleep(delay).await;
            if self.down.load(Ordering::SeqCst) {
                return Err(TokenUnavailable("auth service down".into()));
            }
            let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(IssuedToken {
                token: AccessToken::new(format!("t{n}")),
                issued_at: now,
                expires_at: now + self.life,
            })
        }
    }

    fn setup(life_secs: u64) -> (Arc<FakeIssuer>, Arc<ManualClock>, ServiceTokens) {
        let issuer = FakeIssuer::new(Duration::from_secs(life_secs));
        let clock = Arc::new(ManualClock::new(
            UNIX_EPOCH + Duration::from_secs(1_000_000),
        ));
        let tokens = ServiceTokens::with_clock(issuer.clone(), clock.clone());
        (issuer, clock, tokens)
    }

    #[tokio::test]
    async fn one_token_serves_many_calls_until_three_quarters_of_its_life() {
        let (issuer, clock, tokens) = setup(600);
        for _ in 0..100 {
            assert_eq!(tokens.token().await.unwrap().as_str(), "t1");
        }
        clock.advance(Duration::from_secs(449));
        assert_eq!(tokens.token().await.unwrap().as_str(), "t1");
        clock.advance(Duration::from_secs(1));
        assert_eq!(tokens.token().await.unwrap().as_str(), "t2");
        assert_eq!(issuer.count(), 2);
    }

    // Paused time: the issuer's delay keeps the renewal in flight while the other callers
    // arrive, and passes at once when they all wait.
    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_renewal() {
        let (issuer, _clock, tokens) = setup(600);
        *issuer.delay.lock().unwrap() = Duration::from_millis(50);
        let tokens = Arc::new(tokens);
        let calls: Vec<_> = (0..20)
            .map(|_| {
                let t = tokens.clone();
                tokio::spawn(async move { t.token().await.unwrap() })
            })
            .collect();
        for call in calls {
            assert_eq!(call.await.unwrap().as_str(), "t1");
        }
        assert_eq!(issuer.count(), 1);
    }

    #[tokio::test]
    async fn an_unreachable_auth_service_leaves_the_valid_token_in_use_then_fails() {
        let (issuer, clock, tokens) = setup(600);
        assert_eq!(tokens.token().await.unwrap().as_str(), "t1");
        issuer.down.store(true, Ordering::SeqCst);
        clock.advance(Duration::from_secs(500));
        assert_eq!(tokens.token().await.unwrap().as_str(), "t1");
        clock.advance(Duration::from_secs(100));
        let error = tokens.token().await.unwrap_err();
        assert!(error.to_string().contains("auth service down"), "{error}");
        issuer.down.store(false, Ordering::SeqCst);
        assert_eq!(tokens.token().await.unwrap().as_str(), "t2");
    }

    #[tokio::test]
    async fn a_refused_token_is_replaced_at_most_once_per_interval() {
        let (issuer, clock, tokens) = setup(600);
        let first = tokens.token().await.unwrap();
        tokens.refused(&first);
        let second = tokens.token().await.unwrap();
        assert_eq!(second.as_str(), "t2");
        // Refused again right away: the callee's trouble is not the token; no new call.
        tokens.refused(&second);
        assert_eq!(tokens.token().await.unwrap().as_str(), "t2");
        assert_eq!(issuer.count(), 2);
        clock.advance(MIN_RENEWAL_INTERVAL);
        assert_eq!(tokens.token().await.unwrap().as_str(), "t3");
        // A refusal of an older token does not discard the current one.
        tokens.refused(&first);
        assert_eq!(tokens.token().await.unwrap().as_str(), "t3");
        assert_eq!(issuer.count(), 3);
    }

    #[tokio::test]
    async fn a_refused_token_is_not_reused_when_renewal_fails() {
        let (issuer, _clock, tokens) = setup(600);
        let first = tokens.token().await.unwrap();
        issuer.down.store(true, Ordering::SeqCst);
        tokens.refused(&first);
        assert!(tokens.token().await.is_err());
    }

    #[tokio::test]
    async fn static_token_is_handed_out_unchanged() {
        let provider = StaticToken::new(AccessToken::new("fixed".into()));
        provider.refused(&AccessToken::new("fixed".into()));
        assert_eq!(provider.token().await.unwrap().as_str(), "fixed");
    }

    #[test]
    fn renewal_time_is_three_quarters_of_the_life() {
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        let t = |issued_at, expires_at| IssuedToken {
            token: AccessToken::new(String::new()),
            issued_at: at(issued_at),
            expires_at: at(expires_at),
        };
        assert_eq!(renew_at(&t(1_000_000, 1_600_000)), at(1_450_000));
        // Short lives keep their precision: 2 s renews at 1.5 s, not at expiry.
        assert_eq!(renew_at(&t(1_000_000, 1_002_000)), at(1_001_500));
        assert_eq!(renew_at(&t(1_000_000, 1_000_000)), at(1_000_000));
        // An expiry in the past (clock skew): due at once.
        assert_eq!(renew_at(&t(1_000_000, 900_000)), at(1_000_000));
    }
}
