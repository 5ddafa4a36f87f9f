//! The auth service on the platform: [`AuthService`], the [`Service`] the kit's host runs
//! (`main.rs`, `fairdeal-server serve` and `up`). Mounting builds the service over an opened
//! [`Storage`] (migrations run, key ring loaded) and spawns the mail dispatcher, the key
//! reloader and (through the platform's [`Bus`]) the outbox relay; tests replace the clock
//! and the signal handling through [`build_with`].

use std::sync::Arc;

use fairdeal_authn::{Authenticator, AuthenticatorOptions, Clock, SystemClock};
use fairdeal_kit::config::ConfigError;
use fairdeal_kit::deployment::{Deployment, Egress, Made, Resources, SecretSetting};
use fairdeal_kit::{CommonConfig, Config, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::auth::v1::auth_service_server::AuthServiceServer;

use crate::accounts::Accounts;
use crate::config::{AuthSettings, VERIFIER_LEEWAY};
use crate::domain::PasswordHasher;
use crate::grpc::GrpcAuth;
use crate::keyring::KeyRing;
use crate::limits::{
    AttemptLimiter, MemoryLimiter, MemoryQuota, RedisLimiter, RedisQuota, RequestQuota,
};
use crate::mail::{Composer, Dispatcher, MailTransport, MailboxDir, SmtpTransport};
use crate::mail_requests::{self, MailRequests};
use crate::store::{MIGRATIONS, auth_store};

/// What tests (and the all-in-one binary) may replace.
#[derive(Debug, Clone)]
pub struct Overrides {
    /// The clock every expiry and lockout reads.
    pub clock: Arc<dyn Clock>,
    /// Whether SIGTERM/SIGINT stop the server (off when many servers share a test process).
    pub handle_signals: bool,
}

impl Default for Overrides {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            handle_signals: true,
        }
    }
}

/// The auth service on a server of its own.
pub type Application = fairdeal_kit::host::Application<AuthService>;

/// What tests reach behind the auth service's routes ([`Application::handles`]).
#[derive(Debug)]
pub struct Handles {
    /// The use cases.
    pub accounts: Arc<Accounts>,
    /// The mail dispatcher.
    pub dispatcher: Dispatcher,
}

/// What the auth service is assembled from.
#[derive(Debug)]
pub struct Parts {
    /// Its own settings.
    pub settings: AuthSettings,
    /// Its database and event log.
    pub storage: Storage,
    /// The clock every expiry and lockout reads.
    pub clock: Arc<dyn Clock>,
}

/// Builds the auth service from `config` with `overrides` (a test's clock, no signal
/// handlers) on a server of its own.
pub async fn build_with(
    config: Config<AuthSettings>,
    overrides: Overrides,
) -> Result<Application, StartError> {
    let storage = fairdeal_kit::host::open_storage::<AuthService>(&config).await?;
    let parts = Parts {
        settings: config.service,
        storage,
        clock: overrides.clock,
    };
    Application::assemble_with(&config.common, parts, overrides.handle_signals).await
}

/// The auth service, as the kit's host runs it.
#[derive(Debug)]
pub struct AuthService;

impl Service for AuthService {
    const NAME: &'static str = "auth";
    const MIGRATIONS: &'static [&'static fairdeal_db::Migrations] = &[&MIGRATIONS];
    const DEPLOYMENT: Deployment = Deployment {
        about: "accounts, login, tokens",
        redis: Some("login limits shared by every replica"),
        secrets: &[
            SecretSetting {
                setting: "service_credentials",
                key: "service-credentials",
                note: "`name:sha256(secret)` of each service that signs in",
                optional: false,
                compose: None,
                made: Made::Credentials,
            },
            SecretSetting {
                setting: "smtp_url",
                key: "smtp-url",
                note: "The SMTP relay: without it mails land in the pod's mailbox directory (an \
                       emptyDir) and are lost with the pod, so set it in production",
                optional: true,
                compose: Some("smtp://mailcatcher:1025"),
                made: Made::Plain,
            },
        ],
        compose_settings: &[
            ("mail_from", "fairdeal <no-reply@fairdeal.invalid>"),
            (
                "public_url",
                "${FAIRDEAL_PUBLIC_URL:-http://localhost:8080}",
            ),
        ],
        compose_needs: &["mailcatcher"],
        egress: &[Egress {
            note: "SMTP submission (smtps:// and smtp:// with STARTTLS), usually outside the \
                   cluster",
            ports: &[465, 587],
        }],
        resources: Resources {
            cpu: "100m",
            memory: "256Mi",
            memory_limit: "1Gi",
            note: Some("Argon2id takes 19 MiB per password hash in flight."),
        },
        ..Deployment::PLAIN
    };
    type Settings = AuthSettings;
    type Parts = Parts;
    type Handles = Handles;

    /// `db_schema` (default `auth`).
    fn schema(settings: &AuthSettings) -> String {
        settings.db_schema.clone()
    }

    /// The system clock.
    async fn parts(config: &Config<AuthSettings>, storage: Storage) -> Result<Parts, StartError> {
        Ok(Parts {
            settings: config.service.clone(),
            storage,
            clock: Arc::new(SystemClock),
        })
    }

    /// Starts the relay, the mail dispatcher and the key reloader on `shutdown` and returns
    /// the gRPC routes.
    async fn mount(
        common: &CommonConfig,
        parts: Parts,
        shutdown: &Shutdown,
    ) -> Result<(Mount, Handles), StartError> {
        mount(common, parts, shutdown).await
    }

    /// In one process: mails into the host's data directory, every service's credentials
    /// from the host's secrets, and `up --moderators` as its moderators.
    fn embed(settings: &mut AuthSettings, host: &Embedded) -> Result<(), StartError> {
        settings.mailbox_dir = host.data_dir.join(MAILBOX_DIR);
        settings.service_credentials = Some(host.secret(Embedded::SERVICE_CREDENTIALS)?);
        settings.moderators = host.moderators.clone();
        Ok(())
    }
}

/// The directory under the all-in-one process's data directory receiving the mails.
pub const MAILBOX_DIR: &str = "mailbox";

/// [`AuthService::mount`].
async fn mount(
    common: &CommonConfig,
    parts: Parts,
    shutdown: &Shutdown,
) -> Result<(Mount, Handles), StartError> {
    let Parts {
        settings,
        storage,
        clock,
    } = parts;
    let settings = &settings;
    let store = auth_store(&storage);

    let window = settings.mail_limit_window_secs();
    let (limiter, mail_quota): (Arc<dyn AttemptLimiter>, Arc<dyn RequestQuota>) =
        match &common.redis_url {
            Some(url) => {
                let namespace = format!("{}:auth", common.subject_prefix);
                let redis_down = |e: crate::limits::LimiterError| StartError::Dependency {
                    what: "redis_url",
                    reason: e.to_string(),
                };
                let url = url.expose_secret();
                (
                    Arc::new(
                        RedisLimiter::connect(url, &namespace, settings.policies())
                            .await
                            .map_err(redis_down)?,
                    ),
                    Arc::new(
                        RedisQuota::connect(url, &namespace, window)
                            .await
                            .map_err(redis_down)?,
                    ),
                )
            }
            None => (
                Arc::new(MemoryLimiter::new(settings.policies())),
                Arc::new(MemoryQuota::new(window)),
            ),
        };

    let params = settings.hash_params();
    let hasher = tokio::task::spawn_blocking(move || PasswordHasher::new(params))
        .await
        .map_err(|e| StartError::Dependency {
            what: "argon2 parameters",
            reason: e.to_string(),
        })?
        .map_err(|e| ConfigError::invalid("argon2 parameters", e.to_string()))?;

    let keys = Arc::new(
        KeyRing::open(store.clone(), clock.clone(), settings.key_policy())
            .await
            .map_err(|e| StartError::Dependency {
                what: "signing keys",
                reason: e.to_string(),
            })?,
    );

    let transport: Arc<dyn MailTransport> = match &settings.smtp_url {
        Some(url) => Arc::new(
            SmtpTransport::from_url(url.expose_secret())
                .map_err(|e| ConfigError::invalid("smtp_url", e.to_string()))?,
        ),
        None => Arc::new(MailboxDir::new(settings.mailbox_dir.clone())),
    };
    let from = settings
        .mail_from
        .parse()
        .map_err(|e: lettre::address::AddressError| {
            ConfigError::invalid("mail_from", e.to_string())
        })?;
    let dispatcher = Dispatcher::new(store.clone(), transport, from, clock.clone());
    let (mail_requests, mail_request_queue) = MailRequests::channel(mail_requests::CAPACITY);

    let accounts = Arc::new(Accounts {
        store,
        hasher: Arc::new(hasher),
        limiter,
        keys: keys.clone(),
        clock: clock.clone(),
        lifetimes: settings.lifetimes(),
        composer: Composer {
            public_url: settings.public_url.clone(),
        },
        mail_wake: dispatcher.waker(),
        mail_transport: dispatcher.transport(),
        services: Arc::new(settings.service_credentials()?),
        moderators: Arc::new(settings.moderator_keys()),
        mail_quota,
        mail_limits: settings.mail_limits(),
        mail_requests,
    });
    let authn = Authenticator::new(
        keys.clone(),
        AuthenticatorOptions {
            clock: clock.clone(),
            leeway: VERIFIER_LEEWAY,
            ..AuthenticatorOptions::default()
        },
    );
    let grpc = AuthServiceServer::new(GrpcAuth::new(accounts.clone(), authn));

    Bus::start(common, &storage, AuthService::NAME, shutdown).await?;
    shutdown.spawn("mail-dispatcher", dispatcher.clone().run(shutdown.token()));
    shutdown.spawn(
        "mail-requests",
        mail_requests::run(accounts.clone(), mail_request_queue, shutdown.token()),
    );
    let reload_every = settings.key_reload_interval;
    let stop = shutdown.token();
    shutdown.spawn("key-reloader", async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(reload_every) => {}
            }
            if let Err(e) = keys.reload().await {
                tracing::warn!(error = %e, "signing keys not reloaded");
            }
        }
    });
    let routes = Mount::new()
        .add_service(grpc)
        .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET);
    Ok((
        routes,
        Handles {
            accounts,
            dispatcher,
        },
    ))
}
