//! One host for every service.
//!
//! A service of the platform is a type implementing [`Service`]: its name, its typed
//! settings, its migrations, the parts it is assembled from, how it mounts its routes and
//! background tasks, and what it changes of its defaults inside the all-in-one process. The
//! rest is written once, here:
//!
//! - [`Application<S>`]: the service on a gRPC server of its own (`build` from a loaded
//!   configuration, or `assemble` from parts a test made), bound and ready to run;
//! - [`main`] and [`serve`]: a service binary's whole `main`, and `fairdeal-server serve
//!   --target <name>` (the same command line, flags, environment and `--config` file);
//! - [`Hosted`]: a service without its types, so one list (`fairdeal_server::SERVICES`) drives
//!   `up`, `serve`, the secrets of the all-in-one process and the deployment files' checks;
//! - [`Embedded`]: what the all-in-one process gives each service (the one address, the data
//!   directory, the secrets it generated, the moderators), from which [`Service::embed`] sets
//!   the service's settings in code, typed: no flag strings.
//!
//! docs/services.md is the recipe for a new service.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;

use anyhow::Context as _;
pub use fairdeal_db::Migrations;
use fairdeal_platform::Storage;

use crate::config::{self, CommonConfig, Config, Secret, SecretUrl, Section};
use crate::deployment::Deployment;
use crate::server::{self, Mount, ServeError};
use crate::shutdown::Shutdown;
use crate::start::StartError;

/// A service of the platform, as its host sees it (see the module docs).
pub trait Service: Send + Sync + 'static {
    /// Its name: the binary `fairdeal-<NAME>`, the default `--service-name`, its events'
    /// stream (`<prefix>.<NAME>`) and, unless [`Service::schema`] says otherwise, its
    /// PostgreSQL schema.
    const NAME: &'static str;
    /// Its own migrations, run after the event store's and the bus's.
    const MIGRATIONS: &'static [&'static Migrations];
    /// How it is deployed: what its deployment files are generated from.
    const DEPLOYMENT: Deployment;
    /// Its event store's group commit writers on PostgreSQL when `--db-writers` names none
    /// (`None`: as the connection budget gives them).
    const DB_WRITERS: Option<u32> = None;
    /// Its own settings (flags, `FAIRDEAL_*` environment, a `--config` file section).
    type Settings: Section;
    /// What it is assembled from; tests build their own.
    type Parts: Send;
    /// What a running instance exposes beside its routes (tests read it); `()` for most.
    type Handles: fmt::Debug + Send + Sync;

    /// The PostgreSQL schema of its tables and event log.
    fn schema(settings: &Self::Settings) -> String {
        let _ = settings;
        Self::NAME.to_owned()
    }

    /// Its parts from its configuration over its opened `storage`.
    fn parts(
        config: &Config<Self::Settings>,
        storage: Storage,
    ) -> impl Future<Output = Result<Self::Parts, StartError>> + Send;

    /// Starts its background tasks on `shutdown` and returns its routes, to serve alone
    /// ([`Application`]) or beside the other services on one server (the all-in-one
    /// process).
    fn mount(
        common: &CommonConfig,
        parts: Self::Parts,
        shutdown: &Shutdown,
    ) -> impl Future<Output = Result<(Mount, Self::Handles), StartError>> + Send;

    /// Changes its default `settings` for the all-in-one process (the peers' addresses, its
    /// secrets); the result is validated as a loaded configuration is.
    fn embed(settings: &mut Self::Settings, host: &Embedded) -> Result<(), StartError>;
}

/// Opens the storage of service `S` as `config` names it: its database (its schema on
/// PostgreSQL) migrated for the event store, the bus and `S`.
pub async fn open_storage<S: Service>(config: &Config<S::Settings>) -> Result<Storage, StartError> {
    let schema = S::schema(&config.service);
    Ok(Storage::open(
        &storage_settings::<S>(&config.common),
        &schema,
        S::MIGRATIONS,
    )
    .await?)
}

/// `common` as service `S` opens its storage with: its own number of writers
/// ([`Service::DB_WRITERS`]) where `--db-writers` names none.
pub fn storage_settings<S: Service>(common: &CommonConfig) -> CommonConfig {
    let mut common = common.clone();
    common.db_writers = common.db_writers.or(S::DB_WRITERS);
    common
}

/// Service `S` on a gRPC server of its own, bound.
pub struct Application<S: Service> {
    /// The kit's server.
    server: server::Application,
    /// What the service exposes to tests.
    handles: S::Handles,
}

impl<S: Service> fmt::Debug for Application<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Application")
            .field("service", &S::NAME)
            .field("server", &self.server)
            .field("handles", &self.handles)
            .finish()
    }
}

impl<S: Service> Application<S> {
    /// Opens the storage `config` names, assembles the service and binds its listener.
    pub async fn build(config: Config<S::Settings>) -> Result<Self, StartError> {
        let storage = open_storage::<S>(&config).await?;
        let parts = S::parts(&config, storage).await?;
        Self::assemble(&config.common, parts).await
    }

    /// Mounts `parts` on a server of its own and binds it; SIGTERM and SIGINT drain it.
    pub async fn assemble(common: &CommonConfig, parts: S::Parts) -> Result<Self, StartError> {
        Self::assemble_with(common, parts, true).await
    }

    /// [`Application::assemble`], with or without the signal handlers (tests running many
    /// servers in one process leave them out).
    pub async fn assemble_with(
        common: &CommonConfig,
        parts: S::Parts,
        handle_signals: bool,
    ) -> Result<Self, StartError> {
        let shutdown = Shutdown::new();
        let (routes, handles) = match S::mount(common, parts, &shutdown).await {
            Ok(mounted) => mounted,
            Err(error) => {
                shutdown.stop_background();
                return Err(error);
            }
        };
        let server = server::Application::builder(common)
            .with_shutdown(shutdown)
            .handle_signals(handle_signals)
            .mount(routes)
            .build()
            .await?;
        Ok(Self { server, handles })
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

    /// What the service exposes beside its routes.
    pub fn handles(&self) -> &S::Handles {
        &self.handles
    }

    /// Serves until stopped, then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.server.run_until_stopped().await
    }
}

/// Runs service `S` with the command line `args` (the first is the program name) and the
/// process's environment: loads its configuration or exits (`--help`, `--dump-config`, a
/// bad setting), starts telemetry, builds, serves until stopped.
pub async fn serve<S: Service>(args: Vec<OsString>) -> anyhow::Result<()> {
    let config = config::load_args_or_exit::<S::Settings, _, _>(S::NAME, args);
    let _telemetry = crate::telemetry::init(&config.common).context("telemetry")?;
    let app = Application::<S>::build(config).await.context("starting")?;
    app.run_until_stopped().await.context("serving")?;
    Ok(())
}

/// A service binary's `main`: [`serve`] with the process's arguments on a multi-threaded
/// runtime.
pub fn main<S: Service>() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?
        .block_on(serve::<S>(std::env::args_os().collect()))
}

/// What the all-in-one process gives every service it runs.
#[derive(Debug, Clone)]
pub struct Embedded {
    /// Where every service is reached, this one included.
    pub url: String,
    /// The one listen address (each service's `listen_addr`).
    pub listen: SocketAddr,
    /// The shared database (each service's `database_url`).
    pub database_url: SecretUrl,
    /// The data directory (the auth service's mailbox lives under it).
    pub data_dir: PathBuf,
    /// Usernames whose logins get the moderator role.
    pub moderators: Vec<String>,
    /// The secrets the process generated into its data directory, by name.
    secrets: BTreeMap<String, Secret>,
}

impl Embedded {
    /// The secret of the seed-commitment keys (the commitment service's `seed_keys`).
    pub const SEED_KEYS: &'static str = "seed_keys";
    /// The ledger's checkpoint signing key.
    pub const LEDGER_SIGNING_KEY: &'static str = "ledger_signing_key";
    /// Every service's `name:secret` (the auth service's `service_credentials`).
    pub const SERVICE_CREDENTIALS: &'static str = "service_credentials";

    /// A host at `url`, listening on `listen`, over `database_url`, without secrets yet.
    pub fn new(
        url: String,
        listen: SocketAddr,
        database_url: SecretUrl,
        data_dir: PathBuf,
        moderators: Vec<String>,
    ) -> Self {
        Self {
            url,
            listen,
            database_url,
            data_dir,
            moderators,
            secrets: BTreeMap::new(),
        }
    }

    /// Adds secret `name`.
    pub fn with_secret(mut self, name: impl Into<String>, value: Secret) -> Self {
        self.secrets.insert(name.into(), value);
        self
    }

    /// Adds the service secret of service `service` (its identity to the auth service).
    pub fn with_service_secret(self, service: &str, value: Secret) -> Self {
        self.with_secret(format!("service_secret.{service}"), value)
    }

    /// Secret `name`.
    pub fn secret(&self, name: &str) -> Result<Secret, StartError> {
        self.secrets
            .get(name)
            .cloned()
            .ok_or_else(|| StartError::Dependency {
                what: "embedded secrets",
                reason: format!("no secret `{name}`"),
            })
    }

    /// The service secret of service `service`.
    pub fn service_secret(&self, service: &str) -> Result<Secret, StartError> {
        self.secret(&format!("service_secret.{service}"))
    }

    /// Service `S`'s configuration in this process: its defaults, the shared database and
    /// listen address, what [`Service::embed`] sets; validated. The environment is not read,
    /// so the process's `FAIRDEAL_*` variables cannot pull one service elsewhere.
    pub fn config<S: Service>(&self) -> Result<Config<S::Settings>, StartError> {
        let mut config = Config::<S::Settings>::defaults(S::NAME)?;
        config.common.database_url = self.database_url.clone();
        config.common.listen_addr = self.listen;
        S::embed(&mut config.service, self)?;
        config.validate()?;
        Ok(config)
    }
}

/// A boxed future borrowing for `'a`.
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Hosted::mount`] of one service.
type MountFn =
    for<'a> fn(&'a Embedded, Storage, &'a Shutdown) -> BoxFuture<'a, Result<Mount, StartError>>;

/// [`Hosted::serve`] of one service (awaited by a `main`, so not required to be `Send`).
type ServeFn = fn(Vec<OsString>) -> Pin<Box<dyn Future<Output = anyhow::Result<()>>>>;

/// A service without its types: what a list of services (`up`, `serve`, the deployment
/// checks) needs of it.
#[derive(Clone, Copy)]
pub struct Hosted {
    /// Its name ([`Service::NAME`]).
    pub name: &'static str,
    /// Its migrations ([`Service::MIGRATIONS`]).
    pub migrations: &'static [&'static Migrations],
    /// How it is deployed ([`Service::DEPLOYMENT`]).
    pub deployment: Deployment,
    /// Mounts it in the all-in-one process.
    mount: MountFn,
    /// Serves it alone.
    serve: ServeFn,
}

impl fmt::Debug for Hosted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hosted").field("name", &self.name).finish()
    }
}

impl Hosted {
    /// Service `S`.
    pub const fn of<S: Service>() -> Self {
        Self {
            name: S::NAME,
            migrations: S::MIGRATIONS,
            deployment: S::DEPLOYMENT,
            mount: |host, storage, shutdown| Box::pin(mount_embedded::<S>(host, storage, shutdown)),
            serve: |args| Box::pin(serve::<S>(args)),
        }
    }

    /// Configures it for `host` ([`Embedded::config`]) and mounts it over the shared
    /// `storage` on `shutdown`, returning its routes.
    pub async fn mount(
        &self,
        host: &Embedded,
        storage: Storage,
        shutdown: &Shutdown,
    ) -> Result<Mount, StartError> {
        (self.mount)(host, storage, shutdown).await
    }

    /// Runs it alone with the command line `args`, as its own binary does ([`serve`]).
    pub async fn serve(&self, args: Vec<OsString>) -> anyhow::Result<()> {
        (self.serve)(args).await
    }
}

/// [`Hosted::mount`] of service `S`.
async fn mount_embedded<S: Service>(
    host: &Embedded,
    storage: Storage,
    shutdown: &Shutdown,
) -> Result<Mount, StartError> {
    let config = host.config::<S>()?;
    let parts = S::parts(&config, storage).await?;
    let (routes, _handles) = S::mount(&config.common, parts, shutdown).await?;
    Ok(routes)
}
