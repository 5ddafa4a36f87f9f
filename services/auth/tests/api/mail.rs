//! RequestPasswordReset and ResendConfirmation: limited per address and per client without a
//! word, answered the same for every address, and as fast for a known address as for an
//! unknown one.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use fairdeal_proto::fairdeal::auth::v1 as pb;
use pb::auth_service_client::AuthServiceClient;
use tonic::transport::Channel;

use crate::helpers::*;
use crate::on_both_backends;

/// What a caller can see of an answer: the status code and message, and the metadata keys.
type Seen = (tonic::Code, String, Vec<String>);

fn seen<T>(result: Result<tonic::Response<T>, tonic::Status>) -> Seen {
    let keys = |m: &tonic::metadata::MetadataMap| {
        let mut k: Vec<String> = m.keys().map(|k| format!("{k:?}")).collect();
        k.sort();
        k
    };
    match result {
        Ok(r) => (tonic::Code::Ok, String::new(), keys(r.metadata())),
        Err(s) => (s.code(), s.message().to_owned(), keys(s.metadata())),
    }
}

async fn reset(client: &mut AuthServiceClient<Channel>, email: &str) -> Seen {
    seen(
        client
            .request_password_reset(pb::RequestPasswordResetRequest {
                email: email.into(),
            })
            .await,
    )
}

async fn resend(client: &mut AuthServiceClient<Channel>, email: &str) -> Seen {
    seen(
        client
            .resend_confirmation(pb::ResendConfirmationRequest {
                email: email.into(),
            })
            .await,
    )
}

/// 30 RequestPasswordReset and 30 ResendConfirmation for each of two addresses, all at once,
/// and the same for an unknown address: every answer is the same empty success, and the
/// mails written are at most the limits.
async fn flood(app: &TestApp, addresses: &[String]) -> HashSet<Seen> {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..30 {
        for address in addresses {
            let mut client = app.client.clone();
            let address = address.clone();
            tasks.spawn(async move {
                if i % 2 == 0 {
                    (
                        reset(&mut client, &address).await,
                        resend(&mut client, &address).await,
                    )
                } else {
                    (
                        resend(&mut client, &address).await,
                        reset(&mut client, &address).await,
                    )
                }
            });
        }
    }
    let mut answers = HashSet::new();
    while let Some(pair) = tasks.join_next().await {
        let (a, b) = pair.unwrap();
        answers.insert(a);
        answers.insert(b);
    }
    answers
}

async fn mails_to(app: &TestApp, address: &str) -> usize {
    app.mails()
        .await
        .iter()
        .filter(|(to, _)| to == address)
        .count()
}

/// The address limit alone (a generous client limit): 3 mails per address, whatever is asked.
async fn per_address_limit(backend: Backend) {
    let res = Resources::new(backend).await;
    let clock = std::sync::Arc::new(fairdeal_authn::ManualClock::starting_now());
    let mut app = spawn_with(&res, clock, &["--mail-per-client", "1000"]).await;
    let names = [unique_name(), unique_name()];
    let addresses: Vec<String> = names.iter().map(|n| format!("{n}@example.com")).collect();
    for (name, address) in names.iter().zip(&addresses) {
        app.register(name, address).await.unwrap();
    }
    let mut flooded = addresses.clone();
    flooded.push(format!("{}@example.com", unique_name()));
    let answers = flood(&app, &flooded).await;
    assert_eq!(answers.len(), 1, "one answer for all: {answers:?}");
    let answer = answers.into_iter().next().unwrap();
    assert_eq!((answer.0, answer.1.as_str()), (tonic::Code::Ok, ""));
    // The registration's confirmation and three more, to each address.
    for address in &addresses {
        assert_eq!(mails_to(&app, address).await, 1 + 3, "{address}");
    }
    assert_eq!(app.mails().await.len(), 2 * 4, "nothing else was written");
    // An hour later, the address may be sent mail again.
    app.advance(Duration::from_secs(3601));
    assert_eq!(reset(&mut app.client, &addresses[0]).await, answer);
    assert_eq!(mails_to(&app, &addresses[0]).await, 5);
}
on_both_backends!(per_address, per_address_limit);

/// The defaults (3 per address, 10 per client an hour): 30 + 30 requests for each of two
/// addresses write at most 6 mails, and the client, out of requests, gets no mail for a third
/// address either, until its window has passed. Every answer is the same.
async fn per_client_limit(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let names = [unique_name(), unique_name(), unique_name()];
    let addresses: Vec<String> = names.iter().map(|n| format!("{n}@example.com")).collect();
    for (name, address) in names.iter().zip(&addresses) {
        app.register(name, address).await.unwrap();
    }
    assert_eq!(app.mails().await.len(), 3);
    let answers = flood(&app, &addresses[..2]).await;
    assert_eq!(answers.len(), 1, "one answer for all: {answers:?}");
    let answer = answers.into_iter().next().unwrap();
    assert_eq!(answer.0, tonic::Code::Ok);
    let requested = app.mails().await.len() - 3;
    assert!(
        (1..=6).contains(&requested),
        "{requested} mails for 120 requests"
    );
    for address in &addresses[..2] {
        assert!(mails_to(&app, address).await <= 1 + 3, "{address}");
    }
    // 120 requests used up the client's 10: a request for a fresh address sends nothing...
    assert_eq!(reset(&mut app.client, &addresses[2]).await, answer);
    assert_eq!(mails_to(&app, &addresses[2]).await, 1);
    // ...until the window has passed.
    app.advance(Duration::from_secs(3601));
    assert_eq!(reset(&mut app.client, &addresses[2]).await, answer);
    assert_eq!(mails_to(&app, &addresses[2]).await, 2);
}
on_both_backends!(per_client, per_client_limit);

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Medians of `rounds` calls of `call` for a known and an unknown address, interleaved
/// (alternating which goes first) so that noise hits both alike.
async fn medians<F, Fut>(rounds: usize, known: &str, unknown: &str, call: F) -> (Duration, Duration)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Seen>,
{
    let (mut k, mut u) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [(true, known), (false, unknown)]
        } else {
            [(false, unknown), (true, known)]
        };
        for (is_known, address) in order {
            let start = Instant::now();
            let answer = call(address.to_owned()).await;
            let took = start.elapsed();
            assert_eq!(answer.0, tonic::Code::Ok);
            if is_known { k.push(took) } else { u.push(took) }
        }
    }
    (median(k), median(u))
}

/// Whether two medians are close: less than 1 ms apart or within a ratio of 1.5. Printed to
/// the test's output, for whoever tunes the bound.
#[allow(clippy::print_stderr)]
fn close(what: &str, known: Duration, unknown: Duration) -> bool {
    let (slow, fast) = if known > unknown {
        (known, unknown)
    } else {
        (unknown, known)
    };
    let ratio = slow.as_secs_f64() / fast.as_secs_f64().max(1e-6);
    eprintln!("{what}: median {known:?} known, {unknown:?} unknown (ratio {ratio:.2})");
    slow - fast < Duration::from_millis(1) || ratio < 1.5
}

/// Rounds per measurement, and measurements allowed before a verdict: a loaded CI machine
/// may disturb one measurement of 40 interleaved pairs, not three in a row (the old request
/// path, which looked the account up before answering, failed every one by a ratio of 3).
const ROUNDS: usize = 40;
const ATTEMPTS: usize = 3;

/// A known address costs the request path no more than an unknown one: the account is
/// looked up after the answer. Limits are raised so that every known request does the full
/// work (token, mail, event) in the background.
async fn known_and_unknown_addresses_take_the_same_time(backend: Backend) {
    let res = Resources::new(backend).await;
    let clock = std::sync::Arc::new(fairdeal_authn::ManualClock::starting_now());
    let mut app = spawn_with(
        &res,
        clock,
        &["--mail-per-address", "1000", "--mail-per-client", "1000"],
    )
    .await;
    let name = unique_name();
    let known = format!("{name}@example.com");
    app.register(&name, &known).await.unwrap();
    let unknown = format!("{}@example.com", unique_name());
    // Warm up connections, caches and the worker.
    for _ in 0..5 {
        reset(&mut app.client, &known).await;
        reset(&mut app.client, &unknown).await;
    }
    let mut known_calls = 5;
    let client = app.client.clone();
    for (what, is_reset) in [
        ("RequestPasswordReset", true),
        ("ResendConfirmation", false),
    ] {
        let mut attempt = 0;
        loop {
            attempt += 1;
            // The account is unconfirmed: every ResendConfirmation for it writes a mail too.
            let (k, u) = medians(ROUNDS, &known, &unknown, |address| {
                let mut client = client.clone();
                async move {
                    if is_reset {
                        reset(&mut client, &address).await
                    } else {
                        resend(&mut client, &address).await
                    }
                }
            })
            .await;
            known_calls += ROUNDS;
            if close(what, k, u) {
                break;
            }
            assert!(
                attempt < ATTEMPTS,
                "{what}: median {k:?} for a known address, {u:?} for an unknown one, \
                 {ATTEMPTS} measurements in a row"
            );
        }
    }
    // The known address was really served: the registration's mail and one per call.
    assert_eq!(mails_to(&app, &known).await, 1 + known_calls);
}
on_both_backends!(timing, known_and_unknown_addresses_take_the_same_time);

/// The mail limits are settings with sane bounds.
#[test]
fn mail_limit_settings_are_validated() {
    use fairdeal_auth::config::AuthSettings;
    use fairdeal_kit::config::{Config, Loaded};
    let load = |extra: &[&str]| {
        let mut args = vec!["auth", "--database-url", "sqlite://unused.db"];
        args.extend_from_slice(extra);
        Config::<AuthSettings>::load_from("auth", args, [])
    };
    let Ok(Loaded::Run(defaults)) = load(&[]) else {
        panic!("the defaults load")
    };
    let limits = defaults.service.mail_limits();
    assert_eq!((limits.per_address, limits.per_client), (3, 10));
    assert_eq!(defaults.service.mail_limit_window_secs(), 3600);
    for (extra, field) in [
        (["--mail-per-address", "0"], "mail_per_address"),
        (["--mail-per-client", "0"], "mail_per_client"),
        (["--mail-per-client", "100000"], "mail_per_client"),
        (["--mail-limit-window", "10s"], "mail_limit_window"),
        (["--mail-limit-window", "30days"], "mail_limit_window"),
    ] {
        let Err(error) = load(&extra) else {
            panic!("{extra:?} is refused")
        };
        assert!(error.to_string().contains(field), "{extra:?}: {error}");
    }
}

/// A request answered is not lost when the service stops: the worker finishes what is
/// queued before it ends.
async fn accepted_requests_survive_a_graceful_stop(backend: Backend) {
    let res = Resources::new(backend).await;
    let mut app = spawn_app(&res).await;
    let name = unique_name();
    let address = format!("{name}@example.com");
    app.register(&name, &address).await.unwrap();
    assert_eq!(mails_to(&app, &address).await, 1);
    for _ in 0..3 {
        reset(&mut app.client, &address).await;
    }
    app.shutdown.trigger();
    app.shutdown.wait_for_tasks().await;
    // Every task has ended, the dispatcher too: the three mails were sent or wait in the
    // outbox. (Counted without `mails()`, which would wait for the worker.)
    let sent = std::fs::read_dir(&app.mailbox)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "eml")
        })
        .count();
    let queued = app.app_accounts.store.unsent_mail_count().await.unwrap();
    assert_eq!(sent as u64 + queued, 1 + 3);
}
on_both_backends!(graceful_stop, accepted_requests_survive_a_graceful_stop);
