//! `fairdeal-auth`: loads the configuration, starts telemetry, runs the service.

use fairdeal_auth::config::AuthSettings;
use fairdeal_auth::startup::Application;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = fairdeal_kit::config::load_or_exit::<AuthSettings>("auth");
    let _telemetry = fairdeal_kit::telemetry::init(&config.common)?;
    let app = Application::build(config).await?;
    app.run_until_stopped().await
}
