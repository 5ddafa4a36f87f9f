//! Each server's reflection lists what that server answers, not every API of the workspace
//! (the descriptor set it is given describes them all).

use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

use crate::common::{Db, TestApp};

/// The services `url`'s reflection lists.
async fn listed(url: &str) -> Vec<String> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::once(request))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("unexpected reflection response {response:?}");
    };
    let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    names
}

#[tokio::test]
async fn each_server_reflects_only_what_it_serves() {
    let app = TestApp::spawn(Db::Sqlite).await;
    let common = [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
    ];
    let mut expected: Vec<&str> = vec!["fairdeal.dealing.v1.DealingService"];
    expected.extend(common);
    expected.sort();
    assert_eq!(listed(&app.dealing_url).await, expected);
    let mut expected: Vec<&str> = vec!["fairdeal.commitment.v1.CommitmentService"];
    expected.extend(common);
    expected.sort();
    assert_eq!(listed(&app.commitment_url).await, expected);
    app.stop().await;
}
