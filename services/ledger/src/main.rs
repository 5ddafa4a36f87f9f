//! The ledger service binary: load settings, start telemetry, serve.
//!
//! `fairdeal-ledger --generate-key NAME` prints a new signing key (the secret, for
//! `--signing-key`) and its verifier key (public, for `fairdeal audit --log-key`), then exits.
#![forbid(unsafe_code)]

#[global_allocator]
static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;

use std::io::Write;

use anyhow::Context;
use fairdeal_ledger::{Application, LedgerSettings};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, name] = args.as_slice()
        && flag == "--generate-key"
    {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).context("OS randomness")?;
        let signer = fairdeal_tlog::NoteSigner::from_seed(name, &seed).context("key name")?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", signer.to_key_string().as_str())?;
        writeln!(out, "{}", signer.verifier())?;
        return Ok(());
    }
    let config = fairdeal_kit::config::load_or_exit::<LedgerSettings>("ledger");
    let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
    let app = Application::build(config).await.context("starting")?;
    app.run_until_stopped().await.context("serving")?;
    Ok(())
}
