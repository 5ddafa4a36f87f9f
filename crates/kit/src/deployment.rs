//! What a service says of how it is deployed ([`Deployment`], its [`Service::DEPLOYMENT`]).
//!
//! The deployment files (the image's list of binaries, docker-compose.yml's services, the
//! Kubernetes base's manifests, network policies and kustomization, the secrets `cargo xtask
//! deploy-secrets` writes, the ledger's sources) are generated from the one list of services
//! and what each says here (`fairdeal-server deployment`, checked by the server's
//! `services_list` test): a new service declares its deployment in its own crate, and touches
//! no deployment file by hand. Everything not said here is the same for every service (one
//! gRPC port, the database, NATS, the collector, probes, the security context, a
//! disruption budget).
//!
//! [`Service::DEPLOYMENT`]: crate::Service::DEPLOYMENT

/// How a service runs on Kubernetes and in the compose stack.
#[derive(Debug, Clone, Copy)]
pub struct Deployment {
    /// What it does, one or two sentences: the heading of its manifest.
    pub about: &'static str,
    /// The services it calls, in the order its settings name them: each is a
    /// `FAIRDEAL_<PEER>_URL`, an egress rule and a start dependency. Itself when its replicas
    /// call each other (they then announce their own address, `FAIRDEAL_ADVERTISE_URL`).
    pub calls: &'static [&'static str],
    /// The services whose events it reads: it starts after them.
    pub reads: &'static [&'static str],
    /// It reads every other service's events (the ledger): it starts after all of them.
    pub reads_every_other: bool,
    /// It signs in to the auth service with a secret of its own (`service_secret`), whose
    /// hash the auth service's credentials list.
    pub signs_in: bool,
    /// What it keeps in Redis, if anything (`FAIRDEAL_REDIS_URL`, from its Secret on
    /// Kubernetes).
    pub redis: Option<&'static str>,
    /// The settings it reads from a secret of its own besides the database URL.
    pub secrets: &'static [SecretSetting],
    /// Settings the compose stack gives it in plain (on Kubernetes they come from its
    /// optional ConfigMap `fairdeal-<name>-config`, which an overlay provides).
    pub compose_settings: &'static [(&'static str, &'static str)],
    /// Containers of the compose stack it needs healthy besides the database, Redis (when it
    /// uses it) and NATS, e.g. the mail catcher.
    pub compose_needs: &'static [&'static str],
    /// How many replicas the compose stack runs (the first is `<name>`, then `<name>-2`...).
    pub compose_replicas: u8,
    /// Connections out of the cluster it makes, beside the platform's (an egress rule each).
    pub egress: &'static [Egress],
    /// Its replicas on Kubernetes.
    pub replicas: Replicas,
    /// Its CPU and memory.
    pub resources: Resources,
}

impl Deployment {
    /// A service that calls nobody and keeps nothing outside its database: two replicas,
    /// the default resources. A service's declaration starts from it.
    pub const PLAIN: Self = Self {
        about: "",
        calls: &[],
        reads: &[],
        reads_every_other: false,
        signs_in: false,
        redis: None,
        secrets: &[],
        compose_settings: &[],
        compose_needs: &[],
        compose_replicas: 1,
        egress: &[],
        replicas: Replicas::Many(2),
        resources: Resources::DEFAULT,
    };
}

/// A setting read from the service's own secret (Kubernetes: Secret `fairdeal-<name>`; the
/// compose stack: its `<name>.toml`).
#[derive(Debug, Clone, Copy)]
pub struct SecretSetting {
    /// The setting's name (`seed_keys`: the variable `FAIRDEAL_SEED_KEYS`).
    pub setting: &'static str,
    /// Its key in the Kubernetes Secret (`seed-keys`).
    pub key: &'static str,
    /// What it is.
    pub note: &'static str,
    /// The service runs without it.
    pub optional: bool,
    /// In the compose stack: `Some(value)` gives it in plain (a stand-in such as the mail
    /// catcher's address), `None` writes a fresh one into its secrets file.
    pub compose: Option<&'static str>,
    /// How `cargo xtask deploy-secrets` makes it when the compose stack has no plain value.
    pub made: Made,
}

/// How a secret setting's value is made for the compose stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// Given in plain by the compose stack (see [`SecretSetting::compose`]).
    Plain,
    /// `name:sha256(secret)` of every service that signs in.
    Credentials,
    /// A fresh seed-sealing key, `k1:<64 hex>`.
    SeedKeys,
    /// A fresh Ed25519 checkpoint signing key in Go's note format (its verifier is written
    /// beside it, `<name>.pub`).
    SigningKey,
}

/// A connection out of the cluster.
#[derive(Debug, Clone, Copy)]
pub struct Egress {
    /// What it is for.
    pub note: &'static str,
    /// Its TCP ports.
    pub ports: &'static [u16],
}

/// How many replicas run on Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicas {
    /// This many, rolled one at a time, at least one available.
    Many(u8),
    /// Exactly one, replaced by recreation (never two at once), for this reason.
    One(&'static str),
}

/// Requests and limits of a service's container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// CPU requested (`50m`).
    pub cpu: &'static str,
    /// Memory requested (`64Mi`).
    pub memory: &'static str,
    /// Memory limit (`256Mi`); the CPU limit is one core.
    pub memory_limit: &'static str,
    /// Why these, when not the default.
    pub note: Option<&'static str>,
}

impl Resources {
    /// What most services need.
    pub const DEFAULT: Self = Self {
        cpu: "50m",
        memory: "64Mi",
        memory_limit: "256Mi",
        note: None,
    };
}
