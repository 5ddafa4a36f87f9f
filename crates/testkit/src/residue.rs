//! Where erased content could linger in a database's bytes, for tests of erasure: the SQLite
//! file and its write-ahead log, and a `pg_dump` of a PostgreSQL database. [`holds`] looks
//! for a text as written and as `pg_dump` writes a `bytea` (hex), so content kept in a
//! binary column is found too.

use std::path::{Path, PathBuf};

/// Every byte an SQLite database keeps: the file at `path` and its write-ahead log.
pub fn sqlite_files(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = std::fs::read(path)?;
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    match std::fs::read(wal) {
        Ok(log) => bytes.extend(log),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(bytes)
}

/// The SQLite file of a `sqlite://` database URL.
pub fn sqlite_path(database_url: &str) -> PathBuf {
    let path = database_url.trim_start_matches("sqlite://");
    PathBuf::from(path.split('?').next().unwrap_or(path))
}

/// A `pg_dump` matching the test server: a versioned install's (newest first), else the one
/// on PATH.
fn pg_dump_program() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|entry| entry.path().join("bin/pg_dump"))
                .filter(|path| path.exists())
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions.pop().unwrap_or_else(|| PathBuf::from("pg_dump"))
}

/// A whole `pg_dump` (every schema, every row) of the database at `database_url`.
pub async fn pg_dump(database_url: &str) -> Result<Vec<u8>, String> {
    let out = tokio::process::Command::new(pg_dump_program())
        .arg("--dbname")
        .arg(database_url)
        .output()
        .await
        .map_err(|e| format!("pg_dump: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pg_dump: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// Whether `bytes` hold `text`, as written or in lowercase hex (a `bytea` in a dump).
pub fn holds(bytes: &[u8], text: &str) -> bool {
    let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
    contains(bytes, text.as_bytes()) || contains(bytes, hex.as_bytes())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn finds_text_plain_and_as_hex() {
        assert!(holds(b"xx hello yy", "hello"));
        assert!(holds(b"\\x0068656c6c6f00", "hello"));
        assert!(!holds(b"help", "hello"));
        assert!(!holds(b"anything", ""));
        assert_eq!(
            sqlite_path("sqlite:///tmp/a/b.db?mode=rwc"),
            PathBuf::from("/tmp/a/b.db")
        );
    }

    #[test]
    fn reads_the_file_and_its_log() {
        let dir = std::env::temp_dir().join(format!("residue-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("x.db");
        std::fs::write(&db, b"main").unwrap();
        assert_eq!(sqlite_files(&db).unwrap(), b"main");
        std::fs::write(dir.join("x.db-wal"), b"+log").unwrap();
        assert_eq!(sqlite_files(&db).unwrap(), b"main+log");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
