//! Choosing moves as a client does: the engine's bot over the view `GetTable` returns
//! (`fairdeal_client`, the same code the demo and the smoke tests play with).

use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::act_request::Action;

/// The engine's heuristic bot choosing from `view` (the caller's `GetTable` view), as the
/// player at that seat; `None` when the caller has nothing to do.
pub(crate) fn choose(view: &pb::TableView, seed: u64) -> Option<Action> {
    fairdeal_client::choose(view, seed).expect("the service's view is readable")
}
