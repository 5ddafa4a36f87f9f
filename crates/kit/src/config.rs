//! Typed service configuration: defaults, then a TOML file, then `FAIRDEAL_*` environment
//! variables, then command-line flags; validated before anything starts.
//!
//! Every setting is a clap flag. The common ones live in [`CommonConfig`]; a service adds
//! its own as a [`Section`] (any `#[derive(clap::Args, serde::Serialize)]` struct), and
//! [`Config<S>`] holds both:
//!
//! ```ignore
//! #[derive(Debug, Clone, clap::Args, serde::Serialize)]
//! struct TablesSettings {
//!     /// Seats per table.
//!     #[arg(long, default_value_t = 4)]
//!     max_seats: u8,
//! }
//! impl fairdeal_kit::config::Section for TablesSettings {}
//!
//! let config = fairdeal_kit::config::load_or_exit::<TablesSettings>("tables");
//! ```
//!
//! How the layers meet: every flag `--foo-bar` can also come from the environment variable
//! `FAIRDEAL_FOO_BAR` or from the key `foo_bar` (or `foo-bar`) of the file named by
//! `--config` / `FAIRDEAL_CONFIG`. File and environment values are turned into flags placed
//! before the real command line, and clap keeps the last occurrence, so the precedence is
//! built-in default < file < environment < command line, and every value goes through the
//! same clap parser whatever its source. The environment is read by this module rather than
//! by clap's `env` attribute so tests can pass their own environment (setting process
//! environment variables needs `unsafe` in edition 2024, and races between parallel tests),
//! and so `--help` never shows an environment value, which may be a secret.
//!
//! Secrets are [`Secret`] or [`SecretUrl`]: they parse from any string (so a clap error can
//! never echo one back), their `Debug` and `Serialize` print a redaction, and the only way to
//! the value is `expose_secret()`. [`Config::dump`] (`--dump-config`) therefore cannot print a
//! secret, by construction rather than by care.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgAction, Args, Command, FromArgMatches};
use fairdeal_db::DatabaseUrl;
use secrecy::{ExposeSecret, SecretString};
use serde::{Serialize, Serializer};

/// Prefix of every environment variable read by the loader.
pub const ENV_PREFIX: &str = "FAIRDEAL_";

/// Text printed in place of every secret.
pub const REDACTED: &str = "[redacted]";

/// Text printed in place of credentials inside a URL: characters that need no
/// percent-encoding in user info or query values, so the redacted URL stays readable.
pub const URL_REDACTED: &str = "***";

/// A service's own settings, flattened beside [`CommonConfig`] into one command line.
///
/// Field names must equal the long flag names (with `_` for `-`), which is what
/// `#[arg(long)]` gives, so file keys, flags and `--dump-config` keys agree. Secret fields
/// must use [`Secret`] or [`SecretUrl`].
pub trait Section: Args + Serialize + Clone + fmt::Debug + Send + Sync + 'static {
    /// Checks cross-field and range rules clap cannot express. Called once at load.
    fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }
}

/// The section of a service that has no settings of its own.
#[derive(Debug, Clone, Default, Args, Serialize)]
pub struct NoSection {}

impl Section for NoSection {}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object per line, for log shippers (the default).
    Json,
    /// Human-readable multi-line output, for a developer's terminal.
    Pretty,
}

/// Settings every service shares.
#[derive(Debug, Clone, Args, Serialize)]
#[command(next_help_heading = "Common settings")]
pub struct CommonConfig {
    /// Name reported in logs, traces (`service.name`) and health checks. Defaults to the
    /// binary's service name.
    #[arg(long, value_name = "NAME")]
    pub service_name: String,

    /// Address the gRPC server binds. Port 0 picks a free port (tests).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    pub listen_addr: SocketAddr,

    /// Event store and projection database: `postgres://...` or `sqlite://...`. The
    /// embedded default is a SQLite file in the working directory.
    #[arg(
        long,
        value_name = "URL",
        default_value = "sqlite://fairdeal.db?mode=rwc"
    )]
    pub database_url: SecretUrl,

    /// PostgreSQL sessions this process may hold at once, all pools together (8 to 1000):
    /// size the server's `max_connections` from the sum over every process
    /// (docs/deploy.md, "Database connections"). When they are all busy, requests wait for
    /// one (back-pressure) rather than fail. Ignored on SQLite.
    #[arg(
        long,
        value_name = "N",
        default_value_t = fairdeal_db::ConnectionBudget::DEFAULT
    )]
    pub db_max_connections: u32,

    /// Group commit writers of the event store (1 to 4), each holding one session of
    /// `db_max_connections`. Fewer make larger commit groups (fewer transactions per event);
    /// more overlap one batch's commit with the next one's filling, which pays only with
    /// hundreds of appends in flight (docs/decisions.md, "Writers per store"). Absent: the
    /// service's own choice (1 for tables, else 2 from a budget of 10). Ignored on SQLite.
    #[arg(long, value_name = "N")]
    pub db_writers: Option<u32>,

    /// NATS server with JetStream. Absent: events travel on the in-process bus.
    #[arg(long, value_name = "URL")]
    pub nats_url: Option<SecretUrl>,

    /// Redis for presence and rate limits. Absent: kept in memory.
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<SecretUrl>,

    /// First token(s) of every NATS subject and stream name, so several deployments (or
    /// tests) can share one NATS server.
    #[arg(long, value_name = "PREFIX", default_value = "fairdeal")]
    pub subject_prefix: String,

    /// JetStream stream replicas (1 to 5; 3 in a production cluster).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jetstream_replicas: u8,

    /// How long shutdown waits for in-flight RPCs and background tasks before giving up
    /// (e.g. `20s`, `1500ms`). Keep it below the orchestrator's kill timeout.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "serialize_duration")]
    pub shutdown_grace: Duration,

    /// Log line format.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Json)]
    pub log_format: LogFormat,

    /// Log filter in `tracing` EnvFilter syntax (e.g. `info,fairdeal_kit=debug`). Falls
    /// back to `RUST_LOG`, then `info`.
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
}

/// The platform reads its settings from these flags: the database, the connection budget and
/// the bus (`fairdeal-platform` does not link this kit).
impl fairdeal_platform::Deployment for CommonConfig {
    fn database_url(&self) -> Result<DatabaseUrl, fairdeal_platform::SetupError> {
        self.database().map_err(setup_error("database_url"))
    }

    fn connection_budget(
        &self,
    ) -> Result<fairdeal_db::ConnectionBudget, fairdeal_platform::SetupError> {
        let budget = self
            .budget_alone()
            .map_err(setup_error("db_max_connections"))?;
        self.writers_in(budget).map_err(setup_error("db_writers"))
    }

    fn bus(&self) -> fairdeal_platform::BusSettings {
        fairdeal_platform::BusSettings {
            nats: self
                .nats_url
                .as_ref()
                .map(|url| fairdeal_platform::NatsServer::new(url.expose_secret(), url.redacted())),
            subject_prefix: self.subject_prefix.clone(),
            replicas: self.jetstream_replicas,
        }
    }
}

/// A [`ConfigError`] of `field` as the platform's error (its reason kept, never a value).
fn setup_error(field: &'static str) -> impl Fn(ConfigError) -> fairdeal_platform::SetupError {
    move |error| fairdeal_platform::SetupError::Invalid {
        field,
        reason: match error {
            ConfigError::Invalid { reason, .. } | ConfigError::InvalidValue { reason, .. } => {
                reason
            }
            other => other.to_string(),
        },
    }
}

impl CommonConfig {
    /// The common settings with every default and the given service name: what a test
    /// starts from before overriding fields.
    pub fn with_defaults(service_name: &str) -> Result<Self, ConfigError> {
        let loaded = Config::<NoSection>::load_from(service_name, [service_name], [])?;
        match loaded {
            Loaded::Run(config) => Ok(config.common),
            Loaded::DumpConfig(_) => Err(ConfigError::Invalid {
                field: "dump_config".to_owned(),
                reason: "not expected without arguments".to_owned(),
            }),
        }
    }

    /// `db_max_connections` and `db_writers`, typed: how the process's PostgreSQL sessions
    /// are shared between its pools.
    pub fn connection_budget(&self) -> Result<fairdeal_db::ConnectionBudget, ConfigError> {
        self.writers_in(self.budget_alone()?)
    }

    /// `db_max_connections` alone.
    fn budget_alone(&self) -> Result<fairdeal_db::ConnectionBudget, ConfigError> {
        fairdeal_db::ConnectionBudget::new(self.db_max_connections)
            .map_err(|error| ConfigError::invalid("db_max_connections", error.to_string()))
    }

    /// `budget` with the writers `db_writers` names, if it names any.
    fn writers_in(
        &self,
        budget: fairdeal_db::ConnectionBudget,
    ) -> Result<fairdeal_db::ConnectionBudget, ConfigError> {
        match self.db_writers {
            Some(writers) => budget
                .with_writers(writers)
                .map_err(|error| ConfigError::invalid("db_writers", error.to_string())),
            None => Ok(budget),
        }
    }

    /// The database, typed: PostgreSQL or a SQLite file. The one parser of `database_url`
    /// ([`DatabaseUrl`]'s `FromStr`); [`CommonConfig::validate`] has already run it at load,
    /// so after that this only fails for a value set by code since. The error names the
    /// field and shows the value redacted and shortened.
    pub fn database(&self) -> Result<DatabaseUrl, ConfigError> {
        self.database_url
            .expose_secret()
            .parse()
            .map_err(|error: fairdeal_db::DatabaseUrlError| {
                ConfigError::invalid("database_url", error.to_string())
            })
    }

    /// Whether events go to NATS JetStream (else the in-process bus).
    pub fn uses_nats(&self) -> bool {
        self.nats_url.is_some()
    }

    /// Checks the rules clap cannot express. Errors name the field, never a secret value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_service_name(&self.service_name)?;
        self.database()?;
        self.connection_budget()?;
        if let Some(url) = &self.nats_url {
            url.require_scheme("nats_url", &["nats", "tls", "ws", "wss"])?;
        }
        if let Some(url) = &self.redis_url {
            url.require_scheme("redis_url", &["redis", "rediss", "redis+unix", "unix"])?;
        }
        validate_subject_prefix(&self.subject_prefix)?;
        if !(1..=5).contains(&self.jetstream_replicas) {
            return Err(ConfigError::invalid(
                "jetstream_replicas",
                "must be between 1 and 5 (JetStream's limit)",
            ));
        }
        if self.shutdown_grace.is_zero() || self.shutdown_grace > Duration::from_secs(3600) {
            return Err(ConfigError::invalid(
                "shutdown_grace",
                "must be more than 0 and at most 1h",
            ));
        }
        if let Some(filter) = &self.log {
            tracing_subscriber::EnvFilter::try_new(filter)
                .map_err(|error| ConfigError::invalid("log", error.to_string()))?;
        }
        Ok(())
    }
}

fn validate_service_name(name: &str) -> Result<(), ConfigError> {
    // A DNS label: the name ends up in Kubernetes objects, metric labels and subjects.
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if valid {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            "service_name",
            "must be 1 to 63 lowercase letters, digits or '-', starting with a letter",
        ))
    }
}

fn validate_subject_prefix(prefix: &str) -> Result<(), ConfigError> {
    // Dot-separated NATS tokens without wildcards or whitespace, so `<prefix>.events.>`
    // is always a valid subject filter.
    let valid = !prefix.is_empty()
        && prefix.split('.').all(|token| {
            !token.is_empty()
                && token
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if valid {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            "subject_prefix",
            "must be dot-separated tokens of letters, digits, '_' or '-'",
        ))
    }
}

fn serialize_duration<S: Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&humantime::format_duration(*duration))
}

/// The effective configuration of one service: common settings plus its own section.
#[derive(Debug, Clone)]
pub struct Config<S: Section = NoSection> {
    /// Settings every service shares.
    pub common: CommonConfig,
    /// The service's own settings.
    pub service: S,
    /// The file the settings were read from, if any (shown by `--dump-config`).
    pub file: Option<PathBuf>,
}

/// What the command line asked for.
#[derive(Debug)]
pub enum Loaded<S: Section> {
    /// Start the service with this configuration.
    Run(Config<S>),
    /// `--dump-config`: print this text (the effective configuration, secrets redacted)
    /// and exit successfully.
    DumpConfig(String),
}

/// Flags of the loader itself, neither settable from the file nor the environment except
/// `FAIRDEAL_CONFIG`.
#[derive(Debug, Clone, Args)]
struct LoaderArgs {
    /// TOML file with settings (keys are the flag names). Also `FAIRDEAL_CONFIG`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Print the effective configuration as TOML, secrets redacted, and exit.
    #[arg(long)]
    dump_config: bool,
}

/// Arguments handled by the loader or clap itself, never injected from file or environment.
const LOADER_ONLY: &[&str] = &["config", "dump-config", "help", "version"];

/// Where an injected value came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The configuration file.
    File(PathBuf),
    /// An environment variable.
    Env(String),
    /// The command line.
    CommandLine,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "config file {}", path.display()),
            Origin::Env(name) => write!(f, "environment variable {name}"),
            Origin::CommandLine => f.write_str("command line"),
        }
    }
}

/// Why a configuration was rejected. Messages name the field and never contain a secret.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value parsed but breaks a rule (range, scheme, syntax).
    #[error("invalid `{field}`: {reason}")]
    Invalid {
        /// The setting's name, as in the file (`listen_addr`).
        field: String,
        /// What is wrong, without the value.
        reason: String,
    },
    /// A value did not parse as its type.
    #[error("invalid `{field}` from {origin}: {reason}")]
    InvalidValue {
        /// The setting's name, as in the file.
        field: String,
        /// Where the value came from.
        origin: Origin,
        /// The parser's complaint.
        reason: String,
    },
    /// The file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    ReadFile {
        /// The file named by `--config`.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// The file is not TOML. Only the position is given: the offending line may hold a
    /// secret.
    #[error("config file {} is not valid TOML at line {line}: {message}", path.display())]
    ParseFile {
        /// The file named by `--config`.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// The parser's message (no excerpt of the file).
        message: String,
    },
    /// The file has a key that is no setting (typos must not pass silently).
    #[error("config file {}: unknown setting `{key}`", path.display())]
    UnknownKey {
        /// The file named by `--config`.
        path: PathBuf,
        /// The key as written.
        key: String,
    },
    /// The file gives a list (or a date) to a setting that takes one value.
    #[error("config file {}: setting `{key}` does not take this kind of value", path.display())]
    UnsupportedValue {
        /// The file named by `--config`.
        path: PathBuf,
        /// The key as written.
        key: String,
    },
    /// Anything else clap rejected (unknown flag, missing required setting) and the
    /// `--help` / `--version` requests, which clap reports as errors.
    #[error(transparent)]
    Cli(#[from] clap::Error),
}

impl ConfigError {
    /// An [`ConfigError::Invalid`] for `field`.
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        ConfigError::Invalid {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }
}

impl<S: Section> Config<S> {
    /// Loads from the process's command line and environment. See [`Config::load_from`].
    pub fn load(service_name: &str) -> Result<Loaded<S>, ConfigError> {
        Self::load_from(
            service_name,
            std::env::args_os(),
            std::env::vars_os().filter_map(|(key, value)| {
                Some((key.into_string().ok()?, value.into_string().ok()?))
            }),
        )
    }

    /// Loads from explicit arguments (the first is the program name) and environment, then
    /// validates. `service_name` is the default of `--service-name`.
    pub fn load_from<I, T>(
        service_name: &str,
        args: I,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Loaded<S>, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let command = command::<S>(service_name);
        let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let program = if args.is_empty() {
            OsString::from(service_name)
        } else {
            args.remove(0)
        };
        let env: BTreeMap<String, String> = env
            .into_iter()
            .filter(|(key, _)| key.starts_with(ENV_PREFIX))
            .collect();

        let file =
            config_file_path(&args).or_else(|| env.get("FAIRDEAL_CONFIG").map(PathBuf::from));
        let mut injected = Injected::default();
        if let Some(path) = &file {
            injected.add_file(&command, path)?;
        }
        injected.add_env(&command, &env);

        let mut argv = Vec::with_capacity(1 + injected.flags.len() + args.len());
        argv.push(program);
        argv.extend(injected.flags.iter().map(|flag| OsString::from(&flag.arg)));
        argv.extend(args);

        let matches = command
            .try_get_matches_from(argv)
            .map_err(|error| injected.explain(error))?;
        let loader = LoaderArgs::from_arg_matches(&matches)?;
        let config = Config {
            common: CommonConfig::from_arg_matches(&matches)?,
            service: S::from_arg_matches(&matches)?,
            file,
        };
        config.validate()?;
        if loader.dump_config {
            Ok(Loaded::DumpConfig(config.dump()?))
        } else {
            Ok(Loaded::Run(config))
        }
    }

    /// The defaults of every setting, as if the command line were empty and no file nor
    /// environment were read, NOT validated: how a host builds a service's configuration in
    /// code (set what it must, then [`Config::validate`]).
    pub fn defaults(service_name: &str) -> Result<Self, ConfigError> {
        let matches = command::<S>(service_name)
            .try_get_matches_from([service_name])
            .map_err(|error| ConfigError::invalid("defaults", error.to_string()))?;
        Ok(Config {
            common: CommonConfig::from_arg_matches(&matches)?,
            service: S::from_arg_matches(&matches)?,
            file: None,
        })
    }

    /// Checks both sections as loading does.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.common.validate()?;
        self.service.validate()
    }

    /// The effective configuration as TOML (usable as a `--config` file once the redacted
    /// secrets are filled in). Secrets print as [`REDACTED`].
    pub fn dump(&self) -> Result<String, ConfigError> {
        let render = |value: &dyn erased::Render| {
            value
                .render()
                .map_err(|error| ConfigError::invalid("dump_config", error.to_string()))
        };
        let mut out = String::from("# Effective configuration (secrets redacted).\n");
        if let Some(file) = &self.file {
            out.push_str(&format!("# Read from {}.\n", file.display()));
        }
        out.push_str(&render(&self.common)?);
        out.push_str(&render(&self.service)?);
        Ok(out)
    }
}

/// `toml::to_string` behind a trait object, so `dump` can treat both sections alike.
mod erased {
    pub(super) trait Render {
        fn render(&self) -> Result<String, toml::ser::Error>;
    }
    impl<T: serde::Serialize> Render for T {
        fn render(&self) -> Result<String, toml::ser::Error> {
            toml::to_string(self)
        }
    }
}

/// Loads the configuration or ends the process: prints `--help`, `--version` or
/// `--dump-config` output and exits 0, or prints the error and exits 2. The one place that
/// may print, because nothing else (logging included) is set up yet. Meant for `main`.
pub fn load_or_exit<S: Section>(service_name: &str) -> Config<S> {
    exit_unless_run(Config::<S>::load(service_name))
}

/// [`load_or_exit`] with explicit arguments (the first is the program name) and the
/// process's environment: how one binary serving several services (`fairdeal-server serve
/// --target tables ...`) hands a service exactly the command line its own binary takes.
pub fn load_args_or_exit<S, I, T>(service_name: &str, args: I) -> Config<S>
where
    S: Section,
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    exit_unless_run(Config::<S>::load_from(
        service_name,
        args,
        std::env::vars_os()
            .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?))),
    ))
}

/// The configuration to run with; prints the dump, the usage or the error and exits
/// otherwise.
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn exit_unless_run<S: Section>(loaded: Result<Loaded<S>, ConfigError>) -> Config<S> {
    match loaded {
        Ok(Loaded::Run(config)) => config,
        Ok(Loaded::DumpConfig(text)) => {
            print!("{text}");
            std::process::exit(0)
        }
        Err(ConfigError::Cli(error)) => error.exit(),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(2)
        }
    }
}

/// The full command: loader flags, common settings, then the service's section.
/// `args_override_self` makes the last occurrence of a flag win, which is how injected file
/// and environment values yield to the real command line.
fn command<S: Section>(service_name: &str) -> Command {
    let command = Command::new(service_name.to_owned())
        .about(format!("fairdeal {service_name} service"))
        .args_override_self(true)
        .after_help(
            "Every --foo-bar flag can also be set with the environment variable \
             FAIRDEAL_FOO_BAR or the key foo_bar in the --config file. Precedence: flag > \
             environment > file > default.",
        );
    let command = LoaderArgs::augment_args(command);
    let command = CommonConfig::augment_args(command).mut_arg("service_name", |arg| {
        arg.required(false).default_value(service_name.to_owned())
    });
    S::augment_args(command)
}

/// Finds `--config <path>` / `--config=<path>` before clap runs: the file has to be read
/// first because its values go in front of the command line. Stops at `--`.
fn config_file_path(args: &[OsString]) -> Option<PathBuf> {
    let mut found = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let Some(text) = arg.to_str() else { continue };
        if text == "--" {
            break;
        } else if text == "--config" {
            found = iter.next().map(PathBuf::from);
        } else if let Some(path) = text.strip_prefix("--config=") {
            found = Some(PathBuf::from(path));
        }
    }
    found
}

/// A flag synthesized from the file or the environment.
#[derive(Debug)]
struct InjectedFlag {
    /// The setting's long name (`listen-addr`).
    long: String,
    /// The raw value, kept to tell which source a clap error is about.
    value: String,
    /// The source.
    origin: Origin,
    /// The argument given to clap (`--listen-addr=value`, or `--flag` for switches).
    arg: String,
}

/// Flags synthesized from the file and the environment, in precedence order.
#[derive(Debug, Default)]
struct Injected {
    flags: Vec<InjectedFlag>,
}

impl Injected {
    fn add_file(&mut self, command: &Command, path: &Path) -> Result<(), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
            path: path.to_owned(),
            source,
        })?;
        let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
            let line = error.span().map_or(0, |span| {
                text[..span.start.min(text.len())].lines().count().max(1)
            });
            ConfigError::ParseFile {
                path: path.to_owned(),
                line,
                message: error.message().to_owned(),
            }
        })?;
        self.add_table(command, path, &table)
    }

    /// Tables only group keys (`[tables]` for readability); names are flag names.
    fn add_table(
        &mut self,
        command: &Command,
        path: &Path,
        table: &toml::Table,
    ) -> Result<(), ConfigError> {
        for (key, value) in table {
            if let toml::Value::Table(inner) = value {
                self.add_table(command, path, inner)?;
                continue;
            }
            let long = key.replace('_', "-");
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(long.as_str()))
                .filter(|_| !LOADER_ONLY.contains(&long.as_str()))
                .ok_or_else(|| ConfigError::UnknownKey {
                    path: path.to_owned(),
                    key: key.clone(),
                })?;
            let unsupported = || ConfigError::UnsupportedValue {
                path: path.to_owned(),
                key: key.clone(),
            };
            let values: Vec<String> = match value {
                toml::Value::Array(items) if matches!(arg.get_action(), ArgAction::Append) => items
                    .iter()
                    .map(scalar)
                    .collect::<Option<_>>()
                    .ok_or_else(unsupported)?,
                other => vec![scalar(other).ok_or_else(unsupported)?],
            };
            for value in values {
                self.push(arg, value, Origin::File(path.to_owned()));
            }
        }
        Ok(())
    }

    fn add_env(&mut self, command: &Command, env: &BTreeMap<String, String>) {
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if LOADER_ONLY.contains(&long) {
                continue;
            }
            let name = format!("{ENV_PREFIX}{}", long.to_uppercase().replace('-', "_"));
            if let Some(value) = env.get(&name) {
                // The environment replaces the file's value(s) of the same setting, even
                // for lists, so that precedence holds per setting.
                self.flags.retain(|flag| flag.long != long);
                self.push(arg, value.clone(), Origin::Env(name));
            }
        }
    }

    fn push(&mut self, arg: &clap::Arg, value: String, origin: Origin) {
        let Some(long) = arg.get_long() else { return };
        let arg_text = match arg.get_action() {
            // Switches take no value: a true-ish value turns them on; false leaves the
            // default (off). Anything else is passed as a value so clap reports it.
            ArgAction::SetTrue => match value.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => format!("--{long}"),
                "false" | "0" | "no" | "off" | "" => return,
                _ => format!("--{long}={value}"),
            },
            _ => format!("--{long}={value}"),
        };
        self.flags.push(InjectedFlag {
            long: long.to_owned(),
            value,
            origin,
            arg: arg_text,
        });
    }

    /// Turns a clap value error into one that says where the bad value came from, without
    /// repeating the value (it may be a secret).
    fn explain(&self, error: clap::Error) -> ConfigError {
        if !matches!(
            error.kind(),
            ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::UnknownArgument
        ) {
            return ConfigError::Cli(error);
        }
        let text = |kind| match error.get(kind) {
            Some(ContextValue::String(text)) => Some(text.clone()),
            Some(ContextValue::StyledStr(text)) => Some(text.to_string()),
            _ => None,
        };
        let Some(invalid_arg) = text(ContextKind::InvalidArg) else {
            return ConfigError::Cli(error);
        };
        // "--listen-addr <ADDR>" -> "listen-addr"
        let long = invalid_arg
            .trim_start_matches('-')
            .split([' ', '='])
            .next()
            .unwrap_or_default()
            .to_owned();
        let value = text(ContextKind::InvalidValue);
        let origin = self
            .flags
            .iter()
            .find(|flag| flag.long == long && Some(&flag.value) == value.as_ref())
            .map_or(Origin::CommandLine, |flag| flag.origin.clone());
        if origin == Origin::CommandLine && error.kind() == ErrorKind::UnknownArgument {
            return ConfigError::Cli(error);
        }
        let reason = match (
            std::error::Error::source(&error),
            error.get(ContextKind::ValidValue),
        ) {
            (Some(source), _) => source.to_string(),
            (None, Some(ContextValue::Strings(valid))) => {
                format!("expected one of: {}", valid.join(", "))
            }
            _ => error.kind().to_string(),
        };
        ConfigError::InvalidValue {
            field: long.replace('-', "_"),
            origin,
            reason,
        }
    }
}

/// A TOML scalar as the string a flag would carry.
fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(text) => Some(text.clone()),
        toml::Value::Integer(number) => Some(number.to_string()),
        toml::Value::Float(number) => Some(number.to_string()),
        toml::Value::Boolean(flag) => Some(flag.to_string()),
        toml::Value::Datetime(_) | toml::Value::Array(_) | toml::Value::Table(_) => None,
    }
}

/// A secret string (a password, a key): never shown by `Debug`, `Serialize` or errors.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(SecretString::from(value.into()))
    }

    /// The value, for the one place that needs it.
    pub fn expose_secret(&self) -> &str {
        self.0.expose_secret()
    }
}

impl FromStr for Secret {
    type Err = std::convert::Infallible;
    // Infallible on purpose: a parse error would make clap echo the value.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Ok(Secret::new(value))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

/// A connection URL that may carry credentials (user, password, token, query parameters).
/// `Debug` and `Serialize` show it with every credential redacted, keeping scheme, host,
/// port and path so operators can still see where a service connects.
#[derive(Clone)]
pub struct SecretUrl(SecretString);

/// Query parameters known to carry no secret, shown by [`SecretUrl::redacted`].
const HARMLESS_QUERY_KEYS: &[&str] = &["mode", "sslmode", "cache", "application_name"];

impl SecretUrl {
    /// Wraps a URL.
    pub fn new(value: impl Into<String>) -> Self {
        SecretUrl(SecretString::from(value.into()))
    }

    /// The full URL, credentials included, for the client that connects with it.
    pub fn expose_secret(&self) -> &str {
        self.0.expose_secret()
    }

    /// The URL's scheme (`postgres`, `sqlite`, `nats`, ...), if it parses.
    pub fn scheme(&self) -> Option<String> {
        url::Url::parse(self.expose_secret())
            .ok()
            .map(|url| url.scheme().to_owned())
    }

    /// The URL with user, password and every non-allowlisted query value replaced by
    /// [`URL_REDACTED`]. A URL that does not parse is redacted whole.
    pub fn redacted(&self) -> String {
        let Ok(mut url) = url::Url::parse(self.expose_secret()) else {
            return REDACTED.to_owned();
        };
        if !url.username().is_empty() {
            // Cannot fail on a URL with a host, which any URL with a user has.
            let _ = url.set_username(URL_REDACTED);
        }
        if url.password().is_some() {
            let _ = url.set_password(Some(URL_REDACTED));
        }
        if url.query().is_some() {
            let pairs: Vec<(String, String)> = url
                .query_pairs()
                .map(|(key, value)| {
                    let shown = if HARMLESS_QUERY_KEYS.contains(&key.as_ref()) {
                        value.into_owned()
                    } else {
                        URL_REDACTED.to_owned()
                    };
                    (key.into_owned(), shown)
                })
                .collect();
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
        url.to_string()
    }

    /// Checks the scheme against `allowed`; the error names `field`, never the URL.
    pub fn require_scheme(&self, field: &str, allowed: &[&str]) -> Result<(), ConfigError> {
        match self.scheme() {
            Some(scheme) if allowed.contains(&scheme.as_str()) => Ok(()),
            Some(scheme) => Err(ConfigError::invalid(
                field,
                format!("scheme `{scheme}` is not one of {}", allowed.join(", ")),
            )),
            None => Err(ConfigError::invalid(
                field,
                format!("not a URL (expected {}://...)", allowed.join("://, ")),
            )),
        }
    }
}

impl FromStr for SecretUrl {
    type Err = std::convert::Infallible;
    // Infallible on purpose: the URL may hold a password, and a clap parse error would
    // print it. `validate` checks the URL and names only the field.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Ok(SecretUrl::new(value))
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Serialize for SecretUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.redacted())
    }
}
