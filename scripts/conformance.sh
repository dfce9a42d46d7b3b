#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against askgate's fixture server and client (crates/askgate-conformance).
#
#   scripts/conformance.sh            # both suite versions
#   SUITES="0.2.0-alpha.12" scripts/conformance.sh
#
# Each run uses a strict expected-failures file (conformance/*.yaml): an
# unlisted failure fails the run, and so does a listed item that passes.
# Needs Node (the suite runs on Node 22, fetched by npx) and cargo.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
suites=${SUITES:-"0.1.16 0.2.0-alpha.12"}
out=${CONFORMANCE_OUT:-"$root/target/conformance"}
mkdir -p "$out"

if ! command -v npx >/dev/null 2>&1; then
    if [ -n "${CI:-}" ]; then
        echo "conformance: npx not found, and CI must run the suite" >&2
        exit 1
    fi
    echo "conformance: SKIPPED — npx (Node) is not installed" >&2
    exit 0
fi

cargo build --quiet -p askgate-conformance --bins
bin="${CARGO_TARGET_DIR:-$root/target}/debug"

server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

# Start the fixture server on a free port; sets $url.
start_server() {
    local log="$out/server.log"
    rm -f "$out"/fixture.db*
    "$bin/askgate-conformance-server" --port 0 --store "sqlite://$out/fixture.db" >/dev/null 2>"$log" &
    server_pid=$!
    for _ in $(seq 1 100); do
        url=$(sed -n 's/.*listening on \(.*\)$/\1/p' "$log" 2>/dev/null | head -1)
        if [ -n "$url" ]; then return 0; fi
        sleep 0.1
    done
    echo "conformance: the fixture server did not start; its log:" >&2
    cat "$log" >&2
    exit 1
}

failed=0
suite() {
    local version=$1
    shift
    npx -y -p node@22 -p "@modelcontextprotocol/conformance@$version" conformance "$@"
}

# Run one server scenario; a failure is recorded, the others still run.
server_scenario() {
    local version=$1 spec=$2 scenario=$3 expected=$4
    local args=(server --url "$url" --scenario "$scenario" -o "$out/$version/$spec")
    if [ "$spec" != "-" ]; then args+=(--spec-version "$spec"); fi
    args+=(--expected-failures "$expected")
    echo "== conformance $version server $scenario ${spec/#-/}" >&2
    if ! suite "$version" "${args[@]}" >"$out/last.log" 2>&1; then
        cat "$out/last.log" >&2
        echo "FAILED: $version server $scenario ($spec)" >&2
        failed=1
    else
        grep -E "^(Total|Passed|Failed|Warnings)|passed|failed" "$out/last.log" | tail -3 >&2 || true
    fi
}

start_server
echo "conformance: fixture server at $url" >&2

classic=(tools-call-elicitation elicitation-sep1034-defaults elicitation-sep1330-enums dns-rebinding-protection)
mrtr=(basic-elicitation basic-sampling basic-list-roots request-state multiple-input-requests
      multi-round missing-input-response non-tool-request result-type unsupported-methods
      tampered-state capability-check ignore-extra-params validate-input)
# The tasks extension; run at the suite's default revision, as upstream does.
tasks=(lifecycle capability-negotiation wire-fields request-state-removal mrtr-input
       request-headers dispatch-and-envelope status-notifications required-task-error
       mrtr-composition)

for version in $suites; do
    expected="$root/conformance/expected-failures-$version.yaml"
    case $version in
    0.1.*)
        for scenario in "${classic[@]}"; do
            server_scenario "$version" - "$scenario" "$expected"
        done
        ;;
    *)
        for scenario in "${classic[@]}"; do
            server_scenario "$version" 2025-11-25 "$scenario" "$expected"
        done
        for scenario in "${mrtr[@]}"; do
            server_scenario "$version" 2026-07-28 "input-required-result-$scenario" "$expected"
        done
        server_scenario "$version" 2026-07-28 dns-rebinding-protection "$expected"
        for scenario in "${tasks[@]}"; do
            server_scenario "$version" - "tasks-$scenario" "$expected"
        done
        ;;
    esac
done

# ---- Client scenarios -------------------------------------------------------
# The suite runs a mock server and spawns askgate-conformance-client with its
# URL (the scenario in MCP_CONFORMANCE_SCENARIO). Same expected-failures files
# (their `client:` list), same `failed` bookkeeping as the server runs.
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
        failed=1
    else
        grep -E "^(Total|Passed|Failed|Warnings)|passed|failed" "$out/last.log" | tail -3 >&2 || true
    fi
}

for version in $suites; do
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

if [ "$failed" != 0 ]; then
    echo "conformance: FAILED (logs in $out)" >&2
    exit 1
fi
echo "conformance: every scenario passed (or failed as listed)" >&2
