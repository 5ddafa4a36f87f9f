//! A run's directory, its state file and its reaper.
//!
//! Each run lives in `<cargo target dir>/xtask-servers/<pid>-<millis>/`: one subdirectory per
//! server (data, log) and `state`, `key=value` lines appended as things start (the pids and
//! paths needed to stop them), so that whoever stops the run (its reaper, or a later run
//! cleaning up after a killed one) knows what to stop.

use std::io::{Read as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::tools::PgUser;
use crate::{process, say};

/// The directory and reaper of this run.
#[derive(Debug)]
pub(crate) struct Run {
    /// `<target>/xtask-servers/<pid>-<millis>`.
    pub(crate) dir: PathBuf,
    /// The reaper: stops the servers and removes `dir` when its stdin closes.
    reaper: Child,
    /// Our end of the reaper's stdin; closing it (or dying) starts the cleanup.
    reaper_stdin: Option<ChildStdin>,
}

impl Run {
    /// Cleans up after killed earlier runs, creates this run's directory and starts its
    /// reaper.
    pub(crate) fn create() -> Result<Run, String> {
        let base = target_dir().join("xtask-servers");
        std::fs::create_dir_all(&base)
            .map_err(|e| format!("cannot create {}: {e}", base.display()))?;
        sweep(&base);
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let dir = base.join(format!("{}-{millis}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        record(&dir, "xtask_pid", std::process::id());
        let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
        let mut reaper = Command::new(exe)
            .arg("__reap")
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            // Its own process group: Ctrl-C, which ends this run, must not end its cleanup.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start the reaper: {e}"))?;
        record(&dir, "reaper_pid", reaper.id());
        let reaper_stdin = reaper.stdin.take();
        Ok(Run {
            dir,
            reaper,
            reaper_stdin,
        })
    }

    /// Appends `key=value` to the state file.
    pub(crate) fn record(&self, key: &str, value: impl std::fmt::Display) {
        record(&self.dir, key, value);
    }

    /// Has the reaper stop the servers and remove the directory; waits until it is done.
    pub(crate) fn finish(mut self) {
        drop(self.reaper_stdin.take());
        let _ = self.reaper.wait();
    }
}

/// The cargo target directory this binary was built in: `<target>/debug/xtask`.
pub(crate) fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target"))
}

fn record(dir: &Path, key: &str, value: impl std::fmt::Display) {
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("state"))
        .and_then(|mut file| writeln!(file, "{key}={value}"));
    if let Err(error) = appended {
        say(format!("cannot record {key} in {}: {error}", dir.display()));
    }
}

/// The last value recorded for `key`.
fn recorded(state: &str, key: &str) -> Option<String> {
    state
        .lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| v.to_owned())
        .next_back()
}

/// Stops and removes the runs under `base` whose xtask and reaper are both gone.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for dir in entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
        let state = std::fs::read_to_string(dir.join("state")).unwrap_or_default();
        let pid = |key| recorded(&state, key).and_then(|v| v.parse::<u32>().ok());
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let reaper_alive = pid("reaper_pid")
            .zip(name.as_deref())
            .is_some_and(|(p, name)| process::alive_with_arg(p, name));
        // Our own pid may be a killed run's too (pids repeat, in containers especially).
        let xtask_alive = pid("xtask_pid")
            .is_some_and(|p| p != std::process::id() && process::alive_with_arg(p, "xtask"));
        if !reaper_alive && !xtask_alive {
            say(format!(
                "cleaning up after an earlier run that was killed: {}",
                dir.display()
            ));
            stop(&dir);
        }
    }
}

/// The reaper's life: wait until the run's xtask closes our stdin (or dies), then stop.
pub(crate) fn reap(dir: &Path) {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    stop(dir);
}

/// Stops every server recorded in `dir`'s state and removes its directories.
pub(crate) fn stop(dir: &Path) {
    let state = std::fs::read_to_string(dir.join("state")).unwrap_or_default();
    let get = |key| recorded(&state, key);
    if let (Some(pg_ctl), Some(data)) = (get("postgres_pg_ctl"), get("postgres_data")) {
        stop_postgres(Path::new(&pg_ctl), Path::new(&data), get("postgres_user"));
    }
    for (name, key, subdir) in [
        ("Redis", "redis_pid", "redis"),
        ("NATS", "nats_pid", "nats"),
    ] {
        if let Some(pid) = get(key).and_then(|v| v.parse().ok())
            && process::alive_in(pid, &dir.join(subdir))
            && !process::terminate(pid, Duration::from_secs(10))
        {
            say(format!("{name} (pid {pid}) did not stop"));
        }
    }
    // The cluster's directory is outside the run's when the postgres user could not reach it.
    if let Some(pg_dir) = get("postgres_dir").map(PathBuf::from)
        && !pg_dir.starts_with(dir)
    {
        let _ = std::fs::remove_dir_all(pg_dir);
    }
    if let Err(error) = std::fs::remove_dir_all(dir) {
        say(format!("cannot remove {}: {error}", dir.display()));
    }
}

/// `pg_ctl stop`: fast (disconnects clients, shuts down cleanly), else immediate.
fn stop_postgres(pg_ctl: &Path, data: &Path, user: Option<String>) {
    if !data.join("postmaster.pid").exists() {
        return;
    }
    let user = match user {
        Some(_) => match PgUser::find() {
            Ok(user) => user,
            Err(error) => {
                say(format!(
                    "cannot stop PostgreSQL in {}: {error}",
                    data.display()
                ));
                return;
            }
        },
        None => None,
    };
    for mode in ["fast", "immediate"] {
        let stopped = PgUser::command(user.as_ref(), pg_ctl)
            .args(["stop", "-w", "-t", "30", "-m", mode, "-D"])
            .arg(data)
            // The postgres user may not be allowed into our working directory.
            .current_dir(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if stopped {
            return;
        }
    }
    say(format!("PostgreSQL in {} did not stop", data.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_record_wins() {
        let state = "xtask_pid=1\nredis_pid=10\nnats_pid=11\nredis_pid=12\n";
        assert_eq!(recorded(state, "redis_pid").as_deref(), Some("12"));
        assert_eq!(recorded(state, "nats_pid").as_deref(), Some("11"));
        assert_eq!(recorded(state, "postgres_data"), None);
    }
}
