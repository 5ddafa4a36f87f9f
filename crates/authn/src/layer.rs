//! Guarding tonic services: the [`AuthLayer`] tower layer, the synchronous interceptor, and the
//! `authorization: Bearer` helpers.

use std::collections::HashSet;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use tonic::metadata::MetadataMap;
use tonic::server::NamedService;
use tonic::{Request, Status};
use tower::{Layer, Service};

use crate::authenticator::{Authenticator, VerifyError};
use crate::caller::{Caller, Moderator};
use crate::token::{AccessToken, Claims, TokenError};

/// The bearer token in `authorization` metadata (scheme matched case-insensitively).
pub fn bearer_token(metadata: &MetadataMap) -> Result<&str, TokenError> {
    let value = metadata.get("authorization").ok_or(TokenError::Missing)?;
    bearer_from_header(
        value
            .to_str()
            .map_err(|_| TokenError::Malformed("authorization header"))?,
    )
}

fn bearer_from_header(value: &str) -> Result<&str, TokenError> {
    let (scheme, token) = value
        .split_once(' ')
        .ok_or(TokenError::Malformed("authorization scheme"))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(TokenError::Malformed("authorization scheme"));
    }
    let token = token.trim();
    if token.is_empty() {
        Err(TokenError::Missing)
    } else {
        Ok(token)
    }
}

/// Puts the [`Caller`] of verified `claims` in `extensions`, with a [`Moderator`] mark when
/// the token carries that role (a caller's own extensions are replaced, never trusted).
fn identify(extensions: &mut http::Extensions, claims: &Claims) -> Result<(), TokenError> {
    let caller = claims.caller()?;
    extensions.remove::<Moderator>();
    if let (true, Caller::Player(id)) = (claims.is_moderator(), &caller) {
        extensions.insert(Moderator(*id));
    }
    extensions.insert(caller);
    Ok(())
}

/// Adds `authorization: Bearer <token>` to an outgoing request.
pub fn attach_bearer<T>(request: &mut Request<T>, token: &AccessToken) -> Result<(), TokenError> {
    let value = format!("Bearer {}", token.as_str())
        .parse()
        .map_err(|_| TokenError::Malformed("token is not valid header text"))?;
    request.metadata_mut().insert("authorization", value);
    Ok(())
}

impl Authenticator {
    /// A tonic interceptor (`InterceptedService::new(svc, authn.interceptor())`) verifying against
    /// the cached keys only. Prefer [`AuthLayer`], which also waits for a key refresh; this one
    /// suits clients' `with_interceptor` style and code that cannot use a tower layer.
    pub fn interceptor(
        &self,
    ) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone + Send + Sync + 'static
    {
        let authn = self.clone();
        move |mut request: Request<()>| {
            let claims = bearer_token(request.metadata())
                .and_then(|token| authn.verify_cached_claims(token))
                .map_err(|e| {
                    tracing::debug!(error = %e, "request refused");
                    Status::from(e)
                })?;
            identify(request.extensions_mut(), &claims).map_err(Status::from)?;
            Ok(request)
        }
    }
}

/// A tower layer that authenticates every request to the service it wraps and puts the
/// [`Caller`] in the request extensions; requests without a valid token get `Unauthenticated`
/// and never reach the service. Wrap each guarded service on its own (health and reflection
/// stay open): `Server::builder().add_service(layer.wrap(FooServer::new(handler)))`.
#[derive(Clone, Debug)]
pub struct AuthLayer {
    /// Verifies tokens.
    authn: Authenticator,
    /// Full method paths (`/pkg.Service/Method`) callable without a token.
    anonymous: Arc<HashSet<String>>,
}

impl AuthLayer {
    /// A layer verifying with `authn`; every method requires a token.
    pub fn new(authn: Authenticator) -> Self {
        Self {
            authn,
            anonymous: Arc::new(HashSet::new()),
        }
    }

    /// Lets `path` (`/pkg.Service/Method`) through without a token. Such requests carry no
    /// [`Caller`] even when they present a token.
    pub fn allow_anonymous(mut self, path: &str) -> Self {
        Arc::make_mut(&mut self.anonymous).insert(path.to_owned());
        self
    }

    /// Wraps `service` (keeps its gRPC name, so it can go straight to `add_service`).
    pub fn wrap<S>(&self, service: S) -> Authenticated<S> {
        self.layer(service)
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Authenticated<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authenticated {
            inner,
            layer: self.clone(),
        }
    }
}

/// A service guarded by an [`AuthLayer`].
#[derive(Clone, Debug)]
pub struct Authenticated<S> {
    /// The guarded service.
    inner: S,
    /// The layer's verifier and anonymous paths.
    layer: AuthLayer,
}

impl<S: NamedService> NamedService for Authenticated<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B, RB> Service<http::Request<B>> for Authenticated<S>
where
    S: Service<http::Request<B>, Response = http::Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
    RB: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        // The clone that was polled ready is the one that must serve the call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let layer = self.layer.clone();
        Box::pin(async move {
            if layer.anonymous.contains(request.uri().path()) {
                request.extensions_mut().remove::<Caller>();
                request.extensions_mut().remove::<Moderator>();
                return inner.call(request).await;
            }
            let token = match request.headers().get(http::header::AUTHORIZATION) {
                None => Err(TokenError::Missing),
                Some(v) => v
                    .to_str()
                    .map_err(|_| TokenError::Malformed("authorization header"))
                    .and_then(bearer_from_header),
            };
            let verified = match token {
                Ok(token) => layer.authn.verify_claims(token).await,
                Err(e) => Err(e.into()),
            };
            let identified = verified.and_then(|claims| {
                identify(request.extensions_mut(), &claims).map_err(VerifyError::Token)
            });
            match identified {
                Ok(()) => inner.call(request).await,
                Err(e) => {
                    tracing::debug!(error = %e, path = request.uri().path(), "request refused");
                    Ok(Status::from(e).into_http())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer_from_header("Bearer abc"), Ok("abc"));
        assert_eq!(bearer_from_header("bearer  abc "), Ok("abc"));
        assert_eq!(
            bearer_from_header("Basic abc"),
            Err(TokenError::Malformed("authorization scheme"))
        );
        assert_eq!(bearer_from_header("Bearer "), Err(TokenError::Missing));
        assert_eq!(
            bearer_from_header("Bearer"),
            Err(TokenError::Malformed("authorization scheme"))
        );
    }

    #[test]
    fn attach_then_read_back() {
        let mut req = Request::new(());
        attach_bearer(&mut req, &AccessToken::new("a.b.c".into())).unwrap();
        assert_eq!(bearer_token(req.metadata()), Ok("a.b.c"));
        assert_eq!(
            bearer_token(Request::new(()).metadata()),
            Err(TokenError::Missing)
        );
    }
}
