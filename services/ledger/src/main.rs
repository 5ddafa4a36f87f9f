//! The ledger service binary: the kit's host runs [`fairdeal_ledger::LedgerService`].
//!
//! `fairdeal-ledger --generate-key NAME` prints a new signing key (the secret, for
//! `--signing-key`) and its verifier key (public, for `fairdeal audit --log-key`), then exits.
#![forbid(unsafe_code)]

#[global_allocator]
static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;

fn main() -> anyhow::Result<()> {
    match std::env::args().collect::<Vec<_>>().as_slice() {
        [_, flag, name] if flag == "--generate-key" => {
            fairdeal_log_key::write_new_key(name, &mut std::io::stdout().lock())
                .map_err(anyhow::Error::msg)
        }
        _ => fairdeal_kit::host::main::<fairdeal_ledger::LedgerService>(),
    }
}
