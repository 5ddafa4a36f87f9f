//! The one list of the platform's services (`fairdeal_server::SERVICES`) against everything
//! else that names them: the image's binaries (deploy/Dockerfile), the compose stack, the
//! Kubernetes base, the secrets `cargo xtask deploy-secrets` writes, the ledger's default
//! sources, `serve --target`, and the gRPC health and reflection names `up` serves. The
//! deployment files are generated from the list (`fairdeal-server deployment`); a service
//! added to the list without regenerating them fails here, naming the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use fairdeal_server::{Platform, SERVICES, UpOptions};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn names() -> Vec<&'static str> {
    SERVICES.iter().map(|s| s.name).collect()
}

fn set<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    names.into_iter().map(str::to_owned).collect()
}

/// `fairdeal.<name>.v1.<Name>Service`: the gRPC service a platform service serves.
fn grpc_name(name: &str) -> String {
    let mut title = name.to_owned();
    title[..1].make_ascii_uppercase();
    format!("fairdeal.{name}.v1.{title}Service")
}

/// Every deployment file generated from the list is as `fairdeal-server deployment` writes
/// it: a service added, or its `DEPLOYMENT` changed, without regenerating them fails here.
#[test]
fn the_deployment_files_are_generated_from_the_list() {
    let files = fairdeal_server::deployment::files(&root(), SERVICES).unwrap();
    let stale = fairdeal_server::deployment::stale(&root(), &files);
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what the services' DEPLOYMENT makes: run `cargo run -p \
         fairdeal-server -- deployment` and commit the result"
    );
}

#[test]
fn names_are_unique_and_bare() {
    let names = names();
    assert_eq!(set(names.iter().copied()).len(), names.len(), "{names:?}");
    for name in names {
        assert!(
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase()),
            "{name}: a service's name is lowercase letters (binary, schema, subject)"
        );
    }
}

#[test]
fn the_image_builds_every_service() {
    let dockerfile = read("deploy/Dockerfile");
    let line = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix("ARG SERVICES=\""))
        .expect("deploy/Dockerfile: ARG SERVICES=\"...\"");
    let listed: Vec<&str> = line.trim_end_matches('"').split_whitespace().collect();
    assert_eq!(listed, names(), "deploy/Dockerfile's ARG SERVICES");
}

#[test]
fn the_compose_stack_runs_every_service() {
    let compose = read("docker-compose.yml");
    let mut commanded = BTreeSet::new();
    for line in compose.lines() {
        if let Some(rest) = line.trim().strip_prefix("command: [\"fairdeal-") {
            let binary = rest.split('"').next().unwrap();
            if binary != "health-probe" {
                commanded.insert(binary.to_owned());
            }
        }
    }
    assert_eq!(
        commanded,
        set(names()),
        "docker-compose.yml: one `command: [\"fairdeal-<name>\"]` per service"
    );
    for name in names() {
        for needle in [
            format!("\n  {name}:\n"),
            format!("FAIRDEAL_SERVICE_NAME: {name}\n"),
            format!("secrets: [{name}.toml]"),
            // ... and declared at the top level, from the secrets directory.
            format!(
                "\n  {name}.toml:\n    file: ${{FAIRDEAL_SECRETS_DIR:-./deploy/secrets}}/{name}.toml\n"
            ),
        ] {
            assert!(
                compose.contains(&needle),
                "docker-compose.yml lacks {needle:?} for {name}"
            );
        }
    }
}

#[test]
fn the_kubernetes_base_deploys_every_service() {
    let base = root().join("deploy/k8s/base");
    let kustomization = read("deploy/k8s/base/kustomization.yaml");
    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(&base).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        if let Some(stem) = file.strip_suffix(".yaml")
            && !["kustomization", "networkpolicies", "secrets.example"].contains(&stem)
        {
            files.insert(stem.to_owned());
        }
    }
    assert_eq!(
        files,
        set(names()),
        "deploy/k8s/base: one <name>.yaml per service"
    );
    for name in names() {
        assert!(
            kustomization.contains(&format!("  - {name}.yaml\n")),
            "deploy/k8s/base/kustomization.yaml does not list {name}.yaml"
        );
        let manifest = read(&format!("deploy/k8s/base/{name}.yaml"));
        assert!(
            manifest.contains(&format!("fairdeal-{name}")),
            "deploy/k8s/base/{name}.yaml does not run fairdeal-{name}"
        );
    }
    let policies = read("deploy/k8s/base/networkpolicies.yaml");
    for name in names() {
        assert!(
            policies.contains(&format!("app.kubernetes.io/name: {name}")),
            "deploy/k8s/base/networkpolicies.yaml has no policy for {name}"
        );
    }
}

#[test]
fn deploy_secrets_writes_a_file_per_service() {
    let deploy = read("crates/xtask/src/services.rs");
    let listed: Vec<&str> = deploy
        .lines()
        .filter_map(|l| l.trim().strip_prefix("(\""))
        .filter(|rest| rest.contains("\", &["))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert_eq!(listed, names(), "crates/xtask/src/services.rs: SERVICES");
}

#[test]
fn the_ledger_reads_every_other_service_by_default() {
    let others: BTreeSet<String> = set(names().into_iter().filter(|n| *n != "ledger"));
    assert_eq!(
        set(fairdeal_ledger::SOURCES),
        others,
        "fairdeal_ledger::SOURCES"
    );
}

#[test]
fn serve_takes_every_service_and_all() {
    let mut expected = names();
    expected.push("all");
    assert_eq!(fairdeal_server::serve::targets(), expected);
    for name in names() {
        assert_eq!(fairdeal_server::serve::find(name).unwrap().name, name);
    }
    assert!(fairdeal_server::serve::find("nope").is_none());
}

/// `up` serves each service under its gRPC name, in health and in reflection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_serves_every_service_by_its_grpc_name() {
    let dir = tempfile::tempdir().unwrap();
    let platform = Platform::start(&UpOptions {
        data_dir: dir.path().join("data"),
        listen: "127.0.0.1:0".parse().unwrap(),
        handle_signals: false,
        moderators: Vec::new(),
    })
    .await
    .unwrap();
    let url = platform.url().to_owned();
    let shutdown = platform.shutdown();
    let served = tokio::spawn(platform.run_until_stopped());

    let channel = tonic::transport::Endpoint::from_shared(url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    for name in names() {
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: grpc_name(name),
            })
            .await
            .unwrap_or_else(|e| panic!("health of {}: {e}", grpc_name(name)))
            .into_inner()
            .status;
        assert_eq!(
            status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "{}",
            grpc_name(name)
        );
    }

    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let mut reflection = ServerReflectionClient::new(channel);
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = reflection
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("not a list of services: {response:?}");
    };
    let listed: BTreeSet<String> = list.service.into_iter().map(|s| s.name).collect();
    for name in names() {
        assert!(
            listed.contains(&grpc_name(name)),
            "reflection does not list {}: {listed:?}",
            grpc_name(name)
        );
    }

    shutdown.trigger();
    served.await.unwrap().unwrap();
}
