//! The three servers of a run, each on a free port of 127.0.0.1, each in its own
//! subdirectory of the run directory, each waited for until it answers.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::run::Run;
use crate::say;
use crate::tools::{PgUser, Tools};

/// How often a server is started on a new port when the one picked was taken meanwhile.
const ATTEMPTS: u32 = 3;
/// How long a server may take to answer once started.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The running servers.
#[derive(Debug)]
pub(crate) struct Servers {
    /// PostgreSQL (user `postgres`, trust authentication).
    postgres: Server,
    /// Redis, our child.
    redis: Server,
    /// NATS, our child.
    nats: Server,
}

/// One running server: where it answers, its log and, when it is our child, the child,
/// kept to collect its exit status once stopped.
#[derive(Debug)]
struct Server {
    name: &'static str,
    port: u16,
    log: PathBuf,
    /// Our child (`None`: PostgreSQL, started by pg_ctl).
    child: Option<Child>,
}

impl Server {
    /// How the server went, when it no longer answers.
    fn gone(&mut self) -> Option<String> {
        if connect(self.port).is_some() {
            return None;
        }
        let exit = match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(Some(status))) => format!(" ({status})"),
            _ => String::new(),
        };
        Some(format!(
            "{} on 127.0.0.1:{} no longer answers{exit}; {}",
            self.name,
            self.port,
            log_tail(&self.log)
        ))
    }
}

impl Servers {
    /// Starts PostgreSQL, Redis and NATS for `run` and waits until each answers.
    pub(crate) fn start(tools: &Tools, run: &Run) -> Result<Servers, String> {
        let started = Instant::now();
        let (postgres, postgres_log) = start_postgres(tools, run)?;
        let (redis, redis_child) = start_redis(tools, run)?;
        let (nats, nats_child) = start_nats(tools, run)?;
        say(format!(
            "PostgreSQL {} on 127.0.0.1:{postgres}, Redis {} on 127.0.0.1:{redis}, NATS {} \
             (JetStream) on 127.0.0.1:{nats}; ready in {:.1} s, in {}",
            tools.pg_ctl.version,
            tools.redis.version,
            tools.nats.version,
            started.elapsed().as_secs_f64(),
            run.dir.display()
        ));
        let ours = |name, port, subdir: &str, child| Server {
            name,
            port,
            log: run.dir.join(subdir).join(SERVER_LOG),
            child: Some(child),
        };
        Ok(Servers {
            postgres: Server {
                name: "PostgreSQL",
                port: postgres,
                log: postgres_log,
                child: None,
            },
            redis: ours("Redis", redis, "redis", redis_child),
            nats: ours("NATS", nats, "nats", nats_child),
        })
    }

    /// The servers that no longer answer, each named with the last lines of its log: a
    /// server that died during the tests fails every test after it with a refused
    /// connection, which names no cause; this is said before the run's directory, and the
    /// log with it, is removed.
    pub(crate) fn gone(&mut self) -> Vec<String> {
        self.all().into_iter().filter_map(Server::gone).collect()
    }

    /// The environment variables naming the servers, as the tests read them
    /// (`fairdeal-testkit`).
    pub(crate) fn urls(&self) -> [(&'static str, String); 3] {
        [
            (
                "FAIRDEAL_TEST_POSTGRES_URL",
                format!(
                    "postgres://postgres@127.0.0.1:{}/postgres",
                    self.postgres.port
                ),
            ),
            (
                "FAIRDEAL_TEST_REDIS_URL",
                format!("redis://127.0.0.1:{}", self.redis.port),
            ),
            (
                "FAIRDEAL_TEST_NATS_URL",
                format!("nats://127.0.0.1:{}", self.nats.port),
            ),
        ]
    }

    /// Sets the variables of [`Servers::urls`] on `command`.
    pub(crate) fn export_to(&self, command: &mut Command) {
        for (var, url) in self.urls() {
            command.env(var, url);
        }
    }

    /// Collects the exit status of the children the reaper stopped.
    pub(crate) fn forget(mut self) {
        for child in self.all().into_iter().filter_map(|s| s.child.as_mut()) {
            let _ = child.try_wait();
        }
    }

    /// The three servers.
    fn all(&mut self) -> [&mut Server; 3] {
        [&mut self.postgres, &mut self.redis, &mut self.nats]
    }
}

/// Each server's log, in its directory.
const SERVER_LOG: &str = "server.log";

/// A port nobody listens on now.
fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))
}

/// A connection to 127.0.0.1:`port`, with short timeouts.
fn connect(port: u16) -> Option<TcpStream> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    Some(stream)
}

/// The last lines of a server's log, for an error message.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(10)..].join("\n    ");
    format!("{}:\n    {tail}", log.display())
}

/// Creates `dir` (mode 0700) for this run's use only.
fn private_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir(dir)
        .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

// ---------------------------------------------------------------------------------------
// PostgreSQL: a fresh cluster (initdb), started and stopped with pg_ctl.

/// Settings appended to the fresh cluster's postgresql.conf.
const POSTGRES_SETTINGS: &str = "
# cargo xtask: a throwaway cluster for the tests, reachable on 127.0.0.1 only (the port is
# given at start); no Unix socket, so no socket directory to share with another server.
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
# Tests run side by side, each with its services' pools (24 sessions a service by default),
# and some start several replicas of a service: PostgreSQL's default of 100 is too few.
max_connections = 400
";

/// Initialises and starts a cluster; returns its port.
fn start_postgres(tools: &Tools, run: &Run) -> Result<(u16, PathBuf), String> {
    let user = tools.pg_user.as_ref();
    let home = postgres_home(run, user)?;
    let data = home.join("data");
    let log = home.join(SERVER_LOG);
    run.record("postgres_dir", home.display());
    run.record("postgres_pg_ctl", tools.pg_ctl.path.display());
    run.record("postgres_data", data.display());
    if let Some(user) = user {
        run.record("postgres_user", &user.name);
    }
    let initdb = PgUser::command(user, &tools.initdb.path)
        .arg("-D")
        .arg(&data)
        .args([
            "--username=postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            // Throwaway data: no need to wait for the disk at creation (the server keeps
            // fsync on).
            "--no-sync",
        ])
        .env("LC_ALL", "C")
        // The postgres user may not be allowed into our working directory.
        .current_dir(&home)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tools.initdb.path.display()))?;
    if !initdb.status.success() {
        return Err(format!(
            "initdb failed:\n{}",
            String::from_utf8_lossy(&initdb.stderr)
        ));
    }
    std::fs::OpenOptions::new()
        .append(true)
        .open(data.join("postgresql.conf"))
        .and_then(|mut conf| conf.write_all(POSTGRES_SETTINGS.as_bytes()))
        .map_err(|e| format!("cannot configure the cluster in {}: {e}", data.display()))?;
    for attempt in 1..=ATTEMPTS {
        let port = free_port()?;
        let started = PgUser::command(user, &tools.pg_ctl.path)
            .arg("start")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "-o", &format!("-p {port}")])
            .current_dir(&home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if started && connect(port).is_some() {
            return Ok((port, log));
        }
        if attempt == ATTEMPTS {
            return Err(format!("PostgreSQL did not start; {}", log_tail(&log)));
        }
    }
    unreachable!("the last attempt returns")
}

/// A directory for the cluster that the user PostgreSQL runs as owns and can reach: under
/// the run directory, or, when that user cannot reach it (a target directory under a home
/// only its owner may enter), under the system's temporary directory.
fn postgres_home(run: &Run, user: Option<&PgUser>) -> Result<PathBuf, String> {
    let in_run = run.dir.join("postgres");
    let fallback = std::env::temp_dir().join(format!(
        "fairdeal-xtask-postgres-{}",
        run.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    for home in [in_run, fallback] {
        private_dir(&home)?;
        let Some(user) = user else {
            return Ok(home);
        };
        std::os::unix::fs::chown(&home, Some(user.uid), Some(user.gid))
            .map_err(|e| format!("cannot give {} to {}: {e}", home.display(), user.name))?;
        let reachable = PgUser::command(Some(user), Path::new("test"))
            .arg("-w")
            .arg(&home)
            .current_dir(&home)
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if reachable {
            if !home.starts_with(&run.dir) {
                say(format!(
                    "the {} user cannot reach {}; PostgreSQL's files go to {}",
                    user.name,
                    run.dir.display(),
                    home.display()
                ));
            }
            return Ok(home);
        }
    }
    Err(format!(
        "the {} user cannot reach a directory for PostgreSQL under {} nor under {}",
        user.map_or("", |u| u.name.as_str()),
        run.dir.display(),
        std::env::temp_dir().display()
    ))
}

// ---------------------------------------------------------------------------------------
// Redis and NATS: our children.

/// Starts a server with `args(port)` in `dir` until one answers `ready(port)`.
fn start_child(
    name: &str,
    program: &Path,
    run: &Run,
    subdir: &str,
    args: impl Fn(u16, &Path) -> Vec<String>,
    ready: fn(u16) -> bool,
) -> Result<(u16, Child), String> {
    let dir = run.dir.join(subdir);
    private_dir(&dir)?;
    let log = dir.join(SERVER_LOG);
    for attempt in 1..=ATTEMPTS {
        let port = free_port()?;
        let output = File::create(&log)
            .and_then(|out| Ok((out.try_clone()?, out)))
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut child = Command::new(program)
            .args(args(port, &dir))
            // Its working directory tells a later cleanup that a pid is really this server.
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(output.0)
            .stderr(output.1)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        run.record(&format!("{subdir}_pid"), child.id());
        let deadline = Instant::now() + READY_WITHIN;
        while Instant::now() < deadline && child.try_wait().is_ok_and(|s| s.is_none()) {
            if ready(port) {
                return Ok((port, child));
            }
            // A starting server sends no signal when it is ready: poll its port.
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        if attempt == ATTEMPTS {
            return Err(format!("{name} did not start; {}", log_tail(&log)));
        }
    }
    unreachable!("the last attempt returns")
}

/// Redis without persistence: nothing is saved, nothing read at start.
fn start_redis(tools: &Tools, run: &Run) -> Result<(u16, Child), String> {
    start_child(
        "Redis",
        &tools.redis.path,
        run,
        "redis",
        |port, dir| {
            [
                "--bind",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                &dir.display().to_string(),
            ]
            .map(str::to_owned)
            .to_vec()
        },
        |port| {
            let Some(mut stream) = connect(port) else {
                return false;
            };
            let mut reply = [0u8; 7];
            stream.write_all(b"PING\r\n").is_ok()
                && stream.read_exact(&mut reply).is_ok()
                && reply == *b"+PONG\r\n"
        },
    )
}

/// NATS with JetStream, its store in the run directory.
fn start_nats(tools: &Tools, run: &Run) -> Result<(u16, Child), String> {
    start_child(
        "NATS",
        &tools.nats.path,
        run,
        "nats",
        |port, dir| {
            [
                "-a",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-js",
                "-sd",
                &dir.join("jetstream").display().to_string(),
            ]
            .map(str::to_owned)
            .to_vec()
        },
        // The server's greeting says whether JetStream is on.
        |port| {
            let Some(stream) = connect(port) else {
                return false;
            };
            let mut info = String::new();
            BufReader::new(stream).read_line(&mut info).is_ok()
                && info.starts_with("INFO ")
                && info.contains("\"jetstream\":true")
        },
    )
}
