# Shared by scripts/conformance.sh and scripts/conformance-through.sh
# (sourced, not run): the official MCP conformance suite's server scenarios,
# run against one URL with the strict expected-failures files.
#
# The server list, for every target alike:
#   0.1.16          --suite all
#   0.2.0-alpha.12  --suite all --spec-version 2025-11-25
#                   --suite all --spec-version 2026-07-28
#                   each extension scenario (tasks, skills) by name, at the
#                   suite's default revision, as upstream runs them
# Each run uses conformance/expected-failures-<version>.yaml (its `server:`
# list): an unlisted failure fails the run, and so does a listed item that
# passes. A WARNING counts as a failure there too.

# The suite versions (SUITES overrides).
conformance_suites=${SUITES:-"0.1.16 0.2.0-alpha.12"}

# Exit 0 with a notice when npx is missing, unless CI must run the suite.
# $1: the calling script's name.
conformance_need_npx() {
    if command -v npx >/dev/null 2>&1; then return 0; fi
    if [ -n "${CI:-}" ]; then
        echo "$1: npx not found, and CI must run the suite" >&2
        exit 1
    fi
    echo "$1: SKIPPED — npx (Node) is not installed" >&2
    exit 0
}

# Run the suite VERSION's CLI with the remaining arguments (Node 22,
# fetched by npx).
suite() {
    local version=$1
    shift
    npx -y -p node@22 -p "@modelcontextprotocol/conformance@$version" conformance "$@"
}

# The suite VERSION's extension server scenarios, one a line (from its own
# `list`, so a pinned version names exactly what it has).
extension_server_scenarios() {
    suite "$1" list 2>/dev/null | awk '
        /^Server scenarios/ { on = 1; next }
        /^[A-Za-z]/ { on = 0 }
        on && /\[extension\]/ { print $2 }'
}

# Run one server selection against URL; its output is kept under OUT/LABEL.
# Sets conformance_failed=1 when it fails (the others still run).
# Arguments: URL OUT VERSION LABEL selection-args...
server_selection() {
    local url=$1 out=$2 version=$3 label=$4
    shift 4
    local expected="${conformance_expected_dir:-$conformance_root/conformance}/expected-failures-$version.yaml"
    local dir="$out/$version/$label" log="$out/$version/$label.log"
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "== conformance $version server $label" >&2
    if suite "$version" server --url "$url" "$@" -o "$dir" \
        --expected-failures "$expected" >"$log" 2>&1; then
        grep -E "^(Total|Passed):" "$log" | tail -1 >&2 || true
    else
        # The baseline's verdict, then each failing check and why.
        sed -n '/Expected failures\|Stale baseline\|Unexpected failures/,$p' "$log" >&2
        failing_checks "$dir" >&2
        echo "FAILED: $version server $label (log: $log)" >&2
        conformance_failed=1
    fi
}

# Each FAILURE or WARNING check under DIR (the suite's checks.json files):
# scenario, check id, status and the suite's message.
failing_checks() {
    node -e '
        const fs = require("fs"), path = require("path");
        for (const run of fs.readdirSync(process.argv[1]).sort()) {
            const file = path.join(process.argv[1], run, "checks.json");
            if (!fs.existsSync(file)) continue;
            const scenario = run.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
            for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
                if (c.status !== "FAILURE" && c.status !== "WARNING") continue;
                const why = (c.errorMessage || "").replace(/\s+/g, " ").slice(0, 300);
                console.log(`  ${scenario}: ${c.id} ${c.status}: ${why}`);
            }
        }' "$1" || true
}

# Every server selection of every suite version against URL (results under
# OUT). Sets conformance_failed=1 when any fails.
run_server_suites() {
    local url=$1 out=$2 version scenario
    for version in $conformance_suites; do
        case $version in
        0.1.*)
            server_selection "$url" "$out" "$version" all --suite all
            ;;
        *)
            server_selection "$url" "$out" "$version" 2025-11-25 \
                --suite all --spec-version 2025-11-25
            server_selection "${conformance_modern_url:-$url}" "$out" "$version" 2026-07-28 \
                --suite all --spec-version 2026-07-28
            for scenario in $(extension_server_scenarios "$version"); do
                server_selection "$url" "$out" "$version" "$scenario" --scenario "$scenario"
            done
            ;;
        esac
    done
}

# Start the fixture server (BIN/askgate-conformance-server) on a free port,
# its store and log under OUT; sets fixture_pid and fixture_url.
start_fixture() {
    local bin=$1 out=$2 log="$2/fixture.log"
    rm -f "$out"/fixture.db*
    "$bin/askgate-conformance-server" --port 0 --store "sqlite://$out/fixture.db" \
        >/dev/null 2>"$log" &
    fixture_pid=$!
    fixture_url=$(wait_for_line "$log" 's/.*listening on \(.*\)$/\1/p') || {
        echo "conformance: the fixture server did not start; its log:" >&2
        cat "$log" >&2
        exit 1
    }
}

# Wait (up to 10 s) for a line of LOG that the sed script SCRIPT prints
# something for; print it. Fails when none came.
wait_for_line() {
    local log=$1 script=$2 found
    for _ in $(seq 1 100); do
        found=$(sed -n "$script" "$log" 2>/dev/null | head -1)
        if [ -n "$found" ]; then
            echo "$found"
            return 0
        fi
        sleep 0.1
    done
    return 1
}
