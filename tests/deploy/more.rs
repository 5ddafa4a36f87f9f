//! The chat, rating and ledger services through their public gRPC APIs, as a client would:
//! a chat round trip in the lobby (subscribe, post, receive, history), a leaderboard read,
//! and the ledger's status and checkpoints (which must grow once a table was played).

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use fairdeal_proto::fairdeal::chat::v1 as cpb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use fairdeal_proto::fairdeal::ledger::v1 as lpb;
use fairdeal_proto::fairdeal::ledger::v1::ledger_service_client::LedgerServiceClient;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::rating::v1::rating_service_client::RatingServiceClient;

use crate::play::{authorized, channel};

/// How long the ledger may take to ingest a played table and sign a checkpoint over it
/// (its default checkpoint interval is 5 s).
const LEDGER_PATIENCE: Duration = Duration::from_secs(60);

/// Subscribes to the lobby, posts a message there, receives it on the subscription and
/// finds it in the history; returns the message id.
pub(crate) async fn chat_round_trip(chat_url: &str, token: &str) -> anyhow::Result<String> {
    let mut chat = ChatServiceClient::new(channel(chat_url)?);
    let mut stream = chat
        .subscribe(authorized(
            cpb::SubscribeRequest {
                channel: "lobby".into(),
            },
            token,
        )?)
        .await
        .context("chat Subscribe")?
        .into_inner();
    let first = stream
        .message()
        .await
        .context("chat Subscribe: first item")?;
    ensure!(
        matches!(
            first.and_then(|f| f.item),
            Some(cpb::subscribe_response::Item::Connected(_))
        ),
        "chat Subscribe: the first item is not `connected`"
    );
    let text = format!("deploy check {}", uuid::Uuid::now_v7().simple());
    let posted = chat
        .post(authorized(
            cpb::PostRequest {
                channel: "lobby".into(),
                text: text.clone(),
            },
            token,
        )?)
        .await
        .context("chat Post")?
        .into_inner()
        .message
        .context("chat Post: no message")?;
    ensure!(posted.text == text, "chat Post: the text came back changed");
    let delivered = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match stream.message().await? {
                Some(cpb::SubscribeResponse {
                    item: Some(cpb::subscribe_response::Item::Message(m)),
                }) if m.message_id == posted.message_id => return Ok(m),
                Some(_) => {}
                None => bail!("chat Subscribe ended before the message arrived"),
            }
        }
    })
    .await
    .context("chat: the posted message was not delivered within 30 s")??;
    ensure!(delivered.text == text, "chat: delivered text differs");
    let history = chat
        .history(authorized(
            cpb::HistoryRequest {
                channel: "lobby".into(),
                before_message_id: String::new(),
                limit: 10,
            },
            token,
        )?)
        .await
        .context("chat History")?
        .into_inner();
    ensure!(
        history
            .messages
            .iter()
            .any(|m| m.message_id == posted.message_id && m.text == text),
        "chat History lacks the posted message"
    );
    Ok(posted.message_id)
}

/// Reads the first page of the leaderboard of the game the bot table plays; returns how many
/// entries it has (a bot table is not rated, so none are expected from it).
pub(crate) async fn leaderboard(rating_url: &str, token: &str) -> anyhow::Result<usize> {
    let mut rating = RatingServiceClient::new(channel(rating_url)?);
    let board = rating
        .get_leaderboard(authorized(
            rpb::GetLeaderboardRequest {
                game_kind: "jeu-du-10/dix".into(),
                min_games: 0,
                page_size: 10,
                page_token: String::new(),
            },
            token,
        )?)
        .await
        .context("rating GetLeaderboard")?
        .into_inner();
    Ok(board.entries.len())
}

/// The ledger's status.
pub(crate) async fn ledger_status(ledger_url: &str) -> anyhow::Result<lpb::GetStatusResponse> {
    let mut ledger = LedgerServiceClient::new(channel(ledger_url)?);
    Ok(ledger
        .get_status(lpb::GetStatusRequest {})
        .await
        .context("ledger GetStatus")?
        .into_inner())
}

/// Waits until the ledger's signed checkpoint covers more than `above` leaves; returns the
/// checkpoint. Fails when a stream halted or an event was refused.
pub(crate) async fn ledger_checkpoint_above(
    ledger_url: &str,
    above: u64,
) -> anyhow::Result<lpb::GetCheckpointResponse> {
    let mut ledger = LedgerServiceClient::new(channel(ledger_url)?);
    let waited = Instant::now();
    loop {
        let status = ledger_status(ledger_url).await?;
        ensure!(
            status.halted_streams == 0 && status.refused_events == 0,
            "ledger: {} halted streams, {} refused events",
            status.halted_streams,
            status.refused_events
        );
        if status.checkpoint_size > above {
            let checkpoint = ledger
                .get_checkpoint(lpb::GetCheckpointRequest {})
                .await
                .context("ledger GetCheckpoint")?
                .into_inner();
            ensure!(
                checkpoint.tree_size > above
                    && checkpoint
                        .checkpoint
                        .contains(&format!("\n{}\n", checkpoint.tree_size)),
                "ledger GetCheckpoint: the note does not state its size {}",
                checkpoint.tree_size
            );
            return Ok(checkpoint);
        }
        if waited.elapsed() > LEDGER_PATIENCE {
            bail!(
                "the ledger's checkpoint stayed at {} leaves (tree {}) for {}s",
                status.checkpoint_size,
                status.tree_size,
                LEDGER_PATIENCE.as_secs()
            );
        }
        // Checkpoints are signed on a timer; nothing to wait on from outside.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// After a played table: the ledger signs a checkpoint over more leaves than it held
/// `before` the table (its events), a chat round trip in the lobby, a leaderboard read.
/// `url` names each service's address.
pub(crate) async fn check_after_table(
    url: &dyn Fn(&str) -> String,
    token: &str,
    before: &lpb::GetStatusResponse,
) -> anyhow::Result<()> {
    let checkpoint = ledger_checkpoint_above(&url("ledger"), before.tree_size).await?;
    println!(
        "ledger: {} leaves before the table, then a signed checkpoint of {} leaves",
        before.tree_size, checkpoint.tree_size
    );
    let message = chat_round_trip(&url("chat"), token).await?;
    println!("chat: message {message} posted, delivered and in the lobby's history");
    let entries = leaderboard(&url("rating"), token).await?;
    println!("rating: the leaderboard answers ({entries} entries)");
    Ok(())
}

/// The version of finished table `table_id` as the tables service at `tables_url` shows it
/// (a replica that does not own the table forwards the call to the one that does).
pub(crate) async fn finished_through(
    tables_url: &str,
    token: &str,
    table_id: &str,
) -> anyhow::Result<u64> {
    use fairdeal_proto::fairdeal::tables::v1 as tpb;
    use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
    let view = TablesServiceClient::new(channel(tables_url)?)
        .get_table(authorized(
            tpb::GetTableRequest {
                table_id: table_id.to_owned(),
            },
            token,
        )?)
        .await
        .with_context(|| format!("GetTable at {tables_url}"))?
        .into_inner()
        .table
        .context("GetTable returned no table")?;
    ensure!(
        view.status == tpb::TableStatus::Finished as i32,
        "table {table_id} at {tables_url}: not finished"
    );
    Ok(view.version)
}
