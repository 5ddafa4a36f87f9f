//! `spawn_app` and what tests need around it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_auth::config::AuthSettings;
use fairdeal_auth::startup::Overrides;
use fairdeal_authn::ManualClock;
use fairdeal_kit::config::{Config, Loaded};
use fairdeal_proto::fairdeal::auth::v1 as pb;
use pb::auth_service_client::AuthServiceClient;
use tonic::transport::Channel;

pub(crate) const PASSWORD: &str = "correct horse battery staple";

/// Which backends a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// SQLite + in-memory limits + mailbox directory.
    Embedded,
    /// PostgreSQL + Redis.
    Real,
}

/// Databases and key namespaces a test created; dropped when the guard is (even on panic).
pub(crate) struct Resources {
    pub(crate) database_url: String,
    pub(crate) redis_url: Option<String>,
    /// The service's subject prefix (`t.auth.<uuid>`); its Redis namespace derives from it.
    pub(crate) prefix: String,
    pub(crate) mailbox: tempfile::TempDir,
    pg_database: Option<fairdeal_testkit::TestDatabase>,
}

impl Resources {
    pub(crate) async fn new(backend: Backend) -> Self {
        let prefix = fairdeal_testkit::subject_prefix("auth");
        let mailbox = tempfile::tempdir().unwrap();
        match backend {
            Backend::Embedded => Self {
                database_url: format!("sqlite://{}/auth.db", mailbox.path().display()),
                redis_url: None,
                prefix,
                mailbox,
                pg_database: None,
            },
            Backend::Real => {
                let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
                Self {
                    database_url: database.url().to_owned(),
                    redis_url: Some(fairdeal_testkit::redis_url()),
                    prefix,
                    mailbox,
                    pg_database: Some(database),
                }
            }
        }
    }

    pub(crate) fn mailbox_dir(&self) -> PathBuf {
        self.mailbox.path().join("mail")
    }
}

impl Drop for Resources {
    fn drop(&mut self) {
        let database = self.pg_database.take();
        let namespace = format!("{}:auth", self.prefix);
        let redis = self.redis_url.clone();
        // A fresh thread and runtime: Drop may run inside a runtime, which cannot block.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                if let Some(database) = database {
                    let _ = database.drop().await;
                }
                if let Some(url) = redis {
                    let _ = fairdeal_auth::limits::redis::delete_namespace(&url, &namespace).await;
                    if let Ok(client) = async_nats::connect(fairdeal_testkit::nats_url()).await {
                        let js = async_nats::jetstream::new(client);
                        let streams =
                            fairdeal_bus::JetStreamConfig::new(namespace.replace(':', "."))
                                .unwrap();
                        let _ = js.delete_stream(streams.stream_name()).await;
                        let _ = js.delete_stream(streams.dead_letter_stream_name()).await;
                    }
                }
            });
        })
        .join();
    }
}

/// A running service.
pub(crate) struct TestApp {
    pub(crate) client: AuthServiceClient<Channel>,
    pub(crate) endpoint: String,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) app_accounts: Arc<fairdeal_auth::accounts::Accounts>,
    pub(crate) dispatcher: fairdeal_auth::mail::Dispatcher,
    pub(crate) shutdown: fairdeal_kit::Shutdown,
    pub(crate) mailbox: PathBuf,
}

pub(crate) fn config(res: &Resources, extra: &[&str]) -> Config<AuthSettings> {
    let mailbox = res.mailbox_dir();
    let mut args: Vec<String> = [
        "auth",
        "--listen-addr",
        "127.0.0.1:0",
        "--database-url",
        &res.database_url,
        "--subject-prefix",
        &res.prefix,
        "--mailbox-dir",
        mailbox.to_str().unwrap(),
        // Cheap hashing: these tests check behaviour; the benchmark measures OWASP costs.
        "--argon2-memory-kib",
        "64",
        "--argon2-iterations",
        "1",
        "--log-format",
        "pretty",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if let Some(redis) = &res.redis_url {
        args.push("--redis-url".into());
        args.push(redis.clone());
        args.push("--nats-url".into());
        args.push(fairdeal_testkit::nats_url());
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    match Config::<AuthSettings>::load_from("auth", args, []).unwrap() {
        Loaded::Run(c) => c,
        Loaded::DumpConfig(_) => unreachable!(),
    }
}

pub(crate) async fn spawn_with(
    res: &Resources,
    clock: Arc<ManualClock>,
    extra: &[&str],
) -> TestApp {
    let app = fairdeal_auth::startup::build_with(
        config(res, extra),
        Overrides {
            clock: clock.clone(),
            handle_signals: false,
        },
    )
    .await
    .unwrap();
    let endpoint = format!("http://{}", app.local_addr());
    let app_accounts = app.handles().accounts.clone();
    let dispatcher = app.handles().dispatcher.clone();
    let shutdown = app.shutdown();
    tokio::spawn(app.run_until_stopped());
    fairdeal_testkit::wait_until_serving(&endpoint, "")
        .await
        .unwrap();
    let client = AuthServiceClient::connect(endpoint.clone()).await.unwrap();
    TestApp {
        client,
        endpoint,
        clock,
        app_accounts,
        dispatcher,
        shutdown,
        mailbox: res.mailbox_dir(),
    }
}

pub(crate) async fn spawn_app(res: &Resources) -> TestApp {
    spawn_with(res, Arc::new(ManualClock::starting_now()), &[]).await
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}

pub(crate) fn unique_name() -> String {
    format!("p{}", &uuid::Uuid::now_v7().simple().to_string()[20..])
}

impl TestApp {
    pub(crate) fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    pub(crate) async fn register(
        &mut self,
        username: &str,
        email: &str,
    ) -> Result<String, tonic::Status> {
        let r = pb::RegisterRequest {
            username: username.into(),
            email: email.into(),
            password: PASSWORD.into(),
        };
        self.client
            .register(r)
            .await
            .map(|r| r.into_inner().user_id)
    }

    /// Finishes the mail requests accepted so far (the background worker) and delivers every
    /// queued mail to the mailbox directory.
    pub(crate) async fn deliver_mail(&self) {
        self.app_accounts.mail_requests.idle().await;
        // The background dispatcher may have claimed the mail already and be writing it;
        // delivering ourselves covers the other case. Bounded wait for the file.
        for _ in 0..500 {
            self.dispatcher.send_due().await.unwrap();
            if self.app_accounts.store.unsent_mail_count().await.unwrap() == 0 {
                break;
            }
            // The dispatcher signals nothing when it has written a mail: poll, bounded.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The (recipient, subject) of every mail in the mailbox directory, after delivering.
    pub(crate) async fn mails(&self) -> Vec<(String, String)> {
        self.deliver_mail().await;
        let Ok(entries) = std::fs::read_dir(&self.mailbox) else {
            return Vec::new();
        };
        let mut mails = Vec::new();
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "eml") {
                let text = std::fs::read_to_string(&path).unwrap();
                let header = |name: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                };
                mails.push((header("To:"), header("Subject:")));
            }
        }
        mails
    }

    /// Delivers queued mail now and returns the code of the newest mail to `email` whose
    /// subject contains `subject_word`.
    pub(crate) async fn code_from_mail(&self, email: &str, subject_word: &str) -> String {
        self.deliver_mail().await;
        fairdeal_testkit::code_in_mail(&self.mailbox, email, subject_word).expect("a mail")
    }

    /// Registers and confirms an account; returns (user id, username, email).
    pub(crate) async fn confirmed_user(&mut self) -> (String, String, String) {
        let username = unique_name();
        let email = format!("{username}@example.com");
        let user_id = self.register(&username, &email).await.unwrap();
        let code = self.code_from_mail(&email, "Confirm").await;
        self.client
            .confirm_email(pb::ConfirmEmailRequest { token: code })
            .await
            .unwrap();
        (user_id, username, email)
    }

    pub(crate) async fn login(
        &mut self,
        username: &str,
        password: &str,
    ) -> Result<pb::TokenPair, tonic::Status> {
        let r = pb::LoginRequest {
            username: username.into(),
            password: password.into(),
        };
        self.client
            .login(r)
            .await
            .map(|r| r.into_inner().tokens.unwrap())
    }

    pub(crate) async fn refresh(&mut self, token: &str) -> Result<pb::TokenPair, tonic::Status> {
        self.client
            .refresh(pb::RefreshRequest {
                refresh_token: token.into(),
            })
            .await
            .map(|r| r.into_inner().tokens.unwrap())
    }
}

/// Runs `$body` (an async fn taking a `Backend`) on both backends, as two tests.
#[macro_export]
macro_rules! on_both_backends {
    ($name:ident, $body:path) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                $body($crate::helpers::Backend::Embedded).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_redis() {
                $body($crate::helpers::Backend::Real).await;
            }
        }
    };
}
