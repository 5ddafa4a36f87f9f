//! Verifying tokens with cached public keys, refreshed from the auth service when needed.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use hashlink::LruCache;
use tokio::time::Instant;

use crate::caller::Caller;
use crate::clock::{Clock, SystemClock};
use crate::token::{Claims, KeySet, TokenError};

/// Why the public keys could not be fetched.
#[derive(Debug, thiserror::Error)]
#[error("could not fetch the auth service's public keys: {0}")]
pub struct KeySourceError(pub String);

/// Where the trusted public keys come from: in production the auth service's `GetPublicKeys`
/// (a gRPC client implements this), in tests and in the embedded default a fixed set or the
/// auth service's own key ring.
#[async_trait]
pub trait KeySource: Send + Sync + fmt::Debug {
    /// The complete current set of keys; it replaces the cached one, so keys the auth service
    /// withdrew stop being trusted.
    async fn fetch(&self) -> Result<KeySet, KeySourceError>;
}

/// A fixed key set that can be replaced (tests, and in-process use).
#[derive(Debug, Default)]
pub struct StaticKeySource {
    /// The set `fetch` returns.
    keys: RwLock<KeySet>,
}

impl StaticKeySource {
    /// A source returning `keys`.
    pub fn new(keys: KeySet) -> Self {
        Self {
            keys: RwLock::new(keys),
        }
    }

    /// Replaces the keys returned from now on.
    pub fn set(&self, keys: KeySet) {
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys;
    }
}

#[async_trait]
impl KeySource for StaticKeySource {
    async fn fetch(&self) -> Result<KeySet, KeySourceError> {
        Ok(self
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }
}

/// Tokens whose signature verification is remembered (see [`Authenticator`]).
const VERIFIED_CAPACITY: usize = 10_000;

/// Tuning of an [`Authenticator`].
#[derive(Debug, Clone)]
pub struct AuthenticatorOptions {
    /// Clock skew tolerated on `exp`/`iat` between the auth service and this one.
    pub leeway: Duration,
    /// At most one key refresh per this interval, so a flood of tokens naming unknown keys
    /// cannot turn into a flood of calls to the auth service.
    pub min_refresh_interval: Duration,
    /// The clock expiry is checked against.
    pub clock: Arc<dyn Clock>,
}

impl Default for AuthenticatorOptions {
    fn default() -> Self {
        Self {
            leeway: Duration::from_secs(30),
            min_refresh_interval: Duration::from_secs(10),
            clock: Arc::new(SystemClock),
        }
    }
}

/// Verifies access tokens locally. Cheap to clone (shared state); one per process is enough.
///
/// A token's signature is verified once per key set: the last [`VERIFIED_CAPACITY`] tokens
/// verified are remembered with their claims and the key set that verified them, so a
/// client presenting the same token on every call of a session costs a lookup, not an
/// Ed25519 verification (about 50 µs). A remembered token is still refused once expired,
/// and forgotten when the keys are refreshed (a withdrawn key's tokens stop working as
/// before). The cache holds nothing a caller did not present; it is never logged.
#[derive(Clone, Debug)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The trusted keys; readers take a snapshot (an `Arc`) and never wait on a refresh.
    keys: RwLock<Arc<KeySet>>,
    /// Where fresh keys come from.
    source: Arc<dyn KeySource>,
    /// Tuning.
    options: AuthenticatorOptions,
    /// When the last fetch started; the async mutex also makes concurrent refreshes coalesce.
    last_refresh: tokio::sync::Mutex<Option<Instant>>,
    /// Tokens verified lately: token -> (the key set that verified it, its claims).
    verified: Mutex<Verified>,
}

/// The verified-token cache.
struct Verified(LruCache<String, (Arc<KeySet>, Claims)>);

impl fmt::Debug for Verified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the tokens themselves.
        f.debug_struct("Verified")
            .field("tokens", &self.0.len())
            .finish()
    }
}

impl Authenticator {
    /// An authenticator with an empty cache; the first token triggers a fetch (or call
    /// [`Authenticator::refresh`] at start to fail fast when the auth service is unreachable).
    pub fn new(source: Arc<dyn KeySource>, options: AuthenticatorOptions) -> Self {
        Self {
            inner: Arc::new(Inner {
                keys: RwLock::new(Arc::new(KeySet::default())),
                source,
                options,
                last_refresh: tokio::sync::Mutex::new(None),
                verified: Mutex::new(Verified(LruCache::new(VERIFIED_CAPACITY))),
            }),
        }
    }

    /// The currently cached keys.
    pub fn keys(&self) -> Arc<KeySet> {
        self.inner
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Fetches the keys now, regardless of the rate limit.
    pub async fn refresh(&self) -> Result<(), KeySourceError> {
        let mut last = self.inner.last_refresh.lock().await;
        self.fetch_locked(&mut last).await
    }

    async fn fetch_locked(&self, last: &mut Option<Instant>) -> Result<(), KeySourceError> {
        *last = Some(Instant::now());
        let fresh = self.inner.source.fetch().await?;
        tracing::debug!(keys = fresh.len(), "public keys refreshed");
        *self
            .inner
            .keys
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
        Ok(())
    }

    /// Refetches the keys every `period`, forever (spawn it beside the server and stop it with
    /// the service): a key the auth service withdraws stops being trusted within a period,
    /// even if no token names an unknown key in between. Failures are logged and the cached
    /// keys stay in use.
    pub async fn refresh_every(self, period: Duration) {
        let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(e) = self.refresh().await {
                tracing::warn!(error = %e, "periodic public key refresh failed");
            }
        }
    }

    /// Refreshes unless a refresh happened within `min_refresh_interval`. A caller that waited
    /// behind a concurrent refresh finds it done and does not fetch again.
    async fn refresh_rate_limited(&self) -> Result<(), KeySourceError> {
        let mut last = self.inner.last_refresh.lock().await;
        if let Some(at) = *last
            && at.elapsed() < self.inner.options.min_refresh_interval
        {
            return Ok(());
        }
        self.fetch_locked(&mut last).await
    }

    fn verify_with(&self, keys: &Arc<KeySet>, token: &str) -> Result<Claims, TokenError> {
        let now = self.inner.options.clock.unix_seconds();
        let leeway = i64::try_from(self.inner.options.leeway.as_secs()).unwrap_or(i64::MAX);
        let remembered = self
            .verified()
            .0
            .get(token)
            .filter(|(verified_by, _)| Arc::ptr_eq(verified_by, keys))
            .map(|(_, claims)| claims.clone());
        if let Some(claims) = remembered {
            claims.check_time(now, leeway)?;
            return Ok(claims);
        }
        let claims = keys.verify(token, now, leeway)?;
        self.verified()
            .0
            .insert(token.to_owned(), (Arc::clone(keys), claims.clone()));
        Ok(claims)
    }

    fn verified(&self) -> std::sync::MutexGuard<'_, Verified> {
        // Entries stay valid whatever panicked while holding the lock.
        self.inner
            .verified
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Verifies `token`; when it names a key not in the cache, refreshes the keys (rate
    /// limited) and tries once more. A failed fetch is [`VerifyError::KeysUnavailable`].
    pub async fn verify(&self, token: &str) -> Result<Caller, VerifyError> {
        self.verify_claims(token)
            .await?
            .caller()
            .map_err(VerifyError::Token)
    }

    /// [`Authenticator::verify`], answering the token's claims (its role among them).
    pub async fn verify_claims(&self, token: &str) -> Result<Claims, VerifyError> {
        match self.verify_with(&self.keys(), token) {
            Err(TokenError::UnknownKey(kid)) => {
                self.refresh_rate_limited()
                    .await
                    .map_err(VerifyError::KeysUnavailable)?;
                let keys = self.keys();
                if !keys.contains(&kid) {
                    return Err(VerifyError::Token(TokenError::UnknownKey(kid)));
                }
                self.verify_with(&keys, token).map_err(VerifyError::Token)
            }
            other => other.map_err(VerifyError::Token),
        }
    }

    /// Verifies `token` against the cached keys only, without waiting (for synchronous
    /// interceptors). An unknown key id starts a background refresh (rate limited) when a
    /// tokio runtime is running, so the next request with that key succeeds.
    pub fn verify_cached(&self, token: &str) -> Result<Caller, TokenError> {
        self.verify_cached_claims(token)?.caller()
    }

    /// [`Authenticator::verify_cached`], answering the token's claims.
    pub fn verify_cached_claims(&self, token: &str) -> Result<Claims, TokenError> {
        let result = self.verify_with(&self.keys(), token);
        if let Err(TokenError::UnknownKey(_)) = &result
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let me = self.clone();
            runtime.spawn(async move {
                if let Err(e) = me.refresh_rate_limited().await {
                    tracing::warn!(error = %e, "public key refresh failed");
                }
            });
        }
        result
    }
}

/// Why [`Authenticator::verify`] refused a token.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The token itself is missing, malformed, expired, tampered or from an unknown key.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The token names a key we do not have and the key source could not be reached: the
    /// caller may retry (`Unavailable`), the token may be fine.
    #[error(transparent)]
    KeysUnavailable(KeySourceError),
}

impl From<VerifyError> for tonic::Status {
    fn from(e: VerifyError) -> Self {
        match e {
            VerifyError::Token(e) => e.into(),
            VerifyError::KeysUnavailable(_) => {
                tonic::Status::unavailable("cannot verify access token now")
            }
        }
    }
}

impl From<TokenError> for tonic::Status {
    /// Every token problem is the same `Unauthenticated` to the caller; the detail is only
    /// useful to an attacker probing the verifier.
    fn from(e: TokenError) -> Self {
        match e {
            TokenError::Missing => tonic::Status::unauthenticated("access token required"),
            _ => tonic::Status::unauthenticated("invalid access token"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::token::{Claims, KeyId, SigningKey};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::SystemTime;
    use uuid::Uuid;

    #[derive(Debug)]
    struct Counting {
        inner: StaticKeySource,
        calls: AtomicUsize,
    }

    #[async_trait]
    impl KeySource for Counting {
        async fn fetch(&self) -> Result<KeySet, KeySourceError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.fetch().await
        }
    }

    fn setup() -> (SigningKey, Arc<Counting>, Arc<ManualClock>, Authenticator) {
        let key = SigningKey::from_secret(KeyId::parse("a").unwrap(), &[1u8; 32]);
        let source = Arc::new(Counting {
            inner: StaticKeySource::new(KeySet::new([key.public_key()])),
            calls: AtomicUsize::new(0),
        });
        let clock = Arc::new(ManualClock::new(
            SystemTime::UNIX_EPOCH + Duration::from_secs(10_000),
        ));
        let authn = Authenticator::new(
            source.clone(),
            AuthenticatorOptions {
                leeway: Duration::ZERO,
                min_refresh_interval: Duration::from_secs(10),
                clock: clock.clone(),
            },
        );
        (key, source, clock, authn)
    }

    #[tokio::test(start_paused = true)]
    async fn periodic_refresh_drops_a_withdrawn_key() {
        let (key, source, clock, authn) = setup();
        let token = key
            .sign(&Claims::service("dealing", clock.unix_seconds(), 3600))
            .unwrap();
        authn.verify(token.as_str()).await.unwrap();
        source.inner.set(KeySet::default());
        let refresher = tokio::spawn(authn.clone().refresh_every(Duration::from_secs(300)));
        tokio::time::sleep(Duration::from_secs(299)).await;
        assert!(authn.verify_cached(token.as_str()).is_ok());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(matches!(
            authn.verify_cached(token.as_str()),
            Err(TokenError::UnknownKey(_))
        ));
        assert_eq!(source.calls.load(Ordering::SeqCst), 2);
        refresher.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_remembered_token_still_expires_and_a_tampered_one_is_still_refused() {
        let (key, _source, clock, authn) = setup();
        let token = key
            .sign(&Claims::service("dealing", clock.unix_seconds(), 60))
            .unwrap();
        let first = authn.verify_claims(token.as_str()).await.unwrap();
        // Remembered: the same claims again.
        assert_eq!(authn.verify_claims(token.as_str()).await.unwrap(), first);
        assert_eq!(authn.verified().0.len(), 1);
        // The same header and claims under another signature: not the remembered token.
        let (signed, signature) = token.as_str().rsplit_once('.').unwrap();
        let flipped = if signature.starts_with('A') { 'B' } else { 'A' };
        let tampered = format!("{signed}.{flipped}{}", &signature[1..]);
        assert!(matches!(
            authn.verify_claims(&tampered).await,
            Err(VerifyError::Token(
                TokenError::BadSignature | TokenError::Malformed(_)
            ))
        ));
        // Past its expiry, the remembered token is refused like any other.
        clock.advance(Duration::from_secs(61));
        assert!(matches!(
            authn.verify_claims(token.as_str()).await,
            Err(VerifyError::Token(TokenError::Expired))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn fetches_on_first_use_then_uses_cache() {
        let (key, source, clock, authn) = setup();
        let me = Uuid::now_v7();
        let token = key
            .sign(&Claims::player(me, clock.unix_seconds(), 60))
            .unwrap();
        assert_eq!(
            authn.verify(token.as_str()).await.unwrap(),
            Caller::Player(me)
        );
        assert_eq!(
            authn.verify(token.as_str()).await.unwrap(),
            Caller::Player(me)
        );
        assert_eq!(source.calls.load(Ordering::SeqCst), 1);
        clock.advance(Duration::from_secs(60));
        assert!(matches!(
            authn.verify(token.as_str()).await,
            Err(VerifyError::Token(TokenError::Expired))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn unknown_keys_refresh_at_most_once_per_interval() {
        let (_key, source, clock, authn) = setup();
        let stranger = SigningKey::from_secret(KeyId::parse("zz").unwrap(), &[2u8; 32]);
        let token = stranger
            .sign(&Claims::player(Uuid::now_v7(), clock.unix_seconds(), 60))
            .unwrap();
        for _ in 0..5 {
            assert!(matches!(
                authn.verify(token.as_str()).await,
                Err(VerifyError::Token(TokenError::UnknownKey(_)))
            ));
        }
        assert_eq!(source.calls.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert!(authn.verify(token.as_str()).await.is_err());
        assert_eq!(source.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn rotated_key_is_picked_up() {
        let (key, source, clock, authn) = setup();
        let now = clock.unix_seconds();
        authn
            .verify(
                key.sign(&Claims::player(Uuid::now_v7(), now, 60))
                    .unwrap()
                    .as_str(),
            )
            .await
            .unwrap();
        let next = SigningKey::from_secret(KeyId::parse("b").unwrap(), &[3u8; 32]);
        source
            .inner
            .set(KeySet::new([key.public_key(), next.public_key()]));
        tokio::time::advance(Duration::from_secs(11)).await;
        let me = Uuid::now_v7();
        assert_eq!(
            authn
                .verify(next.sign(&Claims::player(me, now, 60)).unwrap().as_str())
                .await
                .unwrap(),
            Caller::Player(me)
        );
    }
}
