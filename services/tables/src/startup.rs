//! The tables service on the platform: its settings, its [`Parts`] and [`TablesService`], the [`Service`] the
//! kit's host runs (`main.rs`, `fairdeal-server serve` and `up`); tests build [`Parts`] of
//! their own and call [`Application::assemble`] on port 0.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_authn::{
    AuthLayer, Authenticator, CallerAuthSettings, ServiceIdentitySettings, TokenProvider,
    spawn_key_refresh,
};
use fairdeal_kit::client::{self, Target};
use fairdeal_kit::config::{Config, ConfigError, Section};
use fairdeal_kit::deployment::Deployment;
use fairdeal_kit::{CommonConfig, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::ownership::{self, Keeper, Leases, Wake, Woken};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::tables::v1::tables_service_server::TablesServiceServer;
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;
use tonic::transport::Channel;

use crate::clock::{SystemClock, TableClock};
use crate::grpc::TablesApi;
use crate::lobby::{CONSUMER, LobbyProjection, MIGRATIONS};
use crate::route::Router;
use crate::service::{Ownership, Tables};

/// PostgreSQL schema of this service's tables and event log (the host's default: its name).
pub const SCHEMA: &str = TablesService::NAME;

/// The partitions tables map to for ownership (PostgreSQL): fixed per deployment.
pub const PARTITIONS: u32 = 64;

/// How long a replica's lease on a partition (and its heartbeat) lasts unless renewed; its
/// keeper renews every [`LEASE_ROUND`]. A replica that dies loses its partitions within it,
/// and the survivors' next round takes them: within 5 s of the death.
pub const LEASE_TTL: Duration = Duration::from_secs(3);

/// How often a replica's keeper runs its round (renew, take, give up, read the routes).
pub const LEASE_ROUND: Duration = Duration::from_secs(1);

/// This process's name among the replicas holding leases: the host's (a pod's, a
/// container's) and a fresh suffix, so a restarted process is a new owner (its
/// predecessor's writes in flight are fenced by the new epochs).
fn replica_name() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "tables".to_owned());
    format!("{host}-{}", uuid::Uuid::now_v7().simple())
}

/// The tables service on a server of its own.
pub type Application = fairdeal_kit::host::Application<TablesService>;

/// The tables service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Tables settings")]
pub struct TablesSettings {
    /// The commitment service's gRPC address (`http://host:port` or `dns:///host:port`).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50052")]
    pub commitment_url: String,
    /// The dealing service's gRPC address (`http://host:port` or `dns:///host:port`).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50053")]
    pub dealing_url: String,
    /// Where callers' tokens are verified from (and, with `auth_url`, where this service
    /// gets its own token).
    #[command(flatten)]
    #[serde(flatten)]
    pub auth: CallerAuthSettings,
    /// This service's own identity for its calls to the commitment and dealing services.
    #[command(flatten)]
    #[serde(flatten)]
    pub identity: ServiceIdentitySettings,
    /// Where the other replicas reach this one's gRPC API (`http://host:port`), to forward
    /// it calls for the tables it owns (over PostgreSQL). Default: `http://` and the listen
    /// address, its host name (`HOSTNAME`) when it listens on every interface; in
    /// Kubernetes, the pod's IP (deploy/k8s/base/tables.yaml).
    #[arg(long, value_name = "URL")]
    pub advertise_url: Option<String>,
}

impl Section for TablesSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        self.identity.validate(self.auth.auth_url.as_deref())?;
        Target::parse("commitment_url", &self.commitment_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        Target::parse("dealing_url", &self.dealing_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        if let Some(url) = &self.advertise_url {
            match Target::parse("advertise_url", url) {
                Ok(Target::Direct(_)) => {}
                Ok(Target::Dns { .. }) => {
                    return Err(ConfigError::invalid(
                        "advertise_url",
                        "names every replica behind a name: give this one's own http://host:port",
                    ));
                }
                Err(e) => return Err(ConfigError::invalid(e.field, e.reason)),
            }
        }
        self.auth.validate()
    }
}

/// What the service is assembled from (tests supply their own).
#[derive(Debug)]
pub struct Parts {
    /// The database, event store and append signal.
    pub storage: Storage,
    /// A (lazy) channel to the commitment service.
    pub commitment: Channel,
    /// A (lazy) channel to the dealing service.
    pub dealing: Channel,
    /// This service's access token (role service, `tables`).
    pub tokens: Arc<dyn TokenProvider>,
    /// Verifies callers' tokens.
    pub authn: Authenticator,
    /// The time of turn deadlines.
    pub clock: Arc<dyn TableClock>,
    /// Where the other replicas reach this one (empty: they never forward to it).
    pub advertise_url: String,
}

/// Where the other replicas reach a replica listening at `listen` by default: that address,
/// or the host's name when it listens on every interface; none when the port is chosen by
/// the system (it is not known before the listener binds).
fn default_advertise_url(listen: std::net::SocketAddr) -> String {
    if listen.port() == 0 {
        return String::new();
    }
    if !listen.ip().is_unspecified() {
        return format!("http://{listen}");
    }
    match std::env::var("HOSTNAME") {
        Ok(host) if !host.is_empty() => format!("http://{host}:{}", listen.port()),
        _ => String::new(),
    }
}

impl Parts {
    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services).
    pub fn over(config: &Config<TablesSettings>, storage: Storage) -> Result<Self, StartError> {
        let settings = &config.service;
        let auth = settings.auth.auth_channel()?;
        let tokens = settings
            .identity
            .token_provider(&config.common.service_name, auth.as_ref())?;
        let authn = settings.auth.authenticator(auth)?;
        // Lazy: the other services may start after this one; calls fail UNAVAILABLE until
        // they are up.
        let commitment = client::channel("commitment_url", &settings.commitment_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        let dealing = client::channel("dealing_url", &settings.dealing_url)
            .map_err(|e| ConfigError::invalid(e.field, e.reason))?;
        Ok(Self {
            storage,
            commitment,
            dealing,
            tokens,
            authn,
            clock: Arc::new(SystemClock),
            advertise_url: settings
                .advertise_url
                .clone()
                .unwrap_or_else(|| default_advertise_url(config.common.listen_addr)),
        })
    }
}

/// What a running tables replica shows beside its routes (tests read it).
#[derive(Debug, Clone, Default)]
pub struct Handles {
    /// Who holds every partition and where it serves, as this replica's keeper last read
    /// them: where it forwards calls for the others' tables (`None`: every table is served
    /// here, on SQLite).
    pub routes: Option<tokio::sync::watch::Receiver<ownership::Routes>>,
}

/// The tables service, as the kit's host runs it.
#[derive(Debug)]
pub struct TablesService;

impl Service for TablesService {
    const NAME: &'static str = "tables";
    const MIGRATIONS: &'static [&'static fairdeal_db::Migrations] =
        &[&MIGRATIONS, &ownership::MIGRATIONS];
    const DEPLOYMENT: Deployment = Deployment {
        about: "live tables (seats, lobby, moves, per-seat views, turn timers), each owned by \
                one replica, a call for it forwarded there from any other",
        calls: &["commitment", "dealing", "auth", "tables"],
        signs_in: true,
        compose_replicas: 2,
        ..Deployment::PLAIN
    };
    /// One: a move's appends are few and small, and on the load bench one writer's larger
    /// commit groups cost PostgreSQL a fifth less CPU per move than two writers' did, with
    /// one replica or several (docs/decisions.md, "Writers per store").
    const DB_WRITERS: Option<u32> = Some(1);
    type Settings = TablesSettings;
    type Parts = Parts;
    type Handles = Handles;

    async fn parts(config: &Config<TablesSettings>, storage: Storage) -> Result<Parts, StartError> {
        Parts::over(config, storage)
    }

    /// Starts the service's background tasks on `shutdown` (key refresh, the relay, the lobby
    /// consumer, the turn clocks) and returns its gRPC routes, to serve alone
    /// ([`Application::assemble`]) or beside other services on one server (the all-in-one
    /// process).
    async fn mount(
        common: &CommonConfig,
        parts: Parts,
        shutdown: &Shutdown,
    ) -> Result<(Mount, Handles), StartError> {
        spawn_key_refresh(&parts.authn, shutdown);
        let bus = Bus::start(common, &parts.storage, Self::NAME, shutdown).await?;
        let mut tables = Tables::new(
            &parts.storage,
            parts.commitment,
            parts.dealing,
            parts.tokens,
            parts.clock,
            shutdown.clone(),
        );
        // Over PostgreSQL, replicas share the tables' partitions through leases; each keeps
        // the turn clocks of its own only, and forwards calls for the others' to them
        // (docs/decisions.md, "Who owns a table").
        let mut router = None;
        let mut handles = Handles::default();
        let mut projection = LobbyProjection::waking(tables.owed_steps());
        if let fairdeal_db::Db::Postgres { pool, schema } = parts.storage.db() {
            let advertise_url = parts.advertise_url.clone();
            let leases = Leases::new(pool.clone(), schema, replica_name(), LEASE_TTL)
                .serving_at(parts.advertise_url);
            // Each epoch taken is marked with where it starts in the store, so the
            // projection can tell which rows the new owner's load may have missed.
            // The others' announcements (a replica joins, drains, takes over) start a round
            // at once: a drained table is taken, and routed to, without waiting for one.
            let keeper = Keeper::new(leases, PARTITIONS)
                .marking_starts(parts.storage.backend().clone().into_dyn())
                .hearing(parts.storage.lease_changes());
            // A first share before the clocks start, so they do not start with none; a
            // lease table that cannot be used stops the start rather than every clock.
            keeper.tick().await.map_err(|e| StartError::Dependency {
                what: "partition leases",
                reason: e.to_string(),
            })?;
            let ownership = Ownership {
                partitions: PARTITIONS,
                owned: keeper.owned(),
            };
            tables = tables.with_ownership(ownership.clone());
            // What the projection reaches late, the owner hears of at once (nothing polls).
            projection = projection.with_owner_wake(Wake::new(schema, PARTITIONS));
            let owed = tables.owed_steps();
            let mut wakes = parts.storage.owner_wakes();
            let stop = shutdown.token();
            shutdown.spawn("owner-wakes", async move {
                loop {
                    let woken = tokio::select! {
                        () = stop.cancelled() => return,
                        woken = wakes.recv() => woken,
                    };
                    match woken {
                        Ok(Woken::Aggregate(table_id)) => owed.wake(table_id),
                        // Some were missed (the listener reconnected, or this fell behind).
                        Ok(Woken::Missed) | Err(RecvError::Lagged(_)) => owed.reload(),
                        Err(RecvError::Closed) => return,
                    }
                }
            });
            handles.routes = Some(keeper.routes());
            router = Some(
                Router::new(keeper.owner(), ownership, keeper.routes()).serving_at(&advertise_url),
            );
            shutdown.spawn(
                "partition-leases",
                keeper.run(LEASE_ROUND, shutdown.token()),
            );
        }
        let mut api = TablesApi::new(tables.clone());
        if let Some(router) = router {
            api = api.routing(router);
        }
        bus.spawn_consumer(Self::NAME, CONSUMER, Arc::new(projection), shutdown)
            .await?;
        shutdown.spawn("turn-clocks", tables.clone().run_timers(shutdown.token()));
        let routes = Mount::new()
            .add_service(AuthLayer::new(parts.authn).wrap(TablesServiceServer::new(api)))
            .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET);
        Ok((routes, handles))
    }

    /// In one process: its peers at the host's address, the service secret it generated.
    fn embed(settings: &mut TablesSettings, host: &Embedded) -> Result<(), StartError> {
        settings.commitment_url = host.url.clone();
        settings.dealing_url = host.url.clone();
        settings.auth.auth_url = Some(host.url.clone());
        settings.identity.service_secret = Some(host.service_secret(Self::NAME)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_replica_appends_through_one_writer_unless_told_otherwise() {
        let common = CommonConfig::with_defaults(TablesService::NAME).unwrap();
        let writers = |common: &CommonConfig| {
            fairdeal_kit::host::storage_settings::<TablesService>(common)
                .connection_budget()
                .unwrap()
                .writers()
        };
        assert_eq!(writers(&common), 1);
        // The flag wins.
        let told = CommonConfig {
            db_writers: Some(3),
            ..common.clone()
        };
        assert_eq!(writers(&told), 3);
        // Elsewhere the budget's own number stands.
        assert_eq!(common.connection_budget().unwrap().writers(), 2);
    }
}
