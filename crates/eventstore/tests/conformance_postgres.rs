//! The conformance suite on the store of record: PostgreSQL at 127.0.0.1:5432 (override with
//! `FAIRDEAL_TEST_POSTGRES_URL`), a fresh `fairdeal_test_<uuid>` database per test.

fairdeal_eventstore::conformance_tests!(fairdeal_eventstore::conformance::PgBackend::create);
