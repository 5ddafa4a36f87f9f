//! A new Ed25519 signing key for the ledger's checkpoints (the secret, for the ledger's
//! `signing_key`) and its verifier key (public, for `fairdeal audit --log-key`), in Go's
//! signed-note formats (`fairdeal_tlog::NoteSigner`): what `fairdeal-log-key NAME` and
//! `fairdeal-ledger --generate-key NAME` print.
#![forbid(unsafe_code)]

use std::io::Write;

use zeroize::Zeroizing;

/// Writes a new key pair named `name` (the log's origin) to `out`: the signing key on the
/// first line, the verifier key on the second.
pub fn write_new_key(name: &str, out: &mut impl Write) -> Result<(), String> {
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(seed.as_mut()).map_err(|e| format!("OS randomness: {e}"))?;
    let signer =
        fairdeal_tlog::NoteSigner::from_seed(name, &seed).map_err(|e| format!("key name: {e}"))?;
    writeln!(out, "{}", signer.to_key_string().as_str())
        .and_then(|()| writeln!(out, "{}", signer.verifier()))
        .map_err(|e| format!("writing the keys: {e}"))
}
