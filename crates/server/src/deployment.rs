//! The deployment files, generated from the one list of services ([`crate::SERVICES`]) and
//! what each says of its deployment ([`fairdeal_kit::deployment::Deployment`]):
//!
//! - `deploy/Dockerfile`: its `ARG SERVICES="..."` line (the binaries the image carries);
//! - `docker-compose.yml`: everything after its marker line (the services' containers, their
//!   secrets files, the volumes); what is above it (the infrastructure) is written by hand;
//! - `deploy/k8s/base/<name>.yaml`: each service's Deployment, Services and disruption budget;
//! - `deploy/k8s/base/kustomization.yaml`: its `resources:` block;
//! - `deploy/k8s/base/networkpolicies.yaml`: everything after its marker line (a policy per
//!   service); the common egress above it is written by hand;
//! - `crates/xtask/src/services.rs`: the secrets `cargo xtask deploy-secrets` makes;
//! - `services/ledger/src/sources.rs`: the services whose events the ledger takes in by
//!   default (every other one).
//!
//! `fairdeal-server deployment` writes them (`--check` only compares); the server's
//! `services_list` test fails, naming the file, while one differs from what this module makes.
//! Nothing here reads anything but the files it rewrites, so the output is a pure function of
//! the list and those files' hand-written parts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fairdeal_kit::deployment::{Deployment, Made, Replicas, SecretSetting};
use fairdeal_kit::{Hosted, Service as _};

/// The line after which docker-compose.yml and networkpolicies.yaml are generated.
pub const MARKER: &str = "# ---- Generated from fairdeal_server::SERVICES by `cargo run -p fairdeal-server -- deployment`: edit the services' DEPLOYMENT, not below. ----";

/// The first port of the compose stack's services on the host (127.0.0.1); each service and
/// then each extra replica takes the next.
const FIRST_HOST_PORT: u16 = 50051;

/// The ledger: it takes in every other service's events.
const LEDGER: &str = fairdeal_ledger::LedgerService::NAME;

/// A generated file: its path under the repository's root and its whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Relative to the repository's root.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// Every generated file for `services`, its hand-written parts read under `root`.
pub fn files(root: &Path, services: &[Hosted]) -> Result<Vec<File>, String> {
    check(services)?;
    let mut files = vec![
        File {
            path: "deploy/Dockerfile".into(),
            text: dockerfile(&read(root, "deploy/Dockerfile")?, services)?,
        },
        File {
            path: "docker-compose.yml".into(),
            text: after_marker(
                &read(root, "docker-compose.yml")?,
                "docker-compose.yml",
                &compose(services),
            )?,
        },
        File {
            path: "deploy/k8s/base/kustomization.yaml".into(),
            text: kustomization(&read(root, "deploy/k8s/base/kustomization.yaml")?, services)?,
        },
        File {
            path: "deploy/k8s/base/networkpolicies.yaml".into(),
            text: after_marker(
                &read(root, "deploy/k8s/base/networkpolicies.yaml")?,
                "deploy/k8s/base/networkpolicies.yaml",
                &policies(services),
            )?,
        },
        File {
            path: "crates/xtask/src/services.rs".into(),
            text: xtask_services(services),
        },
        File {
            path: "services/ledger/src/sources.rs".into(),
            text: ledger_sources(services),
        },
    ];
    for service in services {
        files.push(File {
            path: format!("deploy/k8s/base/{}.yaml", service.name).into(),
            text: manifest(service),
        });
    }
    Ok(files)
}

/// The files among `files` whose text under `root` differs (or that are missing).
pub fn stale(root: &Path, files: &[File]) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|f| std::fs::read_to_string(root.join(&f.path)).ok().as_deref() != Some(&f.text))
        .map(|f| f.path.clone())
        .collect()
}

/// Writes `files` under `root`, returning those it changed.
pub fn write(root: &Path, files: &[File]) -> Result<Vec<PathBuf>, String> {
    let changed = stale(root, files);
    for file in files.iter().filter(|f| changed.contains(&f.path)) {
        let path = root.join(&file.path);
        std::fs::write(&path, &file.text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(changed)
}

fn read(root: &Path, path: &str) -> Result<String, String> {
    std::fs::read_to_string(root.join(path))
        .map_err(|e| format!("cannot read {}: {e}", root.join(path).display()))
}

/// Every name a service's deployment gives is a service of the list.
fn check(services: &[Hosted]) -> Result<(), String> {
    let known = |name: &str| services.iter().any(|s| s.name == name);
    for service in services {
        let d = &service.deployment;
        for peer in d.calls.iter().chain(d.reads) {
            if !known(peer) {
                return Err(format!(
                    "{}'s DEPLOYMENT names `{peer}`, which is not in the list of services",
                    service.name
                ));
            }
        }
        if d.about.trim().is_empty() {
            return Err(format!(
                "{}'s DEPLOYMENT says nothing in `about`",
                service.name
            ));
        }
    }
    Ok(())
}

/// `deploy/Dockerfile` with its `ARG SERVICES` line from the list.
fn dockerfile(current: &str, services: &[Hosted]) -> Result<String, String> {
    let names: Vec<&str> = services.iter().map(|s| s.name).collect();
    replace_line(
        current,
        "ARG SERVICES=",
        &format!("ARG SERVICES=\"{}\"", names.join(" ")),
        "deploy/Dockerfile",
    )
}

fn replace_line(current: &str, prefix: &str, line: &str, file: &str) -> Result<String, String> {
    let mut found = false;
    let mut out = String::with_capacity(current.len());
    for l in current.lines() {
        if l.starts_with(prefix) {
            found = true;
            out.push_str(line);
        } else {
            out.push_str(l);
        }
        out.push('\n');
    }
    if found {
        Ok(out)
    } else {
        Err(format!("{file} has no line starting {prefix:?}"))
    }
}

/// `current` up to and including the marker line, then `generated`.
fn after_marker(current: &str, file: &str, generated: &str) -> Result<String, String> {
    let end = current
        .find(MARKER)
        .ok_or_else(|| format!("{file} has no marker line {MARKER:?}"))?;
    Ok(format!("{}{MARKER}\n{generated}", &current[..end]))
}

/// The kustomization with its `resources:` block (up to the first blank line) from the list.
fn kustomization(current: &str, services: &[Hosted]) -> Result<String, String> {
    let file = "deploy/k8s/base/kustomization.yaml";
    let start = current
        .find("\nresources:\n")
        .ok_or_else(|| format!("{file} has no `resources:` block"))?
        + 1;
    let end = current[start..]
        .find("\n\n")
        .map(|i| start + i + 1)
        .ok_or_else(|| format!("{file}: nothing follows the `resources:` block"))?;
    let mut block = String::from("resources:\n");
    for service in services {
        let _ = writeln!(block, "  - {}.yaml", service.name);
    }
    block.push_str("  - networkpolicies.yaml\n");
    Ok(format!("{}{block}{}", &current[..start], &current[end..]))
}

/// `FAIRDEAL_<SETTING>` of a setting's name (`seed_keys`, `auth_url`).
fn variable(setting: &str) -> String {
    format!(
        "FAIRDEAL_{}",
        setting.to_ascii_uppercase().replace('-', "_")
    )
}

/// A YAML scalar: plain when it is safe so, double-quoted otherwise.
fn scalar(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:${}@-+=,".contains(&b))
        && !value.starts_with(['$', '{', '@', '-', ':'])
        && !value.contains(": ");
    if plain && !value.starts_with("${") {
        value.to_owned()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// `text` as comment lines at `indent`, wrapped before 96 columns.
fn comment(out: &mut String, indent: &str, text: &str) {
    let width = 96usize.saturating_sub(indent.len() + 2);
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            let _ = writeln!(out, "{indent}# {line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}# {line}");
    }
}

/// The services `service` starts after: those it calls (not itself) and those it reads.
fn starts_after<'a>(service: &'a Hosted, services: &'a [Hosted]) -> Vec<&'a str> {
    let d = &service.deployment;
    services
        .iter()
        .map(|s| s.name)
        .filter(|name| *name != service.name)
        .filter(|name| {
            d.calls.contains(name)
                || d.reads.contains(name)
                || (d.reads_every_other && !d.calls.contains(name))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// docker-compose.yml

fn compose(services: &[Hosted]) -> String {
    let mut out = String::new();
    let mut extra_port = FIRST_HOST_PORT + services.len() as u16;
    for (index, service) in services.iter().enumerate() {
        let d = &service.deployment;
        let name = service.name;
        let port = FIRST_HOST_PORT + index as u16;
        for replica in 1..=d.compose_replicas.max(1) {
            let (container, port) = if replica == 1 {
                (name.to_owned(), port)
            } else {
                let p = extra_port;
                extra_port += 1;
                (format!("{name}-{replica}"), p)
            };
            out.push('\n');
            if replica == 1 {
                comment(&mut out, "  ", &format!("{name}: {}.", d.about));
                if d.compose_replicas > 1 {
                    comment(
                        &mut out,
                        "  ",
                        &format!(
                            "{} replicas, as a Deployment runs several, each announcing where the \
                             others reach it.",
                            d.compose_replicas
                        ),
                    );
                }
            }
            compose_container(&mut out, service, services, &container, port);
        }
    }
    out.push_str(
        "\n# Per-service secret files (TOML, keys are the services' setting names): the database \
         URL with\n# its password, and each service's own keys or credentials. See \
         docs/deploy.md.\nsecrets:\n",
    );
    for service in services {
        let _ = writeln!(
            out,
            "  {0}.toml:\n    file: ${{FAIRDEAL_SECRETS_DIR:-./deploy/secrets}}/{0}.toml",
            service.name
        );
    }
    out.push_str("\nvolumes:\n  pgdata:\n  natsdata:\n  maildata:\n");
    out
}

fn compose_container(
    out: &mut String,
    service: &Hosted,
    services: &[Hosted],
    container: &str,
    port: u16,
) {
    let d = &service.deployment;
    let name = service.name;
    let port_variable = format!(
        "FAIRDEAL_{}_PORT",
        container.to_ascii_uppercase().replace('-', "_")
    );
    let _ = writeln!(out, "  {container}:");
    out.push_str("    <<: *fairdeal\n");
    let _ = writeln!(out, "    command: [\"fairdeal-{name}\"]");
    let _ = writeln!(
        out,
        "    ports: [\"127.0.0.1:${{{port_variable}:-{port}}}:50051\"]"
    );
    out.push_str("    depends_on:\n      postgres: {condition: service_healthy}\n");
    if d.redis.is_some() {
        out.push_str("      redis: {condition: service_healthy}\n");
    }
    out.push_str("      nats: {condition: service_started}\n");
    for need in d.compose_needs {
        let _ = writeln!(out, "      {need}: {{condition: service_healthy}}");
    }
    for peer in starts_after(service, services) {
        let _ = writeln!(out, "      {peer}: {{condition: service_started}}");
    }
    out.push_str("      otel-collector: {condition: service_started}\n");
    out.push_str("    environment:\n");
    let _ = writeln!(out, "      FAIRDEAL_SERVICE_NAME: {name}");
    out.push_str("      FAIRDEAL_NATS_URL: nats://nats:4222\n");
    if let Some(why) = d.redis {
        comment(out, "      ", &format!("Redis: {why}."));
        out.push_str("      FAIRDEAL_REDIS_URL: redis://redis:6379\n");
    }
    for secret in d.secrets {
        if let Some(value) = secret.compose {
            let _ = writeln!(out, "      {}: {}", variable(secret.setting), scalar(value));
        }
    }
    for (setting, value) in d.compose_settings {
        let _ = writeln!(out, "      {}: {}", variable(setting), scalar(value));
    }
    for peer in d.calls.iter().filter(|p| **p != name) {
        let _ = writeln!(
            out,
            "      {}: http://{peer}:50051",
            variable(&format!("{peer}_url"))
        );
    }
    let _ = writeln!(out, "      FAIRDEAL_CONFIG: /run/secrets/{name}.toml");
    out.push_str("      OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4317\n");
    if d.calls.contains(&name) {
        let _ = writeln!(
            out,
            "      FAIRDEAL_ADVERTISE_URL: http://{container}:50051"
        );
    }
    let _ = writeln!(out, "    secrets: [{name}.toml]");
}

// ---------------------------------------------------------------------------------------
// deploy/k8s/base

/// The labels every object of `name` carries.
fn labels(out: &mut String, indent: &str, name: &str) {
    let _ = writeln!(out, "{indent}app.kubernetes.io/name: {name}");
    let _ = writeln!(out, "{indent}app.kubernetes.io/part-of: fairdeal");
}

fn secret_env(out: &mut String, name: &str, secret: &SecretSetting) {
    secret_variable(
        out,
        name,
        secret.setting,
        secret.key,
        secret.note,
        secret.optional,
    );
}

fn secret_variable(
    out: &mut String,
    name: &str,
    setting: &str,
    key: &str,
    note: &str,
    optional: bool,
) {
    comment(out, "            ", &format!("{note}."));
    let _ = writeln!(out, "            - name: {}", variable(setting));
    out.push_str("              valueFrom:\n                secretKeyRef:\n");
    let _ = writeln!(out, "                  name: fairdeal-{name}");
    let _ = writeln!(out, "                  key: {key}");
    if optional {
        out.push_str("                  optional: true\n");
    }
}

/// A service's manifest: its Deployment, its Service, its headless Service (the balanced
/// `dns:///<name>-pods:50051` its callers use) and its disruption budget.
fn manifest(service: &Hosted) -> String {
    let d: &Deployment = &service.deployment;
    let name = service.name;
    let mut out = String::new();
    comment(
        &mut out,
        "",
        &format!(
            "fairdeal-{name}: {}. Settings are FAIRDEAL_* variables, one per flag of \
             `fairdeal-{name} --help` (FAIRDEAL_FOO_BAR is --foo-bar).",
            d.about
        ),
    );
    if let Replicas::One(why) = d.replicas {
        out.push_str("#\n");
        comment(
            &mut out,
            "",
            &format!("ONE replica, replaced with Recreate (never two at once): {why}"),
        );
    }
    out.push_str(&format!(
        "# Generated from its DEPLOYMENT (services/{name}) by `cargo run -p fairdeal-server -- \
         deployment`.\n"
    ));
    out.push_str("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n");
    let _ = writeln!(out, "  name: {name}\n  labels:");
    labels(&mut out, "    ", name);
    out.push_str("spec:\n");
    match d.replicas {
        Replicas::Many(n) => {
            let _ = writeln!(out, "  replicas: {n}");
        }
        Replicas::One(_) => out.push_str("  replicas: 1\n"),
    }
    out.push_str("  revisionHistoryLimit: 5\n  minReadySeconds: 5\n  strategy:\n");
    match d.replicas {
        Replicas::Many(_) => out.push_str(
            "    type: RollingUpdate\n    rollingUpdate:\n      maxSurge: 1\n      maxUnavailable: 0\n",
        ),
        Replicas::One(_) => out.push_str("    type: Recreate\n"),
    }
    out.push_str("  selector:\n    matchLabels:\n");
    labels(&mut out, "      ", name);
    out.push_str("  template:\n    metadata:\n      labels:\n");
    labels(&mut out, "        ", name);
    out.push_str(
        "    spec:
      automountServiceAccountToken: false
      enableServiceLinks: false
      # preStop pause (5s) + FAIRDEAL_SHUTDOWN_GRACE (20s) + flush, with room to spare.
      terminationGracePeriodSeconds: 30
      securityContext:
        runAsNonRoot: true
        # The image's user `fairdeal`; numeric so the kubelet can check runAsNonRoot.
        runAsUser: 10001
        runAsGroup: 10001
        fsGroup: 10001
        seccompProfile:
          type: RuntimeDefault
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
",
    );
    labels(&mut out, "              ", name);
    out.push_str("      containers:\n");
    let _ = writeln!(out, "        - name: {name}");
    out.push_str("          image: fairdeal:latest\n          imagePullPolicy: IfNotPresent\n");
    let _ = writeln!(
        out,
        "          command: [\"/usr/local/bin/fairdeal-{name}\"]"
    );
    out.push_str(
        "          ports:
            - name: grpc
              containerPort: 50051
              protocol: TCP
          envFrom:
            - configMapRef:
                name: fairdeal-config
",
    );
    comment(
        &mut out,
        "            ",
        &format!("Settings of {name} alone, when an overlay provides them."),
    );
    out.push_str("            - configMapRef:\n");
    let _ = writeln!(out, "                name: fairdeal-{name}-config");
    out.push_str("                optional: true\n          env:\n");
    let _ = writeln!(
        out,
        "            - name: FAIRDEAL_SERVICE_NAME\n              value: {name}"
    );
    if d.calls.contains(&name) {
        comment(
            &mut out,
            "            ",
            "Where the other replicas forward calls this pod should serve: its own IP (a pod's \
             host name does not resolve; the Service spreads over every pod).",
        );
        out.push_str(
            "            - name: POD_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
            - name: FAIRDEAL_ADVERTISE_URL
              value: http://$(POD_IP):50051
",
        );
    }
    out.push_str(
        "            - name: FAIRDEAL_DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: fairdeal-db
                  key: database-url
",
    );
    if let Some(why) = d.redis {
        secret_variable(
            &mut out,
            name,
            "redis_url",
            "redis-url",
            &format!("Redis: {why}; the URL may carry a password, hence a Secret"),
            false,
        );
    }
    for secret in d.secrets {
        secret_env(&mut out, name, secret);
    }
    for peer in d.calls.iter().filter(|p| **p != name) {
        if *peer == "auth" {
            comment(
                &mut out,
                "            ",
                if d.signs_in {
                    "Its own token comes from the auth service (renewed before it expires), and \
                     callers' tokens are verified with the keys published there."
                } else {
                    "Callers' tokens are verified with the keys published by the auth service."
                },
            );
        }
        let _ = writeln!(
            out,
            "            - name: {}\n              value: dns:///{peer}-pods:50051",
            variable(&format!("{peer}_url"))
        );
    }
    if d.signs_in {
        let _ = writeln!(
            out,
            "            # Its SHA-256 is the `{name}:` entry of the auth service's credentials."
        );
        let _ = writeln!(
            out,
            "            - name: FAIRDEAL_SERVICE_SECRET
              valueFrom:
                secretKeyRef:
                  name: fairdeal-{name}
                  key: service-secret"
        );
    }
    out.push_str("          resources:\n");
    if let Some(note) = d.resources.note {
        comment(&mut out, "            ", note);
    }
    let _ = writeln!(
        out,
        "            requests:
              cpu: {}
              memory: {}
            limits:
              cpu: \"1\"
              memory: {}",
        d.resources.cpu, d.resources.memory, d.resources.memory_limit
    );
    out.push_str(
        "          startupProbe:
            # Migrations run before the server answers.
            grpc:
              port: 50051
            periodSeconds: 2
            timeoutSeconds: 2
            failureThreshold: 60
          readinessProbe:
            grpc:
              port: 50051
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          livenessProbe:
            grpc:
              port: 50051
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          lifecycle:
            # SIGTERM closes the listener at once; the pause lets the endpoint removal reach
            # every node first, so no new connection is refused meanwhile.
            preStop:
              exec:
                command: [\"sleep\", \"5\"]
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            capabilities:
              drop: [\"ALL\"]
            seccompProfile:
              type: RuntimeDefault
          volumeMounts:
            - name: data
              mountPath: /var/lib/fairdeal
            - name: tmp
              mountPath: /tmp
      volumes:
        # The working directory (nothing is kept there with a postgres:// database, but a
        # service may write files of its own there, e.g. auth's mailbox without SMTP).
        - name: data
          emptyDir:
            sizeLimit: 256Mi
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
---
",
    );
    service_object(&mut out, name, false);
    comment(
        &mut out,
        "",
        &format!(
            "Headless: its name resolves to every ready pod, so that fairdeal clients given \
             dns:///{name}-pods:50051 balance their calls over all of them (a ClusterIP Service \
             balances connections, and a gRPC client keeps one)."
        ),
    );
    service_object(&mut out, name, true);
    out.push_str(
        "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
",
    );
    let _ = writeln!(out, "  name: {name}\n  labels:");
    labels(&mut out, "    ", name);
    out.push_str("spec:\n");
    match d.replicas {
        Replicas::Many(_) => out.push_str("  minAvailable: 1\n"),
        Replicas::One(_) => out.push_str(
            "  # One replica: a voluntary eviction may take it; minAvailable 1 would block every
  # node drain.
  maxUnavailable: 1
",
        ),
    }
    out.push_str("  selector:\n    matchLabels:\n");
    labels(&mut out, "      ", name);
    out
}

/// A Kubernetes Service of `name`'s pods: a ClusterIP one, or the headless `<name>-pods`.
fn service_object(out: &mut String, name: &str, headless: bool) {
    out.push_str("apiVersion: v1\nkind: Service\nmetadata:\n");
    let suffix = if headless { "-pods" } else { "" };
    let _ = writeln!(out, "  name: {name}{suffix}\n  labels:");
    labels(out, "    ", name);
    if headless {
        out.push_str("spec:\n  clusterIP: None\n  selector:\n");
    } else {
        out.push_str("spec:\n  type: ClusterIP\n  selector:\n");
    }
    labels(out, "    ", name);
    out.push_str(
        "  ports:
    - name: grpc
      port: 50051
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
---
",
    );
}

/// A network policy per service: anyone may call its port; it reaches the services it calls,
/// Redis when it uses it, and its own connections out of the cluster (the common egress of
/// every fairdeal pod is above the marker).
fn policies(services: &[Hosted]) -> String {
    let mut out = String::new();
    for service in services {
        let d = &service.deployment;
        let name = service.name;
        let callers: Vec<&str> = services
            .iter()
            .filter(|s| s.name != name && s.deployment.calls.contains(&name))
            .map(|s| s.name)
            .collect();
        let mut about = format!("{name}: called by clients");
        if !callers.is_empty() {
            let _ = write!(about, " and by {}", callers.join(", "));
        }
        let reaches: Vec<&str> = d.calls.to_vec();
        if reaches.is_empty() && d.redis.is_none() && d.egress.is_empty() {
            about.push_str("; reaches only what fairdeal-common-egress allows.");
        } else {
            let mut parts: Vec<String> = reaches.iter().map(|p| (*p).to_owned()).collect();
            if d.redis.is_some() {
                parts.push("Redis".to_owned());
            }
            for egress in d.egress {
                parts.push(egress.note.to_owned());
            }
            let _ = write!(about, "; reaches {}.", parts.join(", "));
        }
        out.push_str("---\n");
        comment(&mut out, "", &about);
        out.push_str("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n");
        let _ = writeln!(out, "  name: {name}\n  labels:");
        labels(&mut out, "    ", name);
        out.push_str("spec:\n  podSelector:\n    matchLabels:\n");
        labels(&mut out, "      ", name);
        let egress = !(reaches.is_empty() && d.redis.is_none() && d.egress.is_empty());
        if egress {
            out.push_str("  policyTypes: [\"Ingress\", \"Egress\"]\n");
        } else {
            out.push_str("  policyTypes: [\"Ingress\"]\n");
        }
        out.push_str("  ingress:\n    - ports:\n        - port: 50051\n          protocol: TCP\n");
        if !egress {
            continue;
        }
        out.push_str("  egress:\n");
        if !reaches.is_empty() {
            out.push_str("    - to:\n");
            for peer in &reaches {
                out.push_str("        - podSelector:\n            matchLabels:\n");
                labels(&mut out, "              ", peer);
            }
            out.push_str("      ports:\n        - port: 50051\n          protocol: TCP\n");
        }
        if d.redis.is_some() {
            out.push_str(
                "    - to:\n        - podSelector: {}\n      ports:\n        - port: 6379\n          protocol: TCP\n",
            );
        }
        for rule in d.egress {
            comment(&mut out, "    ", &format!("{}.", rule.note));
            out.push_str("    - ports:\n");
            for port in rule.ports {
                let _ = writeln!(out, "        - port: {port}\n          protocol: TCP");
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// crates/xtask, services/ledger

/// The list `cargo xtask deploy-secrets` writes each service's secrets file from.
fn xtask_services(services: &[Hosted]) -> String {
    let mut out = String::from(
        "//! Generated from `fairdeal_server::SERVICES` by `cargo run -p fairdeal-server -- \
         deployment`;\n//! edit the services' `DEPLOYMENT`, not this file.\n\nuse \
         crate::deploy::Secret;\n\n/// Every service of the compose stack and what its \
         secrets file `<name>.toml` holds\n/// besides the database URL.\npub(crate) const \
         SERVICES: &[(&str, &[Secret])] = &[\n",
    );
    for service in services {
        let d = &service.deployment;
        let mut kinds: Vec<&str> = d
            .secrets
            .iter()
            .filter(|s| s.compose.is_none())
            .filter_map(|s| match s.made {
                Made::Plain => None,
                Made::Credentials => Some("Secret::Credentials"),
                Made::SeedKeys => Some("Secret::SeedKeys"),
                Made::SigningKey => Some("Secret::SigningKey"),
            })
            .collect();
        if d.signs_in {
            kinds.push("Secret::SignIn");
        }
        let _ = writeln!(out, "    (\"{}\", &[{}]),", service.name, kinds.join(", "));
    }
    out.push_str(
        "];\n\n/// The compose stack's further replicas of a service (`<service>-<n>`), each on a \
         port of its\n/// own.\npub(crate) const REPLICAS: &[&str] = &[",
    );
    let replicas: Vec<String> = services
        .iter()
        .flat_map(|s| {
            (2..=s.deployment.compose_replicas).map(move |n| format!("\"{}-{n}\"", s.name))
        })
        .collect();
    out.push_str(&replicas.join(", "));
    out.push_str("];\n");
    out
}

/// The ledger's default sources: every other service.
fn ledger_sources(services: &[Hosted]) -> String {
    let others: Vec<String> = services
        .iter()
        .filter(|s| s.name != LEDGER)
        .map(|s| format!("\"{}\"", s.name))
        .collect();
    format!(
        "//! Generated from `fairdeal_server::SERVICES` by `cargo run -p fairdeal-server -- \
         deployment`;\n//! do not edit.\n\n/// The services whose events the ledger takes in by \
         default: every other service of the\n/// platform.\npub const SOURCES: [&str; {}] = \
         [{}];\n",
        others.len(),
        others.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_quoted_when_plain_would_change_them() {
        assert_eq!(scalar("redis://redis:6379"), "redis://redis:6379");
        assert_eq!(scalar("fairdeal <a@b>"), "\"fairdeal <a@b>\"");
        assert_eq!(scalar("${X:-y}"), "\"${X:-y}\"");
        assert_eq!(scalar("a: b"), "\"a: b\"");
        assert_eq!(scalar(""), "\"\"");
    }

    #[test]
    fn comments_wrap_before_the_margin() {
        let mut out = String::new();
        comment(&mut out, "    ", &"word ".repeat(40));
        assert!(out.lines().count() > 1);
        assert!(
            out.lines()
                .all(|l| l.len() <= 96 && l.starts_with("    # "))
        );
    }

    #[test]
    fn the_marker_keeps_what_is_above_it() {
        let current = format!("head\n{MARKER}\nold\n");
        assert_eq!(
            after_marker(&current, "f", "new\n").unwrap(),
            format!("head\n{MARKER}\nnew\n")
        );
        assert!(
            after_marker("no marker", "f", "x")
                .unwrap_err()
                .contains("no marker line")
        );
    }
}
