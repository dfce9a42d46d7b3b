#!/usr/bin/env bash
# Interop: other SDKs' clients drive askgate's interop server
# (crates/askgate-conformance, askgate-interop-server) through accept,
# decline, cancel, a re-ask, and the multi round-trip model (MRTR):
#
# - Python:     PyPI `mcp` (interop/python/interop.py)
# - TypeScript: npm `@modelcontextprotocol/sdk` and its 2.x successor
#               `@modelcontextprotocol/client` (interop/typescript/interop.mjs)
#
#   scripts/interop.sh
#
# The SDKs are pinned below and installed once into target/interop (a venv
# and a node prefix); later runs reuse them. Without python3 or node the
# script skips, unless CI is set (then it fails).
set -euo pipefail

PY_MCP=2.3.0
TS_SDK=1.32.2
TS_CLIENT=2.4.0

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${INTEROP_OUT:-"$root/target/interop"}
logs="$out/logs"

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v node >/dev/null 2>&1 || missing+=(node)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
    if [ -n "${CI:-}" ]; then
        echo "interop: ${missing[*]} not installed, and CI must run the interop suites" >&2
        exit 1
    fi
    echo "interop: SKIPPED — ${missing[*]} not installed" >&2
    exit 0
fi

mkdir -p "$out" "$logs"
started=$(date +%s)

# Python: a venv with the pinned `mcp`, made once per version.
venv="$out/venv"
if [ ! -f "$venv/.askgate-mcp-$PY_MCP" ]; then
    echo "interop: installing mcp==$PY_MCP into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP"
    touch "$venv/.askgate-mcp-$PY_MCP"
fi

# Node: the pinned packages in a prefix of their own, installed once per pin.
node_prefix="$out/node"
node_stamp="$node_prefix/.askgate-sdk-$TS_SDK-client-$TS_CLIENT"
if [ ! -f "$node_stamp" ]; then
    echo "interop: installing @modelcontextprotocol/sdk@$TS_SDK and @modelcontextprotocol/client@$TS_CLIENT into $node_prefix" >&2
    rm -rf "$node_prefix"
    mkdir -p "$node_prefix"
    npm install --prefix "$node_prefix" --save-exact --no-audit --no-fund --silent \
        "@modelcontextprotocol/sdk@$TS_SDK" "@modelcontextprotocol/client@$TS_CLIENT"
    touch "$node_stamp"
fi
installed=$(date +%s)

cargo build --quiet -p askgate-conformance --bins
server="${CARGO_TARGET_DIR:-$root/target}/debug/askgate-interop-server"

passed=0
failed=0
failed_suites=()
# Run one suite; its closing "N passed, N failed" line is added up.
suite() {
    local name=$1
    shift
    echo "== interop $name" >&2
    local log="$logs/$name.out"
    local status=0
    "$@" 2>&1 | tee "$log" || status=$?
    local counts
    counts=$(sed -n 's/^[a-z-]*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log" | tail -1)
    if [ -n "$counts" ]; then
        passed=$((passed + ${counts% *}))
        failed=$((failed + ${counts#* }))
    fi
    if [ "$status" != 0 ] || [ -z "$counts" ]; then
        failed_suites+=("$name")
    fi
}

suite python "$venv/bin/python" interop/python/interop.py --server "$server" --logs "$logs"
for package in sdk client; do
    suite "typescript-$package" node interop/typescript/interop.mjs \
        --server "$server" --modules "$node_prefix/node_modules" --package "$package" --logs "$logs"
done

finished=$(date +%s)
echo "interop: install $((installed - started))s, build and run $((finished - installed))s (logs in $logs)" >&2
if [ ${#failed_suites[@]} -gt 0 ]; then
    echo "interop: FAILED — ${failed_suites[*]}" >&2
    echo "interop: $passed passed, $failed failed"
    exit 1
fi
echo "interop: $passed passed, $failed failed"
