//! Fetching the auth service's public keys over gRPC (`GetPublicKeys`).

use async_trait::async_trait;
use fairdeal_proto::fairdeal::auth::v1::GetPublicKeysRequest;
use fairdeal_proto::fairdeal::auth::v1::auth_service_client::AuthServiceClient;
use tonic::transport::{Channel, Endpoint};

use crate::authenticator::{KeySource, KeySourceError};
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

    /// A source for `endpoint` (`http://auth:50051`) that connects on first use, so a
    /// service can start before the auth service is up.
    pub fn lazy(endpoint: &str) -> Result<Self, KeySourceError> {
        let endpoint = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| KeySourceError(e.to_string()))?;
        Ok(Self::new(endpoint.connect_lazy()))
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
