//! The settings every service uses to deal with the auth service, as clap sections a service
//! flattens into its own settings (`#[command(flatten)]` and `#[serde(flatten)]`):
//!
//! - [`CallerAuthSettings`] (`--auth-url` or `--auth-public-keys`): where callers' tokens are
//!   verified from, and the [`Authenticator`] built from it, its keys kept fresh by
//!   [`spawn_key_refresh`];
//! - [`ServiceIdentitySettings`] (`--service-secret` or `--service-token`): this service's
//!   own token when it calls another service, as a [`TokenProvider`].
//!
//! Each setting is read here and nowhere else, both when a configuration is validated and
//! when the service starts.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_kit::config::{ConfigError, Secret};
use fairdeal_kit::{Shutdown, client};
use serde::Serialize;
use tonic::transport::Channel;

use crate::authenticator::{Authenticator, AuthenticatorOptions};
use crate::grpc::KeysFrom;
use crate::service_token::{GrpcTokenIssuer, ServiceTokens, StaticToken, TokenProvider};
use crate::token::AccessToken;

/// How often a service refetches the auth service's public keys even when no token names an
/// unknown key, so a withdrawn key stops being trusted.
pub const KEY_REFRESH_PERIOD: Duration = Duration::from_secs(300);

/// Longest accepted service secret, in bytes.
pub const MAX_SERVICE_SECRET: usize = 1024;

/// Where callers' access tokens are verified from.
#[derive(Debug, Clone, Default, clap::Args, Serialize)]
pub struct CallerAuthSettings {
    /// The auth service's gRPC address (`http://host:port`, or `dns:///host:port` to balance
    /// over every address of the name): its published public keys are fetched and kept
    /// fresh, and a service that calls others gets its own token there.
    #[arg(long, value_name = "URL")]
    pub auth_url: Option<String>,
    /// Fixed public keys of the auth service that sign access tokens: `kid:64hex[,...]`
    /// (instead of `auth_url`; they are never refreshed).
    #[arg(long, value_name = "KEYS", default_value = "")]
    pub auth_public_keys: String,
}

fn invalid(e: crate::grpc::KeysConfigError) -> ConfigError {
    ConfigError::invalid(e.field, e.reason)
}

impl CallerAuthSettings {
    /// Fixed keys or the auth service's address, not both, each well formed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        KeysFrom::parse(&self.auth_public_keys, self.auth_url.as_deref())
            .map(drop)
            .map_err(invalid)
    }

    /// One lazy channel to `auth_url` (none without it), for the keys and this service's
    /// token alike.
    pub fn auth_channel(&self) -> Result<Option<Channel>, ConfigError> {
        self.auth_url
            .as_deref()
            .map(|url| client::channel("auth_url", url))
            .transpose()
            .map_err(|e| ConfigError::invalid(e.field, e.reason))
    }

    /// The authenticator these settings name: fixed keys, or the keys the auth service
    /// publishes (fetched on first use, when a token names an unknown key, and every
    /// [`KEY_REFRESH_PERIOD`] once [`spawn_key_refresh`] runs). `shared` is a channel to
    /// `auth_url` the service already holds ([`CallerAuthSettings::auth_channel`]).
    pub fn authenticator(&self, shared: Option<Channel>) -> Result<Authenticator, ConfigError> {
        let source = KeysFrom::parse(&self.auth_public_keys, self.auth_url.as_deref())
            .and_then(|keys| keys.into_source(shared))
            .map_err(invalid)?;
        Ok(Authenticator::new(source, AuthenticatorOptions::default()))
    }
}

/// Keeps `authn`'s keys fresh until `shutdown` stops the background tasks.
pub fn spawn_key_refresh(authn: &Authenticator, shutdown: &Shutdown) {
    let stop = shutdown.token();
    let refresh = authn.clone().refresh_every(KEY_REFRESH_PERIOD);
    shutdown.spawn("public-key-refresh", async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = refresh => {}
        }
    });
}

/// This service's own access token, for its calls to other services.
#[derive(Debug, Clone, Default, clap::Args, Serialize)]
pub struct ServiceIdentitySettings {
    /// This service's secret at the auth service (whose `service_credentials` hold its
    /// SHA-256); the token is obtained at `auth_url` and renewed before it expires.
    #[arg(long, value_name = "SECRET")]
    pub service_secret: Option<Secret>,
    /// A fixed access token instead of `service_secret` (never renewed: calls fail once it
    /// expires; for tests and short manual runs).
    #[arg(long, value_name = "TOKEN")]
    pub service_token: Option<Secret>,
}

impl ServiceIdentitySettings {
    /// One of the two, and a secret only with `auth_url`.
    pub fn validate(&self, auth_url: Option<&str>) -> Result<(), ConfigError> {
        match (&self.service_secret, &self.service_token) {
            (Some(_), Some(_)) => Err(ConfigError::invalid(
                "service_secret",
                "set either service_secret or service_token, not both",
            )),
            (None, None) => Err(ConfigError::invalid(
                "service_secret",
                "is required (or a fixed service_token)",
            )),
            (Some(secret), None) => {
                if auth_url.is_none() {
                    return Err(ConfigError::invalid(
                        "auth_url",
                        "is required with service_secret",
                    ));
                }
                let len = secret.expose_secret().len();
                if len == 0 || len > MAX_SERVICE_SECRET {
                    return Err(ConfigError::invalid(
                        "service_secret",
                        format!("must be 1 to {MAX_SERVICE_SECRET} bytes"),
                    ));
                }
                Ok(())
            }
            (None, Some(_)) => Ok(()),
        }
    }

    /// Where this service's token comes from; `service_name` (the kit's setting) is its
    /// subject. `auth` is the channel to `auth_url` ([`CallerAuthSettings::auth_channel`]).
    pub fn token_provider(
        &self,
        service_name: &str,
        auth: Option<&Channel>,
    ) -> Result<Arc<dyn TokenProvider>, ConfigError> {
        match (&self.service_secret, &self.service_token, auth) {
            (Some(secret), None, Some(channel)) => {
                let issuer = GrpcTokenIssuer::new(
                    channel.clone(),
                    service_name,
                    secret.expose_secret().as_bytes(),
                );
                Ok(Arc::new(ServiceTokens::new(Arc::new(issuer))))
            }
            (None, Some(token), _) => Ok(Arc::new(StaticToken::new(AccessToken::new(
                token.expose_secret().to_owned(),
            )))),
            _ => Err(ConfigError::invalid(
                "service_secret",
                "service_secret with auth_url, or service_token, is required",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn fixed_keys_and_an_auth_url_together_are_refused() {
        let both = CallerAuthSettings {
            auth_url: Some("http://127.0.0.1:1".into()),
            auth_public_keys: "k1:3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
                .into(),
        };
        let error = both.validate().unwrap_err();
        assert!(error.to_string().contains("auth_url"), "{error}");
        assert!(CallerAuthSettings::default().validate().is_ok());
    }

    #[test]
    fn a_service_identity_is_one_of_secret_or_token() {
        let none = ServiceIdentitySettings::default();
        assert!(none.validate(None).is_err());
        let secret = ServiceIdentitySettings {
            service_secret: Some(Secret::new("s3cret")),
            service_token: None,
        };
        assert!(secret.validate(None).is_err(), "a secret needs auth_url");
        assert!(secret.validate(Some("http://auth:50051")).is_ok());
        let long = ServiceIdentitySettings {
            service_secret: Some(Secret::new("x".repeat(MAX_SERVICE_SECRET + 1))),
            service_token: None,
        };
        assert!(long.validate(Some("http://auth:50051")).is_err());
        let error = long.validate(Some("http://auth:50051")).unwrap_err();
        assert!(!error.to_string().contains("xxxx"), "{error}");
    }
}
