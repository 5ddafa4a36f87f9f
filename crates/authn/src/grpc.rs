//! Fetching the auth service's public keys over gRPC (`GetPublicKeys`).

use std::sync::Arc;

use async_trait::async_trait;
use fairdeal_kit::client::Target;
use fairdeal_proto::fairdeal::auth::v1::GetPublicKeysRequest;
use fairdeal_proto::fairdeal::auth::v1::auth_service_client::AuthServiceClient;
use tonic::transport::Channel;

use crate::authenticator::{KeySource, KeySourceError, StaticKeySource};
use crate::token::{KeyId, KeySet, PublicKey};

/// A [`KeySource`] asking the auth service. Keys with another algorithm than `EdDSA` or a
/// malformed key are skipped (and logged), never trusted.
#[derive(Debug, Clone)]
pub struct GrpcKeySource {
    /// Client of the auth service (its channel reconnects by itself).
    client: AuthServiceClient<Channel>,
}

impl GrpcKeySource {
    /// A source over an existing channel.
    pub fn new(channel: Channel) -> Self {
        Self {
            client: AuthServiceClient::new(channel),
        }
    }

    /// A source for the auth service at `url` (`http://auth:50051`, or `dns:///auth:50051`
    /// balanced over every address; see [`fairdeal_kit::client`]) that connects on first
    /// use, so a service can start before the auth service is up.
    pub fn lazy(url: &str) -> Result<Self, KeySourceError> {
        let channel = fairdeal_kit::client::channel("auth_url", url)
            .map_err(|e| KeySourceError(e.to_string()))?;
        Ok(Self::new(channel))
    }
}

#[async_trait]
impl KeySource for GrpcKeySource {
    async fn fetch(&self) -> Result<KeySet, KeySourceError> {
        let mut client = self.client.clone();
        let response = client
            .get_public_keys(GetPublicKeysRequest {})
            .await
            .map_err(|status| KeySourceError(format!("GetPublicKeys: {}", status.message())))?
            .into_inner();
        let mut keys = Vec::new();
        for key in response.keys {
            let parsed = (key.algorithm == "EdDSA")
                .then_some(())
                .ok_or(crate::token::TokenError::Malformed("algorithm"))
                .and_then(|()| KeyId::parse(&key.key_id))
                .and_then(|kid| PublicKey::from_bytes(kid, &key.public_key));
            match parsed {
                Ok(k) => keys.push(k),
                Err(e) => tracing::warn!(key_id = %key.key_id, error = %e, "public key skipped"),
            }
        }
        Ok(KeySet::new(keys))
    }
}

/// Where a service takes the auth service's public keys from, as its settings say: fixed
/// keys (`kid:64hex,...`), or the auth service's address. The one place that reads these two
/// settings, both when a configuration is validated and when the service starts.
#[derive(Debug)]
pub enum KeysFrom {
    /// A fixed set (empty: only anonymous methods can be called).
    Fixed(KeySet),
    /// The keys the auth service at this address publishes.
    AuthService(Target),
}

/// A setting naming the keys is invalid; `field` is the setting's name.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct KeysConfigError {
    /// `auth_public_keys` or `auth_url`.
    pub field: &'static str,
    /// What is wrong (never the key bytes).
    pub reason: String,
}

impl KeysFrom {
    /// Reads the settings `auth_public_keys` (`fixed`) and `auth_url`; both at once is
    /// refused as ambiguous. Needs no runtime and connects to nothing.
    pub fn parse(fixed: &str, auth_url: Option<&str>) -> Result<Self, KeysConfigError> {
        let invalid = |field, reason: String| KeysConfigError { field, reason };
        let keys = KeySet::parse_list(fixed).map_err(|r| invalid("auth_public_keys", r))?;
        let Some(url) = auth_url else {
            return Ok(Self::Fixed(keys));
        };
        let target = Target::parse("auth_url", url).map_err(|e| invalid(e.field, e.reason))?;
        if !keys.is_empty() {
            return Err(invalid(
                "auth_url",
                "set either auth_url or auth_public_keys, not both".into(),
            ));
        }
        Ok(Self::AuthService(target))
    }

    /// The key source. For the auth service it asks over `shared`, a channel to that same
    /// `auth_url` the caller already holds for its other calls to auth, or else over a channel
    /// of its own; either connects on first use, so a service can start before the auth
    /// service is up (a Tokio runtime is needed).
    pub fn into_source(
        self,
        shared: Option<Channel>,
    ) -> Result<Arc<dyn KeySource>, KeysConfigError> {
        Ok(match (self, shared) {
            (Self::Fixed(keys), _) => Arc::new(StaticKeySource::new(keys)),
            (Self::AuthService(_), Some(channel)) => Arc::new(GrpcKeySource::new(channel)),
            (Self::AuthService(target), None) => {
                let channel = target.channel("auth_url").map_err(|e| KeysConfigError {
                    field: e.field,
                    reason: e.reason,
                })?;
                Arc::new(GrpcKeySource::new(channel))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "k1:3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";

    #[tokio::test]
    async fn fixed_keys_are_parsed_and_served() {
        let source = KeysFrom::parse(KEY, None)
            .unwrap()
            .into_source(None)
            .unwrap();
        let keys = source.fetch().await.unwrap();
        assert!(keys.contains("k1"));
        assert_eq!(keys.len(), 1);
    }

    #[tokio::test]
    async fn an_auth_address_gives_a_grpc_source_and_both_are_refused() {
        let from = KeysFrom::parse("", Some("http://127.0.0.1:1")).unwrap();
        assert!(matches!(from, KeysFrom::AuthService(_)));
        let _source = from.into_source(None).unwrap();
        let balanced = KeysFrom::parse("", Some("dns:///auth:50051")).unwrap();
        assert!(balanced.into_source(None).is_ok());
        let both = KeysFrom::parse(KEY, Some("http://127.0.0.1:1")).unwrap_err();
        assert_eq!(both.field, "auth_url");
        assert!(both.to_string().contains("not both"), "{both}");
        let bad = KeysFrom::parse("", Some("not a url at all")).unwrap_err();
        assert_eq!(bad.field, "auth_url");
        assert!(!bad.reason.is_empty());
    }

    #[test]
    fn malformed_fixed_keys_are_refused_without_echoing_them() {
        let e = KeysFrom::parse("k1:zz", None).unwrap_err();
        assert_eq!(e.field, "auth_public_keys");
        let e = e.to_string();
        assert!(e.contains("not hex") && !e.contains("zz"), "{e}");
        assert!(KeysFrom::parse("nocolon", None).is_err());
    }
}
