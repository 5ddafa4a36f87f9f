//! Test harness: both services on port 0 over a fresh backend (a unique PostgreSQL database
//! or temporary SQLite files), signed test tokens, gRPC clients, and the `fairdeal` CLI.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use fairdeal_authn::{AccessToken, Claims, KeySet, SigningKey, attach_bearer};
use fairdeal_commitment::startup::{Backend, authenticator, open_store};
use fairdeal_commitment::vault::KeyRing;
use fairdeal_kit::CommonConfig;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_client::DealingServiceClient;
use sqlx::Connection;
use tonic::Request;
use tonic::transport::Channel;
use uuid::Uuid;

/// Where the services keep their events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    /// A unique PostgreSQL database, dropped at the end.
    Postgres,
    /// Temporary SQLite files (the embedded default).
    Sqlite,
}

pub const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A running pair of services.
pub struct TestApp {
    pub commitment: CommitmentServiceClient<Channel>,
    pub dealing: DealingServiceClient<Channel>,
    pub commitment_backend: Backend,
    pub dealing_backend: Backend,
    signing: SigningKey,
    shutdowns: Vec<fairdeal_kit::Shutdown>,
    database: Option<String>,
    _dir: tempfile::TempDir,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn common(name: &str) -> CommonConfig {
    let mut c = CommonConfig::with_defaults(name).unwrap();
    c.listen_addr = "127.0.0.1:0".parse().unwrap();
    c
}

impl TestApp {
    pub async fn spawn(db: Db) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let (commitment_url, dealing_url, database) = match db {
            Db::Postgres => {
                let name = format!("fairsvc_{}", Uuid::now_v7().simple());
                let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.unwrap();
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .execute(&mut admin)
                    .await
                    .unwrap();
                let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
                (url.clone(), url, Some(name))
            }
            Db::Sqlite => (
                format!("sqlite://{}", dir.path().join("commitment.db").display()),
                format!("sqlite://{}", dir.path().join("dealing.db").display()),
                None,
            ),
        };
        let signing = SigningKey::generate().unwrap();
        let keys = || KeySet::new([signing.public_key()]);
        let commitment_backend = open_store(&commitment_url, "commitment").await.unwrap();
        let dealing_backend = open_store(&dealing_url, "dealing").await.unwrap();

        let commitment_app = fairdeal_commitment::Application::build_with(
            &common("commitment"),
            commitment_backend.clone(),
            KeyRing::generate("test").unwrap(),
            authenticator(keys()),
        )
        .await
        .unwrap();
        let commitment_port = commitment_app.port();
        let dealing_token = signing
            .sign(&Claims::service("dealing", now(), 3600))
            .unwrap();
        let dealing_app = fairdeal_dealing::Application::build_with(
            &common("dealing"),
            dealing_backend.clone(),
            &format!("http://127.0.0.1:{commitment_port}"),
            dealing_token,
            authenticator(keys()),
        )
        .await
        .unwrap();
        let dealing_port = dealing_app.port();
        let shutdowns = vec![commitment_app.shutdown(), dealing_app.shutdown()];
        tokio::spawn(commitment_app.run_until_stopped());
        tokio::spawn(dealing_app.run_until_stopped());
        let channel = |port: u16| {
            Channel::from_shared(format!("http://127.0.0.1:{port}"))
                .unwrap()
                .connect_lazy()
        };
        TestApp {
            commitment: CommitmentServiceClient::new(channel(commitment_port)),
            dealing: DealingServiceClient::new(channel(dealing_port)),
            commitment_backend,
            dealing_backend,
            signing,
            shutdowns,
            database,
            _dir: dir,
        }
    }

    pub fn player_token(&self, user: Uuid) -> AccessToken {
        self.signing.sign(&Claims::player(user, now(), 3600)).unwrap()
    }

    pub fn service_token(&self, name: &str) -> AccessToken {
        self.signing
            .sign(&Claims::service(name, now(), 3600))
            .unwrap()
    }

    /// Stops both services and drops the PostgreSQL database.
    pub async fn stop(self) {
        for s in &self.shutdowns {
            s.trigger();
        }
        if let Some(name) = &self.database {
            self.commitment_backend
                .postgres
                .as_ref()
                .unwrap()
                .close()
                .await;
            self.dealing_backend.postgres.as_ref().unwrap().close().await;
            let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
            )))
            .execute(&mut admin)
            .await
            .unwrap();
        }
    }
}

/// `message` with `token` as its bearer.
pub fn with<T>(token: &AccessToken, message: T) -> Request<T> {
    let mut r = Request::new(message);
    attach_bearer(&mut r, token).unwrap();
    r
}

/// The `fairdeal` CLI binary, built on first use.
pub fn cli() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let bin = dir.join("fairdeal");
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "fairdeal-cli", "--bin", "fairdeal"])
            .status()
            .unwrap();
        assert!(status.success());
    }
    bin
}

/// Runs the CLI and parses each stdout line as JSON.
pub fn cli_json(args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(cli()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "fairdeal {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
