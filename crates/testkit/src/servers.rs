//! Where the test servers are: `FAIRDEAL_TEST_*_URL`, set by `cargo xtask test` for the
//! servers it starts, or else the standard ports on 127.0.0.1.

/// Environment variable naming the PostgreSQL server (its maintenance database).
pub const POSTGRES_URL_VAR: &str = "FAIRDEAL_TEST_POSTGRES_URL";
/// Environment variable naming the Redis server.
pub const REDIS_URL_VAR: &str = "FAIRDEAL_TEST_REDIS_URL";
/// Environment variable naming the NATS server (with JetStream).
pub const NATS_URL_VAR: &str = "FAIRDEAL_TEST_NATS_URL";

/// The PostgreSQL server tests create their databases on, as the URL of its maintenance
/// database: `FAIRDEAL_TEST_POSTGRES_URL`, default
/// `postgres://postgres@127.0.0.1:5432/postgres`. The user must be allowed to create
/// databases (and, for the event store's tamper tests, be a superuser).
pub fn postgres_url() -> String {
    from_env(
        POSTGRES_URL_VAR,
        "postgres://postgres@127.0.0.1:5432/postgres",
    )
}

/// The Redis server: `FAIRDEAL_TEST_REDIS_URL`, default `redis://127.0.0.1:6379`.
pub fn redis_url() -> String {
    from_env(REDIS_URL_VAR, "redis://127.0.0.1:6379")
}

/// The NATS server, with JetStream: `FAIRDEAL_TEST_NATS_URL`, default
/// `nats://127.0.0.1:4222`.
pub fn nats_url() -> String {
    from_env(NATS_URL_VAR, "nats://127.0.0.1:4222")
}

/// The variable's value, or `default` when it is unset or empty.
fn from_env(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|value| !value.trim().is_empty())
        .unwrap_or_else(|| default.to_owned())
}
