//! The gRPC bootstrap end to end: health, reflection, graceful drain, the grace deadline.

use std::time::Duration;

use fairdeal_kit::ServeError;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

use crate::support::{SLOW_SERVICE, call_wait, no_interceptor, spawn_app};

fn check(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.to_owned(),
    }
}

#[tokio::test]
async fn health_reports_each_service_and_the_server() {
    let app = spawn_app(Duration::from_secs(5)).await;
    let mut health = HealthClient::new(app.channel().await);
    for service in ["", SLOW_SERVICE, "grpc.health.v1.Health"] {
        let status = health.check(check(service)).await;
        if service == "grpc.health.v1.Health" {
            // Only the caller's services and "" are registered.
            assert_eq!(status.unwrap_err().code(), tonic::Code::NotFound);
        } else {
            assert_eq!(
                status.unwrap().into_inner().status(),
                ServingStatus::Serving
            );
        }
    }
    app.shutdown.trigger();
    app.server.await.unwrap().unwrap();
}

#[tokio::test]
async fn reflection_lists_the_callers_services_and_health() {
    let app = spawn_app(Duration::from_secs(5)).await;
    let mut reflection = ServerReflectionClient::new(app.channel().await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = reflection
        .server_reflection_info(tokio_stream::once(request))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("unexpected reflection response {response:?}");
    };
    let names: Vec<String> = list
        .service
        .into_iter()
        .map(|service| service.name)
        .collect();
    for expected in [
        SLOW_SERVICE,
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} missing from {names:?}"
        );
    }
    drop(responses);
    app.shutdown.trigger();
    app.server.await.unwrap().unwrap();
}

#[tokio::test]
async fn shutdown_drains_in_flight_rpc_then_background_tasks() {
    let mut app = spawn_app(Duration::from_secs(30)).await;
    let channel = app.channel().await;

    // A background task that must be stopped and waited for, after the RPCs.
    let (task_done_tx, mut task_done) = tokio::sync::oneshot::channel();
    let token = app.shutdown.token();
    app.shutdown.spawn("test-consumer", async move {
        token.cancelled().await;
        task_done_tx.send(()).unwrap();
    });

    // Watch health over the same connection: the stream sees the drain.
    let mut health = HealthClient::new(channel.clone());
    let mut watch = health
        .watch(check(SLOW_SERVICE))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status(),
        ServingStatus::Serving
    );

    let rpc = tokio::spawn(call_wait(channel.clone(), no_interceptor));
    app.started.recv().await.unwrap();

    app.shutdown.trigger();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status(),
        ServingStatus::NotServing
    );
    // The watch is itself an in-flight RPC; a client that saw NOT_SERVING goes away.
    drop(watch);

    // While the slow RPC runs, background tasks are not told to stop.
    assert!(!app.shutdown.token().is_cancelled());
    assert!(task_done.try_recv().is_err());
    assert!(!app.server.is_finished());

    app.gate.send(true).unwrap();
    rpc.await
        .unwrap()
        .expect("the in-flight RPC completes during the drain");
    app.server
        .await
        .unwrap()
        .expect("clean shutdown within the grace period");
    task_done
        .try_recv()
        .expect("the background task finished before the server returned");

    // The listener is closed: new connections are refused.
    let refused = tonic::transport::Endpoint::from_shared(format!("http://{}", app.addr))
        .unwrap()
        .connect()
        .await;
    assert!(refused.is_err());
}

#[tokio::test(start_paused = true)]
async fn past_the_grace_period_rpcs_are_refused_and_the_server_reports_it() {
    let mut app = spawn_app(Duration::from_secs(10)).await;
    let channel = app.channel().await;

    // A task that ignores the shutdown token.
    let (_never_tx, never) = tokio::sync::oneshot::channel::<()>();
    app.shutdown.spawn("stubborn", async move {
        let _ = never.await;
    });

    let rpc = tokio::spawn(call_wait(channel, no_interceptor));
    app.started.recv().await.unwrap();
    app.shutdown.trigger();

    // Time is paused: the runtime jumps to the deadline once everything is idle.
    let status = rpc.await.unwrap().expect_err("the gate never opens");
    assert_eq!(status.code(), tonic::Code::Unavailable);
    match app.server.await.unwrap() {
        Err(ServeError::GraceExceeded {
            grace,
            rpcs_cancelled,
            unfinished_tasks,
        }) => {
            assert_eq!(grace, Duration::from_secs(10));
            assert!(rpcs_cancelled);
            assert_eq!(unfinished_tasks, 1);
        }
        other => panic!("expected GraceExceeded, got {other:?}"),
    }
    drop(app.gate);
}

fn slow() -> crate::support::Slow {
    crate::support::Slow::new()
}

#[tokio::test]
async fn mounts_share_one_listener_bound_beforehand() {
    let mut common = fairdeal_kit::CommonConfig::with_defaults("kit-test").unwrap();
    // Not used: the listener bound first wins.
    common.listen_addr = "127.0.0.1:1".parse().unwrap();
    let listener = fairdeal_kit::server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let set = crate::support::slow_descriptor_set();
    let routes = fairdeal_kit::Mount::new()
        .add_service(slow())
        .file_descriptor_set(set);
    assert_eq!(routes.service_names(), [SLOW_SERVICE]);
    let app = fairdeal_kit::Application::builder(&common)
        .handle_signals(false)
        .listener(listener)
        .mount(routes)
        // Another service's mount registering the same descriptor set: served once.
        .mount(fairdeal_kit::Mount::new().file_descriptor_set(set))
        .build()
        .await
        .unwrap();
    assert_eq!(app.local_addr(), addr);
    let shutdown = app.shutdown();
    let server = tokio::spawn(app.run_until_stopped());
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let status = HealthClient::new(channel)
        .check(check(SLOW_SERVICE))
        .await
        .unwrap()
        .into_inner()
        .status();
    assert_eq!(status, ServingStatus::Serving);
    shutdown.trigger();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_service_mounted_twice_is_refused_and_the_mounts_tasks_stop() {
    let mut common = fairdeal_kit::CommonConfig::with_defaults("kit-test").unwrap();
    common.listen_addr = "127.0.0.1:0".parse().unwrap();
    let shutdown = fairdeal_kit::Shutdown::new();
    let token = shutdown.token();
    shutdown.spawn("mounted-task", async move { token.cancelled().await });
    let error = fairdeal_kit::Application::builder(&common)
        .with_shutdown(shutdown.clone())
        .handle_signals(false)
        .mount(fairdeal_kit::Mount::new().add_service(slow()))
        .mount(fairdeal_kit::Mount::new().add_service(slow()))
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(error, ServeError::DuplicateService(SLOW_SERVICE)),
        "{error}"
    );
    shutdown.tracker().close();
    tokio::time::timeout(Duration::from_secs(5), shutdown.tracker().wait())
        .await
        .expect("the mount's background task stops with the failed build");
}
