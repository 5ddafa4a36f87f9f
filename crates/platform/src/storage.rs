//! [`Storage`]: a service's database, event store and append signal, opened in one call.
//!
//! [`Storage::open`] reads `--database-url` and the connection budget (through
//! [`Deployment`]), opens the pool ([`Db`]), runs the event store's, the bus's
//! and the service's own migrations, and wraps the store so every append fires the
//! [`AppendSignal`] that wakes the relay, the in-process consumers and any live reader
//! (e.g. a table's watchers). Services append through [`Storage::events`]; one that appends
//! inside its own transaction (through [`Storage::backend`]) calls [`Storage::notify`] after
//! the commit.

use std::sync::Arc;

use crate::error::SetupError;
use crate::settings::Deployment;
use fairdeal_bus::{AppendSignal, NotifyingEventStore};
use fairdeal_db::{ConnectionBudget, Db, Migrations, Schema};
use fairdeal_eventstore::{AnyEventStore, EventStore};

use crate::ownership::Woken;

/// Owners' wake-ups a receiver may fall behind by before it counts as having missed some.
const OWNER_WAKES: usize = 1024;

/// A service's opened storage. Cheap to clone: every clone shares the pool and the signal.
#[derive(Debug, Clone)]
pub struct Storage {
    /// The database (pool and, on PostgreSQL, schema).
    db: Db,
    /// The event store on its backend, for appends inside the service's own transactions.
    backend: AnyEventStore,
    /// The store wrapped to fire `signal` after every append.
    events: Arc<dyn EventStore>,
    /// Fired after each append: wakes the relay, in-process consumers and live readers.
    signal: AppendSignal,
    /// The wake-ups of this schema's aggregate owners the listener hears
    /// (`crate::ownership::Wake`).
    owner_wakes: tokio::sync::broadcast::Sender<Woken>,
    /// Raised whenever a keeper of this schema announces a change in who holds what, as the
    /// listener hears it (`crate::ownership::LEASES_CHANNEL`).
    lease_changes: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Storage {
    /// Opens the database `deployment` names (PostgreSQL: in `schema`), and migrates the
    /// event store, the bus tables and then each of `migrations` in order.
    pub async fn open(
        deployment: &impl Deployment,
        schema: &str,
        migrations: &[&Migrations],
    ) -> Result<Self, SetupError> {
        let url = deployment.database_url()?;
        let schema = Schema::new(schema).map_err(|e| SetupError::Invalid {
            field: "schema",
            reason: e.to_string(),
        })?;
        let budget = deployment.connection_budget()?;
        let db = Db::open_with_budget(&url, &schema, budget).await?;
        Self::over_with_budget(db, budget, migrations).await
    }

    /// Storage over an opened `db` (the all-in-one process shares one SQLite file between
    /// services this way), migrated like [`Storage::open`].
    pub async fn over(db: Db, migrations: &[&Migrations]) -> Result<Self, SetupError> {
        Self::over_with_budget(db, ConnectionBudget::default(), migrations).await
    }

    /// [`Storage::over`], the event store's readers and writers sized from `budget` (the
    /// pool of `db` was sized from it already).
    async fn over_with_budget(
        db: Db,
        budget: ConnectionBudget,
        migrations: &[&Migrations],
    ) -> Result<Self, SetupError> {
        let backend = AnyEventStore::open_with_budget(&db, budget).await?;
        let bus = fairdeal_bus::db::MIGRATIONS.name;
        db.migrate(&fairdeal_bus::db::MIGRATIONS)
            .await
            .map_err(|source| SetupError::Migrate {
                component: bus,
                source,
            })?;
        let signal = AppendSignal::new();
        let events: Arc<dyn EventStore> = Arc::new(NotifyingEventStore::new(
            backend.clone().into_dyn(),
            signal.clone(),
        ));
        let storage = Self {
            db,
            backend,
            events,
            signal,
            owner_wakes: tokio::sync::broadcast::Sender::new(OWNER_WAKES),
            lease_changes: Arc::new(tokio::sync::watch::Sender::new(0)),
        };
        storage.migrate(migrations).await?;
        Ok(storage)
    }

    /// Runs `migrations` (another service's) on this storage's database. The all-in-one
    /// process opens one storage and hands a clone to every service, so that they share the
    /// log and its append signal: each service's tables are migrated this way.
    pub async fn migrate(&self, migrations: &[&Migrations]) -> Result<(), SetupError> {
        for migrations in migrations {
            self.db
                .migrate(migrations)
                .await
                .map_err(|source| SetupError::Migrate {
                    component: migrations.name,
                    source,
                })?;
        }
        Ok(())
    }

    /// The database, for the service's own tables.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The event store to append through: every append wakes the relay and the readers.
    pub fn events(&self) -> Arc<dyn EventStore> {
        Arc::clone(&self.events)
    }

    /// The store on its backend, for appends inside the service's own transactions
    /// (`append_in_tx`); call [`Storage::notify`] after such a transaction commits.
    pub fn backend(&self) -> &AnyEventStore {
        &self.backend
    }

    /// The signal fired after each append.
    pub fn signal(&self) -> &AppendSignal {
        &self.signal
    }

    /// The wake-ups of this schema's aggregate owners, as the PostgreSQL listener hears them
    /// (the bus's, on the same connection as the appends'): an aggregate with an event its
    /// owner may not have seen, or [`Woken::Missed`] whenever the listener (re)connects. A
    /// receiver that lags behind has missed some: it must act as for `Missed`. Nothing
    /// is heard on SQLite (one process, no other owner).
    pub fn owner_wakes(&self) -> tokio::sync::broadcast::Receiver<Woken> {
        self.owner_wakes.subscribe()
    }

    /// A count raised whenever a keeper of this schema announces that who holds what has
    /// changed, or the listener (re)connects (an announcement may have been missed): a
    /// keeper hearing it runs a round at once (`crate::ownership::Keeper::hearing`).
    /// Nothing is heard on SQLite (one process, no leases).
    pub fn lease_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.lease_changes.subscribe()
    }

    /// Whom the listener tells of what it hears.
    pub(crate) fn hearers(&self) -> crate::wake::Hearers {
        crate::wake::Hearers {
            appends: self.signal.clone(),
            owner_wakes: self.owner_wakes.clone(),
            lease_changes: Arc::clone(&self.lease_changes),
        }
    }

    /// Tells the relay and readers that events were committed outside [`Storage::events`].
    pub fn notify(&self) {
        self.signal.notify();
    }
}
