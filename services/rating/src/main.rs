//! The rating service binary: load settings, start telemetry, serve.
#![forbid(unsafe_code)]

#[global_allocator]
static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;

use anyhow::Context;
use fairdeal_rating_service::{Application, RatingSettings};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = fairdeal_kit::config::load_or_exit::<RatingSettings>("rating");
    let _telemetry = fairdeal_kit::telemetry::init(&config.common).context("telemetry")?;
    let app = Application::build(config).await.context("starting")?;
    app.run_until_stopped().await.context("serving")?;
    Ok(())
}
