//! A player who goes through the platform's public gRPC API as a person's client would:
//! registers, confirms the address with the code from the mail, logs in, creates a table
//! with three bot seats, sits at the fourth and plays it (always the first legal move) until
//! the match is over, then checks that the table's stream holds `GameFinished`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use fairdeal_proto::fairdeal::auth::v1 as apb;
use fairdeal_proto::fairdeal::auth::v1::auth_service_client::AuthServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use tonic::Request;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Channel, Endpoint};

/// How long the confirmation mail may take to arrive (outbox, dispatcher, SMTP).
const MAIL_PATIENCE: Duration = Duration::from_secs(60);
/// How long one whole match may take.
const MATCH_PATIENCE: Duration = Duration::from_secs(600);
/// What the played table ended with.
#[derive(Debug)]
pub(crate) struct Played {
    /// The table's id.
    pub(crate) table_id: String,
    /// Moves the player made.
    pub(crate) moves: usize,
    /// Final scores, team 0 first.
    pub(crate) scores: Vec<i32>,
    /// The winning team.
    pub(crate) winner: Option<u32>,
    /// The table stream's last version.
    pub(crate) version: u64,
    /// The revealed server seed is there.
    pub(crate) seed_revealed: bool,
}

pub(crate) fn channel(url: &str) -> anyhow::Result<Channel> {
    Ok(Endpoint::from_shared(url.to_owned())
        .with_context(|| format!("bad URL {url}"))?
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .connect_lazy())
}

/// The answer to `call`, sent again with the same message while it is refused
/// UNAVAILABLE, as a careful client does (`fairdeal_client::while_unavailable`: a move
/// keeps its command id, so it is applied once).
async fn retrying<T, M, F, Fut>(
    what: &str,
    message: &M,
    token: &str,
    mut call: F,
) -> anyhow::Result<T>
where
    M: Clone,
    F: FnMut(Request<M>) -> Fut,
    Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let bearer = bearer(token)?;
    fairdeal_client::while_unavailable(|| call(with_bearer(message.clone(), &bearer)))
        .await
        .map(tonic::Response::into_inner)
        .map_err(|status| anyhow::Error::new(status).context(what.to_owned()))
}

/// `token` as an authorization header's value.
fn bearer(token: &str) -> anyhow::Result<MetadataValue<Ascii>> {
    Ok(format!("Bearer {token}").parse()?)
}

/// `message` carrying `bearer`.
fn with_bearer<T>(message: T, bearer: &MetadataValue<Ascii>) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", bearer.clone());
    request
}

pub(crate) fn authorized<T>(message: T, token: &str) -> anyhow::Result<Request<T>> {
    Ok(with_bearer(message, &bearer(token)?))
}

/// Registers, confirms through `mail_dir` and logs in; returns the access token.
pub(crate) async fn player_token(auth_url: &str, mail_dir: &Path) -> anyhow::Result<String> {
    let mut auth = AuthServiceClient::new(channel(auth_url)?);
    let name = format!("deploy{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let email = format!("{name}@example.com");
    let password = format!("{name} plays a deploy check table 7!");
    auth.register(apb::RegisterRequest {
        username: name.clone(),
        email: email.clone(),
        password: password.clone().into_bytes(),
    })
    .await
    .context("Register")?;
    let waited = Instant::now();
    let code = loop {
        if let Some(code) = fairdeal_testkit::code_in_mail(mail_dir, &email, "onfirm") {
            break code;
        }
        if waited.elapsed() > MAIL_PATIENCE {
            bail!(
                "no confirmation mail for {email} in {} after {}s",
                mail_dir.display(),
                MAIL_PATIENCE.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!(
        "player {name}: registered, confirmation mail caught after {} ms",
        waited.elapsed().as_millis()
    );
    auth.confirm_email(apb::ConfirmEmailRequest { token: code })
        .await
        .context("ConfirmEmail")?;
    let tokens = auth
        .login(apb::LoginRequest {
            username: name.clone(),
            password: password.into_bytes(),
        })
        .await
        .context("Login")?
        .into_inner()
        .tokens
        .ok_or_else(|| anyhow!("Login returned no tokens"))?;
    println!("player {name}: confirmed and logged in");
    Ok(tokens.access_token)
}

/// The first legal move of the view, as an action.
fn first_legal(view: &tpb::TableView) -> Option<tpb::act_request::Action> {
    fairdeal_client::action_of(view.game.as_ref()?.legal.first()?)
}

/// Creates a table with bots in seats 1-3, sits at seat 0 and plays until the match ends.
pub(crate) async fn play_bot_table(tables_url: &str, token: &str) -> anyhow::Result<Played> {
    let mut tables = TablesServiceClient::new(channel(tables_url)?);
    let create = tpb::CreateTableRequest {
        options: None,
        bot_seats: vec![1, 2, 3],
        // Ample time per move: the bots must not play our seat.
        move_seconds: 600,
        timelock_seconds: 0,
    };
    let created = retrying("CreateTable", &create, token, |r| {
        let mut tables = tables.clone();
        async move { tables.create_table(r).await }
    })
    .await?;
    let table_id = created.table_id;
    let sit = tpb::SitRequest {
        table_id: table_id.clone(),
        seat: 0,
    };
    retrying("Sit", &sit, token, |r| {
        let mut tables = tables.clone();
        async move { tables.sit(r).await }
    })
    .await?;
    println!(
        "table {table_id}: created (commitment {}), seat 0 taken, bots in 1-3",
        created.short_code
    );
    let started = Instant::now();
    let mut moves = 0usize;
    let mut watch = tables
        .watch(authorized(
            tpb::WatchRequest {
                table_id: table_id.clone(),
                after_version: 0,
                turn_views: false,
            },
            token,
        )?)
        .await
        .context("Watch")?
        .into_inner();
    let mut events: BTreeMap<u64, tpb::TableEvent> = BTreeMap::new();
    let view = loop {
        if started.elapsed() > MATCH_PATIENCE {
            bail!("the match did not end within {}s", MATCH_PATIENCE.as_secs());
        }
        let view = tables
            .get_table(authorized(
                tpb::GetTableRequest {
                    table_id: table_id.clone(),
                },
                token,
            )?)
            .await
            .context("GetTable")?
            .into_inner()
            .table
            .ok_or_else(|| anyhow!("GetTable returned no table"))?;
        if view.status == tpb::TableStatus::Finished as i32 {
            break view;
        }
        let my_turn = view
            .game
            .as_ref()
            .is_some_and(|g| g.turn == Some(0) && g.my_seat == Some(0));
        if let (true, Some(action)) = (my_turn, first_legal(&view)) {
            let act = tpb::ActRequest {
                table_id: table_id.clone(),
                expected_version: view.version,
                command_id: uuid::Uuid::now_v7().to_string(),
                action: Some(action),
            };
            retrying("Act", &act, token, |r| {
                let mut tables = tables.clone();
                async move { tables.act(r).await }
            })
            .await?;
            moves += 1;
            continue;
        }
        // Not our turn (or nothing to do yet): wait for the table's next event.
        loop {
            let message = watch
                .message()
                .await
                .context("Watch stream")?
                .ok_or_else(|| anyhow!("the Watch stream ended"))?;
            let version = message.version;
            if let Some(event) = message.event {
                events.insert(version, event);
            }
            if version > view.version {
                break;
            }
        }
    };
    // The rest of the stream, up to the final version.
    while events.last_key_value().map_or(0, |(v, _)| *v) < view.version {
        let Some(message) = watch.message().await.context("Watch stream")? else {
            break;
        };
        if let Some(event) = message.event {
            events.insert(message.version, event);
        }
    }
    let finished = events
        .values()
        .any(|e| matches!(e.event, Some(tpb::table_event::Event::GameFinished(_))));
    if !finished {
        bail!(
            "table {table_id} is FINISHED but its stream (versions 1..={}) holds no GameFinished",
            view.version
        );
    }
    let game = view.game.clone().unwrap_or_default();
    let played = Played {
        table_id,
        moves,
        scores: game.scores.clone(),
        winner: game.winner,
        version: view.version,
        seed_revealed: !view.server_seed.is_empty(),
    };
    println!(
        "table {}: GameFinished at version {} after {} moves of ours in {:.1}s; scores {:?}, \
         winner team {:?}, server seed revealed: {}",
        played.table_id,
        played.version,
        played.moves,
        started.elapsed().as_secs_f64(),
        played.scores,
        played.winner,
        played.seed_revealed
    );
    Ok(played)
}
