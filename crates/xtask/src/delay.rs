//! `cargo xtask delay-proxy LISTEN TARGET DELAY_MS`: a TCP proxy that holds every chunk it
//! relays, in each direction, for DELAY_MS before passing it on, so a round trip through it
//! takes 2 x DELAY_MS more. For measuring off loopback where the kernel has no `tc netem`
//! (this machine kind's has none; `services/tables/benches/netns.sh` uses it between a
//! network namespace and the host's PostgreSQL and NATS).
//!
//! Per connection and direction, one thread reads and stamps each chunk, another sends it
//! when its time comes, in order: the delay is added to each chunk's latency without
//! limiting the throughput to one chunk per delay. Threads, not async: xtask has no
//! dependencies.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs the proxy until killed.
pub(crate) fn proxy(args: &[String]) -> Result<std::process::ExitCode, String> {
    let [listen, target, delay] = args else {
        return Err("usage: cargo xtask delay-proxy LISTEN_ADDR TARGET_ADDR DELAY_MS".into());
    };
    let delay: f64 = delay
        .parse()
        .ok()
        .filter(|d: &f64| d.is_finite() && *d >= 0.0)
        .ok_or_else(|| format!("DELAY_MS: {delay:?} is not a number of milliseconds"))?;
    let delay = Duration::from_secs_f64(delay / 1000.0);
    let listener = TcpListener::bind(listen).map_err(|e| format!("LISTEN_ADDR {listen}: {e}"))?;
    crate::say(format!(
        "delay-proxy: {listen} -> {target}, {} ms each way",
        delay.as_secs_f64() * 1000.0
    ));
    serve(&listener, target, delay);
    Ok(std::process::ExitCode::SUCCESS)
}

/// Relays every connection `listener` accepts to `target`, delayed.
fn serve(listener: &TcpListener, target: &str, delay: Duration) {
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let target = target.to_owned();
        std::thread::spawn(move || match TcpStream::connect(&target) {
            Ok(server) => {
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                    std::thread::spawn(move || pipe(c, s, delay));
                    pipe(server, client, delay);
                }
            }
            Err(error) => crate::say(format!("delay-proxy: {target}: {error}")),
        });
    }
}

/// Copies `from` to `to`, each chunk held for `delay`; closes `to`'s writing half at the end.
fn pipe(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (chunks, queue) = mpsc::channel::<(Instant, Vec<u8>)>();
    let mut sink = match to.try_clone() {
        Ok(sink) => sink,
        Err(_) => return,
    };
    let sender = std::thread::spawn(move || {
        for (due, chunk) in queue {
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if sink.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = sink.shutdown(Shutdown::Write);
    });
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if chunks
                    .send((Instant::now() + delay, buffer[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(chunks);
    let _ = sender.join();
    let _ = to.flush();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Through the proxy to an echo server: the bytes come back whole and in order, each
    /// round trip at least twice the delay later, and the end of the stream passes through.
    #[test]
    fn relays_in_order_each_way_delayed() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let echo_addr = echo.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let (mut conn, _) = echo.accept().unwrap();
            let mut buffer = [0u8; 4096];
            loop {
                match conn.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => conn.write_all(&buffer[..n]).unwrap(),
                }
            }
        });
        let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy_addr = proxy.local_addr().unwrap();
        let delay = Duration::from_millis(20);
        std::thread::spawn(move || serve(&proxy, &echo_addr, delay));

        let mut client = TcpStream::connect(proxy_addr).unwrap();
        for round in 0..3u8 {
            let message: Vec<u8> = (0..200).map(|i: u8| i.wrapping_mul(round + 1)).collect();
            let sent = Instant::now();
            client.write_all(&message).unwrap();
            let mut back = vec![0u8; message.len()];
            client.read_exact(&mut back).unwrap();
            assert!(
                sent.elapsed() >= 2 * delay,
                "round {round}: {:?}",
                sent.elapsed()
            );
            assert_eq!(back, message);
        }
        client.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }
}
