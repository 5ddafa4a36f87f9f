//! `cargo xtask test`: the README's one test command; `cargo xtask services` for targeted runs.
//!
//! The integration tests use real servers (PostgreSQL, Redis, NATS with JetStream), as
//! production does. So that they never depend on how a machine's own servers are set up
//! (authentication, ports, versions, leftovers), `cargo xtask test` starts throwaway servers
//! of its own for each run and stops them afterwards:
//!
//! 1. finds the programs ([`tools`]): on PATH or at Debian's locations, the newest version
//!    of each; when one is missing on Debian as root it installs it with apt-get, otherwise
//!    it says exactly what to install;
//! 2. cleans up what a killed earlier run left behind, then creates
//!    `<cargo target dir>/xtask-servers/<pid>-<millis>/` ([`run`]);
//! 3. starts a reaper (this binary, `__reap <dir>`, in its own process group) that stops the
//!    servers and removes the directory as soon as this process ends, however it ends:
//!    normally, on a test failure, on Ctrl-C or when killed. Stopping is always its job, so
//!    the path taken after Ctrl-C is the one every run takes;
//! 4. starts PostgreSQL (a fresh `initdb --auth=trust` cluster), Redis (no persistence) and
//!    NATS (`-js`) on free ports of 127.0.0.1 ([`servers`]) and waits until each answers;
//! 5. runs `cargo test --workspace <args>` with `FAIRDEAL_TEST_POSTGRES_URL`,
//!    `FAIRDEAL_TEST_REDIS_URL` and `FAIRDEAL_TEST_NATS_URL` naming them.
//!
//! Before the servers start, `cargo xtask test` (of the whole workspace) checks the
//! Kubernetes manifests ([`deploy::manifests`]): every kustomization under `deploy/k8s`
//! rendered by `kubectl kustomize` must validate with `kubernetes-validate --strict`. Where
//! kubectl or python3 is missing the check is skipped and the run says so in its last line.
//! The compose file's checks and the native smoke test are tests of `fairdeal-e2e`
//! (tests/deploy). `cargo xtask deploy-check` runs the compose stack itself in Docker.
//!
//! The machine's own servers, if any, are neither used nor touched. PostgreSQL refuses to
//! run as root: as root, its cluster belongs to and runs as the `postgres` system user
//! (which Debian's package creates), through `runuser`.
//!
//! Written as a cargo alias rather than a shell script so that a newcomer with only cargo
//! runs one cargo command. Unix only (it uses process groups, `/proc` and `sh`); no
//! dependencies: it must build in seconds.
#![forbid(unsafe_code)]
#![allow(clippy::print_stderr, clippy::print_stdout)] // A developer tool: it talks to a terminal.

mod delay;
mod deploy;
mod process;
mod run;
mod servers;
mod services;
mod tools;

use std::io::Read as _;
use std::process::{Command, ExitCode};

const USAGE: &str = "\
usage: cargo xtask test [cargo test args...]
           checks the Kubernetes manifests (kubectl kustomize + kubernetes-validate --strict,
           skipped with a note where kubectl or python3 is missing; not with -p), starts
           throwaway PostgreSQL, Redis and NATS servers, runs `cargo test --workspace
           [args...]` against them (the compose checks and the native smoke test of the
           compose stack are among them: fairdeal-e2e's `deploy`), stops them
       cargo xtask services
           starts the same servers and prints their URLs as `export` lines for running
           `cargo test -p <crate>` in another shell; stops them on Enter or Ctrl-C
       cargo xtask deploy-check [--if-available] [--keep] [--no-build]
           builds the image (docker build -f deploy/Dockerfile -t fairdeal:latest .), starts
           docker-compose.yml under the project fairdeal-deploy-check with fresh secrets and
           free host ports, waits until every service is healthy, plays a table of bots to
           GameFinished through it (a player registers, confirms with the code the mail
           catcher caught, logs in, creates a table with three bot seats and plays), then
           removes the stack and its volumes. Needs a Docker daemon and docker-compose;
           with --if-available it says SKIPPED and succeeds where they are missing. --keep
           leaves the stack running; --no-build uses the image fairdeal:latest as it is.
           FAIRDEAL_DEPLOY_PROJECT overrides the compose project name. See docs/deploy.md.
       cargo xtask deploy-manifests
           only the Kubernetes manifest check of `cargo xtask test`
       cargo xtask deploy-secrets [DIR]
           writes a fresh set of the compose stack's secret files into DIR (default
           deploy/secrets, which docker-compose.yml reads and git ignores)
       cargo xtask delay-proxy LISTEN_ADDR TARGET_ADDR DELAY_MS
           a TCP proxy holding what it relays for DELAY_MS each way (latency off loopback
           where the kernel has no tc netem; services/tables/benches/netns.sh)";

/// Prints a progress line.
fn say(message: impl std::fmt::Display) {
    eprintln!("xtask: {message}");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("services") => services(),
        Some("deploy-check") => deploy::check(&args[1..]),
        Some("deploy-manifests") => manifests().map(|()| ExitCode::SUCCESS),
        Some("delay-proxy") => delay::proxy(&args[1..]),
        Some("deploy-secrets")
            if args.len() <= 2 && !args.get(1).is_some_and(|a| a.starts_with('-')) =>
        {
            let dir = args.get(1).map_or_else(
                || deploy::root().join("deploy/secrets"),
                std::path::PathBuf::from,
            );
            deploy::secrets(&dir).map(|()| {
                say(format!("secrets written to {}", dir.display()));
                ExitCode::SUCCESS
            })
        }
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        // Internal: the reaper of a run (see the module documentation).
        Some("__reap") if args.len() == 2 => {
            run::reap(std::path::Path::new(&args[1]));
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    result.unwrap_or_else(|error| {
        say(error);
        ExitCode::FAILURE
    })
}

/// `cargo xtask test [args]`.
fn test(args: &[String]) -> Result<ExitCode, String> {
    // The manifests belong to the whole workspace's run, not to a run narrowed to a crate.
    let whole = !args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a.starts_with("-p") || a.starts_with("--package"));
    let manifests_note = if whole {
        match deploy::manifests()? {
            deploy::Checked::Passed(dirs) => {
                let note = format!("Kubernetes manifests valid: {}", dirs.join(", "));
                say(&note);
                note
            }
            deploy::Checked::Skipped(why) => {
                let note = format!("Kubernetes manifest check SKIPPED: {why}");
                say(&note);
                note
            }
        }
    } else {
        "Kubernetes manifest check not run (a run narrowed with -p)".to_owned()
    };
    // The smoke test of the compose stack (fairdeal-e2e's `deploy`) runs the service binaries.
    let cargo_args: Vec<&String> = args.iter().take_while(|a| *a != "--").collect();
    let bin_dir = if whole || cargo_args.iter().any(|a| a.contains("fairdeal-e2e")) {
        Some(deploy::build_binaries(
            cargo_args.iter().any(|a| *a == "--release"),
            whole,
        )?)
    } else {
        None
    };
    let mut running = start()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.arg("test");
    // `-p <crate>` narrows the run to that crate; otherwise every crate is tested. (Arguments
    // after `--` are the test binaries'.)
    let cargo_args = args.iter().take_while(|a| *a != "--");
    if !cargo_args
        .into_iter()
        .any(|a| a.starts_with("-p") || a.starts_with("--package"))
    {
        command.arg("--workspace");
    }
    command.args(args);
    clean_cargo_env(&mut command);
    if let Some(dir) = &bin_dir {
        command.env("FAIRDEAL_DEPLOY_BIN_DIR", dir);
    }
    running.servers.export_to(&mut command);
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        for gone in running.servers.gone() {
            say(gone);
        }
    }
    running.stop();
    say(manifests_note);
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `cargo run` gave us the variables of the xtask package; some build scripts watch them
/// (ring: CARGO_MANIFEST_DIR), so passing them on to a cargo we start would rebuild those
/// crates on every switch between `cargo test` and `cargo xtask test`.
fn clean_cargo_env(command: &mut Command) {
    for (var, _) in std::env::vars_os() {
        let name = var.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || matches!(
                &*name,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
            )
        {
            command.env_remove(&var);
        }
    }
}

/// `cargo xtask deploy-manifests` (a skip is no failure; it says why).
fn manifests() -> Result<(), String> {
    match deploy::manifests()? {
        deploy::Checked::Passed(dirs) => {
            say(format!("Kubernetes manifests valid: {}", dirs.join(", ")));
        }
        deploy::Checked::Skipped(why) => say(format!("Kubernetes manifest check SKIPPED: {why}")),
    }
    Ok(())
}

/// `cargo xtask services`.
fn services() -> Result<ExitCode, String> {
    let running = start()?;
    for (var, url) in running.servers.urls() {
        println!("export {var}={url}");
    }
    say("servers running; press Enter (or Ctrl-C) to stop them");
    let mut byte = [0u8; 1];
    let _ = std::io::stdin().read(&mut byte);
    running.stop();
    Ok(ExitCode::SUCCESS)
}

/// A run with its servers up.
struct Running {
    /// The run directory and its reaper.
    run: run::Run,
    /// The servers, for their URLs.
    servers: servers::Servers,
}

impl Running {
    /// Stops the servers (through the reaper) and removes the run directory.
    fn stop(self) {
        self.run.finish();
        self.servers.forget();
        say("servers stopped");
    }
}

/// Finds or installs the programs, prepares a run directory and starts the servers.
fn start() -> Result<Running, String> {
    let tools = tools::Tools::find_or_install()?;
    let run = run::Run::create()?;
    match servers::Servers::start(&tools, &run) {
        Ok(servers) => Ok(Running { run, servers }),
        Err(error) => {
            run.finish();
            Err(error)
        }
    }
}
