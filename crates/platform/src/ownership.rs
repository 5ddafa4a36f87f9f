//! Ownership of a service's aggregates by partition, through leases with fencing tokens in
//! the service's own PostgreSQL schema (issue 33's first part; docs/decisions.md, "Who owns
//! a table").
//!
//! An aggregate's id maps to one of a fixed number of partitions ([`partition_of`]). A
//! replica holds a partition through a [`Lease`]: its owner name, until when (judged by the
//! database's clock, never a replica's), and its epoch. Taking a partition over (it was free,
//! or its lease expired) raises the epoch; renewing keeps it. The epoch is the fencing
//! token: an owner checks its lease inside the transaction that writes for the partition
//! ([`Leases::fence`]), with a shared row lock, so
//! - a stale owner's write fails (its epoch is not the row's, or the lease has expired), and
//! - a takeover waits for every write already past its check to commit, so none lands after
//!   the new owner starts deciding.
//!
//! The event store checks the same fence itself, inside its group commit's one statement:
//! an append carrying a lease's [`Fence`] ([`Lease::fence`], [`Ownership::fence`]) is
//! written only while that lease holds (`fairdeal_eventstore::fence`).
//! [`Keeper`] holds one replica's fair share of the partitions: it renews, takes what is free
//! or expired, drains what is above its share, and releases everything when it stops. Each
//! round it also reads who holds every partition and where that replica serves
//! ([`Routes`]), so a call for an aggregate another replica owns can be forwarded there.
//! A round that changes who holds what (a replica joins, takes, gives up or leaves)
//! announces it on [`LEASES_CHANNEL`]; the other keepers hear it ([`Keeper::hearing`]) and
//! run a round at once, so a drained partition is taken, and the routes name a new owner,
//! within a round trip rather than at the next round.
//!
//! The embedded default is one process owning everything: it holds no leases.

use std::time::Duration;

use fairdeal_db::Schema;
use fairdeal_eventstore::Fence;
use sqlx::{AssertSqlSafe, PgConnection, PgPool};
use uuid::Uuid;

/// The migrations of the lease table (versions 3000-3999), tracked as `_fairdeal_ownership_migrations`.
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "fairdeal_ownership",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// The partition of aggregate `id` among `partitions` (at least 1): the low 64 bits of the
/// UUID (random in a v7 UUID) modulo the count, so the same id always lands on the same
/// partition and ids spread evenly.
pub fn partition_of(id: &Uuid, partitions: u32) -> u32 {
    let (_, low) = id.as_u64_pair();
    // The remainder is below `partitions`, a u32.
    (low % u64::from(partitions.max(1))) as u32
}

/// A partition held by an owner until `expires_at_ms`, at `epoch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The partition.
    pub partition: u32,
    /// The owner's name (a replica's: its pod name, say).
    pub owner: String,
    /// The fencing token: raised by every takeover.
    pub epoch: i64,
    /// When the lease ends unless renewed (Unix ms, the database's clock).
    pub expires_at_ms: i64,
}

impl Lease {
    /// The fence an append for this lease's partition passes: written only while the lease
    /// is still this one (see `fairdeal_eventstore::fence`; the store's
    /// [`EventStore::append_fenced`](fairdeal_eventstore::EventStore::append_fenced)).
    pub fn fence(&self) -> Fence {
        Fence {
            partition: self.partition,
            owner: self.owner.clone(),
            epoch: self.epoch,
        }
    }

    /// The lease as a write decided under it remembers it ([`Held`]).
    pub fn held(&self) -> Held {
        Held {
            epoch: self.epoch,
            expires_at_ms: self.expires_at_ms,
        }
    }
}

/// A lease as this replica held it when it decided a write: its epoch, and its expiry as
/// last published (each renewal moves it on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The lease's epoch.
    pub epoch: i64,
    /// Its expiry (Unix ms, the database's clock).
    pub expires_at_ms: i64,
}

impl Held {
    /// Whether a write decided under `then` (`None`: the partition was not held) and refused
    /// by the fence may be decided again under this lease, held now: it is another lease (a
    /// new epoch), or the same one renewed since. A renewal judges the lease live when its
    /// statement starts, the fence judges it by the clock when it runs: a renewal that
    /// commits just after a fence judged the lease expired keeps its epoch, so no new epoch
    /// comes to say the partition is held, and only the expiry moving on does.
    pub fn after_fence(self, then: Option<Held>) -> bool {
        then.is_none_or(|then| self.epoch != then.epoch || self.expires_at_ms > then.expires_at_ms)
    }
}

/// Why a write for a partition may not go on.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The lease is no longer this owner's at this epoch, or has expired: another replica
    /// may own the partition now.
    #[error("partition {partition}: the lease at epoch {epoch} is no longer held")]
    Fenced {
        /// The partition.
        partition: u32,
        /// The epoch the writer held.
        epoch: i64,
    },
    /// The database failed.
    #[error("partition leases: {0}")]
    Database(#[from] sqlx::Error),
    /// The event store could not say where a new epoch starts.
    #[error("partition leases: the event store's position: {0}")]
    Store(#[from] fairdeal_eventstore::StoreError),
}

/// The leases of one owner over a service's partitions, in that service's schema. The
/// statements name the table qualified by the schema, a checked identifier ([`Schema`]);
/// every value is bound.
#[derive(Debug, Clone)]
pub struct Leases {
    pool: PgPool,
    schema: String,
    table: String,
    owners: String,
    owner: String,
    address: String,
    ttl: Duration,
}

type Row = (i32, String, i64, i64);

fn lease((partition, owner, epoch, expires_at_ms): Row) -> Lease {
    Lease {
        // Stored from a u32.
        partition: u32::try_from(partition).unwrap_or_default(),
        owner,
        epoch,
        expires_at_ms,
    }
}

/// The columns of a lease, its expiry as Unix ms.
const COLUMNS: &str =
    "partition, owner, epoch, (extract(epoch FROM expires_at) * 1000)::bigint AS expires_at_ms";

impl Leases {
    /// `owner`'s leases in `schema` of `pool`'s database, each taken or renewed for `ttl`.
    pub fn new(pool: PgPool, schema: &Schema, owner: impl Into<String>, ttl: Duration) -> Self {
        Leases {
            pool,
            schema: schema.as_str().to_owned(),
            table: format!("{}.partition_leases", schema.quoted()),
            owners: format!("{}.lease_owners", schema.quoted()),
            owner: owner.into(),
            address: String::new(),
            ttl,
        }
    }

    /// The same leases, their owner announcing `address` (where it serves, e.g.
    /// `http://10.0.3.7:50051`) in its heartbeat, for the others' [`Routes`]. Without one the
    /// owner is never routed to.
    #[must_use]
    pub fn serving_at(mut self, address: impl Into<String>) -> Self {
        self.address = address.into();
        self
    }

    /// The owner's name.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// Takes `partition` when it is free or its lease has expired (raising the epoch), or
    /// renews it when this owner holds it; `None` while another owner's lease runs.
    pub async fn acquire(&self, partition: u32) -> Result<Option<Lease>, LeaseError> {
        let sql = format!(
            "INSERT INTO {table} AS l (partition, owner, epoch, expires_at) \
             VALUES ($1, $2, 1, now() + make_interval(secs => $3::double precision / 1000)) \
             ON CONFLICT (partition) DO UPDATE SET \
               owner = excluded.owner, \
               epoch = CASE WHEN l.owner = excluded.owner AND l.expires_at > now() \
                            THEN l.epoch ELSE l.epoch + 1 END, \
               since_position = CASE WHEN l.owner = excluded.owner AND l.expires_at > now() \
                                     THEN l.since_position END, \
               expires_at = excluded.expires_at \
             WHERE l.owner = excluded.owner OR l.expires_at <= now() \
             RETURNING {COLUMNS}",
            table = self.table
        );
        let row: Option<Row> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(i32::try_from(partition).unwrap_or(i32::MAX))
            .bind(&self.owner)
            .bind(self.ttl_ms())
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(lease))
    }

    /// Records where the epochs of `held` start in the service's event store: `position`,
    /// the last event committed after their takeovers committed (see
    /// [`Keeper::marking_starts`]), in one statement. Written once per epoch (a start
    /// already recorded stays). Returns the partitions still held, whose start is recorded.
    pub async fn mark_starts(&self, held: &[Lease], position: u64) -> Result<Vec<u32>, LeaseError> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "UPDATE {table} AS l SET since_position = coalesce(l.since_position, $4) \
             FROM unnest($1::integer[], $2::bigint[]) AS h(partition, epoch) \
             WHERE l.partition = h.partition AND l.epoch = h.epoch AND l.owner = $3 \
               AND l.expires_at > now() \
             RETURNING l.partition",
            table = self.table
        );
        let partitions: Vec<i32> = held
            .iter()
            .map(|l| i32::try_from(l.partition).unwrap_or(i32::MAX))
            .collect();
        let epochs: Vec<i64> = held.iter().map(|l| l.epoch).collect();
        let marked: Vec<i32> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(partitions)
            .bind(epochs)
            .bind(&self.owner)
            .bind(i64::try_from(position).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?;
        Ok(marked
            .into_iter()
            .filter_map(|p| u32::try_from(p).ok())
            .collect())
    }

    /// Extends `held` by the ttl while it is still this owner's at its epoch and unexpired;
    /// [`LeaseError::Fenced`] otherwise (the partition must be taken again, at a new epoch).
    pub async fn renew(&self, held: &Lease) -> Result<Lease, LeaseError> {
        let renewed = self.renew_all(std::slice::from_ref(held)).await?;
        renewed.into_iter().next().ok_or(LeaseError::Fenced {
            partition: held.partition,
            epoch: held.epoch,
        })
    }

    /// Extends every lease of `held` that is still this owner's at its epoch and unexpired,
    /// in one statement; returns those renewed (the others are lost: taken again only at a
    /// new epoch).
    pub async fn renew_all(&self, held: &[Lease]) -> Result<Vec<Lease>, LeaseError> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "UPDATE {table} AS l \
             SET expires_at = now() + make_interval(secs => $4::double precision / 1000) \
             FROM unnest($1::integer[], $2::bigint[]) AS h(partition, epoch) \
             WHERE l.partition = h.partition AND l.epoch = h.epoch AND l.owner = $3 \
               AND l.expires_at > now() \
             RETURNING l.partition, l.owner, l.epoch, \
               (extract(epoch FROM l.expires_at) * 1000)::bigint AS expires_at_ms",
            table = self.table
        );
        let partitions: Vec<i32> = held
            .iter()
            .map(|l| i32::try_from(l.partition).unwrap_or(i32::MAX))
            .collect();
        let epochs: Vec<i64> = held.iter().map(|l| l.epoch).collect();
        let rows: Vec<Row> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(partitions)
            .bind(epochs)
            .bind(&self.owner)
            .bind(self.ttl_ms())
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(lease).collect())
    }

    /// Gives `held` up at once (a drain): the next owner takes it without waiting for the
    /// expiry. Whether it was still held.
    pub async fn release(&self, held: &Lease) -> Result<bool, LeaseError> {
        let sql = format!(
            "UPDATE {table} SET expires_at = now() \
             WHERE partition = $1 AND owner = $2 AND epoch = $3 AND expires_at > now()",
            table = self.table
        );
        let done = sqlx::query(AssertSqlSafe(sql))
            .bind(i32::try_from(held.partition).unwrap_or(i32::MAX))
            .bind(&self.owner)
            .bind(held.epoch)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The fence: inside the transaction `tx` that writes for `held`'s partition, checks
    /// that the lease is still this owner's at its epoch and unexpired, and locks its row
    /// for share until the transaction ends, so a takeover (which updates the row) waits for
    /// the write to commit or roll back. [`LeaseError::Fenced`] when the lease is gone: the
    /// caller rolls back. The expiry is judged at the check (`clock_timestamp()`, not the
    /// transaction's start); what keeps a takeover out from then on is the lock.
    pub async fn fence(&self, tx: &mut PgConnection, held: &Lease) -> Result<(), LeaseError> {
        let sql = format!(
            "SELECT 1 FROM {table} \
             WHERE partition = $1 AND owner = $2 AND epoch = $3 \
               AND expires_at > clock_timestamp() \
             FOR SHARE",
            table = self.table
        );
        let found: Option<i32> = sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(i32::try_from(held.partition).unwrap_or(i32::MAX))
            .bind(&self.owner)
            .bind(held.epoch)
            .fetch_optional(tx)
            .await?;
        found.map(|_| ()).ok_or(LeaseError::Fenced {
            partition: held.partition,
            epoch: held.epoch,
        })
    }

    /// Records this owner as taking part for the ttl, serving at its address (a keeper's
    /// heartbeat).
    pub async fn heartbeat(&self) -> Result<(), LeaseError> {
        let sql = format!(
            "INSERT INTO {owners} (owner, expires_at, address) \
             VALUES ($1, now() + make_interval(secs => $2::double precision / 1000), $3) \
             ON CONFLICT (owner) DO UPDATE \
             SET expires_at = excluded.expires_at, address = excluded.address",
            owners = self.owners
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(&self.owner)
            .bind(self.ttl_ms())
            .bind(&self.address)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Who holds each partition now and where it serves: the unexpired leases of owners
    /// whose heartbeat has not expired either.
    pub async fn routes(&self) -> Result<Routes, LeaseError> {
        let sql = format!(
            "SELECT l.partition, l.owner, o.address FROM {table} l \
             JOIN {owners} o ON o.owner = l.owner \
             WHERE l.expires_at > now() AND o.expires_at > now()",
            table = self.table,
            owners = self.owners
        );
        let rows: Vec<(i32, String, String)> = sqlx::query_as(AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(partition, owner, address)| {
                Some((u32::try_from(partition).ok()?, Route { owner, address }))
            })
            .collect())
    }

    /// Tells the other keepers of this schema that who holds what has changed
    /// ([`LEASES_CHANNEL`], payload `<schema> <owner>`): they run a round at once.
    pub async fn announce(&self) -> Result<(), LeaseError> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(LEASES_CHANNEL)
            .bind(format!("{} {}", self.schema, self.owner))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Stops taking part (a drain): the others stop counting this owner at once.
    pub async fn leave(&self) -> Result<(), LeaseError> {
        let sql = format!("DELETE FROM {} WHERE owner = $1", self.owners);
        sqlx::query(AssertSqlSafe(sql))
            .bind(&self.owner)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The owners taking part now (unexpired heartbeats), this one included if it beat.
    pub async fn live_owners(&self) -> Result<Vec<String>, LeaseError> {
        let sql = format!(
            "SELECT owner FROM {} WHERE expires_at > now() ORDER BY owner",
            self.owners
        );
        Ok(sqlx::query_scalar(AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await?)
    }

    /// The partitions held now, by any owner (unexpired leases).
    pub async fn held(&self) -> Result<std::collections::BTreeSet<u32>, LeaseError> {
        let sql = format!(
            "SELECT partition FROM {} WHERE expires_at > now()",
            self.table
        );
        let rows: Vec<i32> = sqlx::query_scalar(AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|p| u32::try_from(p).ok())
            .collect())
    }

    /// Every lease of the service's partitions, in partition order.
    pub async fn all(&self) -> Result<Vec<Lease>, LeaseError> {
        let sql = format!("SELECT {COLUMNS} FROM {} ORDER BY partition", self.table);
        let rows: Vec<Row> = sqlx::query_as(AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(lease).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_always_lands_on_the_same_partition_and_ids_spread() {
        let mut counts = [0u32; 8];
        for _ in 0..8_000 {
            let id = Uuid::now_v7();
            let p = partition_of(&id, 8);
            assert_eq!(partition_of(&id, 8), p);
            counts[p as usize] += 1;
        }
        assert!(
            counts.iter().all(|c| (800..1_200).contains(c)),
            "{counts:?}"
        );
        assert_eq!(partition_of(&Uuid::now_v7(), 0), 0);
    }

    #[test]
    fn a_fenced_write_is_decided_again_under_a_new_lease_or_the_same_one_renewed() {
        let then = Held {
            epoch: 4,
            expires_at_ms: 10_000,
        };
        let now = |epoch, expires_at_ms| Held {
            epoch,
            expires_at_ms,
        };
        // Taken again at a new epoch, or taken when it was not held.
        assert!(now(5, 9_000).after_fence(Some(then)));
        assert!(now(4, 10_000).after_fence(None));
        // The same lease renewed since the decision.
        assert!(now(4, 11_000).after_fence(Some(then)));
        // The same lease, not renewed: the fence would refuse the write again.
        assert!(!now(4, 10_000).after_fence(Some(then)));
    }
}

/// The notification channel on which a keeper announces that who holds what has changed
/// ([`Leases::announce`]); payload `<schema> <owner>`.
pub const LEASES_CHANNEL: &str = "fairdeal_leases";

/// Whether a notification's `payload` on [`LEASES_CHANNEL`] is about `schema`'s leases.
pub(crate) fn leases_changed(payload: &str, schema: &str) -> bool {
    payload.split(' ').next() == Some(schema)
}

/// What a [`Keeper`] holds: its leases by partition.
pub type Owned = std::collections::BTreeMap<u32, Lease>;

/// The notification channel on which a projection wakes the owner of an aggregate for an
/// event that owner cannot have seen; payload `<schema> <aggregate id>`.
pub const WAKE_CHANNEL: &str = "fairdeal_owner_wake";

/// Wakes owners for what a projection reaches late (issue 33: nothing polls).
///
/// An owner learns what it must do next (a table's turn deadline, a step owed) from its own
/// writes, and, for what earlier owners wrote, from the projection's rows, which it loads
/// when it takes a partition. A projection that lags may write such a row only after that
/// load. The keeper records where each epoch starts in the store ([`Keeper::marking_starts`]);
/// inside its own transaction, after writing its rows, the projection reads those starts
/// ([`Waking::wake_owners`]) and, for each aggregate whose event lies at or below its
/// partition's start (written under an earlier epoch), notifies [`WAKE_CHANNEL`] on commit.
/// The owner hears it through its storage (`crate::Storage::owner_wakes`: the process's one
/// listening connection). Read the other way round: a row
/// the owner's load missed was written after the load began; its projection reads the starts
/// after that, so it sees the new epoch's start, which is recorded before the load, and
/// wakes the owner. The owner's load must therefore wait for the projection's writers in
/// flight (its service locks the rows' table in share mode for the load), and a start not
/// recorded yet needs no wake-up: the load comes after it.
#[derive(Debug, Clone)]
pub struct Wake {
    schema: String,
    table: String,
    partitions: u32,
}

impl Wake {
    /// Wake-ups for the owners of the aggregates of `schema`, mapped to `partitions`.
    pub fn new(schema: &Schema, partitions: u32) -> Self {
        Wake {
            schema: schema.as_str().to_owned(),
            table: format!("{}.partition_leases", schema.quoted()),
            partitions: partitions.max(1),
        }
    }
}

/// A projection's connection that can wake owners ([`Wake`]).
pub trait Waking {
    /// Inside the projection's transaction, after it wrote the rows of `written` (each an
    /// aggregate and the store position of the event the row came from): notifies the
    /// owners of those written under an earlier epoch than their partition's current one.
    /// The notifications go out when the transaction commits (and never if it rolls
    /// back). Returns how many aggregates were woken.
    fn wake_owners(
        &mut self,
        wake: &Wake,
        written: &[(Uuid, u64)],
    ) -> impl Future<Output = Result<usize, sqlx::Error>> + Send;
}

impl Waking for PgConnection {
    async fn wake_owners(
        &mut self,
        wake: &Wake,
        written: &[(Uuid, u64)],
    ) -> Result<usize, sqlx::Error> {
        if written.is_empty() {
            return Ok(0);
        }
        let sql = format!(
            "SELECT partition, since_position FROM {} \
             WHERE since_position IS NOT NULL AND expires_at > now()",
            wake.table
        );
        let starts: std::collections::HashMap<i32, i64> = sqlx::query_as(AssertSqlSafe(sql))
            .fetch_all(&mut *self)
            .await?
            .into_iter()
            .collect();
        let mut woken: Vec<String> = written
            .iter()
            .filter(|(id, position)| {
                let partition =
                    i32::try_from(partition_of(id, wake.partitions)).unwrap_or(i32::MAX);
                starts
                    .get(&partition)
                    .is_some_and(|since| i64::try_from(*position).unwrap_or(i64::MAX) <= *since)
            })
            .map(|(id, _)| format!("{} {id}", wake.schema))
            .collect();
        woken.sort_unstable();
        woken.dedup();
        if !woken.is_empty() {
            sqlx::query("SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS w(payload)")
                .bind(WAKE_CHANNEL)
                .bind(&woken)
                .execute(&mut *self)
                .await?;
        }
        Ok(woken.len())
    }
}

impl Waking for sqlx::SqliteConnection {
    /// The embedded default is one process holding no leases: its own timers hear its
    /// projection directly, and there is no other owner to wake.
    async fn wake_owners(&mut self, _: &Wake, _: &[(Uuid, u64)]) -> Result<usize, sqlx::Error> {
        Ok(0)
    }
}

/// What an owner hears through its storage's `owner_wakes` (`crate::Storage::owner_wakes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The aggregate has an event its owner may not have seen: look at it again.
    Aggregate(Uuid),
    /// Wake-ups may have been missed (the listener was (re)connected, or a payload was
    /// not understood): load what the projection holds again.
    Missed,
}

/// What a wake-up's `payload` says to the owners of `schema` (`None`: another schema's).
pub(crate) fn woken(payload: &str, schema: &str) -> Option<Woken> {
    let (to, id) = payload.split_once(' ')?;
    if to != schema {
        return None;
    }
    Some(Uuid::parse_str(id).map_or(Woken::Missed, Woken::Aggregate))
}

/// The epoch of `partition`'s lease in `owned`, if held.
pub fn epoch_of(owned: &Owned, partition: u32) -> Option<i64> {
    owned.get(&partition).map(|lease| lease.epoch)
}

/// `partition`'s lease in `owned` as a write decided under it remembers it, if held.
pub fn held_of(owned: &Owned, partition: u32) -> Option<Held> {
    owned.get(&partition).map(Lease::held)
}

/// What one replica holds, as its [`Keeper`] publishes it: which aggregates are its own to
/// decide for (their clocks, their watchers fed from memory), and the [`Fence`] its appends
/// to them pass.
#[derive(Debug, Clone)]
pub struct Ownership {
    /// The number of partitions the aggregates' ids map to.
    pub partitions: u32,
    /// The partitions held now (the keeper's, [`Keeper::owned`]).
    pub owned: tokio::sync::watch::Receiver<Owned>,
}

impl Ownership {
    /// The partition `id` maps to.
    pub fn partition(&self, id: &Uuid) -> u32 {
        partition_of(id, self.partitions)
    }

    /// Whether `id`'s partition is held now.
    pub fn owns(&self, id: &Uuid) -> bool {
        self.owned
            .borrow()
            .contains_key(&partition_of(id, self.partitions))
    }

    /// The lease under which `id`'s partition is held here, as last published (`None`: not
    /// held): what a write decided now remembers ([`Held::after_fence`]).
    pub fn held(&self, id: &Uuid) -> Option<Held> {
        held_of(&self.owned.borrow(), partition_of(id, self.partitions))
    }

    /// The fence an append to `id`'s stream passes: the lease of its partition as held now
    /// (owner and epoch). `Err(partition)` when this replica does not hold that partition:
    /// it must not write for `id` (another replica owns it, or none does yet).
    pub fn fence(&self, id: &Uuid) -> Result<Fence, u32> {
        let partition = partition_of(id, self.partitions);
        self.owned
            .borrow()
            .get(&partition)
            .map(Lease::fence)
            .ok_or(partition)
    }

    /// Resolves at the first keeper round (one a second) after which `id`'s partition is
    /// not held here: the aggregate is served elsewhere from then on. Never, once the keeper
    /// has stopped (the replica drains, and what waits on this ends with it).
    pub async fn moved_away(&self, id: &Uuid) {
        let mut owned = self.owned.clone();
        let partition = partition_of(id, self.partitions);
        loop {
            if owned.changed().await.is_err() {
                return std::future::pending().await;
            }
            if !owned.borrow_and_update().contains_key(&partition) {
                return;
            }
        }
    }
}

/// Where a partition's owner serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The owner's name.
    pub owner: String,
    /// Its address (empty: it cannot be reached by the others).
    pub address: String,
}

/// Every held partition's [`Route`], as a keeper last read them (a partition with no live
/// owner is missing).
pub type Routes = std::collections::BTreeMap<u32, Route>;

/// One replica's share of the partitions, kept by [`Keeper::tick`] (and [`Keeper::run`]):
/// it renews what it holds, takes free or expired partitions up to its fair share, and gives
/// up (releases) what is above it, so a replica that joins is handed partitions by the others'
/// drains, and the partitions of one that died are taken once its leases expire.
///
/// The fair share is the partitions divided by the live owners (those whose keeper's
/// heartbeat has not expired, this one included), rounded up. What it holds is published on a watch channel
/// ([`Keeper::owned`]): a partition leaves it as soon as a renewal fails, so the replica
/// stops deciding for it at once; its writes are fenced in any case.
#[derive(Debug)]
pub struct Keeper {
    leases: Leases,
    partitions: u32,
    owned: tokio::sync::watch::Sender<Owned>,
    routes: tokio::sync::watch::Sender<Routes>,
    /// When the leases held were last renewed (this process's clock).
    renewed: std::sync::Mutex<Option<std::time::Instant>>,
    /// The event store whose position marks where each epoch taken starts, if any.
    starts: Option<std::sync::Arc<dyn fairdeal_eventstore::EventStore>>,
    /// Whether this keeper's first heartbeat has been announced.
    joined: std::sync::atomic::AtomicBool,
    /// The other keepers' announcements, as the storage's listener hears them.
    changes: Option<tokio::sync::watch::Receiver<u64>>,
}

impl Keeper {
    /// A keeper of `leases`' owner over `partitions` partitions (at least 1), holding none.
    pub fn new(leases: Leases, partitions: u32) -> Self {
        Keeper {
            leases,
            partitions: partitions.max(1),
            owned: tokio::sync::watch::Sender::new(Owned::new()),
            routes: tokio::sync::watch::Sender::new(Routes::new()),
            renewed: std::sync::Mutex::new(None),
            starts: None,
            joined: std::sync::atomic::AtomicBool::new(false),
            changes: None,
        }
    }

    /// The same keeper, running a round as soon as `changes` changes (besides every
    /// `every`, [`Keeper::run`]): a count the storage's listener raises whenever a keeper of
    /// the schema announces a change on [`LEASES_CHANNEL`], or whenever it (re)connects
    /// (an announcement may have been missed).
    #[must_use]
    pub fn hearing(mut self, changes: tokio::sync::watch::Receiver<u64>) -> Self {
        self.changes = Some(changes);
        self
    }

    /// The same keeper, recording in each lease it takes where the new epoch starts in
    /// `store` ([`Leases::mark_starts`]: the last event committed once the takeovers have, read once a round), before
    /// the partition is published as held. Every event of the partition at or below it was
    /// written by an earlier owner, every later one by this epoch's: a projection that lags
    /// can tell which events the owner cannot have seen, and wake it for them
    /// ([`Wake`]).
    #[must_use]
    pub fn marking_starts(
        mut self,
        store: std::sync::Arc<dyn fairdeal_eventstore::EventStore>,
    ) -> Self {
        self.starts = Some(store);
        self
    }

    /// Marks where the epochs of `taken` (just acquired) start, and returns the leases
    /// whose start is recorded. Leases whose start cannot be marked are given up again: a
    /// projection could not tell which of their events the owner has seen.
    async fn mark(&self, taken: Vec<Lease>) -> Result<Vec<Lease>, LeaseError> {
        let Some(store) = &self.starts else {
            return Ok(taken);
        };
        if taken.is_empty() {
            return Ok(taken);
        }
        // After the takeovers' commits: every write of an earlier owner that passed its
        // fence had committed before its takeover could (the fence's shared lock), and none
        // can pass it since.
        let marked = match store.committed_position().await {
            Ok(position) => self.leases.mark_starts(&taken, position).await,
            Err(error) => Err(error.into()),
        };
        match marked {
            Ok(marked) => Ok(taken
                .into_iter()
                .filter(|lease| marked.contains(&lease.partition))
                .collect()),
            Err(error) => {
                for lease in &taken {
                    if let Err(release) = self.leases.release(lease).await {
                        tracing::warn!(error = %release, partition = lease.partition, "partition leases: release failed");
                    }
                }
                Err(error)
            }
        }
    }

    /// What this replica holds, now and as it changes.
    pub fn owned(&self) -> tokio::sync::watch::Receiver<Owned> {
        self.owned.subscribe()
    }

    /// Who holds every partition and where it serves, as read at the end of each round.
    pub fn routes(&self) -> tokio::sync::watch::Receiver<Routes> {
        self.routes.subscribe()
    }

    /// The owner's name.
    pub fn owner(&self) -> &str {
        self.leases.owner()
    }

    /// One round: renew, then take or give up partitions toward the fair share, then read
    /// the routes, and announce ([`Leases::announce`]) a change in who holds what: this
    /// keeper's first heartbeat, a partition given up or taken. Returns what is held after
    /// it.
    pub async fn tick(&self) -> Result<Owned, LeaseError> {
        // Renew, in one statement: a lease that cannot be renewed is gone at once. When the
        // database cannot be reached, what is held is given up once a ttl has passed since
        // the last renewal (by this process's clock): its leases may have expired, and
        // another replica may hold them.
        let before: Vec<Lease> = self.owned.borrow().values().cloned().collect();
        let started = std::time::Instant::now();
        let renewed = match self.leases.renew_all(&before).await {
            Ok(renewed) => renewed,
            Err(error) => {
                let last = *self
                    .renewed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if last.is_none_or(|at| at.elapsed() >= self.leases.ttl) {
                    self.owned.send_replace(Owned::new());
                }
                return Err(error);
            }
        };
        *self
            .renewed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(started);
        let mut held: Owned = renewed
            .into_iter()
            .map(|lease| (lease.partition, lease))
            .collect();
        self.owned.send_replace(held.clone());

        self.leases.heartbeat().await?;
        let joined = !self.joined.load(std::sync::atomic::Ordering::Relaxed);
        let live = self.leases.live_owners().await?.len().max(1);
        let share = self
            .partitions
            .div_ceil(u32::try_from(live).unwrap_or(u32::MAX));
        let mut count = u32::try_from(held.len()).unwrap_or(u32::MAX);

        // Above the share: give up the highest partitions (a drain: released at once), each
        // only once this replica has stopped deciding for it (published without it).
        let mut surplus = Vec::new();
        while count > share {
            let Some((_, lease)) = held.pop_last() else {
                break;
            };
            surplus.push(lease);
            count -= 1;
        }
        if !surplus.is_empty() {
            self.owned.send_replace(held.clone());
        }
        for lease in &surplus {
            self.leases.release(lease).await?;
        }
        // Below it: take free or expired partitions, in order: those the lease table shows
        // free or expired now (one read), each taken by its own statement, which checks
        // again (another keeper may be quicker).
        // What is taken is published even when a statement fails midway: a lease taken and
        // not published would be nobody's until it expired.
        let mut failed = None;
        let mut took = false;
        if count < share {
            let taken = self.leases.held().await?;
            let mut acquired = Vec::new();
            for partition in 0..self.partitions {
                if count >= share {
                    break;
                }
                if held.contains_key(&partition) || taken.contains(&partition) {
                    continue;
                }
                match self.leases.acquire(partition).await {
                    Ok(Some(lease)) => {
                        acquired.push(lease);
                        count += 1;
                    }
                    Ok(None) => {}
                    Err(error) => {
                        failed = Some(error);
                        break;
                    }
                }
            }
            match self.mark(acquired).await {
                Ok(marked) => {
                    took = !marked.is_empty();
                    held.extend(marked.into_iter().map(|l| (l.partition, l)));
                }
                Err(error) => failed = failed.or(Some(error)),
            }
        }
        self.owned.send_replace(held.clone());
        if let Some(error) = failed {
            return Err(error);
        }
        self.routes.send_replace(self.leases.routes().await?);
        if joined || took || !surplus.is_empty() {
            self.leases.announce().await?;
            self.joined
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(held)
    }

    /// Ticks every `every`, and whenever another keeper announces a change
    /// ([`Keeper::hearing`]), until `stop` is cancelled; then leaves and releases everything
    /// held, and announces it (the drain of a replica shutting down: the others hearing it
    /// take its partitions at once, the others on their next tick). A failed round is
    /// logged and retried on the next. Rounds start `every` apart (at once after one that
    /// took longer), not `every` after the last one ended: each renews first, so on a slow
    /// database the renewals stay a round apart rather than a round plus `every`, which
    /// would let the leases lapse sooner.
    pub async fn run(self, every: Duration, stop: tokio_util::sync::CancellationToken) {
        let mut changes = self.changes.clone();
        loop {
            // What was announced before the round starts, the round reads; what is announced
            // while it runs calls for another.
            if let Some(changes) = &mut changes {
                changes.borrow_and_update();
            }
            let started = tokio::time::Instant::now();
            if let Err(error) = self.tick().await {
                tracing::warn!(%error, "partition leases: a round failed");
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep_until(started + every) => {}
                () = changed(&mut changes) => {}
            }
        }
        let held = self.owned.send_replace(Owned::new());
        self.routes.send_replace(Routes::new());
        if let Err(error) = self.leases.leave().await {
            tracing::warn!(%error, "partition leases: leaving failed");
        }
        for lease in held.values() {
            if let Err(error) = self.leases.release(lease).await {
                tracing::warn!(%error, partition = lease.partition, "partition leases: release failed");
            }
        }
        if let Err(error) = self.leases.announce().await {
            tracing::warn!(%error, "partition leases: announcing the drain failed");
        }
    }
}

/// Resolves when `changes` changes; never without it, or once its sender is gone.
async fn changed(changes: &mut Option<tokio::sync::watch::Receiver<u64>>) {
    if let Some(changes) = changes
        && changes.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}
