//! Wiring: from a [`Config`] to a bound, ready-to-run server with its background tasks.
//!
//! [`mount`] builds the service over an opened [`Storage`] (migrations run, key ring
//! loaded) and spawns the mail dispatcher, the key reloader and (through the platform's
//! [`Bus`]) the outbox relay on the given shutdown handle, returning the gRPC routes;
//! [`Application::build`] opens the service's own storage, mounts it on a server of its own
//! and binds (port 0 works in tests); [`Application::run_until_stopped`] serves until
//! SIGTERM/SIGINT (or [`fairdeal_kit::Shutdown::trigger`]) and drains.

use std::net::SocketAddr;
use std::sync::Arc;

use fairdeal_authn::{Authenticator, AuthenticatorOptions, Clock, SystemClock};
use fairdeal_kit::config::ConfigError;
use fairdeal_kit::{Config, Mount, ServeError, Shutdown};
use fairdeal_platform::{Bus, StartError, Storage};
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

/// The auth service's routes and what tests and the all-in-one process reach behind them.
#[derive(Debug)]
pub struct Mounted {
    /// The gRPC routes.
    pub routes: Mount,
    /// The use cases.
    pub accounts: Arc<Accounts>,
    /// The mail dispatcher.
    pub dispatcher: Dispatcher,
}

/// Builds the service over `storage` (opened with [`MIGRATIONS`], alone or shared with other
/// services), starts its background tasks on `shutdown` (the relay, the mail dispatcher,
/// the key reloader) and returns its gRPC routes, to serve alone ([`Application::build`])
/// or beside other services on one server (the all-in-one process).
pub async fn mount(
    config: &Config<AuthSettings>,
    storage: Storage,
    clock: Arc<dyn Clock>,
    shutdown: &Shutdown,
) -> Result<Mounted, StartError> {
    let settings = &config.service;
    let store = auth_store(&storage);

    let window = settings.mail_limit_window_secs();
    let (limiter, mail_quota): (Arc<dyn AttemptLimiter>, Arc<dyn RequestQuota>) =
        match &config.common.redis_url {
            Some(url) => {
                let namespace = format!("{}:auth", config.common.subject_prefix);
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

    Bus::start(&config.common, &storage, "auth", shutdown).await?;
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
    Ok(Mounted {
        routes,
        accounts,
        dispatcher,
    })
}

/// The built service.
#[derive(Debug)]
pub struct Application {
    /// The bound gRPC server.
    server: fairdeal_kit::Application,
    /// The use cases (tests drive the mail dispatcher and read state through them).
    accounts: Arc<Accounts>,
    /// The mail dispatcher (tests call `send_due` to deliver without waiting).
    dispatcher: Dispatcher,
}

impl Application {
    /// Builds the service with the system clock.
    pub async fn build(config: Config<AuthSettings>) -> Result<Self, StartError> {
        Self::build_with(config, Overrides::default()).await
    }

    /// Builds the service with `overrides`: opens its storage, [`mount`]s it, binds.
    pub async fn build_with(
        config: Config<AuthSettings>,
        overrides: Overrides,
    ) -> Result<Self, StartError> {
        let storage =
            Storage::open(&config.common, &config.service.db_schema, &[&MIGRATIONS]).await?;
        let shutdown = Shutdown::new();
        let mounted = mount(&config, storage, overrides.clock, &shutdown).await?;
        let server = fairdeal_kit::Application::builder(&config.common)
            .with_shutdown(shutdown)
            .handle_signals(overrides.handle_signals)
            .mount(mounted.routes)
            .build()
            .await?;
        Ok(Self {
            server,
            accounts: mounted.accounts,
            dispatcher: mounted.dispatcher,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The shutdown handle.
    pub fn shutdown(&self) -> Shutdown {
        self.server.shutdown()
    }

    /// The use cases.
    pub fn accounts(&self) -> Arc<Accounts> {
        self.accounts.clone()
    }

    /// The mail dispatcher.
    pub fn dispatcher(&self) -> Dispatcher {
        self.dispatcher.clone()
    }

    /// Serves until stopped, then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.server.run_until_stopped().await
    }
}
