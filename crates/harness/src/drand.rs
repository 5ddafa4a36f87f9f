//! A local test beacon: a [`TestChain`]'s rounds served over drand's HTTP API, **not drand**.
//!
//! `GET /{chain hash}/info` answers the chain's info (its `beaconID` is
//! `fairdeal-test-chain-not-drand`), `GET /{chain hash}/public/{round}` the round's
//! `{"round", "randomness", "signature"}` once the chain's schedule has reached it (by the
//! wall clock) and `425 Too Early` before, as drand's relays do; anything else is 404.
//! [`TestBeacon::set_mode`] makes it slow, down or lying, so the services' fetch, retry,
//! fallback and refusal paths run without the network.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fairdeal_drand::{Schedule, TestChain};
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How the beacon answers round requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeaconMode {
    /// Every published round, at once.
    Honest,
    /// The next `times` round requests wait `delay` before answering (then honest).
    Slow {
        /// How long each slow answer waits.
        delay: Duration,
        /// How many requests are slow.
        times: u64,
    },
    /// `503 Service Unavailable` to every round request.
    Down,
    /// Every round request gets a lie.
    Lying(Lie),
}

/// The lies a [`BeaconMode::Lying`] beacon tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lie {
    /// The next round's signature (and its randomness) under the asked round's number.
    WrongSignature,
    /// The next round's beacon, under its own number.
    WrongRound,
    /// The true signature with the next round's randomness.
    WrongRandomness,
}

/// A running test beacon; stops when dropped.
#[derive(Debug)]
pub struct TestBeacon {
    /// Where it listens.
    addr: SocketAddr,
    /// What it serves and how (shared with the server task).
    state: Arc<State>,
    /// The accept loop.
    task: JoinHandle<()>,
}

#[derive(Debug)]
struct State {
    chain: TestChain,
    chain_hash: String,
    mode: Mutex<BeaconMode>,
    round_requests: AtomicU64,
}

impl Drop for TestBeacon {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// A test chain of seed `seed` with `period` seconds per round whose genesis was `rounds_ago`
/// rounds before now (so rounds up to `rounds_ago + 1` are published already).
pub fn test_chain(seed: u8, period: u64, rounds_ago: u64) -> TestChain {
    chain_from(seed, period, unix_now() - rounds_ago * period)
}

/// The test chain of seed `seed` with `period` seconds per round from `genesis`.
fn chain_from(seed: u8, period: u64, genesis: u64) -> TestChain {
    TestChain::from_seed(
        &[seed; 32],
        Schedule::new(genesis, period).expect("a non-zero period"),
    )
    .expect("a test chain")
}

/// `n` relays of one [`test_chain`]: its genesis is read from the clock once, so every relay
/// serves the same chain (the chain hash covers the genesis time; a relay started after the
/// clock's next second would otherwise serve another chain, and answer 404 to the rest's).
pub async fn relays(n: usize, seed: u8, period: u64, rounds_ago: u64) -> Vec<TestBeacon> {
    let genesis = unix_now() - rounds_ago * period;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(TestBeacon::start(chain_from(seed, period, genesis)).await);
    }
    out
}

impl TestBeacon {
    /// Serves `chain` on 127.0.0.1, port 0, honestly.
    pub async fn start(chain: TestChain) -> TestBeacon {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port on 127.0.0.1");
        let addr = listener.local_addr().expect("a bound address");
        let chain_hash = hex(&chain.info().chain_hash());
        let state = Arc::new(State {
            chain,
            chain_hash,
            mode: Mutex::new(BeaconMode::Honest),
            round_requests: AtomicU64::new(0),
        });
        let served = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = Arc::clone(&served);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(state.answer(request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        TestBeacon { addr, state, task }
    }

    /// `http://127.0.0.1:<port>`, a relay URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The chain served.
    pub fn chain(&self) -> &TestChain {
        &self.state.chain
    }

    /// The chain's info, the JSON served at `/{chain hash}/info` (drand's format): what an
    /// auditor passes to `fairdeal audit --drand-chain`.
    pub fn info_json(&self) -> String {
        self.state.info()
    }

    /// Changes how round requests are answered.
    pub fn set_mode(&self, mode: BeaconMode) {
        *self.state.mode.lock().expect("the mode lock") = mode;
    }

    /// Round requests received so far (whatever the answer).
    pub fn round_requests(&self) -> u64 {
        self.state.round_requests.load(Ordering::Relaxed)
    }
}

impl State {
    async fn answer(&self, request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let mut segments = path.trim_start_matches('/').split('/');
        let (Some(hash), Some(what)) = (segments.next(), segments.next()) else {
            return reply(StatusCode::NOT_FOUND, r#"{"error":"not found"}"#.into());
        };
        if hash != self.chain_hash {
            return reply(StatusCode::NOT_FOUND, r#"{"error":"unknown chain"}"#.into());
        }
        match (what, segments.next(), segments.next()) {
            ("info", None, None) => reply(StatusCode::OK, self.info()),
            ("public", Some(round), None) => match round.parse::<u64>() {
                Ok(round) if round > 0 => self.round(round).await,
                _ => reply(StatusCode::BAD_REQUEST, r#"{"error":"bad round"}"#.into()),
            },
            _ => reply(StatusCode::NOT_FOUND, r#"{"error":"not found"}"#.into()),
        }
    }

    fn info(&self) -> String {
        let info = self.chain.info();
        serde_json::json!({
            "public_key": hex(&info.public_key),
            "period": info.schedule.period_seconds(),
            "genesis_time": info.schedule.genesis_time(),
            "hash": self.chain_hash,
            "groupHash": hex(&info.genesis_seed),
            "schemeID": info.scheme.id(),
            "metadata": {"beaconID": info.beacon_id},
        })
        .to_string()
    }

    async fn round(&self, round: u64) -> Response<Full<Bytes>> {
        self.round_requests.fetch_add(1, Ordering::Relaxed);
        let mode = {
            let mut mode = self.mode.lock().expect("the mode lock");
            let now = *mode;
            if let BeaconMode::Slow { delay, times } = now {
                *mode = if times <= 1 {
                    BeaconMode::Honest
                } else {
                    BeaconMode::Slow {
                        delay,
                        times: times - 1,
                    }
                };
            }
            now
        };
        let published = self.chain.info().schedule.round_at(unix_now()).unwrap_or(0);
        if round > published {
            return reply(
                StatusCode::from_u16(425).unwrap_or(StatusCode::NOT_FOUND),
                r#"{"error":"round not published yet"}"#.into(),
            );
        }
        let beacon = |r: u64| self.chain.sign(r).expect("the test chain signs");
        let json = |r: u64, signature: String, randomness: String| {
            serde_json::json!({"round": r, "signature": signature, "randomness": randomness})
                .to_string()
        };
        let true_beacon = beacon(round);
        let next = beacon(round + 1);
        let randomness = |b: &fairdeal_drand::Beacon| b.signature().randomness().to_hex();
        match mode {
            BeaconMode::Down => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"error":"down"}"#.into(),
            ),
            BeaconMode::Slow { delay, .. } => {
                tokio::time::sleep(delay).await;
                reply(
                    StatusCode::OK,
                    json(
                        round,
                        true_beacon.signature().to_hex(),
                        randomness(&true_beacon),
                    ),
                )
            }
            BeaconMode::Honest => reply(
                StatusCode::OK,
                json(
                    round,
                    true_beacon.signature().to_hex(),
                    randomness(&true_beacon),
                ),
            ),
            BeaconMode::Lying(Lie::WrongSignature) => reply(
                StatusCode::OK,
                json(round, next.signature().to_hex(), randomness(&next)),
            ),
            BeaconMode::Lying(Lie::WrongRound) => reply(
                StatusCode::OK,
                json(round + 1, next.signature().to_hex(), randomness(&next)),
            ),
            BeaconMode::Lying(Lie::WrongRandomness) => reply(
                StatusCode::OK,
                json(round, true_beacon.signature().to_hex(), randomness(&next)),
            ),
        }
    }
}

fn reply(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
