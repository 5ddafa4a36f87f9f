//! The chat service on the game stack ([`fairdeal_e2e::platform`]): table channels whose
//! membership comes from the real tables service's events, on each backend (the embedded
//! default, sharing one log; PostgreSQL with NATS JetStream and Redis). Seated players talk,
//! an outsider and a player who left before the start are refused, and the channel becomes
//! read-only when the table's game, played to its end through gRPC, finishes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use fairdeal_authn::{AccessToken, SystemClock, attach_bearer};
use fairdeal_chat::service::ChatLimits;
use fairdeal_e2e::platform::{Backend, GameStack, channel};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use futures::StreamExt as _;
use tonic::transport::Channel;
use tonic::{Code, Request, Status, Streaming};

fn with<T>(token: &AccessToken, message: T) -> Request<T> {
    let mut r = Request::new(message);
    attach_bearer(&mut r, token).unwrap();
    r
}

/// Starts the chat service on `stack`; answers its port.
async fn start_chat(stack: &mut GameStack) -> u16 {
    let storage = stack
        .storage(
            fairdeal_chat::startup::SCHEMA,
            &[&fairdeal_chat::store::MIGRATIONS],
        )
        .await
        .unwrap();
    let mut common = stack.common("chat").unwrap();
    if stack.backend() == Backend::PostgresNats {
        common.redis_url = Some(fairdeal_kit::config::SecretUrl::new(
            fairdeal_testkit::redis_url(),
        ));
    }
    let limits = ChatLimits::default();
    let (presence, quota) = fairdeal_chat::startup::limiters(
        common.redis_url.as_ref().map(|u| u.expose_secret()),
        &common.subject_prefix,
        limits,
    )
    .await
    .unwrap();
    let app = fairdeal_chat::Application::assemble(
        &common,
        fairdeal_chat::startup::Parts {
            storage,
            authn: stack.authenticator(),
            presence,
            quota,
            clock: Arc::new(SystemClock),
            limits,
            filter: None,
        },
    )
    .await
    .unwrap();
    let port = app.port();
    stack.on_stop(app.shutdown());
    tokio::spawn(app.run_until_stopped());
    fairdeal_testkit::wait_until_serving(&format!("http://127.0.0.1:{port}"), "")
        .await
        .unwrap();
    port
}

async fn subscribe(
    chat: &ChatServiceClient<Channel>,
    token: &AccessToken,
    channel: &str,
) -> Result<Streaming<pb::SubscribeResponse>, Status> {
    let mut stream = chat
        .clone()
        .subscribe(with(
            token,
            pb::SubscribeRequest {
                channel: channel.to_owned(),
            },
        ))
        .await?
        .into_inner();
    match stream.next().await.unwrap()?.item {
        Some(pb::subscribe_response::Item::Connected(_)) => Ok(stream),
        other => panic!("expected connected, got {other:?}"),
    }
}

/// Retries `subscribe` while the membership has not arrived (PERMISSION_DENIED), 30 s at
/// most: the projection is eventually consistent.
async fn subscribe_as_member(
    chat: &ChatServiceClient<Channel>,
    token: &AccessToken,
    channel: &str,
) -> Streaming<pb::SubscribeResponse> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match subscribe(chat, token, channel).await {
            Ok(stream) => return stream,
            Err(s) if s.code() == Code::PermissionDenied => {
                assert!(tokio::time::Instant::now() < deadline, "never a member");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("subscribe: {s:?}"),
        }
    }
}

async fn post(
    chat: &ChatServiceClient<Channel>,
    token: &AccessToken,
    channel: &str,
    text: &str,
) -> Result<pb::ChatMessage, Status> {
    chat.clone()
        .post(with(
            token,
            pb::PostRequest {
                channel: channel.to_owned(),
                text: text.to_owned(),
            },
        ))
        .await
        .map(|r| r.into_inner().message.unwrap())
}

async fn next_message(stream: &mut Streaming<pb::SubscribeResponse>) -> pb::ChatMessage {
    let item = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("a message within 20 s")
        .unwrap()
        .unwrap();
    match item.item {
        Some(pb::subscribe_response::Item::Message(m)) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

async fn table_chat(backend: Backend) {
    let mut stack = GameStack::start(backend).await.unwrap();
    let port = start_chat(&mut stack).await;
    let chat = ChatServiceClient::new(channel(port).unwrap());
    let players: Vec<_> = (0..4).map(|_| stack.player().unwrap()).collect();
    let tokens: Vec<AccessToken> = players
        .iter()
        .map(|p| stack.player_token(p.id).unwrap())
        .collect();
    let table_id = players[0]
        .create_table(tpb::CreateTableRequest {
            options: None,
            bot_seats: vec![],
            move_seconds: 0,
        })
        .await
        .unwrap()
        .table_id;
    let table_channel = format!("table-{table_id}");

    // Someone sits at seat 3 and leaves before the match starts.
    let leaver = stack.player().unwrap();
    let leaver_token = stack.player_token(leaver.id).unwrap();
    leaver.sit(&table_id, 3).await.unwrap();
    let _leaver_stream = subscribe_as_member(&chat, &leaver_token, &table_channel).await;
    TablesServiceClient::new(stack.tables_channel().unwrap())
        .leave(with(
            &leaver_token,
            tpb::LeaveRequest {
                table_id: table_id.clone(),
            },
        ))
        .await
        .unwrap();

    fairdeal_client::seat_players(&table_id, &players, "seed of seat")
        .await
        .unwrap();
    let mut north = subscribe_as_member(&chat, &tokens[0], &table_channel).await;
    let mut east = subscribe_as_member(&chat, &tokens[1], &table_channel).await;
    let _south = subscribe_as_member(&chat, &tokens[2], &table_channel).await;
    let hello = post(&chat, &tokens[0], &table_channel, "good luck")
        .await
        .unwrap();
    let reply = post(&chat, &tokens[1], &table_channel, "you too")
        .await
        .unwrap();
    for stream in [&mut north, &mut east] {
        assert_eq!(next_message(stream).await, hello);
        assert_eq!(next_message(stream).await, reply);
    }

    // The player who left: refused (their membership left with SeatLeft, which came before
    // the seats now taken, so it is applied already).
    let refused = post(&chat, &leaver_token, &table_channel, "me?")
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    // An outsider: refused.
    let outsider = stack.player_token(uuid::Uuid::now_v7()).unwrap();
    assert_eq!(
        subscribe(&chat, &outsider, &table_channel)
            .await
            .unwrap_err()
            .code(),
        Code::PermissionDenied
    );

    // The game is played to its end: the channel becomes read-only.
    fairdeal_client::play_to_the_end(&table_id, &players, 0x5eed, |_, _| {})
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let closed = loop {
        match post(&chat, &tokens[2], &table_channel, "gg").await {
            // Not read-only yet (that check comes before the rate limit's).
            Err(s) if s.code() == Code::ResourceExhausted => {
                assert!(tokio::time::Instant::now() < deadline, "never read-only");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(s) => break s,
            // Posted before the finish reached the chat.
            Ok(_) => {
                assert!(tokio::time::Instant::now() < deadline, "never read-only");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert!(closed.message().contains("read-only"), "{closed:?}");
    assert_eq!(closed.code(), Code::FailedPrecondition);
    let history = chat
        .clone()
        .history(with(
            &tokens[3],
            pb::HistoryRequest {
                channel: table_channel.clone(),
                before_message_id: String::new(),
                limit: 10,
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(history.messages.iter().any(|m| m.text == "good luck"));
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn table_chat_embedded() {
    table_chat(Backend::Embedded).await;
}

#[tokio::test]
async fn table_chat_postgres_nats_redis() {
    table_chat(Backend::PostgresNats).await;
}
