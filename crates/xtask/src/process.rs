//! Other processes, by pid: alive, whose, signalled. Linux's `/proc` where it is needed; `sh`'s
//! `kill` builtin to signal (std can only kill its own children, and only with SIGKILL).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `pid` is a live process (a zombie, already dead but not yet reaped, is not).
pub(crate) fn alive(pid: u32) -> bool {
    if Path::new("/proc/self").exists() {
        return match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // "pid (comm) S ...": the state follows the last ')'.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => false,
        };
    }
    sh_kill("0", pid)
}

/// Whether `pid` is a live process whose command line contains `needle`.
pub(crate) fn alive_with_arg(pid: u32, needle: &str) -> bool {
    alive(pid)
        && std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|cmdline| String::from_utf8_lossy(&cmdline).contains(needle))
            .unwrap_or(false)
}

/// Whether `pid` is a live process working in `dir`: the servers are started there (Redis
/// and PostgreSQL also move there themselves), so a pid reused by another program is never
/// taken for one of ours.
pub(crate) fn alive_in(pid: u32, dir: &Path) -> bool {
    alive(pid)
        && std::fs::read_link(format!("/proc/{pid}/cwd"))
            // The link names the canonical path.
            .is_ok_and(|cwd| cwd == dir || dir.canonicalize().is_ok_and(|dir| cwd == dir))
}

/// Sends `signal` (`TERM`, `KILL`, `0`...) to `pid`; whether it was delivered.
fn sh_kill(signal: &str, pid: u32) -> bool {
    Command::new("sh")
        .args([
            "-c",
            "kill -s \"$0\" \"$1\" 2>/dev/null",
            signal,
            &pid.to_string(),
        ])
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Asks `pid` to stop with SIGTERM, waits up to `within`, then kills it. Whether it is gone.
pub(crate) fn terminate(pid: u32, within: Duration) -> bool {
    sh_kill("TERM", pid);
    if wait_gone(pid, within) {
        return true;
    }
    sh_kill("KILL", pid);
    wait_gone(pid, Duration::from_secs(5))
}

/// Waits until `pid` is gone, at most `within`.
fn wait_gone(pid: u32, within: Duration) -> bool {
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > within {
            return false;
        }
        // A process's end sends no signal to a non-parent: poll.
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Whether this process runs as root.
pub(crate) fn is_root() -> bool {
    id(&["-u"]).is_some_and(|uid| uid == 0)
}

/// The user and group ids of `user`, if it exists.
pub(crate) fn user_ids(user: &str) -> Option<(u32, u32)> {
    Some((id(&["-u", user])?, id(&["-g", user])?))
}

/// Runs `id <args>` and parses the number it prints.
fn id(args: &[&str]) -> Option<u32> {
    let output = Command::new("id")
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}
