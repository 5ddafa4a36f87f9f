//! The platform-wide bad-input test: every RPC of every fairdeal service, driven by the proto
//! descriptors, gets hostile requests: each string and bytes field empty, 1 MB, invalid UTF-8
//! and control characters; each integer 0, -1 and its maximum; a garbage, a truncated and a
//! wrongly typed body. Each is sent as a user, as the tables service and as the dealing
//! service (so it gets past authorization to the parsing).
//!
//! For every answer: never INTERNAL, UNKNOWN, UNAVAILABLE (the services are up: that would
//! tell a caller to retry a request that can never succeed) or UNIMPLEMENTED, every message
//! under 300 characters, and a refusal appends no event to any service's store. Afterwards
//! the services still work and, on NATS, every stored event reaches JetStream.
//!
//! Runs on the embedded default and on PostgreSQL + NATS + Redis. A service whose proto
//! exists but is not started here fails the test: add it to [`Platform`] (auth, commitment,
//! dealing, tables, rating, chat and the ledger run today).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod platform;
mod wire;

use std::collections::BTreeMap;
use std::time::Duration;

use platform::{Backend, Platform};
use prost::bytes::{Buf, BufMut};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use wire::{Case, Descriptors, Rpc};

/// The longest status message a caller may get.
const MAX_MESSAGE_CHARS: usize = 300;
/// Per call; a request that hangs fails the test.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// Request and reply bodies as raw bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

/// Sends `body` to `rpc` with `token`; a server stream counts as answered once its first
/// message (or error) arrives, or it stays open for a second.
async fn call(channel: &Channel, rpc: &Rpc, token: &str, body: Vec<u8>) -> Result<(), Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let path = http::uri::PathAndQuery::try_from(rpc.path.clone()).unwrap();
    let mut request = Request::new(body);
    let bearer: MetadataValue<_> = format!("Bearer {token}").parse().unwrap();
    request.metadata_mut().insert("authorization", bearer);
    if rpc.server_streaming {
        let mut stream = grpc
            .server_streaming(request, path, Raw)
            .await?
            .into_inner();
        match tokio::time::timeout(Duration::from_secs(1), stream.message()).await {
            Ok(first) => first.map(|_| ()),
            Err(_) => Ok(()),
        }
    } else {
        grpc.unary(request, path, Raw).await.map(|_| ())
    }
}

/// Every RPC, every case, every caller; returns the failures found.
async fn attack(platform: &Platform, descriptors: &Descriptors) -> Vec<String> {
    let mut failures = Vec::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    // The stores' event counts before the next call: read once per call, after it.
    let mut before = platform.counts().await;
    for rpc in &descriptors.rpcs {
        let Some(channel) = platform.channel(&rpc.service) else {
            failures.push(format!(
                "{}: no running service answers it; start it in tests/badinput/platform.rs",
                rpc.service
            ));
            continue;
        };
        for Case { what, body } in descriptors.cases(rpc) {
            for (caller, token) in platform.callers() {
                let outcome =
                    tokio::time::timeout(CALL_TIMEOUT, call(channel, rpc, token, body.clone()))
                        .await;
                let after = platform.counts().await;
                let before = std::mem::replace(&mut before, after.clone());
                let place = format!("{} [{what}] as {caller}", rpc.path);
                let status = match outcome {
                    Err(_) => {
                        failures.push(format!("{place}: no answer within {CALL_TIMEOUT:?}"));
                        continue;
                    }
                    Ok(Ok(())) => {
                        *counts.entry("OK").or_default() += 1;
                        continue;
                    }
                    Ok(Err(status)) => status,
                };
                *counts.entry(code_name(status.code())).or_default() += 1;
                if matches!(
                    status.code(),
                    Code::Internal | Code::Unknown | Code::Unavailable | Code::Unimplemented
                ) {
                    failures.push(format!(
                        "{place}: {:?} {}",
                        status.code(),
                        clip(status.message())
                    ));
                }
                let length = status.message().chars().count();
                if length >= MAX_MESSAGE_CHARS {
                    failures.push(format!(
                        "{place}: a {length}-character message: {}",
                        clip(status.message())
                    ));
                }
                if after != before {
                    failures.push(format!(
                        "{place}: refused ({:?}) yet events were appended: {before:?} -> {after:?}",
                        status.code()
                    ));
                }
            }
        }
    }
    // Most hostile requests must reach the services' parsing (rather than all stopping at
    // authorization, which would make this test prove little).
    let total: usize = counts.values().sum();
    let invalid = counts.get("INVALID_ARGUMENT").copied().unwrap_or(0);
    if invalid * 2 < total {
        failures.push(format!(
            "only {invalid} of {total} answers were INVALID_ARGUMENT: {counts:?}"
        ));
    }
    failures
}

fn clip(message: &str) -> String {
    message.chars().take(160).collect()
}

fn code_name(code: Code) -> &'static str {
    match code {
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::Unauthenticated => "UNAUTHENTICATED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        _ => "other",
    }
}

async fn every_rpc_refuses_bad_input_cleanly(backend: Backend) {
    let descriptors = Descriptors::load();
    assert!(
        descriptors.rpcs.len() >= 30,
        "{} RPCs",
        descriptors.rpcs.len()
    );
    let mut platform = Platform::spawn(backend).await;
    let failures = attack(&platform, &descriptors).await;
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        platform.attacker_exists().await,
        "a request to AuthService/DeleteAccount deleted the attacking user"
    );
    // Still serving, still appending and, on NATS, still relaying everything stored.
    platform.still_flows().await;
    platform.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_refuses_bad_input_cleanly_embedded() {
    every_rpc_refuses_bad_input_cleanly(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_refuses_bad_input_cleanly_on_postgres_and_nats() {
    every_rpc_refuses_bad_input_cleanly(Backend::Postgres).await;
}
