//! Routing a call to the table's owner (issue 33, "Routing"): with several replicas over
//! PostgreSQL, each table belongs to the replica holding its partition's lease
//! (`fairdeal_platform::ownership`), which decides its commands from memory and feeds its
//! watchers from what it appends. A call for a table reaching another replica is forwarded
//! there over gRPC, the caller's own metadata (its token, its trace context) passed on, and
//! the owner's answer (its status and metadata included) passed back; `Watch` streams are
//! relayed, and resumed from the last version relayed when the owner hands the table over or
//! goes away. Clients need not know: any replica, or a Service address spreading calls over
//! them, serves every table.
//!
//! A call is served where it arrived when routing cannot help: the table's partition is held
//! here, or by no live replica known (a failover in progress), or the owner cannot be
//! reached (it died: its lease expires within the ttl), or the call was forwarded already (a
//! route one round stale: the receiving replica never forwards twice). Served here, a read
//! is answered from the database; a command is decided only if the table is this replica's:
//! only the owner decides and writes a table (its appends are fenced by the partition's
//! lease, `Tables::with_ownership`). A command refused by that fence (nothing written: the
//! table left this replica meanwhile by a drain, or the route that sent it here is ahead of
//! this replica's own keeper) is decided here again once the partition is, or sent once to
//! the owner the routes name next ([`Router::after_fence`]), so a command in flight during a
//! drain is answered. Only when neither comes in time (a failover: the dead owner's lease
//! has not expired yet) is it refused UNAVAILABLE; the client sends it again with the same
//! command id, which is applied once whoever serves it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use fairdeal_kit::metrics::{Counter, KeyValue};
use fairdeal_platform::ownership::{Held, Routes, epoch_of, held_of, partition_of};
use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use tokio::sync::{mpsc, watch};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::timers::Ownership;

/// Metadata key set on a forwarded call (to the forwarding replica's name): the owner
/// serves it, wherever its routes point.
pub const FORWARDED_BY: &str = "fairdeal-forwarded-by";

/// Metadata key set on a call handed over to a table's new owner after its table left the
/// replica serving it ([`Router::after_fence`]): it is not sent on again.
pub const HANDED_OVER: &str = "fairdeal-handed-over";

/// How long a command refused because its table just left this replica (or whose owner
/// could not be reached) waits for the routes to name a new owner (or for its own keeper to
/// publish the partition) before it is answered UNAVAILABLE ([`Router::after_fence`]). A
/// drain hands a partition over within a round trip; a dead owner's lease expires within
/// [`crate::startup::LEASE_TTL`] of its last renewal and a survivor's next round takes it,
/// and the one after publishes it to every replica: so a command reaching a survivor while
/// its table's owner has just died waits out the failover and is decided by the new owner,
/// rather than refused (the `handover_wait_outlasts_a_failover` test holds the bound).
pub const HANDOVER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub use fairdeal_proto::routing::{OWNER, unreachable};

/// A client of another replica.
pub type Peer = TablesServiceClient<Channel>;

/// Where each table's owner serves, as this replica's keeper last read it, and one
/// (lazily connected) channel per peer.
#[derive(Debug)]
pub struct Router {
    /// This replica's name among the lease owners.
    me: String,
    /// The metadata value of a call this replica forwards (its name).
    by: MetadataValue<tonic::metadata::Ascii>,
    /// The partitions held here.
    ownership: Ownership,
    /// The keeper's routes.
    routes: watch::Receiver<Routes>,
    /// A channel per peer address.
    peers: Mutex<HashMap<String, Peer>>,
    /// `fairdeal.tables.forwarded`.
    forwarded: Counter<u64>,
    /// Where this replica serves, as the [`OWNER`] header says it (`None`: it names itself
    /// to nobody).
    address: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Router {
    /// A router for the replica named `me`, which holds what `ownership` says and learns the
    /// others from `routes`.
    pub fn new(me: &str, ownership: Ownership, routes: watch::Receiver<Routes>) -> Self {
        Router {
            me: me.to_owned(),
            // A replica's name is its host name and a UUID: ASCII.
            by: MetadataValue::try_from(me).unwrap_or_else(|_| MetadataValue::from_static("")),
            ownership,
            routes,
            peers: Mutex::new(HashMap::new()),
            forwarded: fairdeal_kit::metrics::counter(
                "fairdeal.tables.forwarded",
                "Calls for a table another replica owns, forwarded to it",
                "{call}",
            ),
            address: None,
        }
    }

    /// The same router naming `address` (this replica's `advertise_url`) in the [`OWNER`]
    /// header of the answers for the tables it owns.
    #[must_use]
    pub fn serving_at(mut self, address: &str) -> Self {
        self.address = MetadataValue::try_from(address)
            .ok()
            .filter(|_| !address.is_empty());
        self
    }

    /// `response`, for `table_id`, naming this replica in its [`OWNER`] header when it owns
    /// the table (and so answered as its owner).
    pub fn hint<R>(&self, table_id: &Uuid, mut response: Response<R>) -> Response<R> {
        if let Some(address) = &self.address
            && self.ownership.owns(table_id)
        {
            response.metadata_mut().insert(OWNER, address.clone());
        }
        response
    }

    /// The replica to forward `request` for `table_id` to, with the call to send it, or
    /// `None` to serve it here (see the module's rules).
    pub fn forward<T: Clone>(&self, request: &Request<T>, table_id: &Uuid) -> Option<Forward<T>> {
        if request.metadata().contains_key(FORWARDED_BY) || self.ownership.owns(table_id) {
            return None;
        }
        let address = {
            let routes = self.routes.borrow();
            let route = routes.get(&partition_of(table_id, self.ownership.partitions))?;
            if route.owner == self.me || route.address.is_empty() {
                return None;
            }
            route.address.clone()
        };
        self.to(request, address)
    }

    /// Where the call `request` for `table_id` goes next, after it was refused here because
    /// this replica did not hold the table's partition when it was to be written (nothing
    /// was written): the table left by a drain between the routing check and the append, or
    /// the route that sent it here is ahead of this replica's own keeper (it has taken the
    /// partition and not yet published it). Waits, `within` at most ([`HANDOVER_WAIT`] for
    /// the API), for either: the partition held here under another lease than `decided_under`
    /// (the lease held when the call was decided, [`Router::held`]: a renewal that came
    /// too late loses the lease, and the keeper takes the partition again at a new epoch),
    /// or under the same lease renewed since (a renewal that committed just after the fence
    /// judged the lease expired: [`Held::after_fence`]) ([`AfterFence::Here`]: decide it
    /// again), or
    /// the routes naming another owner ([`AfterFence::There`]: the call on its way there, marked
    /// [`HANDED_OVER`]; a call handed over already is not sent on again, so calls never
    /// loop). [`AfterFence::Refused`] when neither comes in time (a failover waiting for a dead
    /// owner's lease to expire). So a command in flight when its table moves is decided by
    /// its new owner, not refused. `unreached`: the owner the call was just sent to and did
    /// not reach (a dead one, whose lease has yet to expire): routes still naming it are
    /// waited past, not followed.
    pub async fn after_fence<T: Clone>(
        &self,
        request: &Request<T>,
        table_id: &Uuid,
        decided_under: Option<Held>,
        unreached: Option<&str>,
        within: std::time::Duration,
    ) -> AfterFence<T> {
        let partition = partition_of(table_id, self.ownership.partitions);
        let handed_over = request.metadata().contains_key(HANDED_OVER);
        let (mut owned, mut routes) = (self.ownership.owned.clone(), self.routes.clone());
        let next = async {
            loop {
                if held_of(&owned.borrow_and_update(), partition)
                    .is_some_and(|now| now.after_fence(decided_under))
                {
                    return None;
                }
                if !handed_over
                    && let Some(route) = routes.borrow_and_update().get(&partition)
                    && route.owner != self.me
                    && !route.address.is_empty()
                    && unreached != Some(route.address.as_str())
                {
                    return Some(route.address.clone());
                }
                tokio::select! {
                    changed = owned.changed() => changed.ok()?,
                    changed = routes.changed() => changed.ok()?,
                }
            }
        };
        match tokio::time::timeout(within, next).await {
            Ok(None) if self.ownership.owns(table_id) => AfterFence::Here,
            Ok(Some(address)) => match self.to(request, address) {
                Some(mut forward) => {
                    forward
                        .call
                        .metadata_mut()
                        .insert(HANDED_OVER, MetadataValue::from_static("1"));
                    AfterFence::There(Box::new(forward))
                }
                None => AfterFence::Refused,
            },
            Ok(None) | Err(_) => AfterFence::Refused,
        }
    }

    /// The lease under which this replica holds `table_id`'s partition now (`None`: not
    /// held), as a call decided now remembers it for [`Router::after_fence`].
    pub fn held(&self, table_id: &Uuid) -> Option<Held> {
        self.ownership.held(table_id)
    }

    /// The epochs of the leases this replica holds now, by partition.
    pub fn epochs(&self) -> std::collections::BTreeMap<u32, i64> {
        self.ownership
            .owned
            .borrow()
            .iter()
            .map(|(partition, lease)| (*partition, lease.epoch))
            .collect()
    }

    /// Waits, `within` at most, until this replica no longer holds `partition` under the
    /// lease of epoch `decided_under` (it gave the partition up, or took it again at a new
    /// epoch): what a write refused under that lease waits for before it is tried again.
    pub async fn lease_changed(
        &self,
        partition: u32,
        decided_under: Option<i64>,
        within: std::time::Duration,
    ) {
        let mut owned = self.ownership.owned.clone();
        let changed = async {
            loop {
                let epoch = epoch_of(&owned.borrow_and_update(), partition);
                if epoch != decided_under || owned.changed().await.is_err() {
                    return;
                }
            }
        };
        // Past `within`, the caller tries again regardless.
        let _ = tokio::time::timeout(within, changed).await;
    }

    /// The replica to forward a `CreateTable` to when this one holds no partition (it has
    /// just started and the others have not drained to it yet, or it is cut off), so the
    /// table is born on a replica that may write it: the owner of a held partition drawn at
    /// random (creations spread as partitions do). `None`: create here (a partition is held
    /// here, the call was forwarded already, or no other replica holds one either).
    pub fn forward_creation<T: Clone>(&self, request: &Request<T>) -> Option<Forward<T>> {
        if request.metadata().contains_key(FORWARDED_BY)
            || !self.ownership.owned.borrow().is_empty()
        {
            return None;
        }
        let address = {
            let routes = self.routes.borrow();
            let others: Vec<&str> = routes
                .values()
                .filter(|route| route.owner != self.me && !route.address.is_empty())
                .map(|route| route.address.as_str())
                .collect();
            // Random bits of a fresh UUIDv7 pick one.
            let count = u32::try_from(others.len()).unwrap_or(u32::MAX);
            let drawn = partition_of(&Uuid::now_v7(), count);
            (*others.get(usize::try_from(drawn).unwrap_or(0))?).to_owned()
        };
        self.to(request, address)
    }

    /// `request` on its way to the replica at `address`, marked forwarded.
    fn to<T: Clone>(&self, request: &Request<T>, address: String) -> Option<Forward<T>> {
        let peer = self.peer(&address)?;
        let mut call = Request::new(request.get_ref().clone());
        *call.metadata_mut() = request.metadata().clone();
        call.metadata_mut().insert(FORWARDED_BY, self.by.clone());
        Some(Forward {
            peer,
            address,
            call,
            forwarded: self.forwarded.clone(),
        })
    }

    /// The channel to `address`, opened (lazily) on first use; `None` for an address that
    /// is no URL (it is logged: a replica announced a bad `advertise_url`).
    fn peer(&self, address: &str) -> Option<Peer> {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(peer) = peers.get(address) {
            return Some(peer.clone());
        }
        match fairdeal_kit::client::channel("advertise_url", address) {
            Ok(channel) => {
                let peer = TablesServiceClient::new(channel);
                peers.insert(address.to_owned(), peer.clone());
                Some(peer)
            }
            Err(error) => {
                tracing::warn!(%error, "a tables replica announced an unusable address");
                None
            }
        }
    }
}

/// Where a call refused here as its table's partition was not held goes next
/// ([`Router::after_fence`]).
#[derive(Debug)]
pub enum AfterFence<T> {
    /// The partition is held here now: decide the call here again.
    Here,
    /// To the owner the routes name now.
    There(Box<Forward<T>>),
    /// Nowhere in time: the refusal stands (UNAVAILABLE; the client retries).
    Refused,
}

/// A call on its way to the table's owner.
#[derive(Debug)]
pub struct Forward<T> {
    /// The owner.
    pub peer: Peer,
    /// Where it serves.
    pub address: String,
    /// The call: the caller's message and metadata, marked forwarded.
    pub call: Request<T>,
    /// `fairdeal.tables.forwarded`.
    forwarded: Counter<u64>,
}

impl<T> Forward<T> {
    /// Sends the call with `send`; `None` when the owner could not be reached (the caller
    /// serves it here), its answer otherwise.
    pub async fn send<R, F, Fut>(self, send: F) -> Option<Result<Response<R>, Status>>
    where
        F: FnOnce(Peer, Request<T>) -> Fut,
        Fut: Future<Output = Result<Response<R>, Status>>,
    {
        match send(self.peer, self.call).await {
            Err(status) if unreachable(&status) => {
                self.forwarded
                    .add(1, &[KeyValue::new("outcome", "unreachable")]);
                tracing::debug!(address = %self.address, status = %status.message(), "table owner unreachable; serving here");
                None
            }
            answer => {
                self.forwarded
                    .add(1, &[KeyValue::new("outcome", "answered")]);
                Some(answer)
            }
        }
    }

    /// As [`Forward::send`], noting the owner's address in `unreached` when it could not be
    /// reached.
    pub async fn send_noting<R, F, Fut>(
        self,
        send: F,
        unreached: &mut Option<String>,
    ) -> Option<Result<Response<R>, Status>>
    where
        F: FnOnce(Peer, Request<T>) -> Fut,
        Fut: Future<Output = Result<Response<R>, Status>>,
    {
        let address = self.address.clone();
        let answer = self.send(send).await;
        if answer.is_none() {
            *unreached = Some(address);
        }
        answer
    }
}

/// The router, shared by the API's handlers.
pub type SharedRouter = Arc<Router>;

/// The first pause before a relayed watch is opened again.
const RESUME_FIRST: std::time::Duration = std::time::Duration::from_millis(50);

/// The longest pause between attempts to open a relayed watch again.
const RESUME_LONGEST: std::time::Duration = std::time::Duration::from_secs(1);

/// A `Watch` with ownership: a stream of what it relays (the owner's stream, or a watch
/// served here), which opens the watch again from the last version relayed when that ends
/// without an error (the owner drained or died; the table moved away from this replica, or
/// to it): at the table's owner, or here. The client's stream goes on through every
/// handover; it ends when the server drains, after an error, or when the client goes (the
/// stream is dropped, and the watch it reads with it).
#[derive(Debug)]
pub struct Relay {
    /// The use cases (a watch served here).
    pub tables: crate::service::Tables,
    /// The routes.
    pub router: Option<SharedRouter>,
    /// The watching player.
    pub player: Uuid,
    /// The table.
    pub table_id: Uuid,
    /// The caller's metadata (its token), sent again with every reopening.
    pub metadata: tonic::metadata::MetadataMap,
    /// The caller's request; its `after_version` follows what was relayed.
    pub watch: pb::WatchRequest,
}

/// Where a relayed watch reads from.
#[derive(Debug)]
pub enum Source {
    /// The owner's stream.
    Owner(Box<tonic::Streaming<pb::WatchResponse>>),
    /// A watch served here.
    Here(mpsc::Receiver<Result<pb::WatchResponse, Status>>),
}

/// A relay between two messages.
struct Relaying {
    relay: Relay,
    /// Where `source` was opened (empty: here).
    address: String,
    /// What is read now; `None`: to be opened again after `pause`.
    source: Option<Source>,
    pause: std::time::Duration,
    /// An error was passed on: nothing follows.
    failed: bool,
}

/// What one read of a relay's source gave (a value of one step, moved on at once: boxing the
/// message would cost an allocation per message).
#[allow(clippy::large_enum_variant)]
enum Read {
    /// A message to pass on.
    Message(pb::WatchResponse),
    /// An error to pass on, the last thing the stream says.
    Failed(Status),
    /// The source ended without an error: open it again.
    Ended,
    /// The server drains: the stream ends.
    Drained,
}

impl Relay {
    /// The client's stream: `source`, opened at `address` (empty: here), and what follows
    /// it.
    pub fn stream(
        self,
        address: String,
        source: Source,
    ) -> impl tokio_stream::Stream<Item = Result<pb::WatchResponse, Status>> + Send + 'static {
        let state = Relaying {
            relay: self,
            address,
            source: Some(source),
            pause: RESUME_FIRST,
            failed: false,
        };
        futures::stream::unfold(state, |mut state| async move {
            loop {
                if state.failed {
                    return None;
                }
                let read = match state.source.as_mut() {
                    Some(source) => state.relay.read(source).await,
                    None => {
                        tokio::select! {
                            () = tokio::time::sleep(state.pause) => {}
                            () = state.relay.tables.shutdown.draining() => return None,
                        }
                        state.pause = (state.pause * 2).min(RESUME_LONGEST);
                        match state.relay.reopen(&state.address).await {
                            Ok((address, source)) => {
                                state.address = address;
                                state.source = Some(source);
                                continue;
                            }
                            Err(status) => Read::Failed(status),
                        }
                    }
                };
                match read {
                    Read::Message(message) => {
                        state.relay.watch.after_version = message.version;
                        state.pause = RESUME_FIRST;
                        return Some((Ok(message), state));
                    }
                    Read::Failed(status) => {
                        state.failed = true;
                        return Some((Err(status), state));
                    }
                    Read::Ended => state.source = None,
                    Read::Drained => return None,
                }
            }
        })
    }

    /// The next thing `source` gives.
    async fn read(&self, source: &mut Source) -> Read {
        match source {
            // A watch served here ends when the server drains (after which this one ends
            // too), or when the table moves to another replica (opened there).
            Source::Here(rx) => match rx.recv().await {
                Some(Ok(message)) => Read::Message(message),
                Some(Err(status)) => Read::Failed(status),
                None if self.tables.shutdown.is_draining() => Read::Drained,
                None => Read::Ended,
            },
            Source::Owner(stream) => {
                let next = tokio::select! {
                    next = stream.message() => next,
                    () = self.tables.shutdown.draining() => return Read::Drained,
                };
                match next {
                    Ok(Some(message)) => Read::Message(message),
                    // The owner ends a watch when it drains or the table moves on;
                    // UNAVAILABLE: it is gone. Either way the table is served elsewhere now.
                    Ok(None) => Read::Ended,
                    Err(status) if unreachable(&status) => Read::Ended,
                    Err(status) => Read::Failed(status),
                }
            }
        }
    }

    /// Opens the watch again after the last version relayed: at the table's owner when the
    /// routes name one other than the one whose stream just ended (`ended`), here otherwise.
    async fn reopen(&self, ended: &str) -> Result<(String, Source), Status> {
        let mut request = Request::new(self.watch.clone());
        *request.metadata_mut() = self.metadata.clone();
        let forward = self
            .router
            .as_ref()
            .and_then(|router| router.forward(&request, &self.table_id))
            .filter(|forward| forward.address != ended);
        if let Some(forward) = forward {
            let address = forward.address.clone();
            match forward
                .send(|mut p, r| async move { p.watch(r).await })
                .await
            {
                Some(Ok(stream)) => {
                    return Ok((address, Source::Owner(Box::new(stream.into_inner()))));
                }
                Some(Err(status)) => return Err(status),
                None => {}
            }
        }
        let rx = self
            .tables
            .watch(
                self.player,
                self.table_id,
                self.watch.after_version,
                self.watch.turn_views,
            )
            .await
            .map_err(crate::grpc::status)?;
        Ok((String::new(), Source::Here(rx)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use fairdeal_platform::ownership::{Lease, Owned, Route};

    use super::*;

    const PARTITIONS: u32 = 4;

    /// A router for replica `me` holding partition 0, the others' routes as given.
    fn router(routes: &[(u32, &str, &str)]) -> Router {
        let owned: Owned = [(
            0,
            Lease {
                partition: 0,
                owner: "me".into(),
                epoch: 1,
                expires_at_ms: i64::MAX,
            },
        )]
        .into();
        let routes: Routes = routes
            .iter()
            .map(|&(p, owner, address)| {
                (
                    p,
                    Route {
                        owner: owner.into(),
                        address: address.into(),
                    },
                )
            })
            .collect();
        Router::new(
            "me",
            Ownership {
                partitions: PARTITIONS,
                owned: watch::channel(owned).1,
            },
            watch::channel(routes).1,
        )
    }

    /// A table id in `partition`.
    fn table_in(partition: u32) -> Uuid {
        loop {
            let id = Uuid::now_v7();
            if partition_of(&id, PARTITIONS) == partition {
                return id;
            }
        }
    }

    fn request() -> Request<pb::GetTableRequest> {
        let mut request = Request::new(pb::GetTableRequest {
            table_id: "t".into(),
        });
        request
            .metadata_mut()
            .insert("authorization", "Bearer x".parse().unwrap());
        request
    }

    #[tokio::test]
    async fn a_call_for_another_replicas_table_goes_to_it_with_the_callers_metadata() {
        let router = router(&[
            (0, "me", "http://127.0.0.1:1"),
            (1, "b", "http://127.0.0.1:2"),
        ]);
        let forward = router.forward(&request(), &table_in(1)).unwrap();
        assert_eq!(forward.address, "http://127.0.0.1:2");
        let metadata = forward.call.metadata();
        assert_eq!(metadata.get("authorization").unwrap(), "Bearer x");
        assert_eq!(metadata.get(FORWARDED_BY).unwrap(), "me");
        assert_eq!(forward.call.get_ref().table_id, "t");
    }

    #[tokio::test]
    async fn a_call_is_served_here_when_forwarding_cannot_help() {
        let router = router(&[
            (0, "b", "http://127.0.0.1:2"),
            (1, "me", "http://127.0.0.1:1"),
            (2, "c", ""),
        ]);
        // Held here (whatever the routes, a round stale, say).
        assert!(router.forward(&request(), &table_in(0)).is_none());
        // The routes name this replica (the keeper's `owned` is a moment behind).
        assert!(router.forward(&request(), &table_in(1)).is_none());
        // An owner no one can reach, and no live owner at all.
        assert!(router.forward(&request(), &table_in(2)).is_none());
        assert!(router.forward(&request(), &table_in(3)).is_none());
        // Forwarded already: never forwarded twice.
        let router = router_to_b();
        let mut forwarded = request();
        forwarded
            .metadata_mut()
            .insert(FORWARDED_BY, "a".parse().unwrap());
        assert!(router.forward(&forwarded, &table_in(1)).is_none());
        assert!(router.forward(&request(), &table_in(1)).is_some());
    }

    fn router_to_b() -> Router {
        router(&[(1, "b", "http://127.0.0.1:2")])
    }

    fn lease(partition: u32) -> Lease {
        Lease {
            partition,
            owner: "me".into(),
            epoch: 2,
            expires_at_ms: 10_000,
        }
    }

    /// A router over `owned` and `routes`, with the senders that change them as this
    /// replica's keeper would.
    fn watched(
        owned: Owned,
        routes: Routes,
    ) -> (watch::Sender<Owned>, watch::Sender<Routes>, Router) {
        let (owned_tx, owned) = watch::channel(owned);
        let (routes_tx, routes) = watch::channel(routes);
        let ownership = Ownership {
            partitions: PARTITIONS,
            owned,
        };
        (owned_tx, routes_tx, Router::new("me", ownership, routes))
    }

    fn route(owner: &str, address: &str) -> Route {
        Route {
            owner: owner.into(),
            address: address.into(),
        }
    }

    /// Where a call refused here goes when, as it waits in [`Router::after_fence`]
    /// (`unreached`: the owner it just failed to reach), the routes come to name `owner`
    /// for `table`'s partition (1).
    async fn sent_once_routes_name(
        router: &Router,
        routes_tx: &watch::Sender<Routes>,
        table: &Uuid,
        unreached: Option<&str>,
        owner: Route,
    ) -> Forward<pb::GetTableRequest> {
        let call = request();
        let waiting = router.after_fence(&call, table, None, unreached, HANDOVER_WAIT);
        let named = async {
            tokio::task::yield_now().await;
            routes_tx.send_replace([(1, owner)].into());
        };
        let (next, ()) = tokio::join!(waiting, named);
        let AfterFence::There(forward) = next else {
            panic!("{next:?}")
        };
        *forward
    }

    #[tokio::test]
    async fn a_command_refused_as_its_table_moved_goes_where_it_went_once() {
        // This replica has just drained partition 1: it holds nothing, and its routes name
        // no owner for it yet.
        let (owned_tx, routes_tx, router) = watched(Owned::new(), Routes::new());
        let table = table_in(1);
        // The taker announces; this replica's keeper reads the routes again.
        let taker = route("b", "http://127.0.0.1:2");
        let forward = sent_once_routes_name(&router, &routes_tx, &table, None, taker).await;
        assert_eq!(forward.address, "http://127.0.0.1:2");
        let metadata = forward.call.metadata();
        assert_eq!(metadata.get("authorization").unwrap(), "Bearer x");
        assert_eq!(metadata.get(HANDED_OVER).unwrap(), "1");

        // At the taker, whose routes are ahead of its keeper's publication: a call handed
        // over is not sent on; it is decided there once the partition is held.
        let handed = forward.call;
        let waiting = router.after_fence(&handed, &table, None, None, HANDOVER_WAIT);
        let published = async {
            tokio::task::yield_now().await;
            owned_tx.send_replace([(1, lease(1))].into());
        };
        let (next, ()) = tokio::join!(waiting, published);
        assert!(matches!(next, AfterFence::Here), "{next:?}");

        // Neither in time (only this replica's own stale route is known): refused.
        owned_tx.send_replace(Owned::new());
        routes_tx.send_replace([(1, route("me", "http://127.0.0.1:1"))].into());
        let wait = std::time::Duration::from_millis(20);
        let next = router
            .after_fence(&request(), &table, None, None, wait)
            .await;
        assert!(matches!(next, AfterFence::Refused), "{next:?}");
        // A handed-over call whose table's routes name another: not sent on.
        routes_tx.send_replace([(1, route("b", "http://127.0.0.1:2"))].into());
        let next = router.after_fence(&handed, &table, None, None, wait).await;
        assert!(matches!(next, AfterFence::Refused), "{next:?}");
    }

    #[tokio::test]
    async fn a_command_fenced_as_its_lease_lapsed_is_decided_again_under_a_new_or_renewed_lease() {
        // This replica holds partition 1 at epoch 2, as its keeper last published; the lease
        // has lapsed in the database (a renewal came too late), so the append was fenced.
        let (owned_tx, _routes_tx, router) = watched(
            Owned::from([(1, lease(1))]),
            Routes::from([(1, route("me", ""))]),
        );
        let table = table_in(1);
        let decided_under = router.held(&table);
        assert_eq!(decided_under, Some(lease(1).held()));
        // Held still under the lease it was decided under: not decided again at once.
        let wait = std::time::Duration::from_millis(20);
        let next = router
            .after_fence(&request(), &table, decided_under, None, wait)
            .await;
        assert!(matches!(next, AfterFence::Refused), "{next:?}");
        // The keeper takes the partition again at a new epoch: decided again here.
        let call = request();
        let waiting = router.after_fence(&call, &table, decided_under, None, HANDOVER_WAIT);
        let taken_again = async {
            tokio::task::yield_now().await;
            let lease = Lease {
                epoch: 3,
                ..lease(1)
            };
            owned_tx.send_replace([(1, lease)].into());
        };
        let (next, ()) = tokio::join!(waiting, taken_again);
        assert!(matches!(next, AfterFence::Here), "{next:?}");

        // A renewal that raced the fence (the fence judged the lease expired, the renewal
        // committed just after and kept its epoch): decided again here once it is published.
        owned_tx.send_replace([(1, lease(1))].into());
        let call = request();
        let waiting = router.after_fence(&call, &table, decided_under, None, HANDOVER_WAIT);
        let renewed = async {
            tokio::task::yield_now().await;
            let lease = Lease {
                expires_at_ms: 13_000,
                ..lease(1)
            };
            owned_tx.send_replace([(1, lease)].into());
        };
        let (next, ()) = tokio::join!(waiting, renewed);
        assert!(matches!(next, AfterFence::Here), "{next:?}");
    }

    #[tokio::test]
    async fn a_command_whose_owner_died_waits_for_the_next_owner() {
        // The routes still name b, the owner the call just failed to reach (killed; its
        // lease has not expired yet): not followed again, but waited past.
        let (_owned_tx, routes_tx, router) =
            watched(Owned::new(), [(1, route("b", "http://127.0.0.1:2"))].into());
        let table = table_in(1);
        let wait = std::time::Duration::from_millis(20);
        let unreached = Some("http://127.0.0.1:2");
        let next = router
            .after_fence(&request(), &table, None, unreached, wait)
            .await;
        assert!(matches!(next, AfterFence::Refused), "{next:?}");
        // A survivor takes the partition: the call goes there.
        let survivor = route("c", "http://127.0.0.1:3");
        let forward = sent_once_routes_name(&router, &routes_tx, &table, unreached, survivor).await;
        assert_eq!(forward.address, "http://127.0.0.1:3");
    }

    #[test]
    fn handover_wait_outlasts_a_failover() {
        // A dead owner's last renewal is at most a ttl old when it dies; a survivor's round
        // takes the partition within a round of the expiry, and the routes every replica
        // reads name it within another.
        let failover = crate::startup::LEASE_TTL + crate::startup::LEASE_ROUND * 2;
        assert!(
            HANDOVER_WAIT >= failover,
            "{HANDOVER_WAIT:?} < {failover:?}"
        );
    }

    #[tokio::test]
    async fn an_unreachable_owner_leaves_the_call_to_this_replica() {
        // Nothing listens on port 1.
        let router = router(&[(1, "b", "http://127.0.0.1:1")]);
        let forward = router.forward(&request(), &table_in(1)).unwrap();
        let answer = forward
            .send(|mut p, r| async move { p.get_table(r).await })
            .await;
        assert!(answer.is_none());
    }
}
