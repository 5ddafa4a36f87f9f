//! `fairdeal-server serve --target <service> [its flags...]`: runs one service of
//! [`SERVICES`] exactly as its own binary `fairdeal-<service>` does (flags, `FAIRDEAL_*`
//! environment, `--config` file, `--dump-config`, `--help`), so one image can run any service
//! of the platform; `--target all` is `up --no-demo`.

use std::ffi::OsString;

use fairdeal_kit::Hosted;

use crate::SERVICES;

/// The target that runs every service in one process (`up --no-demo`).
pub const ALL: &str = "all";

/// The names `--target` takes: every service's, then [`ALL`].
pub fn targets() -> Vec<&'static str> {
    SERVICES.iter().map(|s| s.name).chain([ALL]).collect()
}

/// The service named `name`.
pub fn find(name: &str) -> Option<&'static Hosted> {
    SERVICES.iter().find(|s| s.name == name)
}

/// Runs `service` with `args` (the service's own flags, without the program name), as its
/// binary's `main` does: load or exit, telemetry, build, serve until stopped.
pub async fn run(service: &Hosted, args: Vec<String>) -> anyhow::Result<()> {
    let program = OsString::from(format!("fairdeal-{}", service.name));
    let args = std::iter::once(program)
        .chain(args.into_iter().map(OsString::from))
        .collect();
    service.serve(args).await
}
