#!/usr/bin/env bash
# The gateway at scale on Streamable HTTP (issue 19), with the official
# Python SDK's client (scripts/bench_scale.py): the memory of idle sessions
# against rmcp's own server (the conformance fixture) in the same run, and
# many clients at once against server-everything served directly.
#
#   scripts/bench-scale.sh                                   # 10,000 sessions; 200 clients x 20 calls
#   ASKGATE_SCALE_ARGS="--sessions 2000 --clients 50" scripts/bench-scale.sh
#   ASKGATE_SCALE_ARGS="--listening" scripts/bench-scale.sh   # each idle client on its GET stream
#
# Uses the Python SDK and server-everything that scripts/bench-peers.sh's
# setup installs under $ASKGATE_BENCH_PREFIX (default /tmp/askgate-bench).
# Not run by CI: timings are not pass/fail.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_ready

cargo build --quiet --release -p askgate -p askgate-conformance --bins
bin="$target/release"

run=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$run"
}
trap cleanup EXIT

# A free loopback port.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Wait for a line of FILE matching the sed script; print what it prints.
wait_for() {
    for _ in $(seq 1 100); do
        found=$(sed -n "$2" "$1" 2>/dev/null | head -1)
        if [ -n "$found" ]; then echo "$found"; return 0; fi
        sleep 0.1
    done
    echo "bench-scale: nothing in $1 said it listens" >&2
    cat "$1" >&2
    return 1
}

"$bin/askgate-conformance-server" --port 0 --store "sqlite://$run/fixture.db" >/dev/null 2>"$run/fixture.log" &
pids+=($!); fixture_pid=$!
fixture_url=$(wait_for "$run/fixture.log" 's/.*listening on \(.*\)$/\1/p')

direct_port=$(port)
PORT=$direct_port node "$everything" streamableHttp >/dev/null 2>"$run/everything.log" &
pids+=($!)

bench_config "$run/gateway.toml" "$run"
printf '\n[limits]\nsessions = 20000\nconnections = 30000\nconnections_per_peer = 30000\n' >> "$run/gateway.toml"
gateway_port=$(port)
"$bin/askgate" gateway --config "$run/gateway.toml" --listen "127.0.0.1:$gateway_port" 2>"$run/gateway.log" &
pids+=($!); gateway_pid=$!
wait_for "$run/gateway.log" 's/.*Streamable HTTP at \(.*\)$/\1/p' >/dev/null
for _ in $(seq 1 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$direct_port/mcp" 2>/dev/null; then break; fi
    sleep 0.1
done

# shellcheck disable=SC2086 # ASKGATE_SCALE_ARGS is a list of arguments
"$prefix/venv/bin/python" scripts/bench_scale.py ${ASKGATE_SCALE_ARGS:-} \
    --gateway "http://127.0.0.1:$gateway_port/mcp" --gateway-pid "$gateway_pid" \
    --baseline "$fixture_url" --baseline-pid "$fixture_pid" \
    --direct "http://127.0.0.1:$direct_port/mcp"
