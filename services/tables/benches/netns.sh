#!/usr/bin/env bash
# The tables load bench (`benches/load.rs`) with PostgreSQL and NATS one network hop away,
# behind added latency: issue 33's check of the capacity model (docs/scaling.md) off
# loopback. The bench process (its clients, commitment, dealing and every tables replica)
# runs in a network namespace of its own; PostgreSQL and NATS stay in the host's, reached
# over a veth pair through `cargo xtask delay-proxy`, which holds what it relays for
# DELAY_MS each way (so a round trip to the database or the broker takes 2 x DELAY_MS
# more). A proxy rather than `tc netem`: this machine kind's kernel has no netem
# (CONFIG_NET_SCH_NETEM is not set); and this machine's servers listen on 127.0.0.1 only.
#
# Usage, as root, from services/tables, after building the bench and xtask in release
# (`cargo bench -p fairdeal-tables --bench load --no-run` prints the bench's path;
# `cargo build --release -p xtask`):
#   LOAD_BIN=../../target/release/deps/load-... benches/netns.sh DELAY_MS
# with the bench's own variables (LOAD_BACKEND=postgres, LOAD_TABLES, LOAD_SECONDS,
# LOAD_REPLICAS...) in the environment; with LOAD_PEER_DELAY_MS=DELAY_MS the calls between
# the replicas cross the same latency (a delay proxy in front of each, inside the
# namespace: benches/load.rs). Everything it makes is removed on exit.
set -euo pipefail

delay=${1:?"usage: benches/netns.sh DELAY_MS (one way, each direction)"}
bin=${LOAD_BIN:?"LOAD_BIN: the release build of the load bench"}
ns=fd-load
host_if=fd-host
app_if=fd-app
host_ip=10.77.0.1
app_ip=10.77.0.2
proxies=()

cleanup() {
    for pid in "${proxies[@]}"; do kill "$pid" 2>/dev/null || true; done
    ip link del "$host_if" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
cleanup

ip netns add "$ns"
ip link add "$host_if" type veth peer name "$app_if"
ip link set "$app_if" netns "$ns"
ip addr add "$host_ip/24" dev "$host_if"
ip link set "$host_if" up
ip netns exec "$ns" ip addr add "$app_ip/24" dev "$app_if"
ip netns exec "$ns" ip link set "$app_if" up
ip netns exec "$ns" ip link set lo up
xtask=${XTASK:-../../target/release/xtask}
for port in 5432 4222; do
    "$xtask" delay-proxy "$host_ip:$port" "127.0.0.1:$port" "$delay" &
    proxies+=("$!")
done
sleep 0.5
# One round trip to PostgreSQL through the proxy: an SSLRequest and its one-byte answer.
rtt=$(ip netns exec "$ns" python3 -c "
import socket, struct, time
best = None
for _ in range(5):
    s = socket.create_connection(('$host_ip', 5432))
    t = time.perf_counter()
    s.sendall(struct.pack('!ii', 8, 80877103))
    s.recv(1)
    d = (time.perf_counter() - t) * 1000
    s.close()
    best = d if best is None else min(best, d)
print(f'{best:.2f}')")
echo "netns.sh: ${delay} ms each way, a round trip to PostgreSQL takes ${rtt} ms"

ip netns exec "$ns" env \
    FAIRDEAL_TEST_POSTGRES_URL="postgres://postgres@$host_ip:5432/postgres" \
    FAIRDEAL_TEST_NATS_URL="nats://$host_ip:4222" \
    "$bin" --bench
