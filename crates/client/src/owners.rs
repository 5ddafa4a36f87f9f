//! Following a table's owner. With several tables replicas, every answer for a table names
//! the replica that owns it in the `fairdeal-table-owner` response header (its
//! `advertise_url`; docs/deploy.md). Any replica serves every table, forwarding the calls
//! for another's tables there; a client that can reach the replicas' own addresses (a
//! backend in the same cluster) saves that hop by sending its next calls for the table to
//! the owner, as a Colyseus client joins the process its seat reservation names.
//!
//! [`Owners`] remembers, per table, the owner the last answer named, and keeps one (lazily
//! connected) channel per owner address; the players of one process share it
//! ([`crate::Player::following`]). A call for a table whose owner is known goes there;
//! when that owner cannot be reached (it died, or drained and stopped), the table is
//! forgotten and the call is sent at once through the player's own channel, whose replica
//! serves or forwards it and names the new owner.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use fairdeal_proto::fairdeal::tables::v1::tables_service_client::TablesServiceClient;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};

pub use fairdeal_proto::routing::OWNER;
pub(crate) use fairdeal_proto::routing::unreachable;

/// Tables remembered at most: past it, the oldest half is forgotten (their next calls go
/// through the player's own channel once, and learn the owner again).
const MOST_TABLES: usize = 4096;

/// Where each table's owner serves, as the answers last named it, and a channel to each
/// owner. Cheap to clone: clones share it.
#[derive(Debug, Clone, Default)]
pub struct Owners {
    inner: Arc<Mutex<Known>>,
}

#[derive(Debug, Default)]
struct Known {
    /// Table id -> the owner's address, and when it was learnt (a count).
    tables: HashMap<String, (String, u64)>,
    /// Owner address -> its client.
    clients: HashMap<String, TablesServiceClient<Channel>>,
    /// Counts what is learnt, to forget the oldest first.
    learnt: u64,
}

impl Owners {
    /// Nothing known yet.
    pub fn new() -> Self {
        Owners::default()
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The owner of `table_id` as last named, if any.
    pub fn owner_of(&self, table_id: &str) -> Option<String> {
        self.known()
            .tables
            .get(table_id)
            .map(|(address, _)| address.clone())
    }

    /// The owner's address and a client to it, for a call for `table_id`.
    pub(crate) fn client(&self, table_id: &str) -> Option<(String, TablesServiceClient<Channel>)> {
        let known = self.known();
        let (address, _) = known.tables.get(table_id)?;
        let client = known.clients.get(address)?;
        Some((address.clone(), client.clone()))
    }

    /// Learns from the `metadata` of an answer for `table_id` who owns it. A header that is
    /// no `http(s)://` address is ignored (the call was answered all the same).
    pub(crate) fn learn(&self, table_id: &str, metadata: &MetadataMap) {
        let Some(address) = metadata.get(OWNER).and_then(|v| v.to_str().ok()) else {
            return;
        };
        let mut known = self.known();
        if known
            .tables
            .get(table_id)
            .is_some_and(|(known, _)| known == address)
        {
            return;
        }
        if !known.clients.contains_key(address) {
            let Some(client) = connect(address) else {
                return;
            };
            known.clients.insert(address.to_owned(), client);
        }
        if known.tables.len() >= MOST_TABLES {
            forget_oldest_half(&mut known);
        }
        known.learnt += 1;
        let learnt = known.learnt;
        known
            .tables
            .insert(table_id.to_owned(), (address.to_owned(), learnt));
    }

    /// Forgets that `address` owns `table_id` (it could not be reached).
    pub(crate) fn forget(&self, table_id: &str, address: &str) {
        let mut known = self.known();
        if known
            .tables
            .get(table_id)
            .is_some_and(|(known, _)| known == address)
        {
            known.tables.remove(table_id);
        }
    }
}

/// Drops the older half of what is known, and the channels no table needs any more.
fn forget_oldest_half(known: &mut Known) {
    let mut ages: Vec<u64> = known.tables.values().map(|(_, learnt)| *learnt).collect();
    ages.sort_unstable();
    let keep_from = ages.get(ages.len() / 2).copied().unwrap_or(0);
    known.tables.retain(|_, (_, learnt)| *learnt >= keep_from);
    let used: std::collections::HashSet<String> =
        known.tables.values().map(|(a, _)| a.clone()).collect();
    known.clients.retain(|address, _| used.contains(address));
}

/// A lazily connected client to `address`, if it is an `http(s)://` URL.
fn connect(address: &str) -> Option<TablesServiceClient<Channel>> {
    if !(address.starts_with("http://") || address.starts_with("https://")) {
        return None;
    }
    let endpoint = Endpoint::from_shared(address.to_owned()).ok()?;
    Some(TablesServiceClient::new(endpoint.connect_lazy()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn naming(address: &str) -> MetadataMap {
        let mut metadata = MetadataMap::new();
        metadata.insert(OWNER, address.parse().unwrap());
        metadata
    }

    #[tokio::test]
    async fn an_answer_naming_the_owner_sends_the_tables_next_calls_there_until_forgotten() {
        let owners = Owners::new();
        assert!(owners.client("t").is_none());
        owners.learn("t", &MetadataMap::new());
        assert!(owners.client("t").is_none(), "no header, nothing learnt");
        owners.learn("t", &naming("http://10.0.0.7:50051"));
        let (address, _) = owners.client("t").unwrap();
        assert_eq!(address, "http://10.0.0.7:50051");
        assert_eq!(
            owners.clone().owner_of("t").unwrap(),
            address,
            "clones share"
        );
        // A newer answer names another owner (the table moved).
        owners.learn("t", &naming("http://10.0.0.8:50051"));
        assert_eq!(owners.owner_of("t").unwrap(), "http://10.0.0.8:50051");
        // Forgetting an owner no longer named changes nothing; forgetting the one named
        // sends the next call through the player's own channel again.
        owners.forget("t", "http://10.0.0.7:50051");
        assert!(owners.client("t").is_some());
        owners.forget("t", "http://10.0.0.8:50051");
        assert!(owners.client("t").is_none());
    }

    #[tokio::test]
    async fn a_header_that_is_no_address_is_ignored() {
        let owners = Owners::new();
        for bad in ["10.0.0.7:50051", "", "unix:/tmp/x", "http://[bad"] {
            owners.learn("t", &naming(bad));
            assert!(owners.client("t").is_none(), "{bad}");
        }
    }

    #[tokio::test]
    async fn past_the_limit_the_oldest_tables_are_forgotten_first() {
        let owners = Owners::new();
        for n in 0..MOST_TABLES {
            owners.learn(&format!("t{n}"), &naming("http://a:1"));
        }
        owners.learn("newest", &naming("http://b:1"));
        assert!(owners.owner_of("t0").is_none());
        assert!(owners.owner_of(&format!("t{}", MOST_TABLES - 1)).is_some());
        assert_eq!(owners.owner_of("newest").unwrap(), "http://b:1");
        assert!(owners.known().tables.len() <= MOST_TABLES / 2 + 1);
    }
}
