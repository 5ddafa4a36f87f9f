//! The `fairdeal.auth.v1.AuthService` gRPC server: messages in, [`Accounts`] use cases, messages
//! and statuses out. The one error mapping is `From<AuthError> for Status`.

use std::sync::Arc;

use fairdeal_authn::{Authenticator, Caller, bearer_token};
use fairdeal_kit::ServiceError;
use fairdeal_proto::fairdeal::auth::v1 as pb;
use pb::auth_service_server::AuthService;
use tonic::{Request, Response, Status};

use crate::accounts::{Accounts, AuthError, Tokens};

impl From<AuthError> for Status {
    /// The one mapping, and the one place a failed call is logged. A caller's mistake (a
    /// malformed field, a wrong password, a bad token, a taken name, a rate limit) is not a
    /// fault of the server: it is logged at DEBUG (a rate limit at INFO, worth seeing in
    /// production). Server faults are logged by the kit's conversion: UNAVAILABLE at WARN
    /// and INTERNAL at ERROR, with their causes. The messages logged here are the ones the
    /// caller gets, which name fields and never carry a secret.
    fn from(e: AuthError) -> Self {
        let service_error = match e {
            AuthError::Invalid { .. } => {
                tracing::debug!(code = "INVALID_ARGUMENT", message = %e, "request refused");
                ServiceError::InvalidArgument(e.to_string())
            }
            AuthError::UsernameTaken | AuthError::EmailTaken => {
                tracing::debug!(code = "ALREADY_EXISTS", message = %e, "request refused");
                ServiceError::AlreadyExists(e.to_string())
            }
            AuthError::AccessDenied | AuthError::InvalidToken(_) => {
                tracing::debug!(code = "UNAUTHENTICATED", message = %e, "request refused");
                ServiceError::Unauthenticated(e.to_string())
            }
            AuthError::RateLimited(retry) => {
                tracing::info!(
                    code = "RESOURCE_EXHAUSTED",
                    retry_after = retry.0,
                    "request refused"
                );
                let mut status = Status::resource_exhausted(e.to_string());
                status.metadata_mut().insert("retry-after", retry.0.into());
                return status;
            }
            AuthError::Unavailable(what, cause) => ServiceError::Unavailable {
                message: format!("{what} unavailable"),
                cause: Some(cause),
            },
            AuthError::Internal(cause) => ServiceError::Internal(cause),
        };
        service_error.into()
    }
}

/// A refusal produced outside [`AuthError`] (the access token of ChangePassword and
/// DeleteAccount), logged like the others: at DEBUG for a caller's mistake, as the kit logs
/// the rest.
fn refused(status: Status) -> Status {
    match status.code() {
        tonic::Code::Internal | tonic::Code::Unavailable | tonic::Code::Unknown => {
            tracing::warn!(code = ?status.code(), message = status.message(), "request failed");
        }
        code => tracing::debug!(?code, message = status.message(), "request refused"),
    }
    status
}

fn timestamp(seconds: i64) -> prost_types::Timestamp {
    prost_types::Timestamp { seconds, nanos: 0 }
}

fn token_pair(t: Tokens) -> pb::TokenPair {
    pb::TokenPair {
        user_id: t.user_id.to_string(),
        access_token: t.access_token.into_string(),
        access_token_expires_at: Some(timestamp(t.access_expires_at)),
        refresh_token: t.refresh_token.expose().to_owned(),
        refresh_token_expires_at: Some(timestamp(t.refresh_expires_at)),
    }
}

/// The gRPC face of the service.
#[derive(Debug, Clone)]
pub struct GrpcAuth {
    /// The use cases.
    accounts: Arc<Accounts>,
    /// Verifies the access tokens of ChangePassword and DeleteAccount (with the service's
    /// own key ring).
    authn: Authenticator,
}

impl GrpcAuth {
    /// A server over `accounts`, verifying access tokens with `authn`.
    pub fn new(accounts: Arc<Accounts>, authn: Authenticator) -> Self {
        Self { accounts, authn }
    }

    /// The account calling with a player access token: UNAUTHENTICATED without a valid
    /// token, PERMISSION_DENIED with a service's.
    async fn player<T>(&self, request: &Request<T>) -> Result<uuid::Uuid, Status> {
        let token = bearer_token(request.metadata()).map_err(|e| refused(e.into()))?;
        match self
            .authn
            .verify(token)
            .await
            .map_err(|e| refused(e.into()))?
        {
            Caller::Player(id) => Ok(id),
            Caller::Service(_) => Err(refused(Status::permission_denied(
                "a player token is required",
            ))),
        }
    }
}

fn client_ip<T>(request: &Request<T>) -> Option<std::net::IpAddr> {
    request.remote_addr().map(|a| a.ip())
}

#[tonic::async_trait]
impl AuthService for GrpcAuth {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let r = request.into_inner();
        let user_id = self
            .accounts
            .register(&r.username, &r.email, &r.password)
            .await?;
        Ok(Response::new(pb::RegisterResponse {
            user_id: user_id.to_string(),
        }))
    }

    async fn confirm_email(
        &self,
        request: Request<pb::ConfirmEmailRequest>,
    ) -> Result<Response<pb::ConfirmEmailResponse>, Status> {
        let user_id = self
            .accounts
            .confirm_email(&request.into_inner().token)
            .await?;
        Ok(Response::new(pb::ConfirmEmailResponse {
            user_id: user_id.to_string(),
        }))
    }

    async fn resend_confirmation(
        &self,
        request: Request<pb::ResendConfirmationRequest>,
    ) -> Result<Response<pb::ResendConfirmationResponse>, Status> {
        let ip = client_ip(&request);
        self.accounts
            .resend_confirmation(&request.into_inner().email, ip)
            .await?;
        Ok(Response::new(pb::ResendConfirmationResponse {}))
    }

    async fn login(
        &self,
        request: Request<pb::LoginRequest>,
    ) -> Result<Response<pb::LoginResponse>, Status> {
        let ip = client_ip(&request);
        let r = request.into_inner();
        let tokens = self.accounts.login(&r.username, &r.password, ip).await?;
        Ok(Response::new(pb::LoginResponse {
            tokens: Some(token_pair(tokens)),
        }))
    }

    async fn refresh(
        &self,
        request: Request<pb::RefreshRequest>,
    ) -> Result<Response<pb::RefreshResponse>, Status> {
        let tokens = self
            .accounts
            .refresh(&request.into_inner().refresh_token)
            .await?;
        Ok(Response::new(pb::RefreshResponse {
            tokens: Some(token_pair(tokens)),
        }))
    }

    async fn logout(
        &self,
        request: Request<pb::LogoutRequest>,
    ) -> Result<Response<pb::LogoutResponse>, Status> {
        self.accounts
            .logout(&request.into_inner().refresh_token)
            .await?;
        Ok(Response::new(pb::LogoutResponse {}))
    }

    async fn change_password(
        &self,
        request: Request<pb::ChangePasswordRequest>,
    ) -> Result<Response<pb::ChangePasswordResponse>, Status> {
        let user_id = self.player(&request).await?;
        let ip = client_ip(&request);
        let r = request.into_inner();
        self.accounts
            .change_password(user_id, &r.current_password, &r.new_password, ip)
            .await?;
        Ok(Response::new(pb::ChangePasswordResponse {}))
    }

    async fn delete_account(
        &self,
        request: Request<pb::DeleteAccountRequest>,
    ) -> Result<Response<pb::DeleteAccountResponse>, Status> {
        let user_id = self.player(&request).await?;
        let ip = client_ip(&request);
        let r = request.into_inner();
        self.accounts
            .delete_account(user_id, &r.password, &r.confirm_username, ip)
            .await?;
        Ok(Response::new(pb::DeleteAccountResponse {}))
    }

    async fn request_password_reset(
        &self,
        request: Request<pb::RequestPasswordResetRequest>,
    ) -> Result<Response<pb::RequestPasswordResetResponse>, Status> {
        let ip = client_ip(&request);
        self.accounts
            .request_password_reset(&request.into_inner().email, ip)
            .await?;
        Ok(Response::new(pb::RequestPasswordResetResponse {}))
    }

    async fn reset_password(
        &self,
        request: Request<pb::ResetPasswordRequest>,
    ) -> Result<Response<pb::ResetPasswordResponse>, Status> {
        let r = request.into_inner();
        self.accounts
            .reset_password(&r.token, &r.new_password)
            .await?;
        Ok(Response::new(pb::ResetPasswordResponse {}))
    }

    async fn get_public_keys(
        &self,
        _request: Request<pb::GetPublicKeysRequest>,
    ) -> Result<Response<pb::GetPublicKeysResponse>, Status> {
        let keys = self
            .accounts
            .public_keys()
            .into_iter()
            .map(|k| pb::PublicKey {
                key_id: k.key.kid().as_str().to_owned(),
                algorithm: "EdDSA".to_owned(),
                public_key: k.key.to_bytes().to_vec(),
                not_after: Some(timestamp(k.not_after)),
            })
            .collect();
        Ok(Response::new(pb::GetPublicKeysResponse { keys }))
    }

    async fn issue_service_token(
        &self,
        request: Request<pb::IssueServiceTokenRequest>,
    ) -> Result<Response<pb::IssueServiceTokenResponse>, Status> {
        let ip = client_ip(&request);
        let r = request.into_inner();
        let (token, expires_at) = self
            .accounts
            .issue_service_token(&r.service_name, &r.secret, ip)
            .await?;
        Ok(Response::new(pb::IssueServiceTokenResponse {
            access_token: token.into_string(),
            expires_at: Some(timestamp(expires_at)),
        }))
    }
}
