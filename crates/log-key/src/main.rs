//! `fairdeal-log-key NAME`: prints a new Ed25519 signing key for the ledger's checkpoints
//! (the secret, for the ledger's `signing_key`) and its verifier key (public, for
//! `fairdeal audit --log-key`), one per line, in Go's signed-note formats
//! (`fairdeal_tlog::NoteSigner`).
//!
//! A binary of its own so that generating a key builds the log's primitives and the OS
//! randomness crate only, not a service: `cargo xtask deploy-secrets` runs it on a fresh
//! clone, where building the ledger service took minutes. `fairdeal-ledger --generate-key
//! NAME` does the same inside the service's image.
#![forbid(unsafe_code)]

use std::io::Write as _;
use std::process::ExitCode;

use zeroize::Zeroizing;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name] = args.as_slice() else {
        let _ = writeln!(
            std::io::stderr(),
            "usage: fairdeal-log-key NAME (the log's origin, e.g. fairdeal-ledger)"
        );
        return ExitCode::from(2);
    };
    match generate(name) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "fairdeal-log-key: {error}");
            ExitCode::FAILURE
        }
    }
}

fn generate(name: &str) -> Result<(), String> {
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(seed.as_mut()).map_err(|e| format!("OS randomness: {e}"))?;
    let signer =
        fairdeal_tlog::NoteSigner::from_seed(name, &seed).map_err(|e| format!("key name: {e}"))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", signer.to_key_string().as_str())
        .and_then(|()| writeln!(out, "{}", signer.verifier()))
        .map_err(|e| format!("writing the keys: {e}"))
}
