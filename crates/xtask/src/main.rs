//! `cargo xtask test`: the README's one test command.
//!
//! The integration tests use real servers (PostgreSQL, Redis, NATS with JetStream) on
//! 127.0.0.1, as production does. This task makes sure they run, starting them when they are
//! installed but stopped, installing them with apt-get when they are missing on a Debian
//! machine where we are root, and otherwise saying exactly what to install. Then it runs
//! `cargo test --workspace` with the arguments given after `test`.
//!
//! Written as a cargo alias rather than a shell script so that a newcomer with only cargo
//! runs one cargo command. No dependencies: it must build in seconds.
#![forbid(unsafe_code)]
#![allow(clippy::print_stderr)] // A developer tool: progress goes to stderr.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// One server the tests need.
struct Server {
    name: &'static str,
    port: u16,
    /// The Debian package that provides it.
    package: &'static str,
    /// The program that must exist once the package is installed.
    program: &'static str,
    /// How to start it in the background.
    start: fn() -> Command,
}

fn start_postgres() -> Command {
    // The cluster version is the only directory under /etc/postgresql.
    let version = std::fs::read_dir("/etc/postgresql")
        .ok()
        .and_then(|mut d| d.next())
        .and_then(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .unwrap_or_else(|| "15".to_owned());
    let mut c = Command::new("pg_ctlcluster");
    c.args(["--skip-systemctl-redirect", &version, "main", "start"]);
    c
}

fn start_redis() -> Command {
    let mut c = Command::new("redis-server");
    c.args([
        "--daemonize",
        "yes",
        "--bind",
        "127.0.0.1",
        "--port",
        "6379",
        "--save",
        "",
        "--appendonly",
        "no",
    ]);
    c
}

fn start_nats() -> Command {
    let _ = std::fs::create_dir_all("/var/lib/nats-server");
    let mut c = Command::new("start-stop-daemon");
    c.args([
        "--start",
        "--oknodo",
        "--background",
        "--exec",
        "/usr/sbin/nats-server",
        "--",
        "-a",
        "127.0.0.1",
        "-p",
        "4222",
        "-js",
        "-sd",
        "/var/lib/nats-server",
    ]);
    c
}

const SERVERS: [Server; 3] = [
    Server {
        name: "PostgreSQL",
        port: 5432,
        package: "postgresql",
        program: "/usr/bin/pg_ctlcluster",
        start: start_postgres,
    },
    Server {
        name: "Redis",
        port: 6379,
        package: "redis-server",
        program: "/usr/bin/redis-server",
        start: start_redis,
    },
    Server {
        name: "NATS (JetStream)",
        port: 4222,
        package: "nats-server",
        program: "/usr/sbin/nats-server",
        start: start_nats,
    },
];

fn listening(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

fn wait_for(port: u16, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if listening(port) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.trim_ascii() == b"0")
        .unwrap_or(false)
}

fn install(packages: &[&str]) -> Result<(), String> {
    if !(is_root() && Path::new("/usr/bin/apt-get").exists()) {
        return Err(format!(
            "missing servers; install them with: sudo apt-get install {}",
            packages.join(" ")
        ));
    }
    eprintln!("xtask: installing {}", packages.join(" "));
    let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
    if !ok(Command::new("apt-get").args(["update", "-qq"])) {
        return Err("apt-get update failed".to_owned());
    }
    let mut c = Command::new("apt-get");
    c.args(["install", "-y", "-qq"]).args(packages);
    c.env("DEBIAN_FRONTEND", "noninteractive");
    if !ok(&mut c) {
        return Err(format!("apt-get install {} failed", packages.join(" ")));
    }
    Ok(())
}

/// Makes every server listen, or says why it cannot.
fn ensure_servers() -> Result<(), String> {
    let missing: Vec<&str> = SERVERS
        .iter()
        .filter(|s| !listening(s.port) && !Path::new(s.program).exists())
        .map(|s| s.package)
        .collect();
    if !missing.is_empty() {
        install(&missing)?;
    }
    for server in &SERVERS {
        if listening(server.port) {
            continue;
        }
        eprintln!("xtask: starting {}", server.name);
        let status = (server.start)()
            .status()
            .map_err(|e| format!("cannot start {}: {e}", server.name))?;
        if !status.success() {
            return Err(format!("starting {} failed ({status})", server.name));
        }
        if !wait_for(server.port, Duration::from_secs(20)) {
            return Err(format!(
                "{} did not listen on 127.0.0.1:{}",
                server.name, server.port
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => {}
        Some("services") => {
            return match ensure_servers() {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("xtask: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        _ => {
            eprintln!("usage: cargo xtask test [cargo test args...] | cargo xtask services");
            return ExitCode::from(2);
        }
    }
    if let Err(e) = ensure_servers() {
        eprintln!("xtask: {e}");
        return ExitCode::FAILURE;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args(["test", "--workspace"])
        .args(&args[1..])
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask: cannot run cargo: {e}");
            ExitCode::FAILURE
        }
    }
}
