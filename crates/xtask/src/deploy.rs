//! The deployment files and their checks: `cargo xtask deploy-check`, `cargo xtask
//! deploy-secrets` and the manifest check `cargo xtask test` runs first.
//!
//! - [`manifests`]: renders every kustomization under `deploy/k8s` with `kubectl kustomize`
//!   and validates the result against the Kubernetes schemas with `kubernetes-validate
//!   --strict`. `kubernetes-validate` is taken from PATH or installed (from PyPI) into a
//!   virtual environment under the target directory; without kubectl or python3 the check is
//!   skipped, and says so.
//! - [`secrets`]: a fresh set of the compose stack's secret files (database password, seed
//!   key, the internal services' secrets and the auth service's list of their hashes, the
//!   ledger's checkpoint signing key from `fairdeal-ledger --generate-key`).
//! - [`check`]: builds the image, starts the compose stack under its own project name with
//!   fresh secrets and free host ports, waits until every service reports healthy, plays a
//!   table of bots to GameFinished through it (the `fairdeal-e2e` test `deploy`'s ignored
//!   `compose_stack_plays_a_bot_table`, given the stack's addresses), and removes the stack and
//!   its volumes whatever happened.

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::say;
use crate::services::{REPLICAS, SERVICES};

/// What a service's secrets file holds besides the database URL (the generated
/// [`SERVICES`] says which service holds what).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Secret {
    /// The auth service's: every signing-in service's `name:sha256(secret)`.
    Credentials,
    /// The commitment service's: the seed-sealing keys.
    SeedKeys,
    /// A service that gets its own token from auth: its secret.
    SignIn,
    /// The ledger's: its checkpoint signing key.
    SigningKey,
}

/// The compose project deploy-check runs under (its containers, network and volumes), unless
/// `FAIRDEAL_DEPLOY_PROJECT` names another (to run two checks side by side).
const PROJECT: &str = "fairdeal-deploy-check";

fn project() -> String {
    std::env::var("FAIRDEAL_DEPLOY_PROJECT")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| PROJECT.to_owned())
}

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Runs `command`, failing with its name and exit status.
fn run(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})"))
    }
}

/// Whether `program --version` (or the given arguments) runs successfully.
fn answers(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

// ---------------------------------------------------------------------------------------
// Manifests.

/// The outcome of the manifest check.
#[derive(Debug)]
pub(crate) enum Checked {
    /// Every kustomization rendered and validated (their directories).
    Passed(Vec<String>),
    /// A tool is missing: why.
    Skipped(String),
}

/// `kubernetes-validate` from PATH, or from (after creating, when missing) a virtual
/// environment under the target directory.
fn kubernetes_validate() -> Result<PathBuf, String> {
    if answers("kubernetes-validate", &["--version"]) {
        return Ok(PathBuf::from("kubernetes-validate"));
    }
    let venv = crate::run::target_dir().join("xtask-tools/venv");
    let program = venv.join("bin/kubernetes-validate");
    if crate::tools::executable(&program) {
        return Ok(program);
    }
    if !answers("python3", &["-m", "venv", "--help"]) {
        return Err(
            "kubernetes-validate is not on PATH and python3 -m venv is not available \
                    to install it (pip install kubernetes-validate)"
                .to_owned(),
        );
    }
    say(format!(
        "installing kubernetes-validate (PyPI) into {}",
        venv.display()
    ));
    let venv_text = venv.display().to_string();
    run(Command::new("python3").args(["-m", "venv", &venv_text]))
        .and_then(|()| {
            run(Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "kubernetes-validate"])
                .stdout(Stdio::null()))
        })
        .map_err(|e| format!("cannot install kubernetes-validate: {e}"))?;
    Ok(program)
}

/// The directories under `deploy/k8s` holding a kustomization.yaml, sorted.
fn kustomizations(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "kustomization.yaml") {
                found.push(dir.clone());
            }
        }
    }
    found.sort();
    found
}

/// Renders and validates every kustomization under `deploy/k8s`.
pub(crate) fn manifests() -> Result<Checked, String> {
    if !answers("kubectl", &["version", "--client"]) {
        return Ok(Checked::Skipped(
            "kubectl is not installed (it renders the kustomizations)".to_owned(),
        ));
    }
    let validate = match kubernetes_validate() {
        Ok(program) => program,
        Err(why) => return Ok(Checked::Skipped(why)),
    };
    let root = root();
    let rendered_dir = crate::run::target_dir().join("xtask-tools/rendered");
    std::fs::create_dir_all(&rendered_dir)
        .map_err(|e| format!("cannot create {}: {e}", rendered_dir.display()))?;
    let mut passed = Vec::new();
    for dir in kustomizations(&root.join("deploy/k8s")) {
        let name = dir
            .strip_prefix(&root)
            .unwrap_or(&dir)
            .display()
            .to_string();
        let output = Command::new("kubectl")
            .arg("kustomize")
            .arg(&dir)
            .output()
            .map_err(|e| format!("cannot run kubectl: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "kubectl kustomize {name} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let file = rendered_dir.join(format!("{}.yaml", name.replace('/', "_")));
        std::fs::write(&file, &output.stdout)
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        let objects = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| l.starts_with("kind:"))
            .count();
        let result = Command::new(&validate)
            .args(["--strict", "--quiet"])
            .arg(&file)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", validate.display()))?;
        if !result.status.success() {
            return Err(format!(
                "{name}: the rendered manifests do not validate (kubernetes-validate --strict \
                 {}):\n{}{}",
                file.display(),
                String::from_utf8_lossy(&result.stdout),
                String::from_utf8_lossy(&result.stderr)
            ));
        }
        passed.push(format!("{name} ({objects} objects)"));
    }
    if passed.is_empty() {
        return Err("no kustomization.yaml under deploy/k8s".to_owned());
    }
    Ok(Checked::Passed(passed))
}

// ---------------------------------------------------------------------------------------
// The binaries of the native smoke test.

/// The services deploy/Dockerfile builds (`ARG SERVICES="..."`): the one list of them.
pub(crate) fn image_services() -> Result<Vec<String>, String> {
    let path = root().join("deploy/Dockerfile");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("ARG SERVICES="))
        .map(|list| {
            list.trim_matches('"')
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        })
        .ok_or_else(|| format!("{} has no ARG SERVICES=\"...\"", path.display()))
}

/// The package building the binary `fairdeal-<service>`: `fairdeal-<service>`, except the
/// rating service's `fairdeal-rating-service` (`fairdeal-rating` is the rules' library; the
/// same exception as deploy/Dockerfile's `case`).
pub(crate) fn package_of(service: &str) -> String {
    match service {
        "rating" => "fairdeal-rating-service".to_owned(),
        _ => format!("fairdeal-{service}"),
    }
}

/// Builds the service binaries and the health probe for the smoke test (tests/deploy), in
/// the profile of the test run; returns the directory holding them. A test cannot build
/// them itself: the `cargo test` running it holds the build directory's lock.
///
/// For a run of the whole workspace (`whole`) every binary is built with every test
/// (`--workspace --bins --tests`): the features a build resolves differ when test targets
/// are in it (dev-dependencies add some), so binaries built alone would have every crate
/// under them compiled twice, once here and once again by `cargo test` (about 3 minutes
/// of a clean run on the CI machine). Built together, the run finds them all fresh.
pub(crate) fn build_binaries(release: bool, whole: bool) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.arg("build").current_dir(root());
    if release {
        command.arg("--release");
    }
    if whole {
        command.args(["--workspace", "--bins", "--tests"]);
    } else {
        for service in image_services()? {
            command.arg("-p").arg(package_of(&service));
        }
        command.args(["-p", "fairdeal-health-probe"]);
    }
    crate::clean_cargo_env(&mut command);
    say("building the service binaries for the compose smoke test");
    run(&mut command)?;
    Ok(crate::run::target_dir().join(if release { "release" } else { "debug" }))
}

// ---------------------------------------------------------------------------------------
// Secrets.

/// `n` random bytes as hex, from the kernel's generator.
fn random_hex(n: usize) -> Result<String, String> {
    use std::io::Read as _;
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// The SHA-256 of `text` as hex (coreutils' `sha256sum`: xtask has no dependencies).
fn sha256_hex(text: &str) -> Result<String, String> {
    use std::io::Write as _;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run sha256sum: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("sha256sum has no stdin")?
        .write_all(text.as_bytes())
        .map_err(|e| format!("sha256sum: {e}"))?;
    let output = child
        .wait_with_output()
        .map_err(|e| format!("sha256sum: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let hash = text.split_whitespace().next().unwrap_or_default();
    if output.status.success() && hash.len() == 64 {
        Ok(hash.to_owned())
    } else {
        Err("sha256sum gave no hash".to_owned())
    }
}

/// The origin (key name) of the compose stack's ledger.
const LEDGER_ORIGIN: &str = "fairdeal-ledger";

/// A fresh ledger signing key named `origin` and its public verifier key: the two lines of
/// `fairdeal-log-key` (crates/log-key), run through cargo. That small binary builds in
/// seconds, where building the ledger service for its `--generate-key` took minutes on a
/// fresh clone; cargo's progress is shown, so nothing is silent meanwhile.
fn ledger_key(origin: &str) -> Result<(String, String), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .args(["run", "-p", "fairdeal-log-key", "--", origin])
        .current_dir(root())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    crate::clean_cargo_env(&mut command);
    say("generating the ledger's signing key (cargo run -p fairdeal-log-key, a small build)");
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(key), Some(verifier))
            if output.status.success() && key.starts_with("PRIVATE+KEY+") =>
        {
            Ok((key.to_owned(), verifier.to_owned()))
        }
        _ => Err(format!("fairdeal-log-key failed ({})", output.status)),
    }
}

/// Writes a fresh set of the compose stack's secrets into `dir` (created 0700; the files
/// 0644 because the services read them as the image's non-root user through bind mounts).
/// Refuses to overwrite an existing set.
pub(crate) fn secrets(dir: &Path) -> Result<(), String> {
    if dir.join("auth.toml").exists() {
        return Err(format!(
            "{} already holds secrets; remove them first to make new ones (the database \
             password is fixed when PostgreSQL's volume is first created)",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot restrict {}: {e}", dir.display()))?;
    let password = random_hex(24)?;
    let database = format!("postgres://postgres:{password}@postgres:5432/fairdeal");
    let mut files = vec![(
        "postgres.env".to_owned(),
        format!("POSTGRES_PASSWORD={password}\n"),
    )];
    // The callers' secrets first: the auth service's file lists their hashes.
    let mut credentials = Vec::new();
    let mut caller_secrets = Vec::new();
    for (name, _) in SERVICES
        .iter()
        .filter(|(_, held)| held.contains(&Secret::SignIn))
    {
        let secret = random_hex(32)?;
        credentials.push(format!("{name}:{}", sha256_hex(&secret)?));
        caller_secrets.push((*name, secret));
    }
    for (name, held) in SERVICES {
        let mut text = format!("database_url = \"{database}\"\n");
        for kind in *held {
            match kind {
            Secret::Credentials => text.push_str(&format!(
                "# name:sha256(secret) of each internal service.\nservice_credentials = \"{}\"\n",
                credentials.join(",")
            )),
            Secret::SeedKeys => text.push_str(&format!(
                "# Seed-sealing keys, the first active.\nseed_keys = \"k1:{}\"\n",
                random_hex(32)?
            )),
            Secret::SignIn => {
                let (_, secret) = caller_secrets
                    .iter()
                    .find(|(caller, _)| caller == name)
                    .ok_or_else(|| format!("no secret made for {name}"))?;
                text.push_str(&format!("service_secret = \"{secret}\"\n"));
            }
            Secret::SigningKey => {
                let (key, verifier) = ledger_key(LEDGER_ORIGIN)?;
                // Public: what auditors give `fairdeal audit --log-key`.
                files.push((format!("{name}.pub"), format!("{verifier}\n")));
                text.push_str(&format!(
                    "# The checkpoint signing key (Ed25519, Go's note format; its name is the \
                     log's origin).\nsigning_key = \"{key}\"\n"
                ));
            }
            }
        }
        files.push((format!("{name}.toml"), text));
    }
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// deploy-check.

/// A free TCP port of 127.0.0.1 (free when asked; the stack binds it moments later).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// `docker-compose` (v1) or `docker compose` (v2), whichever answers.
fn compose_program() -> Option<Vec<String>> {
    if answers("docker", &["compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else if answers("docker-compose", &["version"]) {
        Some(vec!["docker-compose".into()])
    } else {
        None
    }
}

/// The images deploy/Dockerfile and docker-compose.yml start from (the mail catcher is
/// built from the runtime base).
const BASE_IMAGES: [&str; 6] = [
    "rust:1.95-bookworm",
    "debian:bookworm-slim",
    "postgres:15",
    "nats:2.10",
    "redis:7",
    "otel/opentelemetry-collector:0.110.0",
];

/// The compose stack of one deploy-check run.
struct Stack {
    /// The compose command and its fixed arguments (file, project).
    compose: Vec<String>,
    /// Environment the compose file reads (secrets directory, ports, mail directory).
    env: Vec<(String, String)>,
    /// The run's directory (secrets, caught mail).
    dir: PathBuf,
    /// The fairdeal services (deploy/Dockerfile's list); each publishes its port as
    /// `FAIRDEAL_<NAME>_PORT`.
    services: Vec<String>,
}

impl Stack {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.compose[0]);
        command
            .args(&self.compose[1..])
            .args(args)
            .current_dir(root());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    /// The containers of the stack as `(service, state, health)`.
    fn states(&self) -> Result<Vec<(String, String, String)>, String> {
        let output = self
            .command(&["ps", "-q"])
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("compose ps: {e}"))?;
        let ids: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let format = "{{index .Config.Labels \"com.docker.compose.service\"}} {{.State.Status}} \
                      {{if .State.Health}}{{.State.Health.Status}}{{else}}-{{end}}";
        let output = Command::new("docker")
            .args(["inspect", "--format", format])
            .args(&ids)
            .output()
            .map_err(|e| format!("docker inspect: {e}"))?;
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace().map(str::to_owned);
                Some((parts.next()?, parts.next()?, parts.next()?))
            })
            .collect())
    }

    /// Waits until every fairdeal service's container is running and healthy.
    fn wait_healthy(&self, within: Duration) -> Result<(), String> {
        let start = Instant::now();
        let mut last = String::new();
        loop {
            let states = self.states()?;
            let summary = states
                .iter()
                .map(|(s, state, health)| format!("{s}={state}/{health}"))
                .collect::<Vec<_>>()
                .join(" ");
            let healthy = self.services.iter().all(|service| {
                states.iter().any(|(s, state, health)| {
                    s == service && state == "running" && health == "healthy"
                })
            });
            if healthy {
                say(format!("stack healthy: {summary}"));
                return Ok(());
            }
            if summary != last {
                say(format!("waiting for health: {summary}"));
                last = summary;
            }
            if start.elapsed() > within {
                return Err(format!(
                    "the stack was not healthy after {}s: {last}",
                    within.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_secs(2));
        }
    }

    /// Prints the last lines of every container's log (after a failure).
    fn show_logs(&self) {
        let _ = self
            .command(&["logs", "--no-color", "--tail", "40"])
            .status();
    }

    /// Removes the containers, network and volumes.
    fn down(&self) {
        say("removing the stack (containers, network, volumes)");
        let _ = self
            .command(&["down", "--volumes", "--remove-orphans", "--timeout", "30"])
            .stderr(Stdio::null())
            .status();
    }
}

/// `cargo xtask deploy-check [--if-available] [--keep] [--no-build]`.
pub(crate) fn check(args: &[String]) -> Result<ExitCode, String> {
    let if_available = args.iter().any(|a| a == "--if-available");
    let keep = args.iter().any(|a| a == "--keep");
    let no_build = args.iter().any(|a| a == "--no-build");
    if let Some(other) = args
        .iter()
        .find(|a| !matches!(a.as_str(), "--if-available" | "--keep" | "--no-build"))
    {
        return Err(format!(
            "unknown argument {other:?} (see cargo xtask --help)"
        ));
    }
    let unavailable = |why: String| {
        if if_available {
            say(format!("deploy-check SKIPPED: {why}"));
            Ok(ExitCode::SUCCESS)
        } else {
            Err(format!("{why} (--if-available skips instead of failing)"))
        }
    };
    if !answers("docker", &["info"]) {
        return unavailable("no Docker daemon answers (`docker info` failed)".to_owned());
    }
    let Some(compose) = compose_program() else {
        return unavailable(
            "neither `docker compose` nor `docker-compose` is installed".to_owned(),
        );
    };
    // Where no image registry is reachable (CI, this project's machines) the base images
    // must be here already; `--if-available` says which are missing instead of failing.
    let missing: Vec<&str> = BASE_IMAGES
        .iter()
        .copied()
        .filter(|image| !answers("docker", &["image", "inspect", image]))
        .collect();
    if if_available && !missing.is_empty() {
        return unavailable(format!(
            "base images not present locally: {} (`../shared/tools/docker-standins.sh {}` \
             builds stand-ins where no registry is reachable)",
            missing.join(", "),
            BASE_IMAGES.join(" ")
        ));
    }
    let root = root();
    let started = Instant::now();

    if no_build {
        say("--no-build: using the existing image fairdeal:latest");
        run(Command::new("docker")
            .args(["image", "inspect", "--format", "{{.Id}}", "fairdeal:latest"])
            .stdout(Stdio::null()))
        .map_err(|_| "--no-build: there is no image fairdeal:latest".to_owned())?;
    } else {
        say("building the image: docker build -f deploy/Dockerfile -t fairdeal:latest .");
        let step = Instant::now();
        let build = run(Command::new("docker")
            .args([
                "build",
                "-f",
                "deploy/Dockerfile",
                "-t",
                "fairdeal:latest",
                ".",
            ])
            .current_dir(&root));
        if let Err(error) = build {
            return Err(format!(
                "{error}\n(no image registry reachable? `../shared/tools/docker-standins.sh {}` \
                 builds local stand-ins)",
                BASE_IMAGES.join(" ")
            ));
        }
        say(format!("image built in {}s", step.elapsed().as_secs()));
    }
    image_sizes();

    let dir = crate::run::target_dir()
        .join("xtask-deploy-check")
        .join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&dir);
    let secrets_dir = dir.join("secrets");
    secrets(&secrets_dir)?;
    let mail_dir = dir.join("mail");
    std::fs::create_dir_all(&mail_dir)
        .and_then(|()| {
            // The mail catcher writes as its own non-root user.
            std::fs::set_permissions(&mail_dir, std::fs::Permissions::from_mode(0o777))
        })
        .map_err(|e| format!("cannot create {}: {e}", mail_dir.display()))?;
    let mut env = vec![
        ("COMPOSE_PROJECT_NAME".to_owned(), project()),
        (
            "FAIRDEAL_SECRETS_DIR".to_owned(),
            secrets_dir.display().to_string(),
        ),
        (
            "FAIRDEAL_MAIL_DIR".to_owned(),
            mail_dir.display().to_string(),
        ),
    ];
    let mut urls = Vec::new();
    let mut services = image_services()?;
    // The compose file's second tables replica (docs/deploy.md): its own port, and its
    // health waited for like a service's.
    services.extend(REPLICAS.iter().map(|r| (*r).to_owned()));
    for service in &services {
        let port = free_port()?;
        env.push((
            format!("FAIRDEAL_{}_PORT", service.to_uppercase().replace('-', "_")),
            port.to_string(),
        ));
        urls.push(format!("{service}=http://127.0.0.1:{port}"));
    }
    let mut compose_args = compose;
    compose_args.extend(["-f".into(), "docker-compose.yml".into()]);
    let stack = Stack {
        compose: compose_args,
        env,
        dir,
        services,
    };
    // Leftovers of a killed earlier run under the same project name.
    stack.down();
    let result = play(&stack, &urls, &mail_dir);
    if result.is_err() {
        stack.show_logs();
    }
    if keep {
        say(format!(
            "--keep: the stack stays up (COMPOSE_PROJECT_NAME={0}); remove it with \
             `docker-compose -p {0} down -v`",
            project()
        ));
    } else {
        stack.down();
        let _ = std::fs::remove_dir_all(&stack.dir);
    }
    result?;
    say(format!(
        "deploy-check passed in {}s: image {}, stack started healthy, a bot table played to \
         GameFinished through it, stack {}",
        started.elapsed().as_secs(),
        if no_build { "as it was" } else { "built" },
        if keep { "kept" } else { "removed" }
    ));
    Ok(ExitCode::SUCCESS)
}

/// Prints the image's size and the binaries' sizes in it.
fn image_sizes() {
    let size = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{.Size}}",
            "fairdeal:latest",
        ])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        });
    if let Some(size) = size {
        say(format!("image fairdeal:latest: {} MB", size / 1_000_000));
    }
    let _ = Command::new("docker")
        .args([
            "run",
            "--rm",
            "--entrypoint",
            "sh",
            "fairdeal:latest",
            "-c",
            "cd /usr/local/bin && ls -l fairdeal-* | awk '{printf \"xtask:   %-24s %6.1f MB\\n\", $9, $5/1000000}'",
        ])
        .status();
}

/// Starts the stack, waits for health and plays a table through it.
fn play(stack: &Stack, urls: &[String], mail_dir: &Path) -> Result<(), String> {
    say("building the mail catcher image and starting the stack");
    let step = Instant::now();
    run(&mut stack.command(&["build", "mailcatcher"]))?;
    run(&mut stack.command(&["up", "-d", "--no-build"]))?;
    stack.wait_healthy(Duration::from_secs(300))?;
    say(format!("stack up in {}s", step.elapsed().as_secs()));

    say("playing a bot table through the stack (fairdeal-e2e test `deploy`)");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .args([
            "test",
            "-p",
            "fairdeal-e2e",
            "--test",
            "deploy",
            "--",
            "--ignored",
            "--exact",
            "compose_stack_plays_a_bot_table",
            "--nocapture",
        ])
        .env("FAIRDEAL_DEPLOY_URLS", urls.join(","))
        .env("FAIRDEAL_DEPLOY_MAIL_DIR", mail_dir)
        .current_dir(root());
    crate::clean_cargo_env(&mut command);
    run(&mut command)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_kustomizations_are_found() {
        let found = kustomizations(&root().join("deploy/k8s"));
        assert!(found.iter().any(|d| d.ends_with("deploy/k8s/base")));
        assert!(found.iter().any(|d| d.ends_with("overlays/trial")));
    }

    #[test]
    fn random_hex_has_twice_the_length() {
        assert_eq!(random_hex(32).unwrap().len(), 64);
        assert_ne!(random_hex(16).unwrap(), random_hex(16).unwrap());
    }
}
