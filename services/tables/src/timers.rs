//! The turn timers: the deadlines of the tables this replica advanced last (`Timers`),
//! the timer task that advances a table when its deadline passes ([`Tables::run_timers`]),
//! and the way the deadlines projection hands this replica the steps the service owes
//! ([`OwedSteps`]).
//!
//! Clocks follow ownership ([`Ownership`]): with several replicas over PostgreSQL, each
//! holds a share of the tables' partitions (`fairdeal_platform::ownership`), and only the
//! owner of a table's partition waits for its deadlines, so two replicas' timers never race
//! for one. Without ownership (the embedded default, one process) every table is this
//! replica's.
//!
//! Nothing polls. A replica learns a table's next deadline from its own steps; what it did
//! not write itself it loads from the deadlines projection when it starts and whenever it
//! takes partitions, and hears of at once when the projection reaches it later
//! (`fairdeal_platform::ownership::Wake`: [`OwedSteps::wake`]). A listener that may have
//! missed such a wake-up loads the projection again ([`OwedSteps::reload`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

pub use fairdeal_platform::ownership::Ownership;
use fairdeal_platform::ownership::{Held, Owned, epoch_of};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::lobby;

/// The pause before loading the projected deadlines again after a load failed.
const LOAD_AGAIN: std::time::Duration = std::time::Duration::from_secs(1);
use crate::service::Tables;

/// The deadlines of the tables this replica advanced last, and a wake-up for the timer task
/// when one changes.
#[derive(Debug)]
pub(crate) struct Timers {
    /// Table -> deadline (Unix ms) of the player to act.
    deadlines: Mutex<HashMap<Uuid, i64>>,
    /// Bumped whenever `deadlines` changes.
    changed: watch::Sender<u64>,
    /// Asks the timer task to load the projected deadlines again.
    reload: Notify,
    /// Whose clocks are kept here (`None`: every table's).
    ownership: Option<Ownership>,
    /// Tables whose step was refused by the fence (their partition's lease lapsed or moved
    /// as it was written), and since when: each is stepped again once its partition is held
    /// here again ([`Timers::fenced_held`]).
    fenced: Mutex<HashMap<Uuid, Fenced>>,
}

/// A step refused by the fence ([`Timers::fenced`]).
#[derive(Debug)]
struct Fenced {
    /// When.
    since: std::time::Instant,
    /// The lease it was decided under (`None`: not held).
    under: Option<Held>,
}

/// How long a table whose step was fenced waits for its partition to be held here again
/// before it is left to its new owner: a lease that lapsed is taken again within a keeper
/// round or two.
const FENCED_KEPT: std::time::Duration = std::time::Duration::from_secs(30);

impl Timers {
    /// No deadlines yet; the clocks of the tables `ownership` says are this replica's
    /// (`None`: every table's).
    pub(crate) fn new(ownership: Option<Ownership>) -> Self {
        Timers {
            deadlines: Mutex::new(HashMap::new()),
            changed: watch::Sender::new(0),
            reload: Notify::new(),
            ownership,
            fenced: Mutex::new(HashMap::new()),
        }
    }

    /// Whether this replica keeps `table_id`'s clock.
    pub(crate) fn keeps(&self, table_id: &Uuid) -> bool {
        self.ownership.as_ref().is_none_or(|o| o.owns(table_id))
    }

    /// Resolves when `table_id` is served by another replica ([`Ownership::moved_away`]);
    /// never without ownership (every table is this replica's).
    pub(crate) async fn moved_away(&self, table_id: &Uuid) {
        match &self.ownership {
            Some(ownership) => ownership.moved_away(table_id).await,
            None => std::future::pending().await,
        }
    }

    /// The deadlines, locked.
    fn deadlines(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, i64>> {
        // The map stays consistent whatever panicked while holding it.
        self.deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for `deadline` of `table_id` (`None`: nothing to wait for); a table whose clock
    /// another replica keeps is not waited for here.
    pub(crate) fn set(&self, table_id: Uuid, deadline: Option<i64>) {
        let changed = match deadline {
            Some(_) if !self.keeps(&table_id) => self.deadlines().remove(&table_id).is_some(),
            Some(d) => self.deadlines().insert(table_id, d) != Some(d),
            None => self.deadlines().remove(&table_id).is_some(),
        };
        if changed {
            self.changed.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// The lease under which `table_id`'s partition is held here, as a step decided now
    /// remembers it (`None`: not held, or no ownership).
    pub(crate) fn held(&self, table_id: &Uuid) -> Option<Held> {
        self.ownership.as_ref()?.held(table_id)
    }

    /// Whether a step of `table_id` decided under `under` and refused by the fence may be
    /// taken again here ([`Held::after_fence`]): its partition is held under another lease,
    /// or under the same one renewed since.
    fn may_retake(&self, table_id: &Uuid, under: Option<Held>) -> bool {
        self.held(table_id)
            .is_some_and(|now| now.after_fence(under))
    }

    /// `table_id`'s step, decided under the lease `under` ([`Timers::held`]), was refused by
    /// the fence: it is stepped again once its partition is held here under another lease
    /// (at once if it is already), or under the same lease renewed since. The deadlines
    /// projection cannot be relied on for it: a step owed because of the table's state (the
    /// seat that filled it, say: its deal is owed) is recorded by no row, and this replica,
    /// taking a lapsed lease again, would wait for nothing.
    pub(crate) fn fenced(&self, table_id: Uuid, under: Option<Held>) {
        if self.may_retake(&table_id, under) {
            self.set(table_id, Some(i64::MIN));
            return;
        }
        self.fenced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                table_id,
                Fenced {
                    since: std::time::Instant::now(),
                    under,
                },
            );
    }

    /// The tables fenced ([`Timers::fenced`]) whose partition is held here again, forgotten
    /// as they are given back; those fenced over [`FENCED_KEPT`] ago are forgotten too
    /// (their partition's new owner steps them).
    fn fenced_held(&self) -> Vec<Uuid> {
        let mut again = Vec::new();
        self.fenced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|id, fenced| {
                if self.may_retake(id, fenced.under) {
                    again.push(*id);
                    false
                } else {
                    fenced.since.elapsed() < FENCED_KEPT
                }
            });
        again
    }

    /// The earliest deadline.
    fn earliest(&self) -> Option<(i64, Uuid)> {
        self.deadlines().iter().map(|(id, d)| (*d, *id)).min()
    }
}

/// A way into this replica's timers for the deadlines projection: a step the service owes,
/// recorded by the projection, is taken at once, which matters when the replica that owed it
/// stopped before the projection caught up; and a table's owner is woken for what the
/// projection reached after the owner loaded it.
#[derive(Clone, Debug)]
pub struct OwedSteps(Arc<Timers>);

impl OwedSteps {
    /// The service owes `table_id` a step, recorded as `deadline` (the table's version
    /// negated, so due at once): the timer takes it now. A hint: the step is decided on the
    /// table's state, so one owed no longer does nothing.
    pub fn owe(&self, table_id: Uuid, deadline: i64) {
        self.0.set(table_id, Some(deadline));
    }

    /// `table_id` has an event this replica may not have seen: if its clock is kept here,
    /// the table is advanced at once, which takes any step owed and waits for its real
    /// deadline from then on.
    pub fn wake(&self, table_id: Uuid) {
        self.0.set(table_id, Some(i64::MIN));
    }

    /// Wake-ups may have been missed: the timer task loads the projected deadlines again.
    pub fn reload(&self) {
        self.0.reload.notify_one();
    }
}

impl Tables {
    /// The handle the deadlines projection wakes this replica's timers with.
    pub fn owed_steps(&self) -> OwedSteps {
        OwedSteps(Arc::clone(&self.timers))
    }

    /// The timer task: waits for the earliest deadline this replica knows of, then advances
    /// that table (the step plays for the seat if its player has not acted by then); until
    /// `stop`. Another replica firing the same deadline appends nothing more: the step is
    /// decided on the table's current state. At start, whenever the partitions held change,
    /// and when asked ([`OwedSteps::reload`]), it also takes the deadlines the projection
    /// holds for the tables whose clocks are kept here, so a (re)started replica, or one
    /// that took partitions over, waits for the tables nobody has touched since.
    ///
    /// It reports `fairdeal.tables.active`: the tables whose clock this replica keeps
    /// (started, not finished, a deadline or a step pending).
    pub async fn run_timers(self, stop: CancellationToken) {
        let active = fairdeal_kit::metrics::gauge(
            "fairdeal.tables.active",
            "Tables whose turn clock this replica keeps (started, not finished); the platform's are the sum over replicas",
            "{table}",
        );
        let mut changed = self.timers.changed.subscribe();
        // Deadlines fired here, so a projected row that is stale is not fired again.
        let mut fired: HashMap<Uuid, i64> = HashMap::new();
        // A change of the partitions held: load at once (the new ones' deadlines are
        // waited for now, the lost ones' forgotten).
        let mut owned = self.timers.ownership.as_ref().map(|o| o.owned.clone());
        // The leases as last looked at: a deadline fired under a lease that is gone since
        // may have found the table fenced, its step refused as moved away (see below).
        let mut leases = held(owned.as_ref());
        let ownership_changed = async |owned: &mut Option<watch::Receiver<Owned>>| match owned {
            Some(rx) => rx.changed().await.is_ok(),
            None => std::future::pending().await,
        };
        let mut load = true;
        loop {
            if std::mem::take(&mut load) {
                match lobby::deadlines(&self.db).await {
                    Ok(rows) => {
                        // A finished table's row is gone: forget that it fired.
                        fired.retain(|id, _| rows.iter().any(|(row, _)| row == id));
                        let mut deadlines = self.timers.deadlines();
                        for (table_id, deadline) in rows {
                            if fired.get(&table_id) != Some(&deadline)
                                && self.timers.keeps(&table_id)
                            {
                                deadlines.entry(table_id).or_insert(deadline);
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "turn deadlines unreadable; reading again");
                        let this = self.clone();
                        self.shutdown.tracker().spawn(async move {
                            tokio::time::sleep(LOAD_AGAIN).await;
                            this.timers.reload.notify_one();
                        });
                    }
                }
            }
            active.record(
                u64::try_from(self.timers.deadlines().len()).unwrap_or(u64::MAX),
                &[],
            );
            changed.borrow_and_update();
            let wait = async {
                match self.timers.earliest() {
                    Some((deadline, table_id)) => {
                        self.clock.sleep_until(deadline).await;
                        (deadline, table_id)
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = stop.cancelled() => return,
                result = changed.changed() => if result.is_err() { return },
                moved = ownership_changed(&mut owned) => {
                    if !moved {
                        owned = None;
                    }
                    let now = held(owned.as_ref());
                    // A deadline fired under a lease this replica lost, or took again at a new
                    // epoch (its renewal came too late), may have found its append fenced:
                    // the step was refused as moved away, for the partition's owner to take.
                    // When that owner is this replica again, the projected row that fired is
                    // still the one owed, so it fires again here.
                    if let Some(ownership) = &self.timers.ownership {
                        fired.retain(|id, _| {
                            let partition = ownership.partition(id);
                            epoch_of(&leases, partition) == epoch_of(&now, partition)
                        });
                    }
                    leases = now;
                    self.timers.deadlines().retain(|id, _| self.timers.keeps(id));
                    // A step fenced as the lease lapsed is taken again, at once.
                    let again = self.timers.fenced_held();
                    self.timers
                        .deadlines()
                        .extend(again.into_iter().map(|table_id| (table_id, i64::MIN)));
                    load = true;
                }
                () = self.timers.reload.notified() => load = true,
                (deadline, table_id) = wait => {
                    self.timers.deadlines().remove(&table_id);
                    if !self.timers.keeps(&table_id) {
                        // Its partition moved to another replica meanwhile: its clock now.
                        continue;
                    }
                    fired.insert(table_id, deadline);
                    // Off the timer loop: playing out an abandoned seat's match takes a while,
                    // and other tables' deadlines must not wait for it.
                    let this = self.clone();
                    self.shutdown
                        .tracker()
                        .spawn(async move { this.advance(table_id).await });
                }
            }
        }
    }
}

/// The leases `owned` holds now (none without ownership).
fn held(owned: Option<&watch::Receiver<Owned>>) -> Owned {
    owned.map(|rx| rx.borrow().clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use fairdeal_platform::ownership::{Lease, Owned};
    use tokio::sync::watch;

    use super::*;

    const PARTITIONS: u32 = 4;

    fn held(epoch: i64, expires_at_ms: i64) -> Owned {
        (0..PARTITIONS)
            .map(|partition| {
                let lease = Lease {
                    partition,
                    owner: "me".into(),
                    epoch,
                    expires_at_ms,
                };
                (partition, lease)
            })
            .collect()
    }

    #[test]
    fn a_fenced_step_is_taken_again_under_a_new_lease_or_the_same_one_renewed() {
        let (owned, watched) = watch::channel(held(2, 10_000));
        let timers = Timers::new(Some(Ownership {
            partitions: PARTITIONS,
            owned: watched,
        }));
        // Every partition is held: whichever this table's is.
        let table = Uuid::now_v7();
        let under = |epoch, expires_at_ms| {
            Some(Held {
                epoch,
                expires_at_ms,
            })
        };
        // Fenced under the lease as published, not renewed since: nothing yet.
        timers.fenced(table, under(2, 10_000));
        assert!(timers.fenced_held().is_empty());
        // The renewal that raced the fence commits: same epoch, later expiry. The lease
        // never changed hands, so no new epoch will come: the step is taken again now.
        owned.send_replace(held(2, 13_000));
        assert_eq!(timers.fenced_held(), vec![table]);
        assert!(timers.fenced_held().is_empty(), "given back once");

        // Fenced again; the lease lapses and is taken again at a new epoch.
        timers.fenced(table, under(2, 13_000));
        assert!(timers.fenced_held().is_empty());
        owned.send_replace(held(3, 13_000));
        assert_eq!(timers.fenced_held(), vec![table]);

        // Fenced as the partition left (not held here): kept until it is held again.
        owned.send_replace(Owned::new());
        timers.fenced(table, under(3, 13_000));
        assert!(timers.fenced_held().is_empty());
        owned.send_replace(held(4, 20_000));
        assert_eq!(timers.fenced_held(), vec![table]);
    }
}
