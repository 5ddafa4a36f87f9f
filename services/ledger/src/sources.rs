//! Generated from `fairdeal_server::SERVICES` by `cargo run -p fairdeal-server -- deployment`;
//! do not edit.

/// The services whose events the ledger takes in by default: every other service of the
/// platform.
pub const SOURCES: [&str; 6] = ["auth", "commitment", "dealing", "tables", "chat", "rating"];
