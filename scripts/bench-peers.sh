#!/usr/bin/env bash
# The gateway measured with a client nobody here wrote (issue 19): the
# official Python SDK's client calls server-everything's echo directly on
# stdio, through `askgate gateway` on stdio, through `askgate gateway
# --listen` (Streamable HTTP) and through npm supergateway and mcp-proxy,
# in interleaved rounds (gateway_peers.py, the team's shared bench: p50,
# p99, calls/s at 1 and 10 in flight, CPU per call of each candidate's
# process tree and of the client, peak RSS). The HTTP peers issue 19 names
# are candidates too: the Rust `mcp-proxy` (tower-mcp) and ContextForge's
# `mcpgateway.translate`, installed under the same prefix the first time
# (bench_http_peers in scripts/bench-lib.sh; ASKGATE_PEERS_HTTP=0 leaves
# them out).
#
#   scripts/bench-peers.sh                      # 1,000 calls per phase, 3 rounds
#   ASKGATE_PEERS_ARGS="-n 500 --rounds 5" scripts/bench-peers.sh
#   ASKGATE_PEERS=/path/to/bench scripts/bench-peers.sh
#   ASKGATE_PEERS_ARGS="--skip supergateway --skip mcp-proxy" scripts/bench-peers.sh
#
# ASKGATE_PEERS is the folder of gateway_peers.py and its setup.sh (default
# ../shared/bench beside this checkout); setup.sh installs the Python SDK
# and the npm packages once under $ASKGATE_BENCH_PREFIX (default
# /tmp/askgate-bench). The report (markdown) is printed and its JSON kept
# in target/bench-peers/. Own CPU per call = a candidate's tree CPU minus
# direct's in the same run. `bare-relay` (askgate-bare-relay: lines copied
# between the client and the upstream, unread) is the floor any stdio
# proxy stands on. Not run by CI: timings are not pass/fail.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="$root/target/bench-peers"

# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
if [ ! -f "$peers/gateway_peers.py" ]; then
    echo "bench-peers: no gateway_peers.py in $peers; set ASKGATE_PEERS to its folder" >&2
    exit 1
fi
bench_ready

bench_build
askgate="$target/release/askgate"

mkdir -p "$out"
run=$(mktemp -d "$out/run.XXXXXX")
trap 'rm -rf "$run"' EXIT
bench_config "$run/bench.toml" "$run"
bench_http_peers "$run"

# shellcheck disable=SC2086 # ASKGATE_PEERS_ARGS is a list of arguments
"$prefix/venv/bin/python" "$peers/gateway_peers.py" ${ASKGATE_PEERS_ARGS:-} \
    --json "$out/latest.json" \
    --stdio-candidate "bare-relay=$target/release/askgate-bare-relay node $everything stdio" \
    --stdio-candidate "askgate=$askgate gateway --config $run/bench.toml" \
    --http-candidate "askgate-http=$askgate gateway --config $run/bench.toml --listen 127.0.0.1:{PORT}" \
    --url "http://127.0.0.1:{PORT}/mcp" \
    "${http_peers[@]}"
