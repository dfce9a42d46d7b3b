#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against askgate's fixture server and client (crates/askgate-conformance).
#
#   scripts/conformance.sh            # both suite versions
#   SUITES="0.2.0-alpha.12" scripts/conformance.sh
#
# The server scenarios are every one the suites have (the list is in
# scripts/conformance-lib.sh, shared with scripts/conformance-through.sh,
# which runs it through the gateway). Each run uses a strict
# expected-failures file (conformance/*.yaml): an unlisted failure fails the
# run, and so does a listed item that passes.
# Needs Node (the suite runs on Node 22, fetched by npx) and cargo.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${CONFORMANCE_OUT:-"$root/target/conformance"}
mkdir -p "$out"
conformance_root=$root
. "$root/scripts/conformance-lib.sh"
conformance_need_npx conformance

cargo build --quiet -p askgate-conformance --bins
bin="${CARGO_TARGET_DIR:-$root/target}/debug"

fixture_pid=""
cleanup() {
    if [ -n "$fixture_pid" ]; then kill "$fixture_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

start_fixture "$bin" "$out"
echo "conformance: fixture server at $fixture_url" >&2

conformance_failed=0
run_server_suites "$fixture_url" "$out/server"

# ---- Client scenarios -------------------------------------------------------
# The suite runs a mock server and spawns askgate-conformance-client with its
# URL (the scenario in MCP_CONFORMANCE_SCENARIO). Same expected-failures files
# (their `client:` list), same bookkeeping as the server runs.
client_bin="$(cd "$bin" && pwd)/askgate-conformance-client"

# Run one client scenario; a failure is recorded, the others still run.
client_scenario() {
    local version=$1 spec=$2 scenario=$3 expected=$4
    local args=(client --command "$client_bin" --scenario "$scenario" -o "$out/$version/client/$spec")
    if [ "$spec" != "-" ]; then args+=(--spec-version "$spec"); fi
    args+=(--expected-failures "$expected")
    echo "== conformance $version client $scenario ${spec/#-/}" >&2
    if ! suite "$version" "${args[@]}" >"$out/last.log" 2>&1; then
        cat "$out/last.log" >&2
        echo "FAILED: $version client $scenario ($spec)" >&2
        conformance_failed=1
    else
        grep -E "^(Total|Passed|Failed|Warnings)|passed|failed" "$out/last.log" | tail -3 >&2 || true
    fi
}

for version in $conformance_suites; do
    expected="$root/conformance/expected-failures-$version.yaml"
    case $version in
    0.1.*)
        client_scenario "$version" - elicitation-sep1034-client-defaults "$expected"
        ;;
    *)
        client_scenario "$version" 2025-11-25 elicitation-sep1034-client-defaults "$expected"
        client_scenario "$version" 2026-07-28 sep-2322-client-request-state "$expected"
        ;;
    esac
done

if [ "$conformance_failed" != 0 ]; then
    echo "conformance: FAILED (logs in $out)" >&2
    exit 1
fi
echo "conformance: every scenario passed (or failed as listed)" >&2
