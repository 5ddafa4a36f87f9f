//! Configuration: layering, validation errors that name the field, and secrets that never
//! print. Environments are passed explicitly, never set on the process.

use std::io::Write;
use std::time::Duration;

use fairdeal_kit::config::{
    Config, ConfigError, Loaded, LogFormat, NoSection, Origin, Secret, Section,
};
use proptest::prelude::*;

/// A service section like a real service would add.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
struct TablesSettings {
    /// Seats per table.
    #[arg(long, default_value_t = 4)]
    max_seats: u8,
    /// Key sealing seeds at rest.
    #[arg(long)]
    seed_key: Option<Secret>,
    /// Log every audit record.
    #[arg(long)]
    verbose_audit: bool,
}

impl Section for TablesSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if !(2..=8).contains(&self.max_seats) {
            return Err(ConfigError::invalid("max_seats", "must be between 2 and 8"));
        }
        Ok(())
    }
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

fn load<S: Section>(args: &[&str], env_pairs: &[(&str, &str)]) -> Result<Loaded<S>, ConfigError> {
    let mut argv = vec!["tables"];
    argv.extend_from_slice(args);
    Config::<S>::load_from("tables", argv, env(env_pairs))
}

fn run<S: Section>(args: &[&str], env_pairs: &[(&str, &str)]) -> Config<S> {
    match load::<S>(args, env_pairs) {
        Ok(Loaded::Run(config)) => config,
        other => panic!("expected a runnable config, got {other:?}"),
    }
}

fn file(contents: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(contents.as_bytes()).unwrap();
    file
}

#[test]
fn defaults_are_embedded_and_valid() {
    let config = run::<NoSection>(&[], &[]);
    let common = &config.common;
    assert_eq!(common.service_name, "tables");
    assert_eq!(common.listen_addr, "127.0.0.1:50051".parse().unwrap());
    assert_eq!(common.database_url.scheme().as_deref(), Some("sqlite"));
    assert!(common.nats_url.is_none() && !common.uses_nats());
    assert!(common.redis_url.is_none());
    assert_eq!(common.subject_prefix, "fairdeal");
    assert_eq!(common.jetstream_replicas, 1);
    assert_eq!(common.shutdown_grace, Duration::from_secs(20));
    assert_eq!(common.log_format, LogFormat::Json);
    assert!(config.file.is_none());
}

#[test]
fn precedence_is_default_file_env_flag() {
    let settings = file(
        r#"
        listen_addr = "127.0.0.1:7000"
        subject_prefix = "from-file"
        log_format = "pretty"
        shutdown_grace = "5s"

        [tables]
        max_seats = 6
        "#,
    );
    let path = settings.path().to_str().unwrap();
    let config = run::<TablesSettings>(
        &["--config", path, "--subject-prefix", "from.flag"],
        &[
            ("FAIRDEAL_LISTEN_ADDR", "127.0.0.1:0"),
            ("FAIRDEAL_SUBJECT_PREFIX", "from-env"),
            ("FAIRDEAL_VERBOSE_AUDIT", "true"),
            ("UNRELATED", "ignored"),
        ],
    );
    assert_eq!(config.common.listen_addr.port(), 0, "env beats file");
    assert_eq!(config.common.subject_prefix, "from.flag", "flag beats env");
    assert_eq!(
        config.common.log_format,
        LogFormat::Pretty,
        "file beats default"
    );
    assert_eq!(config.common.shutdown_grace, Duration::from_secs(5));
    assert_eq!(config.service.max_seats, 6, "tables only group keys");
    assert!(config.service.verbose_audit, "switches turn on from env");
    assert_eq!(config.file.as_deref(), Some(settings.path()));
}

#[test]
fn config_file_can_be_named_in_the_environment() {
    let settings = file("jetstream_replicas = 3\n");
    let config = run::<NoSection>(
        &[],
        &[("FAIRDEAL_CONFIG", settings.path().to_str().unwrap())],
    );
    assert_eq!(config.common.jetstream_replicas, 3);
}

#[test]
fn validation_errors_name_the_field() {
    let cases: &[(&[&str], &str)] = &[
        (&["--jetstream-replicas", "7"], "jetstream_replicas"),
        (
            &["--database-url", "mysql://u:hunter2@db/x"],
            "database_url",
        ),
        (&["--nats-url", "http://localhost:4222"], "nats_url"),
        (&["--redis-url", "not a url"], "redis_url"),
        (&["--subject-prefix", "a.*.b"], "subject_prefix"),
        (&["--subject-prefix", "a..b"], "subject_prefix"),
        (&["--service-name", "Tables"], "service_name"),
        (&["--shutdown-grace", "0s"], "shutdown_grace"),
        (&["--log", "=["], "log"),
        (&["--max-seats", "12"], "max_seats"),
        (&["--db-max-connections", "7"], "db_max_connections"),
        (&["--db-writers", "0"], "db_writers"),
        (&["--db-writers", "5"], "db_writers"),
        // The smallest budget has no session to spare for a second writer.
        (
            &["--db-max-connections", "8", "--db-writers", "2"],
            "db_writers",
        ),
    ];
    for (args, field) in cases {
        match load::<TablesSettings>(args, &[]) {
            Err(error @ ConfigError::Invalid { .. }) => {
                let ConfigError::Invalid { field: named, .. } = &error else {
                    unreachable!()
                };
                assert_eq!(named, field, "{args:?}");
                let message = error.to_string();
                assert!(message.contains(field), "{message}");
                assert!(!message.contains("hunter2"), "secret leaked: {message}");
            }
            other => panic!("{args:?}: expected Invalid({field}), got {other:?}"),
        }
    }
}

#[test]
fn unparsable_values_say_where_they_came_from() {
    match load::<NoSection>(&[], &[("FAIRDEAL_LISTEN_ADDR", "nowhere")]) {
        Err(ConfigError::InvalidValue { field, origin, .. }) => {
            assert_eq!(field, "listen_addr");
            assert_eq!(origin, Origin::Env("FAIRDEAL_LISTEN_ADDR".into()));
        }
        other => panic!("{other:?}"),
    }

    let settings = file("log_format = \"xml\"\n");
    let path = settings.path().to_str().unwrap();
    match load::<NoSection>(&["--config", path], &[]) {
        Err(error @ ConfigError::InvalidValue { .. }) => {
            let ConfigError::InvalidValue {
                field,
                origin,
                reason,
            } = &error
            else {
                unreachable!()
            };
            assert_eq!(field, "log_format");
            assert_eq!(origin, &Origin::File(settings.path().to_owned()));
            assert!(
                reason.contains("json") && reason.contains("pretty"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }

    match load::<NoSection>(&["--jetstream-replicas", "many"], &[]) {
        Err(ConfigError::InvalidValue { field, origin, .. }) => {
            assert_eq!(field, "jetstream_replicas");
            assert_eq!(origin, Origin::CommandLine);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn file_problems_are_typed_and_never_echo_the_file() {
    let settings = file("listen_adr = \"127.0.0.1:1\"\n");
    let path = settings.path().to_str().unwrap();
    assert!(matches!(
        load::<NoSection>(&["--config", path], &[]),
        Err(ConfigError::UnknownKey { key, .. }) if key == "listen_adr"
    ));

    let settings = file("subject_prefix = \"ok\"\ndatabase_url = \"postgres://u:hunter2@db/x\n");
    let path = settings.path().to_str().unwrap();
    match load::<NoSection>(&["--config", path], &[]) {
        Err(error @ ConfigError::ParseFile { line: 2, .. }) => {
            assert!(!error.to_string().contains("hunter2"), "{error}");
        }
        other => panic!("{other:?}"),
    }

    let settings = file("subject_prefix = [\"a\", \"b\"]\n");
    let path = settings.path().to_str().unwrap();
    assert!(matches!(
        load::<NoSection>(&["--config", path], &[]),
        Err(ConfigError::UnsupportedValue { .. })
    ));

    assert!(matches!(
        load::<NoSection>(&["--config", "/nonexistent/fairdeal.toml"], &[]),
        Err(ConfigError::ReadFile { .. })
    ));
}

#[test]
fn help_is_reported_as_a_cli_request() {
    match load::<TablesSettings>(
        &["--help"],
        &[("FAIRDEAL_DATABASE_URL", "postgres://u:hunter2@db/x")],
    ) {
        Err(ConfigError::Cli(error)) => {
            assert_eq!(error.kind(), clap::error::ErrorKind::DisplayHelp);
            let help = error.to_string();
            assert!(help.contains("--max-seats") && help.contains("--listen-addr"));
            assert!(!help.contains("hunter2"), "{help}");
        }
        other => panic!("{other:?}"),
    }
}

const SECRETS: [&str; 4] = [
    "hunter2",
    "s3cr3t-token",
    "pw-in-query",
    "seal-key-material",
];

fn secret_env() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "FAIRDEAL_DATABASE_URL",
            "postgres://fairdeal:hunter2@db.internal:5432/fairdeal?sslmode=disable&password=pw-in-query",
        ),
        (
            "FAIRDEAL_NATS_URL",
            "nats://s3cr3t-token@nats.internal:4222",
        ),
        (
            "FAIRDEAL_REDIS_URL",
            "redis://:hunter2@redis.internal:6379/0",
        ),
        ("FAIRDEAL_SEED_KEY", "seal-key-material"),
    ]
}

#[test]
fn dump_config_redacts_every_secret_and_round_trips() {
    let text = match load::<TablesSettings>(&["--dump-config", "--max-seats", "3"], &secret_env()) {
        Ok(Loaded::DumpConfig(text)) => text,
        other => panic!("{other:?}"),
    };
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} printed:\n{text}");
    }
    // Where the service connects stays visible.
    for visible in [
        "postgres://***:***@db.internal:5432/fairdeal",
        "sslmode=disable",
        "nats.internal",
        "max_seats = 3",
    ] {
        assert!(text.contains(visible), "{visible} missing:\n{text}");
    }
    assert!(text.contains("[redacted]"));

    // The dump is a valid config file: reloading it gives the same non-secret settings.
    let dumped = file(&text);
    let config = run::<TablesSettings>(&["--config", dumped.path().to_str().unwrap()], &[]);
    assert_eq!(config.service.max_seats, 3);
    assert_eq!(config.common.subject_prefix, "fairdeal");
    assert_eq!(config.common.shutdown_grace, Duration::from_secs(20));
}

#[test]
fn debug_output_of_a_loaded_config_holds_no_secret() {
    let config = run::<TablesSettings>(&[], &secret_env());
    let debug = format!("{config:?}");
    for secret in SECRETS {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
    // The secrets are still there for the code that connects.
    assert!(
        config
            .common
            .database_url
            .expose_secret()
            .contains("hunter2")
    );
    assert_eq!(
        config.service.seed_key.as_ref().map(Secret::expose_secret),
        Some("seal-key-material")
    );
}

proptest! {
    #[test]
    fn redacted_urls_never_contain_user_or_password(
        user in "[a-zA-Z0-9]{6,16}",
        password in "[a-zA-Z0-9]{6,24}",
        scheme in prop::sample::select(vec!["postgres", "nats", "redis"]),
    ) {
        let raw = format!("{scheme}://{user}:{password}@host.example:1234/db?token={password}");
        let url = fairdeal_kit::config::SecretUrl::new(raw);
        let shown = url.redacted();
        prop_assert!(!shown.contains(&password), "{}", shown);
        prop_assert!(!shown.contains(&user), "{}", shown);
        prop_assert!(shown.contains("host.example:1234"), "{}", shown);
        let debug = format!("{url:?}");
        prop_assert!(!debug.contains(&password), "{}", debug);
    }
}
