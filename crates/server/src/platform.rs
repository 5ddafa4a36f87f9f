//! The whole platform in one process on the embedded default: one SQLite file under the data
//! directory shared by every service (one [`Storage`], so an in-process consumer of another
//! service's events tails the shared log), the in-process bus, memory limits, and every
//! gRPC service mounted on one server, one port, with health and reflection.
//!
//! Each service of [`SERVICES`] is started by the kit's host ([`Hosted::mount`](fairdeal_kit::Hosted::mount)) with its
//! defaults as [`Service::embed`](fairdeal_kit::Service::embed) changes them for this process
//! ([`Embedded`]: the one address, the data directory, the secrets generated into it): the
//! services reach one another (keys, tokens, seeds, deals) over the same port, exactly as in
//! a deployment. Adding a service is one entry in [`SERVICES`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use fairdeal_db::{DatabaseUrl, Db, Migrations, Schema};
use fairdeal_kit::config::{Secret, SecretUrl};
use fairdeal_kit::{CommonConfig, Embedded, ServeError, Shutdown, StartError};
use fairdeal_platform::Storage;

use crate::SERVICES;
use crate::secrets::Secrets;

/// The database file under the data directory.
pub const DATABASE_FILE: &str = "fairdeal.db";
/// The directory under the data directory receiving the demo's ledger exports (created with
/// the data directory, readable by the owner only: an export holds a whole game).
pub const EXPORTS_DIR: &str = "exports";
/// The directory under the data directory receiving the auth service's mails.
pub use fairdeal_auth::startup::MAILBOX_DIR;

/// How `up` runs.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// Where the database, keys and mails live.
    pub data_dir: PathBuf,
    /// The one address every service is served on.
    pub listen: SocketAddr,
    /// Whether SIGTERM/SIGINT stop the process (off in tests).
    pub handle_signals: bool,
    /// Usernames whose logins get the moderator role (chat `RemoveMessage` and `Mute`): the
    /// auth service's `--moderators`, compared caselessly; none by default.
    pub moderators: Vec<String>,
}

/// The running platform.
#[derive(Debug)]
pub struct Platform {
    /// The server with every service mounted.
    app: fairdeal_kit::Application,
    /// `http://<loopback or listen address>:<port>`.
    url: String,
    /// The data directory.
    data_dir: PathBuf,
    /// The ledger's public key (`fairdeal audit --log-key`).
    log_key: String,
    /// The usernames given the moderator role.
    moderators: Vec<String>,
}

impl Platform {
    /// Prepares the data directory (keys generated on first start), opens the shared
    /// database, starts every service of [`SERVICES`] and binds their one server.
    pub async fn start(options: &UpOptions) -> anyhow::Result<Platform> {
        crate::secrets::create_private_dir(&options.data_dir)?;
        crate::secrets::create_private_dir(&options.data_dir.join(EXPORTS_DIR))?;
        let data_dir = options
            .data_dir
            .canonicalize()
            .with_context(|| format!("data directory {}", options.data_dir.display()))?;
        let secrets = Secrets::load_or_create(&data_dir, SERVICES.iter().map(|s| s.name))?;
        let log_key = secrets.log_key()?.to_string();

        // Bound first: the services are configured with the real port (port 0 works).
        let listener = fairdeal_kit::server::bind(options.listen).await?;
        let local = listener.local_addr().context("reading the bound address")?;
        let url = format!("http://{}", reachable(local));

        let database = data_dir.join(DATABASE_FILE);
        crate::secrets::create_private_file(&database)?;
        let database_url = format!("sqlite://{}?mode=rwc", database.display());
        let db_url: DatabaseUrl = database_url.parse().context("database path")?;
        let schema = Schema::new("fairdeal").context("schema")?;
        let db = Db::open(&db_url, &schema)
            .await
            .map_err(StartError::from)
            .context("opening the database")?;
        let migrations: Vec<&Migrations> = SERVICES
            .iter()
            .flat_map(|s| s.migrations.iter().copied())
            .collect();
        let storage = Storage::over(db, &migrations)
            .await
            .context("migrating the database")?;

        let mut host = Embedded::new(
            url.clone(),
            local,
            SecretUrl::new(database_url),
            data_dir.clone(),
            options.moderators.clone(),
        )
        .with_secret(Embedded::SEED_KEYS, Secret::new(secrets.seed_keys()))
        .with_secret(
            Embedded::LEDGER_SIGNING_KEY,
            Secret::new(secrets.ledger_signing_key()),
        )
        .with_secret(
            Embedded::SERVICE_CREDENTIALS,
            Secret::new(secrets.service_credentials()),
        );
        for service in SERVICES {
            let secret = secrets.service_secret(service.name)?;
            host = host.with_service_secret(service.name, Secret::new(secret));
        }

        let shutdown = Shutdown::new();
        let mut common = CommonConfig::with_defaults("fairdeal").context("settings")?;
        common.listen_addr = local;
        let mut builder = fairdeal_kit::Application::builder(&common)
            .with_shutdown(shutdown.clone())
            .handle_signals(options.handle_signals)
            .listener(listener);
        for service in SERVICES {
            match service.mount(&host, storage.clone(), &shutdown).await {
                Ok(routes) => builder = builder.mount(routes),
                Err(error) => {
                    shutdown.stop_background();
                    return Err(error).with_context(|| format!("starting {}", service.name));
                }
            }
        }
        let app = builder.build().await?;
        Ok(Platform {
            app,
            url,
            data_dir,
            log_key,
            moderators: options.moderators.clone(),
        })
    }

    /// Where clients reach every service.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.app.local_addr()
    }

    /// The data directory (canonical).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Where the auth service writes its mails.
    pub fn mailbox_dir(&self) -> PathBuf {
        self.data_dir.join(MAILBOX_DIR)
    }

    /// Where the demo writes the ledger's exports.
    pub fn exports_dir(&self) -> PathBuf {
        self.data_dir.join(EXPORTS_DIR)
    }

    /// The ledger's public key, for `fairdeal audit --log-key`.
    pub fn log_key(&self) -> &str {
        &self.log_key
    }

    /// The file holding the seed key, the services' secrets and the ledger's signing key.
    pub fn secrets_file(&self) -> PathBuf {
        self.data_dir.join(crate::secrets::SECRETS_FILE)
    }

    /// The usernames whose logins get the moderator role.
    pub fn moderators(&self) -> &[String] {
        &self.moderators
    }

    /// The shutdown handle.
    pub fn shutdown(&self) -> Shutdown {
        self.app.shutdown()
    }

    /// Serves until stopped, then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.app.run_until_stopped().await
    }
}

/// The address a local client dials for a server bound to `bound`: the loopback address of
/// the same family when it listens on every address.
pub fn reachable(bound: SocketAddr) -> SocketAddr {
    let ip = match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bound.port())
}
