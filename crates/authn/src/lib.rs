//! Access tokens of fairdeal and how services authenticate their callers.
//!
//! The auth service issues short-lived access tokens: compact JWS (JWT) signed with Ed25519
//! (`alg` = `EdDSA`), naming the signing key in the header (`kid`) and carrying the subject, its
//! role (a player, or an internal service), issue and expiry times. Every other service verifies
//! them locally with the auth service's public keys, so no call to the auth service sits on the
//! path of an ordinary request.
//!
//! Layout, one concept per module:
//! - [`clock`]: the [`Clock`] trait, so expiry can be tested without sleeping.
//! - [`token`]: the token format itself: [`Claims`], [`SigningKey`] (issuing, used by the auth
//!   service), [`PublicKey`] and [`KeySet`], and the pure parse-then-verify function.
//! - [`caller`]: [`Caller`], the authenticated identity a handler finds in its request.
//! - [`authenticator`]: [`Authenticator`], which keeps the public keys cached, refreshes them from
//!   a [`KeySource`] when a token names an unknown key (rate limited), and verifies tokens.
//! - [`grpc`]: [`GrpcKeySource`], the production [`KeySource`] (the auth service's
//!   `GetPublicKeys`).
//! - [`layer`]: [`AuthLayer`], the tower layer that guards a tonic service, plus the synchronous
//!   [`Authenticator::interceptor`] and the bearer-token helpers for clients.
//! - [`service_token`]: the token a service sends to another: [`ServiceTokens`] obtains it
//!   from the auth service (`IssueServiceToken`) and renews it before it expires.
//! - [`settings`]: the settings sections a service flattens into its own to verify callers
//!   ([`CallerAuthSettings`]) and to identify itself to other services
//!   ([`ServiceIdentitySettings`]).
//!
//! A service typically does:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use fairdeal_authn::{Authenticator, AuthenticatorOptions, AuthLayer, KeySet, StaticKeySource};
//! # async fn example() {
//! let source = Arc::new(StaticKeySource::new(KeySet::default()));
//! let authn = Authenticator::new(source, AuthenticatorOptions::default());
//! let layer = AuthLayer::new(authn);
//! // Server::builder().add_service(layer.wrap(MyServiceServer::new(handler)))
//! # let _ = layer;
//! # }
//! ```
//!
//! and in a handler `let me = Caller::from_request(&request)?.player_id()?;`.
//!
//! Why hand-written JWS rather than the `jsonwebtoken` crate: its RustCrypto backend pulls in
//! the `rsa` crate (RUSTSEC-2023-0071) for algorithms fairdeal never accepts, and it rebuilds the
//! verifying key from bytes on every call. Here only `EdDSA` exists, the decompressed keys are
//! cached, and the whole format is a few dozen lines over `ed25519-dalek`'s `verify_strict`.
#![forbid(unsafe_code)]

pub mod authenticator;
pub mod caller;
pub mod clock;
#[cfg(feature = "service")]
pub mod grpc;
pub mod layer;
pub mod service_token;
#[cfg(feature = "service")]
pub mod settings;
pub mod token;

pub use authenticator::{
    Authenticator, AuthenticatorOptions, KeySource, KeySourceError, StaticKeySource, VerifyError,
};
pub use caller::{Caller, Moderator};
pub use clock::{Clock, ManualClock, SystemClock};
#[cfg(feature = "service")]
pub use grpc::{GrpcKeySource, KeysConfigError, KeysFrom};
pub use layer::{AuthLayer, Authenticated, attach_bearer, bearer_token};
pub use service_token::{
    GrpcTokenIssuer, IssuedToken, ServiceTokens, StaticToken, TokenIssuer, TokenProvider,
    TokenUnavailable,
};
#[cfg(feature = "service")]
pub use settings::{
    CallerAuthSettings, KEY_REFRESH_PERIOD, ServiceIdentitySettings, spawn_key_refresh,
};
pub use token::{
    AccessToken, Claims, KeyId, KeySet, PublicKey, Role, SigningKey, TokenError, UnverifiedToken,
};

/// The `iss` claim of every token the auth service issues.
pub const ISSUER: &str = "fairdeal-auth";
