//! The chat, auth and ledger services on a [`GameStack`], and the calls the end-to-end tests
//! make to them: the chat as a table's players use it (subscribe, post), the auth service as a
//! person does (register, confirm by the mailed code, log in).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use fairdeal_authn::{AccessToken, SystemClock};
use fairdeal_proto::fairdeal::auth::v1 as apb;
use fairdeal_proto::fairdeal::auth::v1::auth_service_client::AuthServiceClient;
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use futures::StreamExt as _;
use tonic::transport::Channel;
use tonic::{Code, Status, Streaming};
use uuid::Uuid;

use crate::platform::{Backend, GameStack, channel, serving};

pub use fairdeal_harness::with;

/// The auth service running on a stack.
#[derive(Debug)]
pub struct Auth {
    /// Its client.
    pub client: AuthServiceClient<Channel>,
    /// Where it writes its mails (the embedded mail transport).
    pub mailbox: PathBuf,
    /// Holds the mailbox directory.
    _dir: tempfile::TempDir,
}

impl Auth {
    /// Registers `username` with `email` and `password`, confirms it with the mailed code
    /// and logs in; answers the account's id and tokens.
    pub async fn confirmed_account(
        &self,
        username: &str,
        email: &str,
        password: &str,
    ) -> anyhow::Result<(Uuid, apb::TokenPair)> {
        let mut client = self.client.clone();
        let user_id = client
            .register(apb::RegisterRequest {
                username: username.to_owned(),
                email: email.to_owned(),
                password: password.as_bytes().to_vec(),
            })
            .await?
            .into_inner()
            .user_id
            .parse()?;
        // The mail is written by a background task: wait for it (30 s at most).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let code = loop {
            if let Some(code) = fairdeal_testkit::code_in_mail(&self.mailbox, email, "Confirm") {
                break code;
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "no confirmation mail to {email}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        client
            .confirm_email(apb::ConfirmEmailRequest { token: code })
            .await?;
        let tokens = client
            .login(apb::LoginRequest {
                username: username.to_owned(),
                password: password.as_bytes().to_vec(),
            })
            .await?
            .into_inner()
            .tokens
            .context("login answered no tokens")?;
        Ok((user_id, tokens))
    }
}

impl GameStack {
    /// Starts the chat service on the stack (Redis for presence and limits on PostgreSQL);
    /// answers its port.
    pub async fn start_chat(&mut self) -> anyhow::Result<u16> {
        let storage = self
            .storage(
                fairdeal_chat::startup::SCHEMA,
                &[&fairdeal_chat::store::MIGRATIONS],
            )
            .await?;
        let mut common = self.common("chat")?;
        if self.backend() == Backend::PostgresNats {
            common.redis_url = Some(fairdeal_kit::config::SecretUrl::new(
                fairdeal_testkit::redis_url(),
            ));
        }
        let limits = fairdeal_chat::service::ChatLimits::default();
        let (presence, quota) = fairdeal_chat::startup::limiters(
            common.redis_url.as_ref().map(|u| u.expose_secret()),
            &common.subject_prefix,
            limits,
        )
        .await?;
        let app = fairdeal_chat::Application::assemble(
            &common,
            fairdeal_chat::startup::Parts {
                storage,
                authn: self.authenticator(),
                presence,
                quota,
                clock: Arc::new(SystemClock),
                limits,
                filter: None,
            },
        )
        .await?;
        let port = app.port();
        self.on_stop(app.shutdown());
        tokio::spawn(app.run_until_stopped());
        serving(port).await?;
        Ok(port)
    }

    /// Starts the ledger on the stack over `storage` (migrated with the ledger's migrations:
    /// [`GameStack::storage`]), ingesting every service's events, signing checkpoints with
    /// `signer` by `policy`; answers its port once it serves.
    pub async fn start_ledger(
        &mut self,
        storage: fairdeal_platform::Storage,
        signer: fairdeal_tlog::NoteSigner,
        policy: fairdeal_ledger::log::CheckpointPolicy,
    ) -> anyhow::Result<u16> {
        let app = fairdeal_ledger::Application::assemble(
            &self.common("ledger")?,
            fairdeal_ledger::Parts {
                storage,
                signer,
                policy,
                sources: fairdeal_ledger::SOURCES.map(String::from).to_vec(),
            },
        )
        .await?;
        let port = app.port();
        self.on_stop(app.shutdown());
        tokio::spawn(app.run_until_stopped());
        serving(port).await?;
        Ok(port)
    }

    /// Starts the auth service on the stack's database (and NATS, on PostgreSQL), its mails
    /// written to a directory of its own, passwords hashed cheaply (tests check behaviour).
    pub async fn start_auth(&mut self) -> anyhow::Result<Auth> {
        let common = self.common("auth")?;
        // Migrated (into the shared database, embedded), and its streams deleted with the
        // stack's.
        self.storage("auth", &[&fairdeal_auth::store::MIGRATIONS])
            .await?;
        let dir = tempfile::tempdir()?;
        let mailbox = dir.path().join("mail");
        let mut args = vec![
            "--listen-addr".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--database-url".to_owned(),
            common.database_url.expose_secret().to_owned(),
            "--mailbox-dir".to_owned(),
            mailbox.display().to_string(),
            "--argon2-memory-kib".to_owned(),
            "64".to_owned(),
            "--argon2-iterations".to_owned(),
            "1".to_owned(),
        ];
        if let Some(nats) = &common.nats_url {
            args.extend([
                "--nats-url".to_owned(),
                nats.expose_secret().to_owned(),
                "--subject-prefix".to_owned(),
                common.subject_prefix.clone(),
                "--redis-url".to_owned(),
                fairdeal_testkit::redis_url(),
            ]);
        }
        let config = crate::settings::<fairdeal_auth::config::AuthSettings>("auth", &args);
        let app = fairdeal_auth::startup::build_with(
            config,
            fairdeal_auth::startup::Overrides {
                clock: Arc::new(SystemClock),
                handle_signals: false,
            },
        )
        .await?;
        let port = app.port();
        self.on_stop(app.shutdown());
        tokio::spawn(app.run_until_stopped());
        serving(port).await?;
        Ok(Auth {
            client: AuthServiceClient::new(channel(port)?),
            mailbox,
            _dir: dir,
        })
    }
}

/// Subscribes to `channel` as `token`'s user; the stream once it says connected.
///
/// # Errors
/// The subscription's refusal.
///
/// # Panics
/// If the stream's first item is not the connection.
#[allow(clippy::panic)]
pub async fn subscribe(
    chat: &ChatServiceClient<Channel>,
    token: &AccessToken,
    channel: &str,
) -> Result<Streaming<pb::SubscribeResponse>, Status> {
    let mut stream = chat
        .clone()
        .subscribe(with(
            token,
            pb::SubscribeRequest {
                channel: channel.to_owned(),
            },
        ))
        .await?
        .into_inner();
    match stream.next().await {
        Some(Ok(pb::SubscribeResponse {
            item: Some(pb::subscribe_response::Item::Connected(_)),
        })) => Ok(stream),
        Some(Err(status)) => Err(status),
        other => panic!("expected connected, got {other:?}"),
    }
}

/// Retries [`subscribe`] while the membership has not arrived (PERMISSION_DENIED), 30 s at
/// most: the chat's projection of the table's seats is eventually consistent.
///
/// # Panics
/// If the membership never arrives, or the subscription fails otherwise.
#[allow(clippy::panic)]
pub async fn subscribe_as_member(
    chat: &ChatServiceClient<Channel>,
    token: &AccessToken,
    channel: &str,
) -> Streaming<pb::SubscribeResponse> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match subscribe(chat, token, channel).await {
            Ok(stream) => return stream,
            Err(s) if s.code() == Code::PermissionDenied => {
                assert!(tokio::time::Instant::now() < deadline, "never a member");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("subscribe: {s:?}"),
        }
    }
}

/// Posts `text` to `channel` as `token`'s user; the message as stored.
///
/// # Errors
/// The post's refusal.
pub async fn post(
    chat: &ChatServiceClient<Channel>,
    token: &AccessToken,
    channel: &str,
    text: &str,
) -> Result<pb::ChatMessage, Status> {
    chat.clone()
        .post(with(
            token,
            pb::PostRequest {
                channel: channel.to_owned(),
                text: text.to_owned(),
            },
        ))
        .await?
        .into_inner()
        .message
        .ok_or_else(|| Status::internal("a post answered no message"))
}

/// The next message of a subscription (20 s at most).
///
/// # Panics
/// If none comes, or the next item is not a message.
#[allow(clippy::panic)]
pub async fn next_message(stream: &mut Streaming<pb::SubscribeResponse>) -> pb::ChatMessage {
    let item = tokio::time::timeout(Duration::from_secs(20), stream.next()).await;
    match item {
        Ok(Some(Ok(pb::SubscribeResponse {
            item: Some(pb::subscribe_response::Item::Message(m)),
        }))) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}
