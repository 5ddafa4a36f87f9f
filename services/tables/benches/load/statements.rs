//! `LOAD_STATEMENTS=<the PostgreSQL server's log file>`: the statements of the measured
//! window, counted from the server's statement log. `pg_stat_statements` is not loaded on
//! the servers the tests start, so the bench turns `log_statement = 'all'` on for the window
//! (`ALTER SYSTEM`, then a configuration reload: the run's database user is a superuser),
//! off again after, and reads what the server wrote between. Writing the log costs the
//! server CPU, so a counting run's CPU figures are not the shape's.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

/// A window's statement log, opened at its start.
pub(crate) struct StatementLog {
    path: String,
    from: u64,
}

/// The characters of a statement's text that name its kind.
const KIND_CHARS: usize = 64;

/// Kinds printed, the most frequent first.
const KINDS_SHOWN: usize = 14;

impl StatementLog {
    /// Turns the statement log on, when `LOAD_STATEMENTS` names the server's log file.
    pub(crate) async fn start(pool: Option<&sqlx::PgPool>) -> Option<StatementLog> {
        let path = std::env::var("LOAD_STATEMENTS").ok()?;
        let pool = pool?;
        let from = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("LOAD_STATEMENTS: {path}: {e}"))
            .len();
        set_log_statement(pool, "all").await;
        Some(StatementLog { path, from })
    }

    /// Turns the log off, and reports the statements written since the start per 1,000 of
    /// `moves`, in all and by kind.
    pub(crate) async fn finish(self, pool: &sqlx::PgPool, moves: u64) -> String {
        set_log_statement(pool, "none").await;
        let mut file = std::fs::File::open(&self.path).expect("the statement log");
        file.seek(SeekFrom::Start(self.from))
            .expect("the log's end");
        let mut text = Vec::new();
        file.read_to_end(&mut text).expect("the log");
        let text = String::from_utf8_lossy(&text);
        let mut kinds: HashMap<String, u64> = HashMap::new();
        for line in text.lines() {
            if let Some(kind) = statement_kind(line) {
                *kinds.entry(kind).or_default() += 1;
            }
        }
        let all: u64 = kinds.values().sum();
        let k = (moves.max(1) as f64) / 1000.0;
        let mut kinds: Vec<(String, u64)> = kinds.into_iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let shown: Vec<String> = kinds
            .iter()
            .take(KINDS_SHOWN)
            .map(|(kind, n)| format!("{:.1} {kind}", *n as f64 / k))
            .collect();
        format!(
            "statements per 1,000 moves: {:.0} ({all} in the window); by kind: {}",
            all as f64 / k,
            shown.join("; ")
        )
    }
}

async fn set_log_statement(pool: &sqlx::PgPool, value: &str) {
    let set = format!("ALTER SYSTEM SET log_statement = '{value}'");
    sqlx::raw_sql(sqlx::AssertSqlSafe(set))
        .execute(pool)
        .await
        .expect("ALTER SYSTEM (the bench's user is a superuser)");
    sqlx::query("SELECT pg_reload_conf()")
        .execute(pool)
        .await
        .expect("a configuration reload");
}

/// The kind of the statement a log line starts (`None`: the line starts none): its text's
/// first [`KIND_CHARS`] characters, white space folded. A prepared statement is logged at
/// each execution (`execute <name>: ...`), a simple query as `statement: ...`.
fn statement_kind(line: &str) -> Option<String> {
    let text = line
        .split_once("LOG:  statement: ")
        .or_else(|| {
            line.split_once("LOG:  execute ")
                .and_then(|(_, rest)| rest.split_once(": "))
        })?
        .1;
    let folded: Vec<&str> = text.split_whitespace().collect();
    Some(folded.join(" ").chars().take(KIND_CHARS).collect())
}
