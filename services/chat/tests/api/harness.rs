//! The chat service on port 0 over a fresh backend: temporary SQLite (the embedded default:
//! in-process bus, memory presence and limits) or a unique PostgreSQL database with NATS
//! JetStream and Redis. Table membership comes from tables events appended to a tables
//! event log exactly as the tables service writes them (on PostgreSQL: its own schema, its
//! relay publishing to JetStream, which the chat's consumer reads); account deletions come
//! from auth events appended the same way to an auth log.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_authn::{AccessToken, Claims, KeySet, ManualClock, SigningKey};
use fairdeal_chat::service::ChatLimits;
use fairdeal_chat::startup::{self, Parts};
use fairdeal_eventstore::{ExpectedVersion, NewEvent, StreamId};
use fairdeal_harness::{authenticator, lazy};
use fairdeal_kit::CommonConfig;
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::auth::v1 as auth;
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tables;
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic::{Code, Status, Streaming};
use uuid::Uuid;

pub(crate) use fairdeal_harness::with;

pub(crate) use fairdeal_harness::{Db, TestStore};

pub(crate) const BOTH: [Db; 2] = [Db::Sqlite, Db::Postgres];

/// The chat service, running, and a tables log feeding its membership.
pub(crate) struct TestChat {
    pub(crate) port: u16,
    pub(crate) clock: Arc<ManualClock>,
    signing: SigningKey,
    /// The chat's storage (the test reads its log).
    pub(crate) storage: Storage,
    /// Where tables events are appended.
    tables: Storage,
    /// Where auth events are appended.
    auth: Storage,
    server: Option<(fairdeal_kit::Shutdown, JoinHandle<()>)>,
    /// Stops the tables and auth relays.
    tables_shutdown: fairdeal_kit::Shutdown,
    pub(crate) common: CommonConfig,
    limits: ChatLimits,
    pub(crate) database: Option<fairdeal_testkit::TestDatabase>,
    /// The SQLite file (embedded).
    pub(crate) sqlite_file: Option<PathBuf>,
    _dir: tempfile::TempDir,
}

/// [`fairdeal_harness::common`] and, with NATS, the test Redis server (presence and limits).
pub(crate) fn common(name: &str, database_url: &str, prefix: Option<&str>) -> CommonConfig {
    let mut c = fairdeal_harness::common(name, database_url, prefix);
    if prefix.is_some() {
        c.redis_url = Some(fairdeal_kit::config::SecretUrl::new(
            fairdeal_testkit::redis_url(),
        ));
    }
    c
}

impl TestChat {
    pub(crate) async fn spawn(db: Db) -> TestChat {
        Self::spawn_with(db, ChatLimits::default(), false).await
    }

    /// The chat with `limits` and, if `filter`, the profanity filter.
    pub(crate) async fn spawn_with(db: Db, limits: ChatLimits, filter: bool) -> TestChat {
        let dir = tempfile::tempdir().unwrap();
        let sqlite_file = dir.path().join("fairdeal.db");
        let store = TestStore::new(db, dir.path(), "chat").await;
        let url = store.url("fairdeal.db");
        let TestStore {
            database, prefix, ..
        } = store;
        let common = common("chat", &url, prefix.as_deref());
        let storage = Storage::open(
            &common,
            startup::SCHEMA,
            &[&fairdeal_chat::store::MIGRATIONS],
        )
        .await
        .unwrap();
        let tables_shutdown = fairdeal_kit::Shutdown::new();
        // Another service's log: on SQLite the one database, one log and one append signal
        // every service shares (the embedded consumers tail it); on PostgreSQL its own
        // schema and relay to JetStream.
        let source = async |service: &str| match db {
            Db::Sqlite => storage.clone(),
            Db::Postgres => {
                let source_common = self::common(service, &url, prefix.as_deref());
                let source = Storage::open(&source_common, service, &[]).await.unwrap();
                Bus::start(&source_common, &source, service, &tables_shutdown)
                    .await
                    .unwrap();
                source
            }
        };
        let tables = source("tables").await;
        let auth = source("auth").await;
        let signing = SigningKey::generate().unwrap();
        let clock = Arc::new(ManualClock::starting_now());
        let mut chat = TestChat {
            port: 0,
            clock,
            signing,
            storage,
            tables,
            auth,
            server: None,
            tables_shutdown,
            common,
            limits,
            database,
            sqlite_file: (db == Db::Sqlite).then_some(sqlite_file),
            _dir: dir,
        };
        chat.start(filter).await;
        chat
    }

    /// Starts (again) a chat server over the same storage.
    pub(crate) async fn start(&mut self, filter: bool) {
        let (presence, quota) = startup::limiters(
            self.common.redis_url.as_ref().map(|u| u.expose_secret()),
            &self.common.subject_prefix,
            self.limits,
        )
        .await
        .unwrap();
        let parts = Parts {
            storage: self.storage.clone(),
            authn: authenticator(KeySet::new([self.signing.public_key()])),
            presence,
            quota,
            clock: self.clock.clone(),
            limits: self.limits,
            filter: filter.then(startup::profanity_filter),
        };
        let app = fairdeal_chat::Application::assemble(&self.common, parts)
            .await
            .unwrap();
        self.port = app.port();
        let shutdown = app.shutdown();
        let handle = tokio::spawn(async move {
            app.run_until_stopped().await.unwrap();
        });
        fairdeal_harness::serving(self.port).await;
        self.server = Some((shutdown, handle));
    }

    /// Stops the server (drains its subscriptions).
    pub(crate) async fn stop(&mut self) {
        if let Some((shutdown, handle)) = self.server.take() {
            shutdown.trigger();
            handle.await.unwrap();
        }
    }

    pub(crate) async fn finish(mut self) {
        self.stop().await;
        self.tables_shutdown.trigger();
        if let Some(database) = self.database.take() {
            database.drop().await.unwrap();
        }
    }

    /// A client on a connection of its own.
    pub(crate) fn client(&self) -> ChatServiceClient<Channel> {
        ChatServiceClient::new(lazy(self.port))
    }

    /// A new player.
    pub(crate) fn player(&self) -> User {
        let id = Uuid::now_v7();
        User {
            id,
            token: fairdeal_harness::player_token(&self.signing, id),
            client: self.client(),
        }
    }

    /// A new player calling through `client` (users may share a connection; the benchmark
    /// puts thousands of subscribers on a few connections).
    #[allow(dead_code)]
    pub(crate) fn player_on(&self, client: &ChatServiceClient<Channel>) -> User {
        let id = Uuid::now_v7();
        User {
            id,
            token: fairdeal_harness::player_token(&self.signing, id),
            client: client.clone(),
        }
    }

    /// A new moderator.
    pub(crate) fn moderator(&self) -> User {
        let id = Uuid::now_v7();
        User {
            id,
            token: self
                .signing
                .sign(&Claims::moderator(id, fairdeal_testkit::now(), 3600))
                .unwrap(),
            client: self.client(),
        }
    }

    /// A service's token (refused by every method).
    pub(crate) fn service(&self) -> User {
        User {
            id: Uuid::nil(),
            token: fairdeal_harness::service_token(&self.signing, "tables"),
            client: self.client(),
        }
    }

    /// Appends `message` to table `table`'s stream as the tables service would.
    pub(crate) async fn table_event<M: prost::Name>(&self, table: Uuid, message: &M) {
        let stream = StreamId::of("table", table).unwrap();
        self.tables
            .events()
            .append(
                &stream,
                ExpectedVersion::Any,
                vec![NewEvent::from_message(message).with_correlation_id(table.to_string())],
            )
            .await
            .unwrap();
    }

    /// Appends `AccountDeleted` for `user` to their account's stream as the auth service
    /// would; answers the event's id.
    pub(crate) async fn delete_account(&self, user: Uuid) -> Uuid {
        let stream = StreamId::of("user", user).unwrap();
        let event = NewEvent::from_message(&auth::AccountDeleted {
            user_id: user.to_string(),
        })
        .with_correlation_id(user.to_string());
        let id = event.event_id;
        self.auth
            .events()
            .append(&stream, ExpectedVersion::Any, vec![event])
            .await
            .unwrap();
        id
    }

    pub(crate) async fn sit(&self, table: Uuid, seat: u32, user: &User) {
        self.table_event(
            table,
            &tables::SeatTaken {
                table_id: table.to_string(),
                seat,
                player_id: user.id.to_string(),
            },
        )
        .await;
    }

    pub(crate) async fn leave(&self, table: Uuid, seat: u32, user: &User) {
        self.table_event(
            table,
            &tables::SeatLeft {
                table_id: table.to_string(),
                seat,
                player_id: user.id.to_string(),
            },
        )
        .await;
    }

    pub(crate) async fn spectate(&self, table: Uuid, user: &User) {
        self.table_event(
            table,
            &tables::SpectatorJoined {
                table_id: table.to_string(),
                user_id: user.id.to_string(),
            },
        )
        .await;
    }

    pub(crate) async fn finish_game(&self, table: Uuid) {
        self.table_event(
            table,
            &tables::GameFinished {
                table_id: table.to_string(),
                ..Default::default()
            },
        )
        .await;
    }

    /// Events stored in the chat's streams `streams` (e.g. `chat-lobby`,
    /// `chatmute-<uuid>`). Read per stream: the log's global reads (`read_all`) lag on
    /// PostgreSQL while any older transaction is open, the streams' versions do not.
    pub(crate) async fn chat_events(&self, streams: &[String]) -> u64 {
        let mut count = 0;
        for stream in streams {
            let stream = StreamId::parse(stream.as_str()).unwrap();
            count += self.storage.events().stream_version(&stream).await.unwrap();
        }
        count
    }
}

/// A caller with its token.
pub(crate) struct User {
    pub(crate) id: Uuid,
    token: AccessToken,
    client: ChatServiceClient<Channel>,
}

/// An open subscription, connected.
pub(crate) struct Subscription {
    pub(crate) stream: Streaming<pb::SubscribeResponse>,
    /// The channel's seq when it connected.
    pub(crate) seq: u64,
}

impl Subscription {
    /// The next item, failing the test after 20 s.
    pub(crate) async fn next(&mut self) -> Result<pb::subscribe_response::Item, Status> {
        let item = tokio::time::timeout(Duration::from_secs(20), self.stream.next())
            .await
            .expect("a subscription item within 20 s")
            .expect("the subscription is open")?;
        Ok(item.item.expect("an item"))
    }

    /// The next message.
    pub(crate) async fn message(&mut self) -> pb::ChatMessage {
        match self.next().await.unwrap() {
            pb::subscribe_response::Item::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }
}

impl User {
    pub(crate) async fn subscribe(&self, channel: &str) -> Result<Subscription, Status> {
        let mut stream = self
            .client
            .clone()
            .subscribe(with(
                &self.token,
                pb::SubscribeRequest {
                    channel: channel.to_owned(),
                },
            ))
            .await?
            .into_inner();
        let first = stream
            .next()
            .await
            .ok_or_else(|| Status::unavailable("stream ended"))??;
        match first.item {
            Some(pb::subscribe_response::Item::Connected(c)) => {
                Ok(Subscription { stream, seq: c.seq })
            }
            other => panic!("expected connected first, got {other:?}"),
        }
    }

    /// Subscribes, waiting until the membership projection lets the user in (it is
    /// eventually consistent): retried while PERMISSION_DENIED, for at most 20 s.
    pub(crate) async fn subscribe_when_member(&self, channel: &str) -> Subscription {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            match self.subscribe(channel).await {
                Ok(s) => return s,
                Err(s) if s.code() == Code::PermissionDenied => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "membership never arrived"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(s) => panic!("subscribe: {s:?}"),
            }
        }
    }

    pub(crate) async fn post(&self, channel: &str, text: &str) -> Result<pb::ChatMessage, Status> {
        self.client
            .clone()
            .post(with(
                &self.token,
                pb::PostRequest {
                    channel: channel.to_owned(),
                    text: text.to_owned(),
                },
            ))
            .await
            .map(|r| r.into_inner().message.unwrap())
    }

    pub(crate) async fn history(
        &self,
        channel: &str,
        before: &str,
        limit: u32,
    ) -> Result<pb::HistoryResponse, Status> {
        self.client
            .clone()
            .history(with(
                &self.token,
                pb::HistoryRequest {
                    channel: channel.to_owned(),
                    before_message_id: before.to_owned(),
                    limit,
                },
            ))
            .await
            .map(|r| r.into_inner())
    }

    pub(crate) async fn remove(&self, channel: &str, message_id: &str) -> Result<(), Status> {
        self.client
            .clone()
            .remove_message(with(
                &self.token,
                pb::RemoveMessageRequest {
                    channel: channel.to_owned(),
                    message_id: message_id.to_owned(),
                    reason: "spam".into(),
                },
            ))
            .await
            .map(|_| ())
    }

    pub(crate) async fn mute(
        &self,
        user: Uuid,
        channel: &str,
        seconds: u32,
    ) -> Result<prost_types::Timestamp, Status> {
        self.client
            .clone()
            .mute(with(
                &self.token,
                pb::MuteRequest {
                    user_id: user.to_string(),
                    channel: channel.to_owned(),
                    duration_seconds: seconds,
                    reason: "flood".into(),
                },
            ))
            .await
            .map(|r| r.into_inner().until.unwrap())
    }

    /// The raw client and token, for hand-made requests.
    pub(crate) fn raw(&self) -> (ChatServiceClient<Channel>, &AccessToken) {
        (self.client.clone(), &self.token)
    }
}
