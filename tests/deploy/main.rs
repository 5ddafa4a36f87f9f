//! The deployment files, checked (issue 19):
//!
//! - `compose_names_every_binary_with_its_settings`: docker-compose.yml parses (merge keys and
//!   interpolation as compose does them), runs every binary deploy/Dockerfile builds, each
//!   with its service name, its secret file, the addresses of what it calls (and starts with
//!   them; infrastructure healthy first), starts with the services whose events it
//!   consumes, a health check and a published port, and no secret in its environment.
//! - `compose_services_run_natively_and_play_a_bot_table` (the smoke test): starts every
//!   fairdeal service of the compose file as a native process with exactly the command and
//!   environment compose gives it (plus the image's `ENV`), the compose host names mapped to
//!   127.0.0.1: the fairdeal services to ports of their own, `postgres`/`nats`/`redis` to the
//!   test servers, `mailcatcher` to an SMTP catcher in this test. Two settings differ, both
//!   because the processes share one host and its servers: each binds its own port
//!   (`FAIRDEAL_LISTEN_ADDR`), and they share a subject prefix no other test uses
//!   (`FAIRDEAL_SUBJECT_PREFIX`); the secret files hold the test database's URL. Every service
//!   starts at once, as compose starts them; the compose health check
//!   command (`fairdeal-health-probe`) must pass for each. Then a player registers, confirms
//!   with the mailed code, logs in and plays a table with three bots to GameFinished; the
//!   ledger (its signing key from `fairdeal-ledger --generate-key`) must then sign a
//!   checkpoint over more leaves than it held before the table (no stream halted, no event
//!   refused); the player posts in the chat's lobby and receives the message on a
//!   subscription and in the history (presence and the rate limit in Redis); the rating
//!   service's leaderboard answers.
//! - `compose_stack_plays_a_bot_table` (ignored): the same player against a running compose
//!   stack, at the addresses `cargo xtask deploy-check` passes in `FAIRDEAL_DEPLOY_URLS`
//!   (`auth=http://127.0.0.1:port,tables=...`) with the mail catcher's directory in
//!   `FAIRDEAL_DEPLOY_MAIL_DIR`.
//!
//! The binaries: `FAIRDEAL_DEPLOY_BIN_DIR` when set (`cargo xtask test` builds them and sets
//! it), else the test's own profile directory (`cargo build -p fairdeal-<service> ... -p
//! fairdeal-health-probe` first).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod compose;
mod more;
mod play;
mod smtp;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context as _, anyhow, bail, ensure};
use compose::{Compose, Service};
use fairdeal_kit::deployment::{Deployment, Made};
use fairdeal_server::SERVICES;
use sha2::Digest as _;
use tokio::process::{Child, Command};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The port every service listens on inside its container.
const CONTAINER_PORT: u16 = 50051;

/// `FAIRDEAL_<SETTING>` of a setting's name.
fn variable(setting: &str) -> String {
    format!("FAIRDEAL_{}", setting.to_ascii_uppercase())
}

/// How service `name` is deployed, from the one list.
fn deployment(name: &str) -> Option<&'static Deployment> {
    SERVICES
        .iter()
        .find(|s| s.name == name)
        .map(|s| &s.deployment)
}

/// The settings (environment variables) service `name` needs from the compose file besides
/// its name and secret file, and which compose service each address must name: NATS, Redis
/// when it keeps something there, what its secrets' compose stand-ins point at (the mail
/// catcher), and each service it calls. Said by its `DEPLOYMENT`; the native run below is
/// what proves the services work with them.
fn needs(name: &str) -> Option<Vec<(String, String)>> {
    let d = deployment(name)?;
    let mut needs = vec![("FAIRDEAL_NATS_URL".to_owned(), "nats".to_owned())];
    if d.redis.is_some() {
        needs.push(("FAIRDEAL_REDIS_URL".to_owned(), "redis".to_owned()));
    }
    for secret in d.secrets {
        if let Some((host, _)) = secret.compose.and_then(url_host_port) {
            needs.push((variable(secret.setting), host));
        }
    }
    for peer in d.calls.iter().filter(|p| **p != name) {
        needs.push((variable(&format!("{peer}_url")), (*peer).to_owned()));
    }
    Some(needs)
}

/// The services whose events service `name` consumes over NATS: compose starts it with them
/// (`service_started`: the stack's data-flow order, not required for correctness, since a
/// durable consumer created first waits for the events; the smoke test starts every service
/// at once).
fn consumes(name: &str) -> Vec<&'static str> {
    let Some(d) = deployment(name) else {
        return Vec::new();
    };
    SERVICES
        .iter()
        .map(|s| s.name)
        .filter(|s| *s != name && (d.reads_every_other || d.reads.contains(s)))
        .collect()
}

/// The keys service `name`'s secret file must hold (checked on the files the smoke test and
/// `cargo xtask deploy-secrets` write; documented in docs/deploy.md): the database URL, its
/// `DEPLOYMENT`'s secrets the compose stack does not give in plain, and its own secret when
/// it signs in.
fn secret_keys(name: &str) -> Vec<&'static str> {
    let Some(d) = deployment(name) else {
        return Vec::new();
    };
    let mut keys = vec!["database_url"];
    keys.extend(
        d.secrets
            .iter()
            .filter(|s| s.compose.is_none())
            .map(|s| s.setting),
    );
    if d.signs_in {
        keys.push("service_secret");
    }
    keys
}

/// Names of settings that are secrets and must never be in a compose `environment`.
const SECRET_WORDS: &[&str] = &[
    "SECRET",
    "PASSWORD",
    "SEED_KEYS",
    "CREDENTIALS",
    "DATABASE_URL",
    "SIGNING_KEY",
];

/// deploy/Dockerfile as the checks need it.
struct Dockerfile {
    /// `ARG SERVICES="..."`: the services whose binaries the image holds.
    services: Vec<String>,
    /// The runtime stage's `ENV` (every container's environment before compose's).
    env: BTreeMap<String, String>,
}

fn dockerfile() -> Dockerfile {
    let text = std::fs::read_to_string(root().join("deploy/Dockerfile")).unwrap();
    // Statements with their continuation lines joined.
    let statements: Vec<String> = text
        .replace("\\\n", " ")
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_owned)
        .collect();
    let services = statements
        .iter()
        .find_map(|s| s.strip_prefix("ARG SERVICES="))
        .expect("deploy/Dockerfile has ARG SERVICES=\"...\"")
        .trim_matches('"')
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let runtime = statements
        .iter()
        .rposition(|s| s.starts_with("FROM "))
        .unwrap();
    let env = statements[runtime..]
        .iter()
        .filter_map(|s| s.strip_prefix("ENV "))
        .flat_map(|s| s.split_whitespace())
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Dockerfile { services, env }
}

/// The compose file with every variable at its default (what `docker-compose up` does in a
/// shell that sets none).
fn compose_file() -> Compose {
    Compose::load(&root().join("docker-compose.yml"), &BTreeMap::new()).unwrap()
}

/// `scheme://host:port...` split as (host, port); `None` for other values.
fn url_host_port(value: &str) -> Option<(String, u16)> {
    let rest = value.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let authority = authority.rsplit('@').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    Some((host.to_owned(), port.parse().ok()?))
}

#[test]
fn compose_names_every_binary_with_its_settings() {
    let docker = dockerfile();
    let compose = compose_file();
    let services = compose.fairdeal_services();

    // A service named `<name>-<n>` running `<name>`'s binary is a replica of it.
    let names: BTreeSet<&str> = services.iter().map(|s| s.name.as_str()).collect();
    let service_of = |name: &str| -> String {
        match name.rsplit_once('-') {
            Some((base, n))
                if names.contains(base)
                    && !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit()) =>
            {
                base.to_owned()
            }
            _ => name.to_owned(),
        }
    };
    let mut binaries: Vec<String> = services
        .iter()
        .filter(|s| service_of(&s.name) == s.name)
        .map(|s| s.command[0].clone())
        .collect();
    binaries.sort();
    let mut built: Vec<String> = docker
        .services
        .iter()
        .map(|s| format!("fairdeal-{s}"))
        .collect();
    built.sort();
    assert_eq!(
        binaries, built,
        "docker-compose.yml must run each service binary deploy/Dockerfile builds, once \
         (replicas aside)"
    );

    for service in &services {
        let name = &service_of(&service.name);
        let context = |what: &str| format!("compose service {}: {what}", service.name);
        assert_eq!(
            service.command,
            [format!("fairdeal-{name}")],
            "{}",
            context("command")
        );
        assert_eq!(
            service.image.as_deref(),
            Some("fairdeal:latest"),
            "{}",
            context("image")
        );
        let env = &service.environment;
        assert_eq!(
            env.get("FAIRDEAL_SERVICE_NAME").map(String::as_str),
            Some(name.as_str()),
            "{}",
            context("FAIRDEAL_SERVICE_NAME")
        );
        let secret = format!("{name}.toml");
        assert_eq!(
            env.get("FAIRDEAL_CONFIG"),
            Some(&format!("/run/secrets/{secret}")),
            "{}",
            context("FAIRDEAL_CONFIG names its secret file")
        );
        assert!(
            service.secrets.contains(&secret) && compose.secrets.contains_key(&secret),
            "{}",
            context("mounts its secret file")
        );
        for key in env.keys() {
            assert!(
                !SECRET_WORDS.iter().any(|w| key.contains(w)),
                "{}",
                context(&format!("{key} is a secret: it belongs in the secret file"))
            );
        }
        for (key, value) in env {
            assert!(
                !value.trim().is_empty(),
                "{}",
                context(&format!("{key} is empty"))
            );
        }
        let needed = needs(name)
            .unwrap_or_else(|| panic!("{}", context("not in fairdeal_server::SERVICES")));
        for (key, target) in &needed {
            let value = env
                .get(key)
                .unwrap_or_else(|| panic!("{}", context(&format!("{key} is not set"))));
            let (host, port) = url_host_port(value)
                .unwrap_or_else(|| panic!("{}", context(&format!("{key} is not a URL"))));
            assert_eq!(host, *target, "{}", context(key));
            let callee = &compose.services[&host];
            if callee
                .command
                .first()
                .is_some_and(|c| c.starts_with("fairdeal-"))
            {
                assert_eq!(port, CONTAINER_PORT, "{}", context(key));
            }
            let condition = service.depends_on.get(&host);
            // Infrastructure with a health check must be healthy first (a service exits
            // without its database); another service need only be started: each calls the
            // others lazily and retries (docs/deploy.md, start order), so they start together.
            let fairdeal_callee = callee
                .command
                .first()
                .is_some_and(|c| c.starts_with("fairdeal-"));
            let expected = if callee.healthcheck.is_some() && !fairdeal_callee {
                "service_healthy"
            } else {
                "service_started"
            };
            assert_eq!(
                condition.map(String::as_str),
                Some(expected),
                "{}",
                context(&format!("depends_on {host}"))
            );
        }
        for producer in consumes(name) {
            assert_eq!(
                service.depends_on.get(producer).map(String::as_str),
                Some("service_started"),
                "{}",
                context(&format!("consumes {producer}'s events: depends_on it"))
            );
        }
        assert_eq!(
            service.healthcheck.as_deref(),
            Some(&["CMD".to_owned(), "fairdeal-health-probe".to_owned()][..]),
            "{}",
            context("gRPC health check")
        );
        assert!(
            service.ports.iter().any(|(_, c)| *c == CONTAINER_PORT),
            "{}",
            context("publishes its gRPC port")
        );
    }
    // A service with replicas: each of them, the first included, announces its own compose
    // address to the others (they forward calls to whoever owns a table).
    for service in &services {
        let replicated = services.iter().any(|other| {
            other.name != service.name && service_of(&other.name) == service_of(&service.name)
        });
        if replicated {
            assert_eq!(
                service.environment.get("FAIRDEAL_ADVERTISE_URL"),
                Some(&format!("http://{}:{CONTAINER_PORT}", service.name)),
                "compose service {}: a replica announces its own address",
                service.name
            );
        }
    }
    // The image gives every container its listen address on the container port.
    assert_eq!(
        docker.env.get("FAIRDEAL_LISTEN_ADDR").map(String::as_str),
        Some("0.0.0.0:50051")
    );
    // The start order exists (no cycle, no unknown service).
    compose.start_order().unwrap();
}

// ---------------------------------------------------------------------------------------
// The native smoke test.

/// A fresh ledger signing key from `fairdeal-ledger --generate-key` in `bin_dir`.
async fn ledger_key(bin_dir: &Path) -> anyhow::Result<String> {
    let output = Command::new(bin_dir.join("fairdeal-ledger"))
        .args(["--generate-key", "fairdeal-deploy-check"])
        .env_clear()
        .output()
        .await?;
    ensure!(
        output.status.success(),
        "fairdeal-ledger --generate-key failed"
    );
    let text = String::from_utf8(output.stdout)?;
    let key = text.lines().next().unwrap_or_default();
    ensure!(
        key.starts_with("PRIVATE+KEY+fairdeal-deploy-check+"),
        "fairdeal-ledger --generate-key printed no key"
    );
    Ok(key.to_owned())
}

/// Writes the secret files a compose stack needs into `dir`, with `database_url` as given:
/// for each service of the list, what its `DEPLOYMENT` says its file holds (as `cargo xtask
/// deploy-secrets` makes them, with fresh values).
fn write_secrets(dir: &Path, database_url: &str, ledger_key: &str) -> anyhow::Result<()> {
    let hex32 = || {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the system's random generator");
        hex::encode(bytes)
    };
    let sha = |s: &str| hex::encode(sha2::Sha256::digest(s.as_bytes()));
    let signing_in: Vec<(&str, String)> = SERVICES
        .iter()
        .filter(|s| s.deployment.signs_in)
        .map(|s| (s.name, hex32()))
        .collect();
    for service in SERVICES {
        let d = &service.deployment;
        let mut text = format!("database_url = \"{database_url}\"\n");
        for secret in d.secrets.iter().filter(|s| s.compose.is_none()) {
            let value = match secret.made {
                Made::Credentials => signing_in
                    .iter()
                    .map(|(name, secret)| format!("{name}:{}", sha(secret)))
                    .collect::<Vec<_>>()
                    .join(","),
                Made::SeedKeys => format!("k1:{}", hex32()),
                Made::SigningKey => ledger_key.to_owned(),
                Made::Plain => anyhow::bail!(
                    "{}: {} has no compose value and nothing makes it",
                    service.name,
                    secret.setting
                ),
            };
            text.push_str(&format!("{} = \"{value}\"\n", secret.setting));
        }
        if let Some((_, secret)) = signing_in.iter().find(|(n, _)| *n == service.name) {
            text.push_str(&format!("service_secret = \"{secret}\"\n"));
        }
        for key in secret_keys(service.name) {
            ensure!(
                text.contains(&format!("{key} = ")),
                "{}: {key}",
                service.name
            );
        }
        std::fs::write(dir.join(format!("{}.toml", service.name)), text)?;
    }
    Ok(())
}

/// A free port of 127.0.0.1.
fn free_port() -> u16 {
    fairdeal_testkit::free_port().unwrap()
}

/// The directory holding the service binaries: `FAIRDEAL_DEPLOY_BIN_DIR` (which `cargo xtask
/// test` sets after building them), else this test's own profile directory when they are
/// there. The test cannot build them itself: a cargo started from a running test waits
/// forever for the build directory's lock, which the `cargo test` running it holds.
fn binaries(services: &[String]) -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os("FAIRDEAL_DEPLOY_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        // <target>/<profile>/deps/deploy-<hash>
        None => std::env::current_exe()?
            .parent()
            .and_then(Path::parent)
            .ok_or_else(|| anyhow!("cannot place this test's executable"))?
            .to_path_buf(),
    };
    let mut names: Vec<String> = services.iter().map(|s| format!("fairdeal-{s}")).collect();
    names.push("fairdeal-health-probe".to_owned());
    // The packages (the rating service's binary is in `fairdeal-rating-service`).
    let packages: Vec<String> = names
        .iter()
        .map(|n| {
            if n == "fairdeal-rating" {
                "fairdeal-rating-service".to_owned()
            } else {
                n.clone()
            }
        })
        .collect();
    let missing: Vec<&String> = names.iter().filter(|n| !dir.join(n).is_file()).collect();
    ensure!(
        missing.is_empty(),
        "{missing:?} not found in {}: `cargo xtask test` builds them; or run `cargo build {}` \
         first",
        dir.display(),
        packages
            .iter()
            .map(|n| format!("-p {n}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(dir)
}

/// A service process and where its output goes.
struct Running {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Running {
    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

/// Replaces `://host:port` of the compose names in `value` with the native addresses.
fn map_hosts(value: &str, hosts: &BTreeMap<(String, u16), String>) -> String {
    let mut value = value.to_owned();
    for ((host, port), native) in hosts {
        value = value.replace(&format!("://{host}:{port}"), &format!("://{native}"));
    }
    value
}

/// Starts `service` natively; returns once it serves (its health check passes).
async fn start(
    service: &Service,
    bin_dir: &Path,
    image_env: &BTreeMap<String, String>,
    hosts: &BTreeMap<(String, u16), String>,
    work: &Path,
    secrets: &Path,
    prefix: &str,
) -> anyhow::Result<Running> {
    let name = &service.name;
    let native = &hosts[&(name.clone(), CONTAINER_PORT)];
    let dir = work.join(name);
    std::fs::create_dir_all(&dir)?;
    let mut env: BTreeMap<String, String> = image_env.clone();
    for (key, value) in &service.environment {
        let value = match value.strip_prefix("/run/secrets/") {
            Some(file) => secrets.join(file).display().to_string(),
            None => map_hosts(value, hosts),
        };
        env.insert(key.clone(), value);
    }
    env.insert("FAIRDEAL_LISTEN_ADDR".into(), native.clone());
    env.insert("FAIRDEAL_SUBJECT_PREFIX".into(), prefix.to_owned());
    let log = dir.join("output.log");
    let out = std::fs::File::create(&log)?;
    let mut command = Command::new(bin_dir.join(&service.command[0]));
    command
        .args(&service.command[1..])
        .env_clear()
        .envs(&env)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .kill_on_drop(true);
    let mut running = Running {
        name: name.clone(),
        child: command
            .spawn()
            .with_context(|| format!("starting {}", service.command[0]))?,
        log,
    };
    let url = format!("http://{native}");
    tokio::select! {
        served = fairdeal_testkit::wait_until_serving(&url, "") => {
            if let Err(error) = served {
                bail!("{name} does not serve: {error}\n{}", running.tail());
            }
        }
        exited = running.child.wait() => {
            bail!("{name} exited at start ({:?}):\n{}", exited, running.tail());
        }
    }
    // The compose health check, as compose runs it (its own port from the environment).
    let probe = Command::new(bin_dir.join("fairdeal-health-probe"))
        .env_clear()
        .env("FAIRDEAL_LISTEN_ADDR", native)
        .output()
        .await?;
    ensure!(
        probe.status.success(),
        "{name}: fairdeal-health-probe failed: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    Ok(running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_services_run_natively_and_play_a_bot_table() {
    let docker = dockerfile();
    let compose = compose_file();
    let bin_dir = binaries(&docker.services).unwrap();
    let work = tempfile::tempdir().unwrap();
    let secrets = work.path().join("secrets");
    let mail = work.path().join("mail");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::create_dir_all(&mail).unwrap();
    let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
    let key = ledger_key(&bin_dir).await.unwrap();
    write_secrets(&secrets, database.url(), &key).unwrap();

    let smtp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp_addr = smtp.local_addr().unwrap();
    let catcher = tokio::spawn(smtp::serve(smtp, mail.clone()));

    // The compose host names, natively.
    let host_port = |url: String| {
        let (host, port) = url_host_port(&url).unwrap();
        format!("{host}:{port}")
    };
    let mut hosts: BTreeMap<(String, u16), String> = BTreeMap::new();
    hosts.insert(
        ("nats".into(), 4222),
        host_port(fairdeal_testkit::nats_url()),
    );
    hosts.insert(
        ("redis".into(), 6379),
        host_port(fairdeal_testkit::redis_url()),
    );
    hosts.insert(("mailcatcher".into(), 1025), smtp_addr.to_string());
    // Nothing listens there: trace exports fail and are logged, as with no collector.
    hosts.insert(
        ("otel-collector".into(), 4317),
        format!("127.0.0.1:{}", free_port()),
    );
    let fairdeal: Vec<&Service> = compose
        .start_order()
        .unwrap()
        .into_iter()
        .filter(|s| {
            s.command
                .first()
                .is_some_and(|c| c.starts_with("fairdeal-"))
        })
        .collect();
    for service in &fairdeal {
        hosts.insert(
            (service.name.clone(), CONTAINER_PORT),
            format!("127.0.0.1:{}", free_port()),
        );
    }
    let prefix = fairdeal_testkit::subject_prefix("deploy");
    // Every service at once, as compose starts them (each depends on the others only
    // `service_started`): none needs another serving to start.
    let started = Instant::now();
    let starts = fairdeal.iter().map(|service| {
        start(
            service,
            &bin_dir,
            &docker.env,
            &hosts,
            work.path(),
            &secrets,
            &prefix,
        )
    });
    let mut running = Vec::new();
    for (service, process) in fairdeal.iter().zip(futures::future::join_all(starts).await) {
        let process = process.unwrap_or_else(|error| panic!("{error:#}"));
        println!(
            "{}: serving natively at {}, health probe passed",
            service.name,
            hosts[&(service.name.clone(), CONTAINER_PORT)],
        );
        running.push(process);
    }
    println!(
        "all {} services started together, healthy after {} ms",
        running.len(),
        started.elapsed().as_millis()
    );
    let url = |name: &str| format!("http://{}", hosts[&(name.to_owned(), CONTAINER_PORT)]);
    let result = async {
        let token = play::player_token(&url("auth"), &mail).await?;
        let before = more::ledger_status(&url("ledger")).await?;
        let played = play::play_bot_table(&url("tables"), &token).await?;
        // The second tables replica serves the same table (forwarded to its owner, or its
        // own): the replicas share the tables.
        let seen = more::finished_through(&url("tables-2"), &token, &played.table_id).await?;
        ensure!(
            seen == played.version,
            "tables-2 sees version {seen} of {}",
            played.version
        );
        more::check_after_table(&url, &token, &before).await?;
        anyhow::Ok(played)
    }
    .await;
    if let Err(error) = &result {
        for process in &running {
            println!("--- {} (last lines)\n{}", process.name, process.tail());
        }
        panic!("{error:#}");
    }
    let played = result.unwrap();
    assert!(
        played.seed_revealed,
        "the server seed is revealed after the game"
    );
    for mut process in running {
        process.child.kill().await.unwrap();
    }
    catcher.abort();
    database.drop().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a running compose stack: cargo xtask deploy-check"]
async fn compose_stack_plays_a_bot_table() {
    let urls: BTreeMap<String, String> = std::env::var("FAIRDEAL_DEPLOY_URLS")
        .expect("FAIRDEAL_DEPLOY_URLS (auth=http://...,tables=http://...)")
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let mail = PathBuf::from(
        std::env::var_os("FAIRDEAL_DEPLOY_MAIL_DIR").expect("FAIRDEAL_DEPLOY_MAIL_DIR"),
    );
    for (name, url) in &urls {
        fairdeal_testkit::wait_until_serving(url, "")
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let token = play::player_token(&urls["auth"], &mail)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let before = more::ledger_status(&urls["ledger"])
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let played = play::play_bot_table(&urls["tables"], &token)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let seen = more::finished_through(&urls["tables-2"], &token, &played.table_id)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(seen, played.version, "tables-2 serves the same table");
    more::check_after_table(&|name| urls[name].clone(), &token, &before)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        played.seed_revealed,
        "the server seed is revealed after the game"
    );
}
