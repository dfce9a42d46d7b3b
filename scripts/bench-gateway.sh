#!/usr/bin/env bash
# Gateway benchmark (issue 6, "Benchmark"): server-everything's echo tool,
# called by one rmcp client directly on stdio, through `askgate gateway`, and
# through npm supergateway (--stateful) and mcp-proxy (Streamable HTTP), side
# by side in one run; then the gateway's memory on a store with 10,000
# pending asks. See crates/askgate/benches/gateway.rs. The same comparison
# with the official Python SDK as the client, and the gateway on
# Streamable HTTP too, is scripts/bench-peers.sh.
#
#   scripts/bench-gateway.sh                       # everything
#   scripts/bench-gateway.sh direct askgate        # only these cases
#   (askgate-rmcp: the gateway with express_lane = false)
#   ASKGATE_BENCH_CALLS=5000 scripts/bench-gateway.sh
#
# The npm packages are pinned below and installed once into
# target/bench-gateway/node; later runs reuse them. CI builds the bench
# binary (cargo clippy --all-targets) but does not run it: timings are not
# pass/fail.
set -euo pipefail

SERVER_EVERYTHING=2026.8.31
SUPERGATEWAY=4.0.0
MCP_PROXY=6.7.19

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-"$root/target"}
out="$root/target/bench-gateway"

for tool in node npm cargo; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "bench-gateway: $tool is not installed" >&2
        exit 1
    fi
done

node_prefix="$out/node"
stamp="$node_prefix/.askgate-everything-$SERVER_EVERYTHING-supergateway-$SUPERGATEWAY-mcp-proxy-$MCP_PROXY"
if [ ! -f "$stamp" ]; then
    echo "bench-gateway: installing server-everything@$SERVER_EVERYTHING, supergateway@$SUPERGATEWAY and mcp-proxy@$MCP_PROXY into $node_prefix" >&2
    rm -rf "$node_prefix"
    mkdir -p "$node_prefix"
    npm install --prefix "$node_prefix" --save-exact --no-audit --no-fund --silent \
        "@modelcontextprotocol/server-everything@$SERVER_EVERYTHING" \
        "supergateway@$SUPERGATEWAY" \
        "mcp-proxy@$MCP_PROXY"
    touch "$stamp"
fi
bin="$node_prefix/node_modules/.bin"

cargo build --quiet --release -p askgate

echo "bench-gateway: node $(node --version); server-everything $SERVER_EVERYTHING, supergateway $SUPERGATEWAY, mcp-proxy $MCP_PROXY" >&2
ASKGATE_BENCH_ASKGATE="$target/release/askgate" \
ASKGATE_BENCH_EVERYTHING="$bin/mcp-server-everything" \
ASKGATE_BENCH_SUPERGATEWAY="$bin/supergateway" \
ASKGATE_BENCH_MCP_PROXY="$bin/mcp-proxy" \
ASKGATE_BENCH_DIR="$out/run" \
    cargo bench --quiet -p askgate --bench gateway -- "$@"
