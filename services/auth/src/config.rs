//! The auth service's own settings (beside the kit's common ones). Every field is a flag
//! `--name`, an environment variable `FAIRDEAL_NAME`, or a key of the config file.

use std::path::PathBuf;
use std::time::Duration;

use fairdeal_kit::config::{ConfigError, Secret, SecretUrl, Section};
use serde::{Serialize, Serializer};

use crate::accounts::{Lifetimes, MailLimits, ServiceCredential};
use crate::domain::{HashParams, LockoutPolicy};
use crate::keyring::KeyPolicy;
use crate::limits::Policies;

fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_duration(*d))
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// Settings of the auth service.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Auth settings")]
pub struct AuthSettings {
    /// Lifetime of access tokens (short: they cannot be revoked, only left to expire).
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub access_token_ttl: Duration,

    /// Lifetime of each refresh token (a client idle longer must log in again).
    #[arg(long, value_name = "DURATION", default_value = "14days", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub refresh_token_ttl: Duration,

    /// Longest life of a login, however often its refresh token is rotated.
    #[arg(long, value_name = "DURATION", default_value = "30days", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub session_max_age: Duration,

    /// Lifetime of email-confirmation links.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub confirmation_ttl: Duration,

    /// Lifetime of password-reset links.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub reset_ttl: Duration,

    /// Lifetime of internal-service tokens.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub service_token_ttl: Duration,

    /// Argon2id memory in KiB (OWASP: 19456).
    #[arg(long, value_name = "KIB", default_value_t = HashParams::OWASP.memory_kib)]
    pub argon2_memory_kib: u32,

    /// Argon2id passes (OWASP: 2).
    #[arg(long, value_name = "N", default_value_t = HashParams::OWASP.iterations)]
    pub argon2_iterations: u32,

    /// Argon2id lanes (OWASP: 1).
    #[arg(long, value_name = "N", default_value_t = HashParams::OWASP.parallelism)]
    pub argon2_parallelism: u32,

    /// Failed logins per username within 15 minutes before a lockout (1 min, doubling to 1 h).
    #[arg(long, value_name = "N", default_value_t = LockoutPolicy::USERNAME.max_failures)]
    pub username_max_failures: u32,

    /// Failed logins per client address within 15 minutes before a lockout.
    #[arg(long, value_name = "N", default_value_t = LockoutPolicy::ADDRESS.max_failures)]
    pub address_max_failures: u32,

    /// Password-reset and confirmation mails that may be requested for one address (known or
    /// not) within `--mail-limit-window`; requests beyond are dropped silently.
    #[arg(long, value_name = "N", default_value_t = MailLimits::default().per_address)]
    pub mail_per_address: u32,

    /// Password-reset and confirmation mails one client address (IPv6 per /64) may request,
    /// whatever the addresses, within `--mail-limit-window`; requests beyond are dropped
    /// silently.
    #[arg(long, value_name = "N", default_value_t = MailLimits::default().per_client)]
    pub mail_per_client: u32,

    /// The sliding window of the mail limits.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub mail_limit_window: Duration,

    /// A new signing key is created when the newest is this old.
    #[arg(long, value_name = "DURATION", default_value = "7days", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub key_rotation_period: Duration,

    /// How often each replica reloads the signing keys (keep it well below the 5-minute
    /// publication lead, so every replica publishes a new key before any signs with it).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub key_reload_interval: Duration,

    /// PostgreSQL schema holding the service's tables and event log.
    #[arg(long, value_name = "NAME", default_value = "auth")]
    pub db_schema: String,

    /// SMTP server for outgoing mail (`smtps://user:pass@host:465`,
    /// `smtp://user:pass@host:587?tls=required`). Absent: mails go to `--mailbox-dir`.
    #[arg(long, value_name = "URL")]
    pub smtp_url: Option<SecretUrl>,

    /// Directory receiving mails as `.eml` files when no SMTP server is configured.
    #[arg(long, value_name = "DIR", default_value = "mailbox")]
    pub mailbox_dir: PathBuf,

    /// Sender of outgoing mail.
    #[arg(
        long,
        value_name = "MAILBOX",
        default_value = "fairdeal <no-reply@fairdeal.invalid>"
    )]
    pub mail_from: String,

    /// Base address of the links in mails (the web front end).
    #[arg(long, value_name = "URL", default_value = "http://localhost:8080")]
    pub public_url: String,

    /// Internal services allowed to get service tokens: `name:sha256hex,name:sha256hex`
    /// (the SHA-256 of each service's secret, e.g. `printf %s "$SECRET" | sha256sum`).
    #[arg(long, value_name = "LIST")]
    pub service_credentials: Option<Secret>,

    /// Usernames whose logins get the moderator role (chat moderation: remove messages, mute
    /// users), comma-separated, compared caselessly like logins. Taking a name off the list
    /// takes effect at that account's next login or token refresh (at most one access-token
    /// lifetime later).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub moderators: Vec<String>,
}

impl Section for AuthSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("access_token_ttl", self.access_token_ttl),
            ("refresh_token_ttl", self.refresh_token_ttl),
            ("session_max_age", self.session_max_age),
            ("confirmation_ttl", self.confirmation_ttl),
            ("reset_ttl", self.reset_ttl),
            ("service_token_ttl", self.service_token_ttl),
            ("key_rotation_period", self.key_rotation_period),
            ("key_reload_interval", self.key_reload_interval),
        ];
        for (field, value) in positive {
            if value.as_secs() == 0 {
                return Err(ConfigError::invalid(field, "must be at least one second"));
            }
        }
        if self.access_token_ttl > Duration::from_secs(3600) {
            return Err(ConfigError::invalid(
                "access_token_ttl",
                "must be at most 1h (access tokens cannot be revoked)",
            ));
        }
        if self.key_reload_interval.saturating_mul(2) > KEY_PUBLISH_LEAD {
            return Err(ConfigError::invalid(
                "key_reload_interval",
                "must be at most 2m30s (half the key publication lead)",
            ));
        }
        if self.key_rotation_period <= self.access_token_ttl {
            return Err(ConfigError::invalid(
                "key_rotation_period",
                "must be longer than access_token_ttl",
            ));
        }
        self.hash_params()
            .to_argon2_checked()
            .map_err(|e| ConfigError::invalid("argon2_memory_kib", e.to_string()))?;
        if self.username_max_failures == 0 || self.address_max_failures == 0 {
            return Err(ConfigError::invalid(
                "username_max_failures",
                "limits must be at least 1",
            ));
        }
        for (field, value) in [
            ("mail_per_address", self.mail_per_address),
            ("mail_per_client", self.mail_per_client),
        ] {
            if !(1..=MAX_MAIL_LIMIT).contains(&value) {
                return Err(ConfigError::invalid(
                    field,
                    format!("must be 1 to {MAX_MAIL_LIMIT}"),
                ));
            }
        }
        if self.mail_limit_window < Duration::from_secs(60)
            || self.mail_limit_window > Duration::from_secs(7 * 86_400)
        {
            return Err(ConfigError::invalid(
                "mail_limit_window",
                "must be 1m to 7days",
            ));
        }
        if self.mail_from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(ConfigError::invalid(
                "mail_from",
                "must be an address, optionally with a name: `Name <a@b.c>`",
            ));
        }
        if let Some(url) = &self.smtp_url {
            url.require_scheme("smtp_url", &["smtp", "smtps"])?;
        }
        self.service_credentials()?;
        for name in &self.moderators {
            if crate::domain::Username::parse(name).is_err() {
                return Err(ConfigError::invalid(
                    "moderators",
                    format!(
                        "\"{}\" is not a valid username",
                        fairdeal_kit::status::shown(name)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Highest mail limit accepted (per address or per client, per window): beyond, the limit no
/// longer protects anyone's inbox.
pub const MAX_MAIL_LIMIT: u32 = 1000;

/// How long a new signing key is published before it signs.
pub const KEY_PUBLISH_LEAD: Duration = Duration::from_secs(300);

/// Clock skew verifiers allow (the authn default), counted into how long keys stay published.
pub const VERIFIER_LEEWAY: Duration = Duration::from_secs(30);

impl AuthSettings {
    /// The Argon2id parameters.
    pub fn hash_params(&self) -> HashParams {
        HashParams {
            memory_kib: self.argon2_memory_kib,
            iterations: self.argon2_iterations,
            parallelism: self.argon2_parallelism,
        }
    }

    /// The token and link lifetimes.
    pub fn lifetimes(&self) -> Lifetimes {
        Lifetimes {
            access_token: secs(self.access_token_ttl),
            refresh_token: secs(self.refresh_token_ttl),
            session: secs(self.session_max_age),
            confirmation: secs(self.confirmation_ttl),
            reset: secs(self.reset_ttl),
            service_token: secs(self.service_token_ttl),
        }
    }

    /// The lockout policies.
    pub fn policies(&self) -> Policies {
        Policies {
            username: LockoutPolicy {
                max_failures: self.username_max_failures,
                ..LockoutPolicy::USERNAME
            },
            address: LockoutPolicy {
                max_failures: self.address_max_failures,
                ..LockoutPolicy::ADDRESS
            },
        }
    }

    /// The mail quotas.
    pub fn mail_limits(&self) -> MailLimits {
        MailLimits {
            per_address: self.mail_per_address,
            per_client: self.mail_per_client,
        }
    }

    /// The window of the mail quotas, seconds.
    pub fn mail_limit_window_secs(&self) -> i64 {
        secs(self.mail_limit_window)
    }

    /// Key rotation timing.
    pub fn key_policy(&self) -> KeyPolicy {
        KeyPolicy {
            rotation_secs: secs(self.key_rotation_period),
            publish_lead_secs: secs(KEY_PUBLISH_LEAD),
            token_lifetime_secs: secs(
                self.access_token_ttl.max(self.service_token_ttl) + VERIFIER_LEEWAY,
            ),
        }
    }

    /// The caseless keys of the moderators' usernames.
    pub fn moderator_keys(&self) -> std::collections::HashSet<String> {
        self.moderators
            .iter()
            .map(|name| crate::domain::Username::key_of(name))
            .collect()
    }

    /// The parsed service credentials.
    pub fn service_credentials(&self) -> Result<Vec<ServiceCredential>, ConfigError> {
        let Some(list) = &self.service_credentials else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in list
            .expose_secret()
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let bad = || {
                ConfigError::invalid(
                    "service_credentials",
                    "each entry must be `name:<64 hex digits>`",
                )
            };
            let (name, hash) = entry.split_once(':').ok_or_else(bad)?;
            let bytes = hex::decode(hash).map_err(|_| bad())?;
            let secret_sha256: [u8; 32] = bytes.as_slice().try_into().map_err(|_| bad())?;
            if name.is_empty() || name.len() > 64 {
                return Err(bad());
            }
            out.push(ServiceCredential {
                name: name.to_owned(),
                secret_sha256,
            });
        }
        Ok(out)
    }
}

impl HashParams {
    fn to_argon2_checked(self) -> Result<(), crate::domain::HashError> {
        argon2::Params::new(self.memory_kib, self.iterations, self.parallelism, None)
            .map(|_| ())
            .map_err(|e| crate::domain::HashError::Params(e.to_string()))
    }
}
