#!/usr/bin/env bash
# The official MCP conformance suite's server scenarios through the gateway:
# askgate-conformance-server is the one HTTP upstream of
# `askgate gateway --listen`, every call auto-approved, and the suite runs
# against the gateway's URL — the same scenario list and the same strict
# expected-failures files as scripts/conformance.sh runs against the fixture
# directly (scripts/conformance-lib.sh). So everything that passes directly
# must pass through: a relay that changes what a client sees fails here.
#
#   scripts/conformance-through.sh
#   SUITES="0.1.16" scripts/conformance-through.sh
#
# Logs (the gateway's stderr, each run's output and checks) are under
# target/conformance-through. Needs Node (npx) and cargo; without npx it
# skips with a notice, unless CI is set.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${CONFORMANCE_OUT:-"$root/target/conformance-through"}
mkdir -p "$out"
conformance_root=$root
. "$root/scripts/conformance-lib.sh"
conformance_need_npx conformance-through

cargo build --quiet -p askgate-conformance --bins
cargo build --quiet -p askgate --bin askgate
bin="${CARGO_TARGET_DIR:-$root/target}/debug"

fixture_pid=""
gateway_pid=""
modern_pid=""
cleanup() {
    if [ -n "$gateway_pid" ]; then kill "$gateway_pid" 2>/dev/null || true; fi
    if [ -n "$modern_pid" ]; then kill "$modern_pid" 2>/dev/null || true; fi
    if [ -n "$fixture_pid" ]; then kill "$fixture_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

start_fixture "$bin" "$out"
echo "conformance-through: fixture server at $fixture_url" >&2

# A gateway over one HTTP upstream (the fixture), every call auto-approved
# (destructive is the highest risk), no principals (so --listen serves the
# loopback user without a token), a store and inbox of its own; LABEL names
# its files, PROTOCOL the revision it speaks to the fixture (empty: the
# default). Prints its URL; its pid goes to $out/LABEL.pid.
start_gateway() {
    local label=$1 protocol=$2
    rm -f "$out/$label.db"*
    local config="$out/$label.toml" log="$out/$label.log"
    {
        echo 'auto_approve = "destructive"'
        echo "store = \"sqlite://$out/$label.db\""
        echo
        echo '[inbox]'
        echo 'listen = "127.0.0.1:0"'
        echo
        echo '[[upstreams]]'
        echo 'name = "conformance"'
        echo "url = \"$fixture_url\""
        if [ -n "$protocol" ]; then echo "protocol = \"$protocol\""; fi
    } >"$config"
    NO_COLOR=1 ASKGATE_AUTO_APPROVE_RISK=destructive "$bin/askgate" gateway --config "$config" \
        --listen 127.0.0.1:0 </dev/null >/dev/null 2>"$log" &
    echo $! >"$out/$label.pid"
    wait_for_line "$log" 's/.*MCP over Streamable HTTP at \(http[^ ]*\).*$/\1/p' || {
        echo "conformance-through: the gateway ($label) did not start; its log:" >&2
        cat "$log" >&2
        return 1
    }
}

# The classic revision to the fixture serves the 2025-era selections and
# the extensions; a gateway speaking 2026-07-28 to it serves the
# 2026-07-28 selection, as an operator of a server on that revision would
# configure it (`protocol = "2026-07-28"`).
gateway_url=$(start_gateway gateway "") || exit 1
gateway_pid=$(cat "$out/gateway.pid")
modern_url=$(start_gateway gateway-2026 2026-07-28) || exit 1
modern_pid=$(cat "$out/gateway-2026.pid")
gateway_log="$out/gateway.log"
conformance_modern_url=$modern_url
echo "conformance-through: gateway at $gateway_url (log: $gateway_log); speaking 2026-07-28 to the fixture at $modern_url (log: $out/gateway-2026.log)" >&2

# The expected failures: the direct run's, and the gateway's own gaps still
# open (conformance/gateway-gaps-<version>.yaml, each with why). Strict as
# the direct files: a listed gap that passes fails the run, so the list can
# only shrink. It is empty once the relay is complete (issue 16).
conformance_expected_dir="$out/expected"
mkdir -p "$conformance_expected_dir"
for direct in "$root"/conformance/expected-failures-*.yaml; do
    version=${direct##*/expected-failures-}
    version=${version%.yaml}
    python3 - "$direct" "$root/conformance/gateway-gaps-$version.yaml" \
        >"$conformance_expected_dir/expected-failures-$version.yaml" <<'PY'
import os, sys

def lists(path):
    """The `server:` and `client:` items of an expected-failures file."""
    found = {"server": [], "client": []}
    if not os.path.exists(path):
        return found
    key = None
    for line in open(path):
        text = line.split("#", 1)[0].rstrip()
        if not text.strip():
            continue
        if not text.startswith(" ") and ":" in text:
            key, rest = text.split(":", 1)
            rest = rest.strip()
            if rest.startswith("[") and rest.endswith("]"):
                found.setdefault(key, []).extend(
                    item.strip().strip("'\"") for item in rest[1:-1].split(",") if item.strip())
            continue
        if key and text.strip().startswith("- "):
            found.setdefault(key, []).append(text.strip()[2:].strip().strip("'\""))
    return found

direct, gaps = lists(sys.argv[1]), lists(sys.argv[2])
for key in ("server", "client"):
    items = direct.get(key, []) + [g for g in gaps.get(key, []) if g not in direct.get(key, [])]
    print(f"{key}:" + ("" if items else " []"))
    for item in items:
        print(f"  - {item}")
PY
done

conformance_failed=0
run_server_suites "$gateway_url" "$out/server"

if [ "$conformance_failed" != 0 ]; then
    echo "conformance-through: FAILED — through the gateway, the suite differs from the fixture's own run (the gateway's log: $gateway_log)" >&2
    exit 1
fi
echo "conformance-through: every scenario passed through the gateway (or failed as listed)" >&2
