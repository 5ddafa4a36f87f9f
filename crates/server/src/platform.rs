//! The whole platform in one process on the embedded default: one SQLite file under the data
//! directory shared by every service (one [`Storage`], so an in-process consumer of another
//! service's events tails the shared log), the in-process bus, memory limits, and every
//! gRPC service mounted on one server, one port, with health and reflection.
//!
//! Each service is started through its own public startup API (`Parts` + `mount`), with the
//! configuration its standalone binary would load from flags: the services reach one another
//! (keys, tokens, seeds, deals) over the same port, exactly as in a deployment.
//!
//! Adding a service is one entry in [`SERVICES`] (its migrations and a small function that
//! builds its configuration and calls its `mount`).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;

use anyhow::Context as _;
use fairdeal_db::{DatabaseUrl, Db, Migrations, Schema};
use fairdeal_kit::config::{Config, Loaded, Section};
use fairdeal_kit::{Mount, ServeError, Shutdown};
use fairdeal_platform::{StartError, Storage};

use crate::secrets::Secrets;

/// The database file under the data directory.
pub const DATABASE_FILE: &str = "fairdeal.db";
/// The directory under the data directory receiving the auth service's mails.
pub const MAILBOX_DIR: &str = "mailbox";

/// A service's start in the all-in-one process.
type MountFuture<'a> = Pin<Box<dyn Future<Output = Result<Mount, StartError>> + Send + 'a>>;

/// One service of the platform.
pub struct Service {
    /// Its name (binary `fairdeal-<name>`, `--service-name`, its service secret's name).
    pub name: &'static str,
    /// Its own migrations, applied to the shared database.
    pub migrations: &'static [&'static Migrations],
    /// Builds its configuration and mounts it (see [`Embedded`]).
    pub mount: for<'a> fn(&'a Embedded) -> MountFuture<'a>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("name", &self.name).finish()
    }
}

/// Every service `up` runs, in start order.
pub const SERVICES: &[Service] = &[
    Service {
        name: "auth",
        migrations: &[&fairdeal_auth::store::MIGRATIONS],
        mount: |p| Box::pin(auth(p)),
    },
    Service {
        name: "commitment",
        migrations: &[&fairdeal_commitment::seeds::MIGRATIONS],
        mount: |p| Box::pin(commitment(p)),
    },
    Service {
        name: "dealing",
        migrations: &[],
        mount: |p| Box::pin(dealing(p)),
    },
    Service {
        name: "tables",
        migrations: &[&fairdeal_tables::lobby::MIGRATIONS],
        mount: |p| Box::pin(tables(p)),
    },
    Service {
        name: "chat",
        migrations: &[&fairdeal_chat::store::MIGRATIONS],
        mount: |p| Box::pin(chat(p)),
    },
    Service {
        name: "rating",
        migrations: &[&fairdeal_rating_service::projection::MIGRATIONS],
        mount: |p| Box::pin(rating(p)),
    },
    Service {
        name: "ledger",
        migrations: &[&fairdeal_ledger::startup::MIGRATIONS],
        mount: |p| Box::pin(ledger(p)),
    },
];

/// The auth service: mails into the data directory, the services' credentials from its
/// secrets, and `up --moderators` as its own `--moderators` (validated there, as usernames).
async fn auth(p: &Embedded) -> Result<Mount, StartError> {
    let mailbox = p.mailbox_dir().display().to_string();
    let credentials = p.secrets.service_credentials();
    let moderators = p.moderators.join(",");
    let mut flags = vec![
        "--mailbox-dir",
        &mailbox,
        "--service-credentials",
        &credentials,
    ];
    if !p.moderators.is_empty() {
        flags.extend(["--moderators", &moderators]);
    }
    let config = p.config::<fairdeal_auth::config::AuthSettings>("auth", &flags)?;
    // The system clock, as the auth binary runs with.
    let clock = fairdeal_auth::startup::Overrides::default().clock;
    let mounted =
        fairdeal_auth::startup::mount(&config, p.storage.clone(), clock, &p.shutdown).await?;
    Ok(mounted.routes)
}

async fn commitment(p: &Embedded) -> Result<Mount, StartError> {
    let config = p.config::<fairdeal_commitment::CommitmentSettings>(
        "commitment",
        &[
            "--seed-keys",
            p.secrets.seed_keys(),
            "--auth-url",
            &p.self_url,
        ],
    )?;
    let parts = fairdeal_commitment::startup::Parts::over(&config, p.storage.clone())?;
    fairdeal_commitment::startup::mount(&config.common, parts, &p.shutdown).await
}

async fn dealing(p: &Embedded) -> Result<Mount, StartError> {
    let config = p.config::<fairdeal_dealing::DealingSettings>(
        "dealing",
        &[
            "--commitment-url",
            &p.self_url,
            "--auth-url",
            &p.self_url,
            "--service-secret",
            p.secrets.service_secret("dealing")?,
        ],
    )?;
    let parts = fairdeal_dealing::startup::Parts::over(&config, p.storage.clone())?;
    fairdeal_dealing::startup::mount(&config.common, parts, &p.shutdown).await
}

async fn tables(p: &Embedded) -> Result<Mount, StartError> {
    let config = p.config::<fairdeal_tables::TablesSettings>(
        "tables",
        &[
            "--commitment-url",
            &p.self_url,
            "--dealing-url",
            &p.self_url,
            "--auth-url",
            &p.self_url,
            "--service-secret",
            p.secrets.service_secret("tables")?,
        ],
    )?;
    let parts = fairdeal_tables::startup::Parts::over(&config, p.storage.clone())?;
    fairdeal_tables::startup::mount(&config.common, parts, &p.shutdown).await
}

/// The chat service: presence and the message quota in memory (no `--redis-url`); its
/// membership consumer of the tables' events tails the shared log in process.
async fn chat(p: &Embedded) -> Result<Mount, StartError> {
    let config = p.config::<fairdeal_chat::ChatSettings>("chat", &["--auth-url", &p.self_url])?;
    let parts = fairdeal_chat::startup::Parts::over(&config, p.storage.clone()).await?;
    fairdeal_chat::startup::mount(&config.common, parts, &p.shutdown).await
}

/// The rating service: its consumer of the tables' `GameFinished` tails the shared log in
/// process (its handler accepts only the tables' streams).
async fn rating(p: &Embedded) -> Result<Mount, StartError> {
    let config = p.config::<fairdeal_rating_service::RatingSettings>(
        "rating",
        &["--auth-url", &p.self_url],
    )?;
    let parts = fairdeal_rating_service::startup::Parts::over(&config, p.storage.clone())?;
    fairdeal_rating_service::startup::mount(&config.common, parts, &p.shutdown).await
}

/// The ledger: one consumer tails the whole shared log (every service's events) into the
/// Merkle tree; its checkpoints are signed with the key generated into the data directory's
/// secrets.
async fn ledger(p: &Embedded) -> Result<Mount, StartError> {
    let config = p.config::<fairdeal_ledger::LedgerSettings>(
        "ledger",
        &["--signing-key", p.secrets.ledger_signing_key()],
    )?;
    let parts = fairdeal_ledger::startup::Parts::over(&config, p.storage.clone())?;
    Ok(
        fairdeal_ledger::startup::mount(&config.common, parts, &p.shutdown)
            .await?
            .routes,
    )
}

/// What every service of the all-in-one process is started from.
#[derive(Debug)]
pub struct Embedded {
    /// The data directory.
    data_dir: PathBuf,
    /// The shared database, event log and append signal.
    storage: Storage,
    /// The address every service reaches the others (and itself) at.
    self_url: String,
    /// The listen address (each service's `--listen-addr`, for its configuration).
    listen: SocketAddr,
    /// Seed keys and service secrets, from the data directory.
    secrets: Secrets,
    /// Usernames whose logins get the moderator role (the auth service's `--moderators`).
    moderators: Vec<String>,
    /// The one shutdown handle of the process.
    shutdown: Shutdown,
}

impl Embedded {
    /// The mail directory.
    pub fn mailbox_dir(&self) -> PathBuf {
        self.data_dir.join(MAILBOX_DIR)
    }

    /// Service `name`'s configuration as its binary would load it from these flags (plus
    /// the shared database and listen address); the environment is not read, so the
    /// process's `FAIRDEAL_*` variables cannot pull one service elsewhere.
    pub fn config<S: Section>(&self, name: &str, flags: &[&str]) -> Result<Config<S>, StartError> {
        let database = format!(
            "sqlite://{}?mode=rwc",
            self.data_dir.join(DATABASE_FILE).display()
        );
        let listen = self.listen.to_string();
        let mut args = vec![
            name,
            "--service-name",
            name,
            "--database-url",
            &database,
            "--listen-addr",
            &listen,
        ];
        args.extend_from_slice(flags);
        match Config::<S>::load_from(name, args, []) {
            Ok(Loaded::Run(config)) => Ok(config),
            Ok(Loaded::DumpConfig(_)) => Err(StartError::Dependency {
                what: "configuration",
                reason: format!("{name}: unexpected --dump-config"),
            }),
            Err(error) => Err(error.into()),
        }
    }
}

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
        let db_url: DatabaseUrl = format!("sqlite://{}?mode=rwc", database.display())
            .parse()
            .context("database path")?;
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

        let shutdown = Shutdown::new();
        let embedded = Embedded {
            data_dir: data_dir.clone(),
            storage,
            self_url: url.clone(),
            listen: local,
            secrets,
            moderators: options.moderators.clone(),
            shutdown: shutdown.clone(),
        };
        let common = embedded
            .config::<fairdeal_kit::config::NoSection>("fairdeal", &[])
            .context("settings")?
            .common;
        let mut builder = fairdeal_kit::Application::builder(&common)
            .with_shutdown(shutdown.clone())
            .handle_signals(options.handle_signals)
            .listener(listener);
        for service in SERVICES {
            match (service.mount)(&embedded).await {
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
