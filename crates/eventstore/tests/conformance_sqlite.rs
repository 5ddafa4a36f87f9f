//! The conformance suite on the embedded backend: SQLite in a fresh temporary file per test.

fairdeal_eventstore::conformance_tests!(fairdeal_eventstore::conformance::SqliteBackend::create);
