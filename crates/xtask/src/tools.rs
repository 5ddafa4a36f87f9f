//! The server programs: found on PATH or at Debian's locations (the newest version of each),
//! installed with apt-get when missing on Debian as root, or else named for the developer to
//! install.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{process, say};

/// One program, with the version it reports.
#[derive(Debug, Clone)]
pub(crate) struct Tool {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Its version, as printed (`15.20`, `7.0.15`, `2.9.10`).
    pub(crate) version: String,
}

/// The programs a run needs.
#[derive(Debug)]
pub(crate) struct Tools {
    /// PostgreSQL's `initdb`.
    pub(crate) initdb: Tool,
    /// PostgreSQL's `pg_ctl`, from the same directory as `initdb` (same version).
    pub(crate) pg_ctl: Tool,
    /// `redis-server`.
    pub(crate) redis: Tool,
    /// `nats-server` (JetStream needs 2.2 or later).
    pub(crate) nats: Tool,
    /// As root: `runuser` and the user PostgreSQL runs as (it refuses to run as root).
    pub(crate) pg_user: Option<PgUser>,
}

/// How to run PostgreSQL's programs when we are root.
#[derive(Debug, Clone)]
pub(crate) struct PgUser {
    /// The user's name (`postgres`).
    pub(crate) name: String,
    /// Its user and group ids, to own the cluster's directory.
    pub(crate) uid: u32,
    /// Its group id.
    pub(crate) gid: u32,
    /// `runuser`, to run a program as that user.
    pub(crate) runuser: PathBuf,
}

impl PgUser {
    /// As root, the `postgres` system user, or why there is none to use.
    pub(crate) fn find() -> Result<Option<PgUser>, String> {
        if !process::is_root() {
            return Ok(None);
        }
        let name = "postgres";
        let (uid, gid) = process::user_ids(name).ok_or_else(|| {
            format!(
                "PostgreSQL refuses to run as root and there is no `{name}` user to run it as; \
                 create one (useradd --system --user-group {name}) or run as another user"
            )
        })?;
        let runuser = on_path("runuser")
            .into_iter()
            .chain(["/usr/sbin/runuser", "/sbin/runuser"].map(PathBuf::from))
            .find(|p| executable(p))
            .ok_or("running PostgreSQL as the postgres user needs `runuser` (util-linux)")?;
        Ok(Some(PgUser {
            name: name.to_owned(),
            uid,
            gid,
            runuser,
        }))
    }

    /// A command running `program` as this user.
    pub(crate) fn command(user: Option<&PgUser>, program: &Path) -> Command {
        match user {
            Some(user) => {
                let mut command = Command::new(&user.runuser);
                command.args(["-u", &user.name, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }
}

impl Tools {
    /// Finds every program; installs the missing ones where that is safe to do (Debian, as
    /// root); otherwise says what to install.
    pub(crate) fn find_or_install() -> Result<Tools, String> {
        let programs = match Programs::find() {
            Ok(programs) => programs,
            Err(missing) => {
                let packages: Vec<&str> = missing.iter().map(|m| m.package).collect();
                let what: Vec<&str> = missing.iter().map(|m| m.what).collect();
                if !(process::is_root() && Path::new("/usr/bin/apt-get").exists()) {
                    return Err(format!(
                        "the tests need their own PostgreSQL, Redis and NATS servers, and \
                         these programs are missing: {}.\n  On Debian or Ubuntu: sudo apt-get \
                         install {}\n  Elsewhere: install them so that initdb and pg_ctl \
                         (PostgreSQL 13 or later), redis-server and nats-server (2.2 or later, \
                         for JetStream) are on PATH.",
                        what.join(", "),
                        packages.join(" ")
                    ));
                }
                say(format!(
                    "installing {} with apt-get (Debian, running as root; a minute or so)",
                    packages.join(" ")
                ));
                install(&packages)?;
                Programs::find().map_err(|missing| {
                    let what: Vec<&str> = missing.iter().map(|m| m.what).collect();
                    format!("still missing after apt-get: {}", what.join(", "))
                })?
            }
        };
        Ok(Tools {
            initdb: programs.initdb,
            pg_ctl: programs.pg_ctl,
            redis: programs.redis,
            nats: programs.nats,
            pg_user: PgUser::find()?,
        })
    }
}

/// The programs alone.
struct Programs {
    initdb: Tool,
    pg_ctl: Tool,
    redis: Tool,
    nats: Tool,
}

impl Programs {
    /// The newest of each program, or which are missing.
    fn find() -> Result<Programs, Vec<Missing>> {
        let postgres = newest(postgres_dirs().into_iter().filter_map(|dir| {
            let pg_ctl = dir.join("pg_ctl");
            (executable(&dir.join("initdb")) && executable(&pg_ctl)).then_some(pg_ctl)
        }));
        let redis = newest(candidates("redis-server", &["/usr/bin", "/usr/local/bin"]));
        let nats = newest(candidates(
            "nats-server",
            &["/usr/sbin", "/usr/bin", "/usr/local/bin"],
        ));
        match (postgres, redis, nats) {
            (Some(pg_ctl), Some(redis), Some(nats)) => Ok(Programs {
                initdb: Tool {
                    path: pg_ctl.path.with_file_name("initdb"),
                    version: pg_ctl.version.clone(),
                },
                pg_ctl,
                redis,
                nats,
            }),
            (postgres, redis, nats) => {
                let mut missing = Vec::new();
                if postgres.is_none() {
                    missing.push(Missing {
                        what: "PostgreSQL (initdb, pg_ctl)",
                        package: "postgresql",
                    });
                }
                if redis.is_none() {
                    missing.push(Missing {
                        what: "Redis (redis-server)",
                        package: "redis-server",
                    });
                }
                if nats.is_none() {
                    missing.push(Missing {
                        what: "NATS (nats-server)",
                        package: "nats-server",
                    });
                }
                Err(missing)
            }
        }
    }
}

/// A missing program and the Debian package that provides it.
struct Missing {
    what: &'static str,
    package: &'static str,
}

/// Directories that may hold PostgreSQL's programs: every Debian major version's, and the
/// directory of any `pg_ctl` on PATH.
fn postgres_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .collect();
    dirs.extend(
        on_path("pg_ctl")
            // A symlink on PATH (as /usr/local/bin/pg_ctl) names the real directory.
            .and_then(|p| p.canonicalize().ok())
            .and_then(|p| p.parent().map(Path::to_path_buf)),
    );
    dirs
}

/// `name` on PATH and in `dirs`.
fn candidates(name: &str, dirs: &[&str]) -> Vec<PathBuf> {
    on_path(name)
        .into_iter()
        .chain(dirs.iter().map(|dir| Path::new(dir).join(name)))
        .filter(|p| executable(p))
        .collect()
}

/// The program among `paths` reporting the highest `--version`.
fn newest(paths: impl IntoIterator<Item = PathBuf>) -> Option<Tool> {
    let mut best: Option<(Vec<u32>, Tool)> = None;
    for path in paths {
        let Some(version) = version_of(&path) else {
            continue;
        };
        let key = version_key(&version);
        if best.as_ref().is_none_or(|(k, _)| key > *k) {
            best = Some((key, Tool { path, version }));
        }
    }
    best.map(|(_, tool)| tool)
}

/// The version `program --version` prints: its first run of digits and dots
/// (`pg_ctl (PostgreSQL) 15.20`, `Redis server v=7.0.15`, `nats-server: v2.9.10`).
fn version_of(program: &Path) -> Option<String> {
    let output = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let version: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Some(version.trim_end_matches('.').to_owned())
}

/// `2.10.3` as `[2, 10, 3]`, so that versions compare numerically.
fn version_key(version: &str) -> Vec<u32> {
    version.split('.').filter_map(|n| n.parse().ok()).collect()
}

/// The first `name` on PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// Whether `path` is an executable file.
pub(crate) fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `apt-get install`s `packages`, without recommended extras. Its chatter is shown only when
/// it fails.
fn install(packages: &[&str]) -> Result<(), String> {
    let run = |args: &[&str]| -> Result<(), String> {
        let output = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run apt-get: {e}"))?;
        if output.status.success() {
            return Ok(());
        }
        let text =
            String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = text.lines().collect();
        Err(format!(
            "apt-get {} failed:\n    {}",
            args.join(" "),
            lines[lines.len().saturating_sub(15)..].join("\n    ")
        ))
    };
    run(&["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend_from_slice(packages);
    run(&args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(version_key("2.10.3") > version_key("2.9.10"));
        assert!(version_key("16.1") > version_key("15.20"));
        assert_eq!(version_key("7.0.15"), [7, 0, 15]);
    }
}
