//! What the processes and servers of a load run have spent, sampled at both ends of the
//! measured window: the input of the capacity model (docs/scaling.md).
//!
//! - CPU: user + system seconds of this process (the bench's clients and every service it
//!   runs), of every `postgres` process and of every `nats-server` process, from
//!   `/proc/<pid>/stat` (Linux reports them in USER_HZ, 100 per second). A PostgreSQL
//!   backend that exits within the window takes its seconds with it; the pools keep theirs
//!   open, so few do.
//! - PostgreSQL: WAL bytes written (`pg_current_wal_lsn`, cluster-wide) and transactions
//!   (commits and rollbacks of every database, `pg_stat_database`; each backend reports its
//!   own at most once a second, so the count lags the window by up to a second).
//! - NATS: messages stored in JetStream (each stream's last sequence) and delivered to
//!   consumers (each consumer's delivery sequence), over every stream of the account. Each
//!   of those is two core NATS messages (the publish and its acknowledgement, a delivery and
//!   its ack) plus the consumers' pull requests, which are batched.

use std::time::Instant;

use futures::StreamExt;

/// Totals at one instant.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spent {
    at: Option<Instant>,
    own_cpu: f64,
    postgres_cpu: f64,
    nats_cpu: f64,
    wal_bytes: i64,
    transactions: i64,
    published: u64,
    delivered: u64,
}

/// USER_HZ: the unit of `/proc/<pid>/stat`'s times on Linux.
const TICKS_PER_SECOND: f64 = 100.0;

/// User + system seconds in a `/proc/<pid>/stat` line, with the process's command name.
fn cpu_of_stat(stat: &str) -> Option<(String, f64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // Fields 14 and 15 of the line (utime, stime); the first after ')' is field 3.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((comm, (utime + stime) / TICKS_PER_SECOND))
}

/// CPU seconds of every process whose command name is `comm`.
fn cpu_of_processes(comm: &str) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| cpu_of_stat(&stat))
        .filter(|(name, _)| name == comm)
        .map(|(_, seconds)| seconds)
        .sum()
}

fn own_cpu() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| cpu_of_stat(&stat))
        .map_or(0.0, |(_, seconds)| seconds)
}

/// Messages stored and delivered so far over every stream of the account.
async fn jetstream_totals(nats_url: &str) -> (u64, u64) {
    let Ok(client) = async_nats::connect(nats_url).await else {
        return (0, 0);
    };
    let js = async_nats::jetstream::new(client);
    let mut published = 0;
    let mut delivered = 0;
    let mut names = Vec::new();
    let mut streams = js.streams();
    while let Some(Ok(info)) = streams.next().await {
        published += info.state.last_sequence;
        names.push(info.config.name);
    }
    for name in names {
        let Ok(stream) = js.get_stream(&name).await else {
            continue;
        };
        let mut consumers = stream.consumers();
        while let Some(Ok(info)) = consumers.next().await {
            delivered += info.delivered.consumer_sequence;
        }
    }
    (published, delivered)
}

impl Spent {
    /// The totals now; `pool` is the PostgreSQL run's, `nats_url` its NATS server's.
    pub(crate) async fn now(pool: Option<&sqlx::PgPool>, nats_url: Option<&str>) -> Spent {
        let mut spent = Spent {
            at: Some(Instant::now()),
            own_cpu: own_cpu(),
            postgres_cpu: cpu_of_processes("postgres"),
            nats_cpu: cpu_of_processes("nats-server"),
            ..Spent::default()
        };
        if let Some(pool) = pool {
            let (wal, transactions): (i64, i64) = sqlx::query_as(
                "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint, \
                 (SELECT sum(xact_commit + xact_rollback)::bigint FROM pg_stat_database)",
            )
            .fetch_one(pool)
            .await
            .unwrap_or_default();
            spent.wal_bytes = wal;
            spent.transactions = transactions;
        }
        if let Some(url) = nats_url {
            (spent.published, spent.delivered) = jetstream_totals(url).await;
        }
        spent
    }

    /// The CPU seconds of every process (this one, PostgreSQL, NATS) from `before` to
    /// `self`, per 1,000 of `moves`.
    pub(crate) fn cpu_per_thousand_moves(&self, before: &Spent, moves: u64) -> f64 {
        let k = (moves.max(1) as f64) / 1000.0;
        (self.own_cpu - before.own_cpu + self.postgres_cpu - before.postgres_cpu + self.nats_cpu
            - before.nats_cpu)
            / k
    }

    /// PostgreSQL's transactions from `before` to `self`, per 1,000 of `moves`.
    pub(crate) fn transactions_per_thousand_moves(&self, before: &Spent, moves: u64) -> f64 {
        (self.transactions - before.transactions) as f64 / ((moves.max(1) as f64) / 1000.0)
    }

    /// What was spent from `before` to `self`, per 1,000 of `moves`, as one report line.
    pub(crate) fn per_thousand_moves(&self, before: &Spent, moves: u64) -> String {
        let k = (moves.max(1) as f64) / 1000.0;
        let seconds = match (before.at, self.at) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let own = (self.own_cpu - before.own_cpu) / k;
        let postgres = (self.postgres_cpu - before.postgres_cpu) / k;
        let nats = (self.nats_cpu - before.nats_cpu) / k;
        // Three decimals: a window's CPU is counted in hundredths of a second over tens of
        // thousands of moves, so the third is still measured (two hid a 5% difference).
        format!(
            "per 1,000 moves: CPU s: all {:.3}: this process (clients and services) {own:.3}, \
             PostgreSQL {postgres:.3}, NATS {nats:.3}; PostgreSQL WAL {:.0} kB, {:.0} \
             transactions; JetStream {:.0} messages stored, {:.0} delivered ({moves} moves in \
             {seconds:.1} s)",
            self.cpu_per_thousand_moves(before, moves),
            (self.wal_bytes - before.wal_bytes) as f64 / 1024.0 / k,
            self.transactions_per_thousand_moves(before, moves),
            self.published.saturating_sub(before.published) as f64 / k,
            self.delivered.saturating_sub(before.delivered) as f64 / k,
        )
    }
}
