//! The conformance suite on the store of record: PostgreSQL at `FAIRDEAL_TEST_POSTGRES_URL`
//! (`cargo xtask test` sets it; default 127.0.0.1:5432), a fresh `fairdeal_test_<uuid>`
//! database per test.

use fairdeal_eventstore::conformance::{self, PgBackend};

fairdeal_eventstore::conformance_tests!(PgBackend::create);

/// Only PostgreSQL has concurrent writers (SQLite serialises them), so this case runs here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_writers_never_skip() {
    conformance::run(
        PgBackend::create,
        conformance::interleaved_writers_never_skip,
    )
    .await;
}
