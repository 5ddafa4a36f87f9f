//! The chat service on the game stack ([`fairdeal_e2e::platform`]): table channels whose
//! membership comes from the real tables service's events, on each backend (the embedded
//! default, sharing one log; PostgreSQL with NATS JetStream and Redis). Seated players talk,
//! an outsider and a player who left before the start are refused, and the channel becomes
//! read-only when the table's game, played to its end through gRPC, finishes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use fairdeal_authn::AccessToken;
use fairdeal_e2e::platform::{Backend, GameStack, channel};
use fairdeal_e2e::services::{next_message, post, subscribe, subscribe_as_member, with};
use fairdeal_proto::fairdeal::chat::v1 as pb;
use fairdeal_proto::fairdeal::chat::v1::chat_service_client::ChatServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use tonic::Code;

async fn table_chat(backend: Backend) {
    let mut stack = GameStack::start(backend).await.unwrap();
    let port = stack.start_chat().await.unwrap();
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
