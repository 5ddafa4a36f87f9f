//! The chat service on the platform: its settings, its [`Parts`] and [`ChatService`], the [`Service`] the
//! kit's host runs (`main.rs`, `fairdeal-server serve` and `up`); tests build [`Parts`] of
//! their own and call [`Application::assemble`] on port 0.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_authn::{AuthLayer, Authenticator, CallerAuthSettings, Clock, SystemClock};
use fairdeal_kit::config::{Config, ConfigError, Section};
use fairdeal_kit::deployment::Deployment;
use fairdeal_kit::{CommonConfig, Embedded, Mount, Service, Shutdown, StartError};
use fairdeal_platform::quota::{MemoryQuota, RedisQuota, RequestQuota};
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::chat::v1::chat_service_server::ChatServiceServer;
use serde::{Serialize, Serializer};

use crate::accounts::{self, AccountErasure, Scrubber};
use crate::grpc::ChatApi;
use crate::hub::Hub;
use crate::members::{self, MembershipProjection};
use crate::presence::{MemoryPresence, Presence, RedisPresence};
use crate::service::{Chat, ChatDeps, ChatLimits, Filter};
use crate::store::{MIGRATIONS, chat_store};

/// PostgreSQL schema of this service's tables and event log (the host's default: its name).
pub const SCHEMA: &str = ChatService::NAME;

/// The chat service on a server of its own.
pub type Application = fairdeal_kit::host::Application<ChatService>;

fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_duration(*d))
}

/// The chat service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Chat settings")]
pub struct ChatSettings {
    /// Messages one user may post within `--rate-limit-window` (all channels together).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub rate_limit_messages: u32,
    /// The rate limit's sliding window.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub rate_limit_window: Duration,
    /// How long a connection counts as present without its stream refreshing it (every
    /// third of it); a replica that dies leaves presence that ends this much later.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "duration")]
    pub presence_ttl: Duration,
    /// Mask profanity in messages (with `*`) before they are recorded.
    #[arg(long)]
    pub profanity_filter: bool,
    /// Where callers' tokens are verified from.
    #[command(flatten)]
    #[serde(flatten)]
    pub auth: CallerAuthSettings,
}

impl Section for ChatSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=1000).contains(&self.rate_limit_messages) {
            return Err(ConfigError::invalid(
                "rate_limit_messages",
                "must be 1 to 1000",
            ));
        }
        if self.rate_limit_window < Duration::from_secs(1)
            || self.rate_limit_window > Duration::from_secs(86_400)
        {
            return Err(ConfigError::invalid(
                "rate_limit_window",
                "must be 1s to 1day",
            ));
        }
        if self.presence_ttl < Duration::from_secs(3)
            || self.presence_ttl > Duration::from_secs(3600)
        {
            return Err(ConfigError::invalid("presence_ttl", "must be 3s to 1h"));
        }
        self.auth.validate()
    }
}

impl ChatSettings {
    /// The limits these settings give.
    pub fn limits(&self) -> ChatLimits {
        ChatLimits {
            messages: self.rate_limit_messages,
            window: self.rate_limit_window,
            presence_ttl: self.presence_ttl,
        }
    }
}

/// The profanity filter (rustrict's censor: each letter of a word it finds becomes `*`).
pub fn profanity_filter() -> Filter {
    Arc::new(|text: &str| rustrict::CensorStr::censor(text))
}

/// What the service is assembled from (tests supply their own).
pub struct Parts {
    /// The database, event store and append signal.
    pub storage: Storage,
    /// Verifies callers' tokens.
    pub authn: Authenticator,
    /// Who is connected (Redis in production).
    pub presence: Arc<dyn Presence>,
    /// The per-user message quota (Redis in production; its window is `limits.window`).
    pub quota: Arc<dyn RequestQuota>,
    /// Time of mutes, presence and the rate limit.
    pub clock: Arc<dyn Clock>,
    /// The limits.
    pub limits: ChatLimits,
    /// The profanity filter, when on.
    pub filter: Option<Filter>,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("limits", &self.limits)
            .field("filter", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

impl Parts {
    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services).
    pub async fn over(config: &Config<ChatSettings>, storage: Storage) -> Result<Self, StartError> {
        let settings = &config.service;
        let auth = settings.auth.auth_channel()?;
        let authn = settings.auth.authenticator(auth)?;
        let limits = settings.limits();
        let (presence, quota) = limiters(
            config.common.redis_url.as_ref().map(|u| u.expose_secret()),
            &config.common.subject_prefix,
            limits,
        )
        .await?;
        Ok(Self {
            storage,
            authn,
            presence,
            quota,
            clock: Arc::new(SystemClock),
            limits,
            filter: settings.profanity_filter.then(profanity_filter),
        })
    }
}

/// Presence and the message quota: in Redis at `redis_url` (keys under
/// `<prefix>:chat`), else in memory.
pub async fn limiters(
    redis_url: Option<&str>,
    prefix: &str,
    limits: ChatLimits,
) -> Result<(Arc<dyn Presence>, Arc<dyn RequestQuota>), StartError> {
    let window = i64::try_from(limits.window.as_secs()).unwrap_or(i64::MAX);
    let Some(url) = redis_url else {
        return Ok((
            Arc::new(MemoryPresence::default()),
            Arc::new(MemoryQuota::new(window)),
        ));
    };
    let namespace = format!("{prefix}:chat");
    let redis_down = |e: fairdeal_platform::quota::LimiterError| StartError::Dependency {
        what: "redis_url",
        reason: e.to_string(),
    };
    // Keys outlive their last refresh by two TTLs: only a dead replica's connections
    // wait that long to be collected; presence itself is decided by the expiry scores.
    let key_ttl =
        i64::try_from(limits.presence_ttl.as_millis().saturating_mul(2)).unwrap_or(i64::MAX);
    let presence = RedisPresence::connect(url, &namespace, key_ttl)
        .await
        .map_err(redis_down)?;
    let quota = RedisQuota::connect(url, &namespace, window)
        .await
        .map_err(redis_down)?;
    Ok((Arc::new(presence), Arc::new(quota)))
}

/// The chat service, as the kit's host runs it.
#[derive(Debug)]
pub struct ChatService;

impl Service for ChatService {
    const NAME: &'static str = "chat";
    const MIGRATIONS: &'static [&'static fairdeal_db::Migrations] = &[&MIGRATIONS];
    const DEPLOYMENT: Deployment = Deployment {
        about: "the lobby and table channels (live subscriptions, history, moderation), \
                presence and per-user rate limits in Redis, so any number of replicas serve \
                together; table channels' members come from the tables' events",
        calls: &["auth"],
        reads: &["tables"],
        redis: Some("presence and the per-user rate limit, shared by every replica"),
        ..Deployment::PLAIN
    };
    type Settings = ChatSettings;
    type Parts = Parts;
    type Handles = ();

    async fn parts(config: &Config<ChatSettings>, storage: Storage) -> Result<Parts, StartError> {
        Parts::over(config, storage).await
    }

    /// Starts the service's background tasks on `shutdown` (key refresh, the relay, the
    /// membership and account-deletion consumers, the scrubber, the fan-out) and returns its
    /// gRPC routes, to serve alone
    /// ([`Application::assemble`]) or beside other services on one server (the all-in-one
    /// process).
    async fn mount(
        common: &CommonConfig,
        parts: Parts,
        shutdown: &Shutdown,
    ) -> Result<(Mount, ()), StartError> {
        fairdeal_authn::spawn_key_refresh(&parts.authn, shutdown);
        let bus = Bus::start(common, &parts.storage, Self::NAME, shutdown).await?;
        bus.spawn_consumer(
            members::SOURCE,
            members::CONSUMER,
            Arc::new(MembershipProjection),
            shutdown,
        )
        .await?;
        let storage = &parts.storage;
        let scrubber = Scrubber::default();
        scrubber.spawn(storage.db().clone(), shutdown);
        bus.spawn_consumer(
            accounts::SOURCE,
            accounts::CONSUMER,
            Arc::new(AccountErasure::new(scrubber)),
            shutdown,
        )
        .await?;
        let store = chat_store(storage);
        let hub = Hub::default();
        shutdown.spawn(
            "chat-fan-out",
            hub.clone().run(
                storage.events(),
                store.clone(),
                storage.signal().clone(),
                shutdown.token(),
            ),
        );
        let chat = Chat::new(ChatDeps {
            store,
            events: storage.events(),
            hub,
            presence: parts.presence,
            quota: parts.quota,
            clock: parts.clock,
            filter: parts.filter,
            limits: parts.limits,
            shutdown: shutdown.clone(),
        });
        let routes = Mount::new()
            .add_service(
                AuthLayer::new(parts.authn).wrap(ChatServiceServer::new(ChatApi::new(chat))),
            )
            .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET);
        Ok((routes, ()))
    }

    /// In one process: the auth service at the host's address; presence and the message
    /// quota in memory (no `redis_url`); its consumers tail the shared log.
    fn embed(settings: &mut ChatSettings, host: &Embedded) -> Result<(), StartError> {
        settings.auth.auth_url = Some(host.url.clone());
        Ok(())
    }
}
