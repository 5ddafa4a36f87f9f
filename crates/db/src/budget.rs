//! [`ConnectionBudget`]: how many PostgreSQL sessions one service process may hold at once,
//! and how its pools share them.
//!
//! A PostgreSQL server refuses sessions past its `max_connections`, and a refused session is
//! an error for whoever asked (a relay, a consumer, an operator's psql), never a wait. So the
//! platform sizes every pool from one number per process, and the server is sized from the
//! sum (docs/deploy.md, "Connections"):
//!
//! ```text
//! server max_connections >= sum over services of budget x (replicas + surge) + headroom
//! ```
//!
//! Within a process the budget is split four ways, and nothing else opens a session:
//!
//! - [`ConnectionBudget::writers`]: the event store's group commit writers, one long-lived
//!   session each (1 below a budget of 10, else 2, unless the process chooses its number
//!   with [`ConnectionBudget::with_writers`]: `--db-writers`, and the tables service's 1);
//! - [`ConnectionBudget::HELD`]: sessions held for good outside any pool: the notification
//!   listener's and the bus's leases (the relay's, and an in-store consumer's), each a
//!   session held for as long as the lease;
//! - [`ConnectionBudget::readers`]: the event store's readers' pool (`read_all`,
//!   `read_stream`), a third of the budget, between 1 and 8 (8 at the default, as the tables
//!   load bench was measured with);
//! - [`ConnectionBudget::shared`]: the rest, the pool every other use checks out of: the
//!   service's queries and transactions, consumers' batches, the relay's checkpoints and
//!   migrations at start.
//!
//! When every connection of a pool is checked out, the next caller waits (up to the pool's
//! acquire timeout) for one to come back: back-pressure, not an error.

use std::fmt;

/// The PostgreSQL sessions one process may hold, split between its pools (see the module
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionBudget {
    total: u32,
    writers: u32,
}

/// A budget outside [`ConnectionBudget::MIN`]..=[`ConnectionBudget::MAX`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a budget of {0} connections is outside {min}..={max}",
    min = ConnectionBudget::MIN,
    max = ConnectionBudget::MAX
)]
pub struct BadBudget(pub u32);

/// A number of writers a budget cannot hold (see [`ConnectionBudget::with_writers`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{writers} writers is outside 1..={max}, or leaves a budget of {total} connections \
     fewer than two to share",
    max = ConnectionBudget::MAX_WRITERS
)]
pub struct BadWriters {
    /// The writers asked for.
    pub writers: u32,
    /// The budget.
    pub total: u32,
}

impl ConnectionBudget {
    /// The smallest budget: one writer, the sessions held for good, two readers and a shared
    /// pool of two.
    pub const MIN: u32 = 8;

    /// Sessions a process holds outside its pools: the notification listener, the relay's
    /// lease and one in-store consumer's lease.
    pub const HELD: u32 = 3;

    /// The largest budget: far above what one process can use, and below what a typo could
    /// ask of a server.
    pub const MAX: u32 = 1_000;

    /// The budget of a process that names none: every service's `--db-max-connections`
    /// default, tools, tests and [`crate::Db::open`].
    pub const DEFAULT: u32 = 24;

    /// Most connections the readers' pool gets, however large the budget: more showed no gain
    /// on the tables load bench (docs/decisions.md, "The log's tailing reads on their own
    /// connections").
    pub const MAX_READERS: u32 = 8;

    /// Most group commit writers a process may ask for: past 2 each batch commits more
    /// slowly (docs/decisions.md, "Writers per store").
    pub const MAX_WRITERS: u32 = 4;

    /// A budget of `total` sessions.
    pub fn new(total: u32) -> Result<Self, BadBudget> {
        if (Self::MIN..=Self::MAX).contains(&total) {
            Ok(Self {
                total,
                writers: Self::default_writers(total),
            })
        } else {
            Err(BadBudget(total))
        }
    }

    /// Every session the process may hold: `writers + HELD + readers + shared`.
    pub fn total(self) -> u32 {
        self.total
    }

    /// Group commit writers, each on a session of its own.
    pub fn writers(self) -> u32 {
        self.writers
    }

    /// The same budget with `writers` group commit writers (1 to [`Self::MAX_WRITERS`]),
    /// taken from the shared pool, which keeps two at least. Fewer writers make larger
    /// commit groups: fewer transactions for the same appends, at the cost of the overlap
    /// of one batch filling while another commits (docs/decisions.md, "Writers per store").
    pub fn with_writers(self, writers: u32) -> Result<Self, BadWriters> {
        let bad = BadWriters {
            writers,
            total: self.total,
        };
        if !(1..=Self::MAX_WRITERS).contains(&writers) {
            return Err(bad);
        }
        let budget = Self { writers, ..self };
        match budget.shared_checked() {
            Some(shared) if shared >= 2 => Ok(budget),
            _ => Err(bad),
        }
    }

    /// The writers of a budget of `total` that names none: 1 below 10, else 2.
    const fn default_writers(total: u32) -> u32 {
        if total < 10 { 1 } else { 2 }
    }

    fn shared_checked(self) -> Option<u32> {
        self.total
            .checked_sub(self.writers)?
            .checked_sub(Self::HELD)?
            .checked_sub(self.readers())
    }

    /// Connections of the event store's readers' pool.
    pub fn readers(self) -> u32 {
        (self.total / 3).clamp(1, Self::MAX_READERS)
    }

    /// Connections of the shared pool: the rest.
    pub fn shared(self) -> u32 {
        self.shared_checked().unwrap_or(0)
    }
}

impl Default for ConnectionBudget {
    fn default() -> Self {
        Self {
            total: Self::DEFAULT,
            writers: Self::default_writers(Self::DEFAULT),
        }
    }
}

impl fmt::Display for ConnectionBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} connections ({} shared, {} readers, {} writers, {} held)",
            self.total,
            self.shared(),
            self.readers(),
            self.writers(),
            Self::HELD
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_budget_splits_into_its_total_with_room_to_work() {
        for total in ConnectionBudget::MIN..=ConnectionBudget::MAX {
            let budget = ConnectionBudget::new(total).unwrap();
            assert_eq!(
                budget.writers() + ConnectionBudget::HELD + budget.readers() + budget.shared(),
                total,
                "{budget}"
            );
            assert!(budget.writers() >= 1 && budget.readers() >= 1, "{budget}");
            // Two to work with, at least.
            assert!(budget.shared() >= 2, "{budget}");
        }
    }

    #[test]
    fn a_chosen_number_of_writers_comes_out_of_the_shared_pool() {
        let default = ConnectionBudget::default();
        let one = default.with_writers(1).unwrap();
        assert_eq!(one.writers(), 1);
        assert_eq!(one.shared(), default.shared() + 1);
        assert_eq!(one.readers(), default.readers());
        assert_eq!(
            one.to_string(),
            "24 connections (12 shared, 8 readers, 1 writers, 3 held)"
        );
        assert_eq!(default.with_writers(4).unwrap().shared(), 9);
        for writers in [0, ConnectionBudget::MAX_WRITERS + 1] {
            assert_eq!(
                default.with_writers(writers),
                Err(BadWriters { writers, total: 24 })
            );
        }
        // The smallest budget has no session to spare for a second writer.
        let smallest = ConnectionBudget::new(ConnectionBudget::MIN).unwrap();
        assert!(smallest.with_writers(2).is_err());
        assert_eq!(smallest.with_writers(1), Ok(smallest));
    }

    #[test]
    fn budgets_outside_the_range_are_refused() {
        assert_eq!(
            ConnectionBudget::new(ConnectionBudget::MIN - 1),
            Err(BadBudget(7))
        );
        assert!(ConnectionBudget::new(ConnectionBudget::MAX + 1).is_err());
        assert_eq!(
            ConnectionBudget::default(),
            ConnectionBudget::new(ConnectionBudget::DEFAULT).unwrap()
        );
        // The default keeps the readers the tables load bench was measured with.
        assert_eq!(ConnectionBudget::default().readers(), 8);
        assert_eq!(
            ConnectionBudget::default().to_string(),
            "24 connections (11 shared, 8 readers, 2 writers, 3 held)"
        );
        assert_eq!(
            ConnectionBudget::new(16).unwrap().to_string(),
            "16 connections (6 shared, 5 readers, 2 writers, 3 held)"
        );
    }
}
