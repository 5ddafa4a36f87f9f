//! `fairdeal-log-key NAME`: prints a new Ed25519 signing key for the ledger's checkpoints
//! (the secret, for the ledger's `signing_key`) and its verifier key (public, for
//! `fairdeal audit --log-key`), one per line, in Go's signed-note formats
//! (`fairdeal_tlog::NoteSigner`).
//!
//! A binary of its own so that generating a key builds the log's primitives and the OS
//! randomness crate only, not a service: `cargo xtask deploy-secrets` runs it on a fresh
//! clone, where building the ledger service took minutes. `fairdeal-ledger --generate-key
//! NAME` calls the same library inside the service's image.
#![forbid(unsafe_code)]

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name] = args.as_slice() else {
        let _ = writeln!(
            std::io::stderr(),
            "usage: fairdeal-log-key NAME (the log's origin, e.g. fairdeal-ledger)"
        );
        return ExitCode::from(2);
    };
    match fairdeal_log_key::write_new_key(name, &mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "fairdeal-log-key: {error}");
            ExitCode::FAILURE
        }
    }
}
