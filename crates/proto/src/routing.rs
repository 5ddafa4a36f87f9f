//! The tables API's routing contract, shared by its replicas and its clients (issue 33):
//! the response header in which a table's owner names itself, and when a replica called for
//! a table counts as not reached (so the call is served elsewhere) rather than as answering.

use tonic::{Code, Status};

/// Response metadata key naming the table's owner (its `advertise_url`), set by the owner on
/// every answer for a table it serves, and passed back through a forwarding replica: a
/// client that can reach the replicas' own addresses (a backend in the same cluster) sends
/// its next calls for the table there and saves the forwarding hop, as a Colyseus client
/// joins the process its seat reservation names. Clients that ignore it are served all the
/// same.
pub const OWNER: &str = "fairdeal-table-owner";

/// Whether `status` says the replica called could not be reached (rather than that it
/// answered): UNAVAILABLE, or any status made from a transport error (it has a source; an
/// answer read from the replica's trailers has none), such as the HTTP/2 error of a
/// connection the replica reset as it died or drained, which tonic reports as INTERNAL. A
/// replica answers UNAVAILABLE itself only when a dependency is down or the table has just
/// left it (its lease lost: nothing written); the call is then served elsewhere, and a move
/// is recorded once by its command id.
pub fn unreachable(status: &Status) -> bool {
    status.code() == Code::Unavailable || std::error::Error::source(status).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transport_failure_or_unavailable_is_unreachable_an_answer_is_not() {
        assert!(unreachable(&Status::unavailable("owner gone")));
        let reset = Status::from_error(Box::new(std::io::Error::other("connection reset")));
        assert_eq!(reset.code(), Code::Unknown);
        assert!(unreachable(&reset));
        assert!(!unreachable(&Status::not_found("table_id: no such table")));
        assert!(!unreachable(&Status::internal("an answer from the owner")));
    }
}
