//! `telemetry::init` installs the process-wide subscriber. It gets its own test binary
//! because a global subscriber can be installed once per process.

use std::collections::BTreeMap;

use fairdeal_kit::config::CommonConfig;
use fairdeal_kit::propagation;
use fairdeal_kit::telemetry::{self, TelemetryError};

#[tokio::test]
async fn init_installs_tracing_with_propagation_once() {
    let mut common = CommonConfig::with_defaults("kit-test").unwrap();
    // Logs off: traces must still flow, the log filter governs log lines only.
    common.log = Some("off".to_owned());
    let guard = telemetry::init(&common).unwrap();

    let mut carrier = BTreeMap::new();
    tracing::info_span!("producer").in_scope(|| propagation::inject_current(&mut carrier));
    assert!(
        carrier.contains_key(propagation::TRACEPARENT),
        "the global subscriber carries OpenTelemetry context: {carrier:?}"
    );

    assert!(matches!(
        telemetry::init(&common),
        Err(TelemetryError::AlreadyInstalled(_))
    ));
    guard.shutdown().unwrap();
}
