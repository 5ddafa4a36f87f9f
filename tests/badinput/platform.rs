//! The services under attack, wired as in production (tokens from the auth service, keys
//! fetched from it), with a user and two service identities to call them as, and read access
//! to each service's event store.

use std::path::Path;
use std::time::Duration;

use async_nats::jetstream::consumer::pull::OrderedConfig;
use fairdeal_auth::config::AuthSettings;
use fairdeal_auth::startup::Overrides;
use fairdeal_authn::{GrpcTokenIssuer, ServiceTokens, TokenProvider};
use fairdeal_bus::JetStreamConfig;
use fairdeal_bus::jetstream::HEADER_GLOBAL_POSITION;
use fairdeal_chat::ChatSettings;
use fairdeal_commitment::CommitmentSettings;
use fairdeal_db::{DatabaseUrl, Db, Schema};
use fairdeal_dealing::DealingSettings;
use fairdeal_e2e::{settings, strings};
use fairdeal_eventstore::{AnyEventStore, EventStore};
use fairdeal_proto::fairdeal::auth::v1 as apb;
use fairdeal_proto::fairdeal::auth::v1::auth_service_client::AuthServiceClient;
use fairdeal_proto::fairdeal::chat::v1 as hpb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_client::DealingServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use fairdeal_rating_service::RatingSettings;
use fairdeal_tables::TablesSettings;
use futures::StreamExt as _;
use tonic::transport::Channel;
use uuid::Uuid;

const DEALING_SECRET: &str = "dealing-secret-4f1d9c2b7a";
const TABLES_SECRET: &str = "tables-secret-8e3a6b0d5c";
const PASSWORD: &str = "correct horse battery staple 7";
/// The services, by the name of their events stream (`<prefix>.<name>`) and PostgreSQL
/// schema.
// The rating service is attacked too, but its store is not here: it appends only for rated
// games, which the still-flows check does not play (its RPCs are reads).
const SERVICES: [&str; 5] = ["auth", "commitment", "dealing", "tables", "chat"];

/// Where the services keep their data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// SQLite files, in-process bus, in-memory limits.
    Embedded,
    /// PostgreSQL, NATS JetStream and Redis.
    Postgres,
}

/// Three running services and the identities to call them as.
pub(crate) struct Platform {
    /// gRPC service name -> channel to the server that serves it.
    channels: Vec<(&'static str, Channel)>,
    /// (caller, bearer token).
    callers: Vec<(&'static str, String)>,
    /// The attacking user's username.
    attacker: String,
    /// Each service's event store, read-only use.
    stores: Vec<(&'static str, AnyEventStore)>,
    /// Each service's database, to count its committed events.
    dbs: Vec<(&'static str, Db)>,
    /// The NATS subject prefix (PostgreSQL backend).
    prefix: Option<String>,
    shutdowns: Vec<fairdeal_kit::Shutdown>,
    _dir: tempfile::TempDir,
    database: Option<fairdeal_testkit::TestDatabase>,
}

impl Platform {
    pub(crate) async fn spawn(backend: Backend) -> Platform {
        let dir = tempfile::tempdir().unwrap();
        let (database, prefix) = match backend {
            Backend::Embedded => (None, None),
            Backend::Postgres => (
                Some(fairdeal_testkit::TestDatabase::create().await.unwrap()),
                Some(fairdeal_testkit::subject_prefix("badinput")),
            ),
        };
        // Each service's storage flags, and its store's URL.
        let storage = |service: &str| -> (Vec<String>, String) {
            match (&database, &prefix) {
                (Some(db), Some(prefix)) => (
                    strings(&[
                        "--database-url",
                        db.url(),
                        "--nats-url",
                        &fairdeal_testkit::nats_url(),
                        "--subject-prefix",
                        prefix,
                    ]),
                    db.url().to_owned(),
                ),
                _ => {
                    let url = format!("sqlite://{}", dir.path().join(service).display());
                    (strings(&["--database-url", &url]), url)
                }
            }
        };
        let mut shutdowns = Vec::new();

        // Auth. The attacking user is also a chat moderator, so the moderators' methods are
        // attacked past their role check.
        let attacker = format!("attacker{}", &Uuid::now_v7().simple().to_string()[20..]);
        let (mut args, _) = storage("auth.db");
        let mailbox = dir.path().join("mailbox");
        args.extend(strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--mailbox-dir",
            &mailbox.display().to_string(),
            "--service-credentials",
            &format!(
                "{},{}",
                fairdeal_e2e::service_credential("dealing", DEALING_SECRET),
                fairdeal_e2e::service_credential("tables", TABLES_SECRET)
            ),
            "--argon2-memory-kib",
            "64",
            "--argon2-iterations",
            "1",
            "--moderators",
            &attacker,
        ]));
        if backend == Backend::Postgres {
            args.extend(strings(&["--redis-url", &fairdeal_testkit::redis_url()]));
        }
        let auth = fairdeal_auth::startup::build_with(
            settings::<AuthSettings>("auth", &args),
            Overrides {
                handle_signals: false,
                ..Overrides::default()
            },
        )
        .await
        .unwrap();
        let auth_url = format!("http://127.0.0.1:{}", auth.port());
        shutdowns.push(auth.shutdown());
        tokio::spawn(auth.run_until_stopped());

        // Commitment.
        let (mut args, _) = storage("commitment.db");
        args.extend(strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--seed-keys",
            &format!("k1:{}", hex::encode([7u8; 32])),
            "--auth-url",
            &auth_url,
        ]));
        let commitment = fairdeal_commitment::Application::build(settings::<CommitmentSettings>(
            "commitment",
            &args,
        ))
        .await
        .unwrap();
        let commitment_url = format!("http://127.0.0.1:{}", commitment.port());
        shutdowns.push(commitment.shutdown());
        tokio::spawn(commitment.run_until_stopped());

        // Dealing.
        let (mut args, _) = storage("dealing.db");
        args.extend(strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--commitment-url",
            &commitment_url,
            "--auth-url",
            &auth_url,
            "--service-secret",
            DEALING_SECRET,
        ]));
        let dealing =
            fairdeal_dealing::Application::build(settings::<DealingSettings>("dealing", &args))
                .await
                .unwrap();
        let dealing_url = format!("http://127.0.0.1:{}", dealing.port());
        shutdowns.push(dealing.shutdown());
        tokio::spawn(dealing.run_until_stopped());

        // Tables.
        let (mut args, _) = storage("tables.db");
        args.extend(strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--commitment-url",
            &commitment_url,
            "--dealing-url",
            &dealing_url,
            "--auth-url",
            &auth_url,
            "--service-secret",
            TABLES_SECRET,
        ]));
        let tables =
            fairdeal_tables::Application::build(settings::<TablesSettings>("tables", &args))
                .await
                .unwrap();
        let tables_url = format!("http://127.0.0.1:{}", tables.port());
        shutdowns.push(tables.shutdown());
        tokio::spawn(tables.run_until_stopped());

        // Rating (it consumes the tables' events; on SQLite its own file, an empty log).
        let (mut args, _) = storage("rating.db");
        args.extend(strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--auth-url",
            &auth_url,
        ]));
        let rating = fairdeal_rating_service::Application::build(settings::<RatingSettings>(
            "rating", &args,
        ))
        .await
        .unwrap();
        let rating_url = format!("http://127.0.0.1:{}", rating.port());
        shutdowns.push(rating.shutdown());
        tokio::spawn(rating.run_until_stopped());

        // Chat (on SQLite its own file: it consumes no table events here).
        let (mut args, _) = storage("chat.db");
        args.extend(strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--auth-url",
            &auth_url,
        ]));
        if backend == Backend::Postgres {
            args.extend(strings(&["--redis-url", &fairdeal_testkit::redis_url()]));
        }
        let chat = fairdeal_chat::Application::build(settings::<ChatSettings>("chat", &args))
            .await
            .unwrap();
        let chat_url = format!("http://127.0.0.1:{}", chat.port());
        shutdowns.push(chat.shutdown());
        tokio::spawn(chat.run_until_stopped());
        // Ledger: its RPCs are public and read-only. It ingests nothing here (`--sources
        // ledger`, a stream nobody publishes to): its ingest transactions would hold back the
        // PostgreSQL snapshot horizon the other stores' heads are read below, and this test
        // compares heads. Its ingest is tested in tests/ledger.
        let (mut args, _) = storage("ledger.db");
        let signing_key = fairdeal_tlog::NoteSigner::from_seed("ledger.badinput", &[5; 32])
            .unwrap()
            .to_key_string();
        args.extend(strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--signing-key",
            signing_key.as_str(),
            "--sources",
            "ledger",
        ]));
        let ledger = fairdeal_ledger::Application::build(
            settings::<fairdeal_ledger::LedgerSettings>("ledger", &args),
        )
        .await
        .unwrap();
        let ledger_url = format!("http://127.0.0.1:{}", ledger.port());
        shutdowns.push(ledger.shutdown());
        tokio::spawn(ledger.run_until_stopped());

        for url in [
            &auth_url,
            &commitment_url,
            &dealing_url,
            &tables_url,
            &rating_url,
            &chat_url,
            &ledger_url,
        ] {
            fairdeal_testkit::wait_until_serving(url, "").await.unwrap();
        }
        let connect = |url: &str| Channel::from_shared(url.to_owned()).unwrap().connect_lazy();
        let channels = vec![
            ("fairdeal.auth.v1.AuthService", connect(&auth_url)),
            (
                "fairdeal.commitment.v1.CommitmentService",
                connect(&commitment_url),
            ),
            ("fairdeal.dealing.v1.DealingService", connect(&dealing_url)),
            ("fairdeal.tables.v1.TablesService", connect(&tables_url)),
            ("fairdeal.rating.v1.RatingService", connect(&rating_url)),
            ("fairdeal.chat.v1.ChatService", connect(&chat_url)),
            ("fairdeal.ledger.v1.LedgerService", connect(&ledger_url)),
        ];

        let service_token = |name: &'static str, secret: &'static str| {
            let auth_url = auth_url.clone();
            async move {
                let issuer = GrpcTokenIssuer::lazy(&auth_url, name, secret.as_bytes()).unwrap();
                let tokens = ServiceTokens::new(std::sync::Arc::new(issuer));
                tokens.token().await.unwrap().into_string()
            }
        };
        let callers = vec![
            (
                "a user",
                user_token(&auth_url, &mailbox, attacker.clone()).await,
            ),
            ("tables", service_token("tables", TABLES_SECRET).await),
            ("dealing", service_token("dealing", DEALING_SECRET).await),
        ];

        let mut stores = Vec::new();
        let mut dbs = Vec::new();
        for service in SERVICES {
            let (_, url) = storage(&format!("{service}.db"));
            let url: DatabaseUrl = url.parse().unwrap();
            let db = Db::open(&url, &Schema::new(service).unwrap())
                .await
                .unwrap();
            stores.push((service, AnyEventStore::open(&db).await.unwrap()));
            dbs.push((service, db));
        }
        Platform {
            channels,
            callers,
            attacker,
            stores,
            dbs,
            prefix,
            shutdowns,
            _dir: dir,
            database,
        }
    }

    /// The channel to the server of gRPC service `service`, if one runs.
    pub(crate) fn channel(&self, service: &str) -> Option<&Channel> {
        self.channels
            .iter()
            .find(|(name, _)| *name == service)
            .map(|(_, channel)| channel)
    }

    /// (who, bearer token) of each identity requests are sent as.
    pub(crate) fn callers(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.callers
            .iter()
            .map(|(who, token)| (*who, token.as_str()))
    }

    /// Whether the attacking user's account is still there. DeleteAccount is attacked as that
    /// user with its real password; every request confirms another name (the baseline of a
    /// `*username` field is a fresh one), so none may have deleted it, and a deletion would
    /// answer OK (which the refusal checks do not look at).
    pub(crate) async fn attacker_exists(&self) -> bool {
        let (_, db) = self.dbs.iter().find(|(s, _)| *s == "auth").unwrap();
        let count: i64 = match db {
            Db::Postgres { pool, schema } => sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT count(*) FROM \"{}\".auth_users WHERE username = $1",
                schema.as_str()
            )))
            .bind(&self.attacker)
            .fetch_one(pool)
            .await
            .unwrap(),
            Db::Sqlite { pool } => {
                sqlx::query_scalar("SELECT count(*) FROM auth_users WHERE username = $1")
                    .bind(&self.attacker)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
        };
        count == 1
    }

    /// Each store's head position.
    pub(crate) async fn heads(&self) -> Vec<(&'static str, u64)> {
        let mut heads = Vec::new();
        for (service, store) in &self.stores {
            heads.push((*service, store.head_position().await.unwrap()));
        }
        heads
    }

    /// Each store's number of committed events. Unlike the head position (which, on
    /// PostgreSQL, stops below any transaction still open in the database so that readers
    /// never skip a position), a count changes exactly when an event commits: an earlier
    /// call's event that becomes visible later is not blamed on the call in between.
    pub(crate) async fn counts(&self) -> Vec<(&'static str, i64)> {
        let mut counts = Vec::new();
        for (service, db) in &self.dbs {
            let count: i64 = match db {
                Db::Postgres { pool, schema } => sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT count(*) FROM \"{}\".events",
                    schema.as_str()
                )))
                .fetch_one(pool)
                .await
                .unwrap(),
                Db::Sqlite { pool } => sqlx::query_scalar("SELECT count(*) FROM events")
                    .fetch_one(pool)
                    .await
                    .unwrap(),
            };
            counts.push((*service, count));
        }
        counts
    }

    /// A table is committed to, contributed to and dealt from; then, on NATS, every event of
    /// every store reaches its JetStream stream.
    pub(crate) async fn still_flows(&mut self) {
        let before = self.heads().await;
        let bearer = format!(
            "Bearer {}",
            self.callers.iter().find(|(w, _)| *w == "tables").unwrap().1
        );
        let mut commitment = CommitmentServiceClient::new(
            self.channel("fairdeal.commitment.v1.CommitmentService")
                .unwrap()
                .clone(),
        );
        let table_id = Uuid::now_v7().to_string();
        commitment
            .create_table_commitment(as_caller(
                &bearer,
                cpb::CreateTableCommitmentRequest {
                    table_id: table_id.clone(),
                    delayed_source: String::new(),
                    timelock_seconds: 0,
                },
            ))
            .await
            .unwrap();
        commitment
            .contribute_seed(as_caller(
                &bearer,
                cpb::ContributeSeedRequest {
                    table_id: table_id.clone(),
                    seat: 0,
                    player_id: Uuid::now_v7().to_string(),
                    contribution: "north's luck".into(),
                },
            ))
            .await
            .unwrap();
        let mut dealing = DealingServiceClient::new(
            self.channel("fairdeal.dealing.v1.DealingService")
                .unwrap()
                .clone(),
        );
        dealing
            .deal_hand(as_caller(
                &bearer,
                dpb::DealHandRequest {
                    table_id,
                    deck: "bridge".into(),
                    hand: 0,
                },
            ))
            .await
            .unwrap();
        let player = format!(
            "Bearer {}",
            self.callers.iter().find(|(w, _)| *w == "a user").unwrap().1
        );
        let mut tables = TablesServiceClient::new(
            self.channel("fairdeal.tables.v1.TablesService")
                .unwrap()
                .clone(),
        );
        tables
            .create_table(as_caller(
                &player,
                tpb::CreateTableRequest {
                    options: None,
                    bot_seats: vec![1, 2, 3],
                    move_seconds: 0,
                    timelock_seconds: 0,
                },
            ))
            .await
            .unwrap();
        // A chat message: connected to the lobby, then posted.
        let mut chat = ChatServiceClient::new(
            self.channel("fairdeal.chat.v1.ChatService")
                .unwrap()
                .clone(),
        );
        let mut connection = chat
            .subscribe(as_caller(
                &player,
                hpb::SubscribeRequest {
                    channel: "lobby".into(),
                },
            ))
            .await
            .unwrap()
            .into_inner();
        connection.next().await.unwrap().unwrap();
        chat.post(as_caller(
            &player,
            hpb::PostRequest {
                channel: "lobby".into(),
                text: "still here".into(),
            },
        ))
        .await
        .unwrap();
        let after = self.heads().await;
        for ((service, b), (_, a)) in before.iter().zip(&after) {
            if *service != "auth" {
                assert!(a > b, "{service} appended nothing: {b} -> {a}");
            }
        }
        if let Some(prefix) = &self.prefix {
            let client = async_nats::connect(fairdeal_testkit::nats_url())
                .await
                .unwrap();
            let jetstream = async_nats::jetstream::new(client);
            for (service, head) in after {
                let streams = JetStreamConfig::new(format!("{prefix}.{service}")).unwrap();
                let stream = jetstream.get_stream(streams.stream_name()).await.unwrap();
                let mut messages = stream
                    .create_consumer(OrderedConfig::default())
                    .await
                    .unwrap()
                    .messages()
                    .await
                    .unwrap();
                // Every relayed event, in order, until the store's head arrives (positions
                // are not counts: they may skip).
                let relayed = tokio::time::timeout(Duration::from_secs(15), async {
                    while let Some(message) = messages.next().await {
                        let position: u64 = message
                            .unwrap()
                            .headers
                            .as_ref()
                            .and_then(|h| h.get(HEADER_GLOBAL_POSITION))
                            .and_then(|v| v.as_str().parse().ok())
                            .unwrap();
                        if position == head {
                            return;
                        }
                    }
                })
                .await;
                assert!(
                    relayed.is_ok(),
                    "{service}: the event at position {head} never reached JetStream"
                );
            }
        }
    }

    pub(crate) async fn stop(self) {
        for shutdown in &self.shutdowns {
            shutdown.trigger();
        }
        for shutdown in &self.shutdowns {
            shutdown.wait_for_tasks().await;
        }
        drop(self.stores);
        for (_, db) in &self.dbs {
            db.close().await;
        }
        if let Some(database) = self.database {
            database.drop().await.unwrap();
        }
    }
}

/// Registers, confirms (with the code from the mailbox directory) and logs in a user;
/// returns the access token.
async fn user_token(auth_url: &str, mailbox: &Path, username: String) -> String {
    let mut auth = AuthServiceClient::connect(auth_url.to_owned())
        .await
        .unwrap();
    let email = format!("{username}@example.com");
    auth.register(apb::RegisterRequest {
        username: username.clone(),
        email: email.clone(),
        password: PASSWORD.into(),
    })
    .await
    .unwrap();
    // The mail dispatcher writes the confirmation in the background and signals nothing
    // outside the process: poll the directory, bounded.
    let mut code = None;
    for _ in 0..1000 {
        code = fairdeal_testkit::code_in_mail(mailbox, &email, "Confirm");
        if code.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let token = code.expect("a confirmation mail within 20 s");
    auth.confirm_email(apb::ConfirmEmailRequest { token })
        .await
        .unwrap();
    let tokens = auth
        .login(apb::LoginRequest {
            username,
            password: PASSWORD.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap();
    tokens.access_token
}

/// `message` with `authorization: <bearer>`.
fn as_caller<T>(bearer: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", bearer.parse().unwrap());
    request
}
