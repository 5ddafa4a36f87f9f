//! The auth, commitment and dealing services wired as in production: nobody holds a key or
//! a token from configuration. The commitment and dealing services verify callers with the
//! public keys the auth service publishes; the dealing service obtains its own token from
//! the auth service with its secret and renews it before it expires. Embedded storage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use fairdeal_auth::config::AuthSettings;
use fairdeal_auth::startup::Overrides;
use fairdeal_authn::{
    AccessToken, GrpcTokenIssuer, IssuedToken, ManualClock, ServiceTokens, TokenIssuer,
    TokenProvider, TokenUnavailable,
};
use fairdeal_commitment::CommitmentSettings;
use fairdeal_dealing::DealingSettings;
use fairdeal_e2e::{settings, strings};
use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_harness::with;
use fairdeal_kit::config::Config;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::commitment::v1::commitment_service_client::CommitmentServiceClient;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::dealing::v1::dealing_service_client::DealingServiceClient;
use tonic::Code;
use tonic::transport::Channel;
use uuid::Uuid;

const DEALING_SECRET: &str = "dealing-secret-4f1d9c2b7a";
const TABLES_SECRET: &str = "tables-secret-8e3a6b0d5c";
/// Service tokens live 10 minutes here. The dealing service's token source runs on a manual
/// clock in the renewal test, which moves it past three quarters of that life (450 s) at
/// once; meanwhile, in real time, every token stays valid for the services that verify it.
const SERVICE_TOKEN_TTL: &str = "10m";
/// How far the renewal test moves the token source's clock: past 3/4 of [`SERVICE_TOKEN_TTL`]
/// (whatever the auth service's whole-second rounding), short of its expiry.
const PAST_RENEWAL: Duration = Duration::from_secs(500);

/// Counts the tokens the auth service issued to the dealing service.
#[derive(Debug)]
struct Counting {
    inner: GrpcTokenIssuer,
    issued: Arc<AtomicU64>,
}

#[async_trait]
impl TokenIssuer for Counting {
    async fn issue(&self, now: SystemTime) -> Result<IssuedToken, TokenUnavailable> {
        let token = self.inner.issue(now).await?;
        self.issued.fetch_add(1, Ordering::SeqCst);
        Ok(token)
    }
}

struct Platform {
    auth_url: String,
    commitment_url: String,
    commitment: CommitmentServiceClient<Channel>,
    shutdowns: Vec<fairdeal_kit::Shutdown>,
    dir: tempfile::TempDir,
}

impl Platform {
    /// The auth service and the commitment service, each built from its settings as its
    /// binary would be.
    async fn spawn() -> Platform {
        let dir = tempfile::tempdir().unwrap();
        let path = |f: &str| dir.path().join(f).display().to_string();
        let credentials = format!(
            "{},{}",
            fairdeal_e2e::service_credential("dealing", DEALING_SECRET),
            fairdeal_e2e::service_credential("tables", TABLES_SECRET)
        );
        let auth_config: Config<AuthSettings> = settings(
            "auth",
            &strings(&[
                "--listen-addr",
                "127.0.0.1:0",
                "--database-url",
                &format!("sqlite://{}", path("auth.db")),
                "--mailbox-dir",
                &path("mailbox"),
                "--service-credentials",
                &credentials,
                "--service-token-ttl",
                SERVICE_TOKEN_TTL,
                "--argon2-memory-kib",
                "64",
                "--argon2-iterations",
                "1",
            ]),
        );
        let auth = fairdeal_auth::startup::build_with(
            auth_config,
            Overrides {
                handle_signals: false,
                ..Overrides::default()
            },
        )
        .await
        .unwrap();
        let auth_url = format!("http://127.0.0.1:{}", auth.port());
        let mut shutdowns = vec![auth.shutdown()];
        tokio::spawn(auth.run_until_stopped());

        let seed_key = hex::encode([7u8; 32]);
        let commitment_config: Config<CommitmentSettings> = settings(
            "commitment",
            &strings(&[
                "--listen-addr",
                "127.0.0.1:0",
                "--database-url",
                &format!("sqlite://{}", path("commitment.db")),
                "--seed-keys",
                &format!("k1:{seed_key}"),
                "--auth-url",
                &auth_url,
            ]),
        );
        let commitment = fairdeal_commitment::Application::build(commitment_config)
            .await
            .unwrap();
        let commitment_url = format!("http://127.0.0.1:{}", commitment.port());
        shutdowns.push(commitment.shutdown());
        tokio::spawn(commitment.run_until_stopped());
        for url in [&auth_url, &commitment_url] {
            fairdeal_testkit::wait_until_serving(url, "").await.unwrap();
        }
        Platform {
            commitment: CommitmentServiceClient::connect(commitment_url.clone())
                .await
                .unwrap(),
            auth_url,
            commitment_url,
            shutdowns,
            dir,
        }
    }

    fn dealing_args(&self, secret: &str) -> Vec<String> {
        strings(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--database-url",
            &format!("sqlite://{}", self.dir.path().join("dealing.db").display()),
            // As on Kubernetes (headless Services): names resolved and balanced over.
            "--commitment-url",
            &self.commitment_url.replace("http://", "dns:///"),
            "--auth-url",
            &self.auth_url.replace("http://", "dns:///"),
            "--service-secret",
            secret,
        ])
    }

    /// A token of the tables service, from the auth service.
    async fn tables_token(&self) -> AccessToken {
        let issuer =
            GrpcTokenIssuer::lazy(&self.auth_url, "tables", TABLES_SECRET.as_bytes()).unwrap();
        ServiceTokens::new(Arc::new(issuer)).token().await.unwrap()
    }

    /// A table with one contribution, ready to deal.
    async fn table(&mut self, tables: &AccessToken) -> Uuid {
        let table_id = Uuid::now_v7();
        self.commitment
            .create_table_commitment(with(
                tables,
                cpb::CreateTableCommitmentRequest {
                    table_id: table_id.to_string(),
                    delayed_source: String::new(),
                    timelock_seconds: 0,
                },
            ))
            .await
            .unwrap();
        self.contribute(tables, table_id, 0, "north's luck")
            .await
            .unwrap();
        table_id
    }

    /// A new player's seed for `seat` of the table.
    async fn contribute(
        &mut self,
        tables: &AccessToken,
        table_id: Uuid,
        seat: u32,
        contribution: &str,
    ) -> Result<(), tonic::Status> {
        self.commitment
            .contribute_seed(with(
                tables,
                cpb::ContributeSeedRequest {
                    table_id: table_id.to_string(),
                    seat,
                    player_id: Uuid::now_v7().to_string(),
                    contribution: contribution.into(),
                },
            ))
            .await
            .map(|_| ())
    }

    fn stop(self) {
        for s in &self.shutdowns {
            s.trigger();
        }
    }
}

fn deal(table_id: Uuid, hand: u64) -> dpb::DealHandRequest {
    dpb::DealHandRequest {
        table_id: table_id.to_string(),
        deck: "bridge".into(),
        hand,
    }
}

#[tokio::test]
async fn dealing_gets_and_renews_its_token_from_the_auth_service() {
    let mut platform = Platform::spawn().await;
    let tables = platform.tables_token().await;
    let table_id = platform.table(&tables).await;

    // The dealing service as configured in production, except that its token source is
    // wrapped to count what the auth service issues, and runs on a clock the test moves.
    let config: Config<DealingSettings> =
        settings("dealing", &platform.dealing_args(DEALING_SECRET));
    let issued = Arc::new(AtomicU64::new(0));
    let issuer = Counting {
        inner: GrpcTokenIssuer::lazy(
            config.service.auth.auth_url.as_deref().unwrap(),
            "dealing",
            DEALING_SECRET.as_bytes(),
        )
        .unwrap(),
        issued: issued.clone(),
    };
    let clock = Arc::new(ManualClock::starting_now());
    let storage = fairdeal_kit::host::open_storage::<fairdeal_dealing::DealingService>(&config)
        .await
        .unwrap();
    let mut parts = fairdeal_dealing::startup::Parts::over(&config, storage).unwrap();
    parts.tokens = Arc::new(ServiceTokens::with_clock(Arc::new(issuer), clock.clone()));
    let dealing_app = fairdeal_dealing::Application::assemble(&config.common, parts)
        .await
        .unwrap();
    let dealing_url = format!("http://127.0.0.1:{}", dealing_app.port());
    platform.shutdowns.push(dealing_app.shutdown());
    tokio::spawn(dealing_app.run_until_stopped());
    let mut dealing = DealingServiceClient::connect(dealing_url).await.unwrap();

    let mut numbers = Vec::new();
    for hand in 0..2 {
        let r = dealing
            .deal_hand(with(&tables, deal(table_id, hand)))
            .await
            .unwrap()
            .into_inner();
        numbers.push(r.deal.unwrap().distribution_number);
    }
    assert_eq!(
        issued.load(Ordering::SeqCst),
        1,
        "one token serves many calls"
    );

    // Past three quarters of the token's life the next call renews it first.
    clock.advance(PAST_RENEWAL);
    let r = dealing
        .deal_hand(with(&tables, deal(table_id, 2)))
        .await
        .unwrap()
        .into_inner();
    numbers.push(r.deal.unwrap().distribution_number);
    assert_eq!(
        issued.load(Ordering::SeqCst),
        2,
        "renewed past three quarters of its life"
    );

    // The tables service's token was verified with keys fetched from the auth service; so
    // is the player's refusal: a token the auth service never signed is unauthenticated.
    let forged = AccessToken::new("eyJhbGciOiJFZERTQSJ9.e30.AAAA".into());
    let refused = dealing
        .deal_hand(with(&forged, deal(table_id, 3)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");

    // Reveal, then every dealt hand re-derives offline from the revealed seeds.
    let table = platform
        .commitment
        .reveal_table_seed(with(
            &tables,
            cpb::RevealTableSeedRequest {
                table_id: table_id.to_string(),
                operator: String::new(),
                justification: String::new(),
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap();
    for (hand, number) in numbers.iter().enumerate() {
        let again = Deal::from_seeds(
            Deck::Bridge,
            &table.server_seed,
            &table.client_seed,
            &hand.to_string(),
        );
        assert_eq!(&again.distribution_number().to_string(), number);
    }
    platform.stop();
}

#[tokio::test]
async fn a_wrong_service_secret_is_unavailable_and_deals_nothing() {
    let mut platform = Platform::spawn().await;
    let tables = platform.tables_token().await;
    let table_id = platform.table(&tables).await;
    let wrong = "not-the-dealing-secret";
    let config: Config<DealingSettings> = settings("dealing", &platform.dealing_args(wrong));
    let dealing_app = fairdeal_dealing::Application::build(config).await.unwrap();
    let dealing_url = format!("http://127.0.0.1:{}", dealing_app.port());
    platform.shutdowns.push(dealing_app.shutdown());
    tokio::spawn(dealing_app.run_until_stopped());
    let mut dealing = DealingServiceClient::connect(dealing_url).await.unwrap();

    let error = dealing
        .deal_hand(with(&tables, deal(table_id, 0)))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Code::Unavailable, "{error:?}");
    assert!(error.message().contains("auth"), "{error:?}");
    assert!(
        !error.message().contains(wrong),
        "the secret leaked: {error:?}"
    );
    // Nothing was dealt: the table's client seed is still open to contributions.
    platform
        .contribute(&tables, table_id, 1, "east's luck")
        .await
        .unwrap();
    platform.stop();
}

#[test]
fn dealing_settings_name_the_missing_or_conflicting_field() {
    let error = |args: &[&str]| {
        let mut all = vec!["dealing".to_owned()];
        all.extend(strings(args));
        match Config::<DealingSettings>::load_from("dealing", all, []) {
            Ok(_) => panic!("accepted {args:?}"),
            Err(e) => e.to_string(),
        }
    };
    let e = error(&[]);
    assert!(e.contains("service_secret"), "{e}");
    let e = error(&["--service-secret", "s3cret-value"]);
    assert!(e.contains("auth_url") && !e.contains("s3cret-value"), "{e}");
    let e = error(&["--service-secret", "x", "--service-token", "y"]);
    assert!(e.contains("not both"), "{e}");
    let e = error(&[
        "--service-secret",
        "x",
        "--auth-url",
        "http://127.0.0.1:1",
        "--auth-public-keys",
        "k1:3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    ]);
    assert!(e.contains("not both"), "{e}");
}
