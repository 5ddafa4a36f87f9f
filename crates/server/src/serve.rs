//! `fairdeal-server serve --target <service> [its flags...]`: runs one service exactly as its
//! own binary `fairdeal-<service>` does (flags, `FAIRDEAL_*` environment, `--config` file,
//! `--dump-config`, `--help`), so one image can run any service of the platform.

use anyhow::Context as _;

/// What `serve` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// The auth service (`fairdeal-auth`).
    Auth,
    /// The seed-commitment service (`fairdeal-commitment`).
    Commitment,
    /// The dealing service (`fairdeal-dealing`).
    Dealing,
    /// The tables service (`fairdeal-tables`).
    Tables,
    /// The chat service (`fairdeal-chat`).
    Chat,
    /// The rating service (`fairdeal-rating`).
    Rating,
    /// The ledger (`fairdeal-ledger`).
    Ledger,
}

impl Target {
    /// The service's name (its binary is `fairdeal-<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Auth => "auth",
            Target::Commitment => "commitment",
            Target::Dealing => "dealing",
            Target::Tables => "tables",
            Target::Chat => "chat",
            Target::Rating => "rating",
            Target::Ledger => "ledger",
        }
    }
}

/// Runs `target` with `args` (the service's own command line; the first is the program
/// name), as its binary's `main` does: load or exit, telemetry, build, serve until stopped.
pub async fn run(target: Target, args: Vec<String>) -> anyhow::Result<()> {
    use fairdeal_kit::config::load_args_or_exit;
    let name = target.name();
    match target {
        Target::Auth => {
            let config = load_args_or_exit::<fairdeal_auth::config::AuthSettings, _, _>(name, args);
            let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
            let app = fairdeal_auth::Application::build(config)
                .await
                .context("starting")?;
            app.run_until_stopped().await.context("serving")?;
        }
        Target::Commitment => {
            let config =
                load_args_or_exit::<fairdeal_commitment::CommitmentSettings, _, _>(name, args);
            let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
            let app = fairdeal_commitment::Application::build(config)
                .await
                .context("starting")?;
            app.run_until_stopped().await.context("serving")?;
        }
        Target::Dealing => {
            let config = load_args_or_exit::<fairdeal_dealing::DealingSettings, _, _>(name, args);
            let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
            let app = fairdeal_dealing::Application::build(config)
                .await
                .context("starting")?;
            app.run_until_stopped().await.context("serving")?;
        }
        Target::Tables => {
            let config = load_args_or_exit::<fairdeal_tables::TablesSettings, _, _>(name, args);
            let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
            let app = fairdeal_tables::Application::build(config)
                .await
                .context("starting")?;
            app.run_until_stopped().await.context("serving")?;
        }
        Target::Chat => {
            let config = load_args_or_exit::<fairdeal_chat::ChatSettings, _, _>(name, args);
            let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
            let app = fairdeal_chat::Application::build(config)
                .await
                .context("starting")?;
            app.run_until_stopped().await.context("serving")?;
        }
        Target::Rating => {
            let config =
                load_args_or_exit::<fairdeal_rating_service::RatingSettings, _, _>(name, args);
            let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
            let app = fairdeal_rating_service::Application::build(config)
                .await
                .context("starting")?;
            app.run_until_stopped().await.context("serving")?;
        }
        Target::Ledger => {
            let config = load_args_or_exit::<fairdeal_ledger::LedgerSettings, _, _>(name, args);
            let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
            let app = fairdeal_ledger::Application::build(config)
                .await
                .context("starting")?;
            app.run_until_stopped().await.context("serving")?;
        }
    }
    Ok(())
}
