//! The peer link (issue 33; docs/scaling.md, "The peer link"): one long-lived stream from a
//! replica to each peer (`fairdeal.tables.v1.TablesPeerService/Link`), which carries the
//! moves (`Act`) and watches (`Watch`) it forwards to the tables that peer owns, and the
//! owner's answers and watch messages back. Each side writes whatever it has ready as one
//! frame, so under load a frame carries tens of items and a forwarded move or relayed
//! message costs its encoding, not an HTTP/2 stream or frame of its own: a unary forward
//! cost about what the call itself did (docs/performance.md, "What the hop costs").
//!
//! A call on the link is the caller's: it carries the caller's `authorization`, which the
//! owner verifies as it verifies any call (a token verified lately costs a lookup), and it
//! is answered as the owner would answer it, status and metadata included. The link itself
//! grants nothing, so it needs no token of its own.
//!
//! A link never waits on one slow reader: a relayed watch whose client reads too slowly to
//! keep up is closed on this side (its owner-side watch cancelled), and the relay opens it
//! again from the last version it passed on, as after a handover. When a link ends (the
//! owner drains or dies, or the connection breaks), every call still waiting on it is
//! answered UNAVAILABLE as cut off, which the router treats as an owner out of reach (the
//! call is served here), and every watch on it ends, to be opened again where the table is
//! served now. The next call for that peer opens a new link.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fairdeal_authn::Authenticator;
use fairdeal_kit::Shutdown;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use futures::StreamExt;
use pb::peer_answer::Result as Answered;
use pb::peer_call::Request as Called;
use pb::peer_item::Kind;
use pb::tables_peer_service_client::TablesPeerServiceClient;
use pb::tables_peer_service_server::TablesPeerService;
use pb::tables_service_server::TablesService;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_stream::Stream;
use tokio_stream::wrappers::{ReceiverStream, UnboundedReceiverStream};
use tonic::metadata::{KeyAndValueRef, MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::Channel;
use tonic::{Code, Request, Response, Status};
use tracing::Instrument;

use crate::grpc::TablesApi;
use crate::route::{FORWARDED_BY, HANDED_OVER};

/// The most items one frame carries.
const BATCH: usize = 256;

/// How many items the owner's side of a link holds for the forwarding replica to read
/// before its watches and calls wait (the link's own flow control).
const OWNER_QUEUE: usize = 4096;

/// How many messages of one relayed watch wait for its client on the forwarding side
/// before the watch is closed as too slow (and opened again from its last version).
const RELAYED: usize = 256;

/// The caller's metadata a call on the link carries: its token, its trace context, and the
/// marks the router puts on a forwarded call.
const CARRIED: [&str; 5] = [
    "authorization",
    "traceparent",
    "tracestate",
    FORWARDED_BY,
    HANDED_OVER,
];

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // What the maps hold stays valid whatever panicked while holding the lock.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The status of a call or watch still open on a link that ended: UNAVAILABLE, as for an
/// owner out of reach (`route::unreachable`).
fn cut_off() -> Status {
    Status::unavailable("the table's owner is out of reach (the link to it closed)")
}

/// The ASCII entries of `metadata` named by `keep`.
fn entries(
    metadata: &MetadataMap,
    keep: impl Fn(&str) -> bool,
) -> std::collections::BTreeMap<String, String> {
    metadata
        .iter()
        .filter_map(|entry| match entry {
            KeyAndValueRef::Ascii(key, value) if keep(key.as_str()) => value
                .to_str()
                .ok()
                .map(|value| (key.as_str().to_owned(), value.to_owned())),
            _ => None,
        })
        .collect()
}

/// Metadata holding `entries` (an entry that is no valid metadata is left out: only a
/// peer of another build could send one).
fn metadata_of(entries: std::collections::BTreeMap<String, String>) -> MetadataMap {
    let mut metadata = MetadataMap::new();
    for (key, value) in entries {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            metadata.insert(key, value);
        }
    }
    metadata
}

/// `status` as the link carries it.
fn carried_status(status: &Status) -> pb::PeerStatus {
    pb::PeerStatus {
        code: status.code() as i32,
        message: status.message().to_owned(),
        details: status.details().to_vec(),
        metadata: entries(status.metadata(), |_| true),
    }
}

/// The status the owner answered.
fn status_of(status: pb::PeerStatus) -> Status {
    Status::with_details_and_metadata(
        Code::from(status.code),
        status.message,
        status.details.into(),
        metadata_of(status.metadata),
    )
}

fn item(id: u64, kind: Kind) -> pb::PeerItem {
    pb::PeerItem {
        id,
        kind: Some(kind),
    }
}

/// What a relayed watch's owner sent for it, as the forwarding side hands it on (a value
/// moved on at once: boxing the message would cost an allocation per message).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Down {
    /// Whether the watch opened (the first item).
    Opened(pb::PeerAnswer),
    /// A message.
    Message(pb::WatchResponse),
    /// An error, the last item.
    Failed(Status),
    /// The end, without an error (the owner drains, or the table moved on).
    Ended,
}

/// A call waiting on a link for what its owner sends.
#[derive(Debug)]
enum Waiting {
    /// A call's answer.
    Call(oneshot::Sender<pb::PeerAnswer>),
    /// A watch's items.
    Watch(mpsc::Sender<Down>),
}

/// The forwarding side of a link to one peer.
#[derive(Debug)]
pub struct Link {
    /// Items up, written in frames as the connection takes them.
    up: mpsc::UnboundedSender<pb::PeerItem>,
    /// The calls and watches waiting, by id; `None` once the link has ended.
    waiting: Mutex<Option<HashMap<u64, Waiting>>>,
    /// The next call's id.
    next: AtomicU64,
}

impl Link {
    /// A link over `channel` to the peer at `address`. It is opened by a task of its own;
    /// calls made meanwhile wait in its queue. It ends when the owner ends it or the
    /// connection breaks.
    pub fn open(channel: Channel, address: String) -> Arc<Link> {
        let (up, queued) = mpsc::unbounded_channel();
        let link = Arc::new(Link {
            up,
            waiting: Mutex::new(Some(HashMap::new())),
            next: AtomicU64::new(1),
        });
        let reading = Arc::clone(&link);
        tokio::spawn(async move {
            let frames = UnboundedReceiverStream::new(queued)
                .ready_chunks(BATCH)
                .map(|items| pb::LinkRequest { items });
            match TablesPeerServiceClient::new(channel).link(frames).await {
                Ok(response) => {
                    let mut frames = response.into_inner();
                    loop {
                        match frames.message().await {
                            Ok(Some(frame)) => {
                                for handed in frame.items {
                                    reading.hand(handed);
                                }
                            }
                            Ok(None) => break,
                            Err(status) => {
                                tracing::debug!(%address, status = %status.message(), "peer link broken");
                                break;
                            }
                        }
                    }
                }
                Err(status) => {
                    tracing::debug!(%address, status = %status.message(), "peer link refused");
                }
            }
            reading.end();
        });
        link
    }

    /// Whether the link has ended (a new one is to be opened).
    pub fn ended(&self) -> bool {
        lock(&self.waiting).is_none()
    }

    /// Ends the link: whatever waits on it is cut off (its sender dropped).
    fn end(&self) {
        lock(&self.waiting).take();
    }

    /// Registers `waiting` under a new id; cut off when the link has ended.
    fn wait(&self, waiting: Waiting) -> Result<u64, Status> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.waiting)
            .as_mut()
            .ok_or_else(cut_off)?
            .insert(id, waiting);
        Ok(id)
    }

    /// Sends call `id` up.
    fn call<T>(&self, id: u64, request: Request<T>, called: fn(T) -> Called) -> Result<(), Status> {
        let (metadata, _, message) = request.into_parts();
        let call = pb::PeerCall {
            metadata: entries(&metadata, |key| CARRIED.contains(&key)),
            request: Some(called(message)),
        };
        self.up
            .send(item(id, Kind::Call(call)))
            .map_err(|_| cut_off())
    }

    /// Forgets watch `id` (its reader went), and has the owner close it.
    fn forget(&self, id: u64) {
        let removed = lock(&self.waiting)
            .as_mut()
            .and_then(|waiting| waiting.remove(&id));
        if removed.is_some() {
            // The link may have ended meanwhile; then there is nothing to close.
            let _ = self.up.send(item(id, Kind::Cancel(true)));
        }
    }

    /// Hands `item`, come from the owner, to what waits for it.
    fn hand(&self, handed: pb::PeerItem) {
        let pb::PeerItem { id, kind } = handed;
        let mut guard = lock(&self.waiting);
        let Some(waiting) = guard.as_mut() else {
            return;
        };
        match kind {
            Some(Kind::Answer(answer)) => match waiting.remove(&id) {
                Some(Waiting::Call(tx)) => {
                    // The caller may have gone.
                    let _ = tx.send(answer);
                }
                Some(Waiting::Watch(tx)) => {
                    let open = matches!(answer.result, Some(Answered::Watching(_)));
                    if tx.try_send(Down::Opened(answer)).is_ok() && open {
                        waiting.insert(id, Waiting::Watch(tx));
                    }
                }
                None => {}
            },
            Some(Kind::Message(message)) => {
                let Some(Waiting::Watch(tx)) = waiting.get(&id) else {
                    return;
                };
                if tx.try_send(Down::Message(message)).is_err() {
                    // Its client reads too slowly (or went): closed here, so the link
                    // never waits on it; the relay opens it again from its last version.
                    waiting.remove(&id);
                    drop(guard);
                    let _ = self.up.send(item(id, Kind::Cancel(true)));
                }
            }
            Some(Kind::Failed(status)) => {
                if let Some(Waiting::Watch(tx)) = waiting.remove(&id) {
                    let _ = tx.try_send(Down::Failed(status_of(status)));
                }
            }
            Some(Kind::Ended(_)) => {
                // Dropping the sender ends the watch.
                waiting.remove(&id);
            }
            // Items only the forwarding side sends.
            Some(Kind::Call(_) | Kind::Cancel(_)) | None => {}
        }
    }

    /// `request`, a move, sent to the owner; its answer.
    pub async fn act(
        &self,
        request: Request<pb::ActRequest>,
    ) -> Result<Response<pb::ActResponse>, Status> {
        let (tx, rx) = oneshot::channel();
        let id = self.wait(Waiting::Call(tx))?;
        self.call(id, request, Called::Act)?;
        let answer = rx.await.map_err(|_| cut_off())?;
        match answer.result {
            Some(Answered::Act(response)) => Ok(Response::from_parts(
                metadata_of(answer.metadata),
                response,
                tonic::Extensions::default(),
            )),
            Some(Answered::Status(status)) => Err(status_of(status)),
            Some(Answered::Watching(_)) | None => Err(Status::internal(
                "the table's owner answered a move with no move's answer",
            )),
        }
    }

    /// `request`, a watch, opened at the owner: its stream, or why it did not open.
    pub async fn watch(
        self: &Arc<Self>,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Linked>, Status> {
        let (tx, items) = mpsc::channel(RELAYED);
        let id = self.wait(Waiting::Watch(tx))?;
        let mut linked = Linked {
            id,
            link: Arc::clone(self),
            items,
        };
        self.call(id, request, Called::Watch)?;
        match linked.items.recv().await {
            Some(Down::Opened(answer)) => match answer.result {
                Some(Answered::Watching(_)) => Ok(Response::from_parts(
                    metadata_of(answer.metadata),
                    linked,
                    tonic::Extensions::default(),
                )),
                Some(Answered::Status(status)) => Err(status_of(status)),
                Some(Answered::Act(_)) | None => Err(Status::internal(
                    "the table's owner answered a watch with no watch's answer",
                )),
            },
            _ => Err(cut_off()),
        }
    }
}

/// A watch open at its owner over a link: what the owner sends for it. Dropped, it has the
/// owner close the watch.
#[derive(Debug)]
pub struct Linked {
    id: u64,
    link: Arc<Link>,
    items: mpsc::Receiver<Down>,
}

impl Linked {
    /// The next item; `None` when the watch ended without an error (the owner ended it, or
    /// the link did, or it was closed here as too slow).
    pub async fn next(&mut self) -> Option<Down> {
        self.items.recv().await
    }
}

impl Drop for Linked {
    fn drop(&mut self) {
        self.link.forget(self.id);
    }
}

/// The owner's side: the links other replicas open to this one.
#[derive(Clone, Debug)]
pub struct PeerApi {
    /// The API the calls are answered by, as if made to it.
    api: TablesApi,
    /// Verifies each call's token.
    authn: Authenticator,
    /// A link stops reading calls when the server drains.
    shutdown: Shutdown,
}

impl PeerApi {
    /// The owner's side of links, answering with `api`, verifying tokens with `authn`.
    pub fn new(api: TablesApi, authn: Authenticator, shutdown: Shutdown) -> Self {
        PeerApi {
            api,
            authn,
            shutdown,
        }
    }

    /// Reads the calls of one link until it ends or the server drains, answering each in a
    /// task of its own; then closes the watches still open on it. The link's stream ends
    /// once the last answer is written.
    async fn serve(
        self,
        mut calls: tonic::Streaming<pb::LinkRequest>,
        down: mpsc::Sender<pb::PeerItem>,
    ) {
        let mut watches: HashMap<u64, AbortHandle> = HashMap::new();
        let mut swept = 64;
        loop {
            let frame = tokio::select! {
                frame = calls.message() => frame,
                () = self.shutdown.draining() => break,
            };
            let Ok(Some(frame)) = frame else {
                break;
            };
            for pb::PeerItem { id, kind } in frame.items {
                match kind {
                    Some(Kind::Call(call)) => {
                        if let Some(watch) = self.clone().answer(id, call, down.clone()) {
                            watches.insert(id, watch);
                        }
                    }
                    Some(Kind::Cancel(_)) => {
                        if let Some(watch) = watches.remove(&id) {
                            watch.abort();
                        }
                    }
                    // Items only the owner sends.
                    _ => {}
                }
            }
            // Watches that ended on their own are forgotten now and then.
            if watches.len() > swept {
                watches.retain(|_, watch| !watch.is_finished());
                swept = (watches.len() * 2).max(64);
            }
        }
        for watch in watches.values() {
            watch.abort();
        }
    }

    /// Answers call `id` on `down`, in a task of its own; for a watch, that task, to close it
    /// (a move's is not: a move in flight is decided whatever becomes of the link).
    fn answer(
        self,
        id: u64,
        call: pb::PeerCall,
        down: mpsc::Sender<pb::PeerItem>,
    ) -> Option<AbortHandle> {
        let mut metadata = metadata_of(call.metadata);
        // Whatever reaches the owner over a link was forwarded.
        if !metadata.contains_key(FORWARDED_BY) {
            metadata.insert(FORWARDED_BY, MetadataValue::from_static("link"));
        }
        match call.request {
            Some(Called::Act(act)) => {
                let span = span(&metadata, "/fairdeal.tables.v1.TablesService/Act");
                let task = async move {
                    let answer = match self.called(metadata, act).await {
                        Ok(request) => self.api.act(request).await,
                        Err(status) => Err(status),
                    };
                    let answer = match answer {
                        Ok(response) => {
                            let (metadata, response, _) = response.into_parts();
                            pb::PeerAnswer {
                                metadata: entries(&metadata, |_| true),
                                result: Some(Answered::Act(response)),
                            }
                        }
                        Err(status) => refused(&status),
                    };
                    // The link may have ended: the forwarding side then answered the caller.
                    let _ = down.send(item(id, Kind::Answer(answer))).await;
                };
                tokio::spawn(task.instrument(span));
                // A move in flight is decided whatever becomes of the link.
                None
            }
            Some(Called::Watch(watch)) => {
                let span = span(&metadata, "/fairdeal.tables.v1.TablesService/Watch");
                let task = async move {
                    let opened = match self.called(metadata, watch).await {
                        Ok(request) => self.api.watch(request).await,
                        Err(status) => Err(status),
                    };
                    let (metadata, mut stream) = match opened {
                        Ok(response) => {
                            let (metadata, stream, _) = response.into_parts();
                            (metadata, stream)
                        }
                        Err(status) => {
                            let _ = down.send(item(id, Kind::Answer(refused(&status)))).await;
                            return;
                        }
                    };
                    let opened = pb::PeerAnswer {
                        metadata: entries(&metadata, |_| true),
                        result: Some(Answered::Watching(true)),
                    };
                    if down.send(item(id, Kind::Answer(opened))).await.is_err() {
                        return;
                    }
                    while let Some(next) = stream.next().await {
                        let kind = match next {
                            Ok(message) => Kind::Message(message),
                            Err(status) => {
                                let _ = down
                                    .send(item(id, Kind::Failed(carried_status(&status))))
                                    .await;
                                return;
                            }
                        };
                        if down.send(item(id, kind)).await.is_err() {
                            return;
                        }
                    }
                    let _ = down.send(item(id, Kind::Ended(true))).await;
                };
                Some(tokio::spawn(task.instrument(span)).abort_handle())
            }
            None => {
                tokio::spawn(async move {
                    let status = Status::invalid_argument("call: no request");
                    let _ = down.send(item(id, Kind::Answer(refused(&status)))).await;
                });
                None
            }
        }
    }

    /// The call `message` with `metadata`, its caller's token verified (the caller put in
    /// its extensions, as the API's auth layer does).
    async fn called<T>(&self, metadata: MetadataMap, message: T) -> Result<Request<T>, Status> {
        let mut request = Request::from_parts(metadata, tonic::Extensions::default(), message);
        self.authn.authenticate(&mut request).await?;
        Ok(request)
    }
}

/// The span of a call on a link, as the server makes one for a call to `path` (a child of
/// the caller's trace context it carries).
fn span(metadata: &MetadataMap, path: &'static str) -> tracing::Span {
    let mut request = http::Request::new(());
    *request.uri_mut() = http::Uri::from_static(path);
    *request.headers_mut() = metadata.clone().into_headers();
    fairdeal_kit::propagation::grpc_server_span(&request)
}

/// A call's refusal as the link carries it.
fn refused(status: &Status) -> pb::PeerAnswer {
    pb::PeerAnswer {
        metadata: std::collections::BTreeMap::new(),
        result: Some(Answered::Status(carried_status(status))),
    }
}

/// The stream of `Link`.
type LinkStream = Pin<Box<dyn Stream<Item = Result<pb::LinkResponse, Status>> + Send>>;

#[tonic::async_trait]
impl TablesPeerService for PeerApi {
    type LinkStream = LinkStream;

    async fn link(
        &self,
        request: Request<tonic::Streaming<pb::LinkRequest>>,
    ) -> Result<Response<Self::LinkStream>, Status> {
        let (down, written) = mpsc::channel(OWNER_QUEUE);
        tokio::spawn(self.clone().serve(request.into_inner(), down));
        let frames = ReceiverStream::new(written)
            .ready_chunks(BATCH)
            .map(|items| Ok(pb::LinkResponse { items }));
        Ok(Response::new(Box::pin(frames)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use pb::tables_peer_service_server::TablesPeerServiceServer;
    use tonic::transport::Endpoint;
    use tonic::transport::server::TcpIncoming;

    use super::*;

    /// An owner playing a script: a move is answered version 7 with an owner header, or
    /// refused ABORTED with the current version in its metadata (command `stale`), or ends
    /// the link unanswered (command `end`); a watch opens and sends `messages` messages at
    /// once. What it is told to cancel goes to `cancelled`, the tokens it sees to `tokens`.
    #[derive(Clone)]
    struct Scripted {
        messages: u64,
        cancelled: mpsc::UnboundedSender<u64>,
        tokens: mpsc::UnboundedSender<String>,
    }

    impl Scripted {
        async fn serve(
            self,
            mut calls: tonic::Streaming<pb::LinkRequest>,
            down: mpsc::Sender<pb::PeerItem>,
        ) {
            while let Ok(Some(frame)) = calls.message().await {
                for pb::PeerItem { id, kind } in frame.items {
                    match kind {
                        Some(Kind::Call(call)) => {
                            let token = call.metadata.get("authorization").cloned();
                            let _ = self.tokens.send(token.unwrap_or_default());
                            match call.request {
                                Some(Called::Act(act)) if act.command_id == "end" => return,
                                Some(Called::Act(act)) => {
                                    let answer = if act.command_id == "stale" {
                                        let mut status =
                                            Status::aborted("stale: the table is at version 9");
                                        status.metadata_mut().insert(
                                            "fairdeal-table-version",
                                            MetadataValue::from(9u64),
                                        );
                                        refused(&status)
                                    } else {
                                        pb::PeerAnswer {
                                            metadata: [(
                                                "fairdeal-table-owner".to_owned(),
                                                "http://b".to_owned(),
                                            )]
                                            .into(),
                                            result: Some(Answered::Act(pb::ActResponse {
                                                version: 7,
                                            })),
                                        }
                                    };
                                    down.send(item(id, Kind::Answer(answer))).await.unwrap();
                                }
                                Some(Called::Watch(_)) => {
                                    let opened = pb::PeerAnswer {
                                        metadata: std::collections::BTreeMap::new(),
                                        result: Some(Answered::Watching(true)),
                                    };
                                    down.send(item(id, Kind::Answer(opened))).await.unwrap();
                                    for version in 1..=self.messages {
                                        let message = pb::WatchResponse {
                                            version,
                                            ..Default::default()
                                        };
                                        down.send(item(id, Kind::Message(message))).await.unwrap();
                                    }
                                }
                                None => {}
                            }
                        }
                        Some(Kind::Cancel(_)) => {
                            let _ = self.cancelled.send(id);
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    #[tonic::async_trait]
    impl TablesPeerService for Scripted {
        type LinkStream = LinkStream;

        async fn link(
            &self,
            request: Request<tonic::Streaming<pb::LinkRequest>>,
        ) -> Result<Response<Self::LinkStream>, Status> {
            let (down, written) = mpsc::channel(OWNER_QUEUE);
            tokio::spawn(self.clone().serve(request.into_inner(), down));
            let frames = ReceiverStream::new(written)
                .ready_chunks(BATCH)
                .map(|items| Ok(pb::LinkResponse { items }));
            Ok(Response::new(Box::pin(frames)))
        }
    }

    /// A link to a scripted owner, and what the owner was told to cancel and saw as tokens.
    async fn linked(
        messages: u64,
    ) -> (
        Arc<Link>,
        mpsc::UnboundedReceiver<u64>,
        mpsc::UnboundedReceiver<String>,
    ) {
        let (cancelled, cancels) = mpsc::unbounded_channel();
        let (tokens, seen) = mpsc::unbounded_channel();
        let owner = Scripted {
            messages,
            cancelled,
            tokens,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(TablesPeerServiceServer::new(owner))
                .serve_with_incoming(TcpIncoming::from(listener)),
        );
        let channel = Endpoint::from_shared(address.clone())
            .unwrap()
            .connect_lazy();
        (Link::open(channel, address), cancels, seen)
    }

    fn act(command_id: &str) -> Request<pb::ActRequest> {
        let mut request = Request::new(pb::ActRequest {
            command_id: command_id.into(),
            ..Default::default()
        });
        request
            .metadata_mut()
            .insert("authorization", "Bearer x".parse().unwrap());
        request
            .metadata_mut()
            .insert("user-agent", "y".parse().unwrap());
        request
    }

    #[tokio::test]
    async fn a_move_is_answered_as_its_owner_answered_it() {
        let (link, _, mut tokens) = linked(0).await;
        let answer = link.act(act("a")).await.unwrap();
        assert_eq!(answer.get_ref().version, 7);
        assert_eq!(
            answer.metadata().get("fairdeal-table-owner").unwrap(),
            "http://b"
        );
        // The caller's token went with it, and nothing else of its metadata.
        assert_eq!(tokens.recv().await.unwrap(), "Bearer x");
        let refused = link.act(act("stale")).await.unwrap_err();
        assert_eq!(refused.code(), Code::Aborted);
        assert_eq!(refused.message(), "stale: the table is at version 9");
        assert_eq!(
            refused.metadata().get("fairdeal-table-version").unwrap(),
            "9"
        );
    }

    #[tokio::test]
    async fn a_move_waiting_on_a_link_that_ends_is_cut_off() {
        let (link, _, _) = linked(0).await;
        let refused = link.act(act("end")).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable);
        assert!(crate::route::unreachable(&refused));
        assert!(link.ended());
        // Nothing more goes on an ended link.
        assert_eq!(
            link.act(act("a")).await.unwrap_err().code(),
            Code::Unavailable
        );
    }

    #[tokio::test]
    async fn a_watch_read_too_slowly_is_closed_here_and_at_its_owner() {
        let extra = 10;
        let (link, mut cancels, _) = linked(RELAYED as u64 + extra).await;
        let request = Request::new(pb::WatchRequest::default());
        let mut watch = link.watch(request).await.unwrap().into_inner();
        // Its client reads nothing while the owner sends more than the watch holds: the
        // link closes the watch rather than wait, and has the owner close it too.
        assert_eq!(cancels.recv().await.unwrap(), watch.id);
        let mut versions = Vec::new();
        while let Some(down) = watch.next().await {
            let Down::Message(message) = down else {
                panic!("{down:?}")
            };
            versions.push(message.version);
        }
        // What it held (the opening answer may have taken a place) is read in order, then
        // it ends (to be opened again after the last).
        let held = versions.len() as u64;
        assert!(held >= RELAYED as u64 - 1, "{held}");
        assert_eq!(versions, (1..=held).collect::<Vec<_>>());
        // The link goes on: the next call is answered.
        assert_eq!(link.act(act("a")).await.unwrap().get_ref().version, 7);
    }

    #[tokio::test]
    async fn a_watch_dropped_by_its_client_is_closed_at_its_owner() {
        let (link, mut cancels, _) = linked(3).await;
        let watch = link
            .watch(Request::new(pb::WatchRequest::default()))
            .await
            .unwrap()
            .into_inner();
        let id = watch.id;
        drop(watch);
        assert_eq!(cancels.recv().await.unwrap(), id);
    }
}
