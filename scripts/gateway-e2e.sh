#!/usr/bin/env bash
# Gateway end to end: the real `askgate gateway` between real MCP clients and
# real MCP servers (issue 6, "Tests with real peers").
#
# Upstreams, all behind one gateway config written here (several at once):
# - everything: npm @modelcontextprotocol/server-everything
# - files:      npm @modelcontextprotocol/server-filesystem, rooted in a temp dir
# - notes:      the repository's askgate-example-upstream (crates/askgate-conformance)
#
# Clients (interop/gateway/):
# - python:     PyPI `mcp` ClientSession on stdio (python_client.py)
# - typescript: npm `@modelcontextprotocol/sdk` Client + StdioClientTransport
#               (typescript_client.mjs)
#   each: tools listed under namespaced names (no `confirm` offered: the
#   config sets no caller_confirm, so only a person approves), a read without
#   a prompt, a write confirmed (accept) and refused (decline, final for the
#   same call) by a scripted person who reads 300 ms before answering (an
#   answer under min_answer_ms, 250 ms, was shown to nobody), a destructive
#   call from a client without elicitation (waits in the inbox, `confirm:
#   true` does not stand in; answered with the CLI, the retry runs once),
#   `headless`: a client that declines at once (as `claude -p` or `codex
#   exec` do) — the write waits in the inbox ("not shown"), is answered with
#   the CLI and the retry writes the file — the upstreams' own elicitation
#   relayed, the audit chain.
# - crash:      crash.py: an ask waiting in the inbox survives SIGKILL of the
#               gateway, is answered with `askgate asks answer`, and the
#               retried call runs upstream exactly once.
# - differential-python, differential-typescript: the battery of
#               differential_battery.json (every tool of server-everything,
#               progress, logging, completion, templates, subscriptions,
#               prompts, the server's own elicitation, sampling and roots) run
#               by each SDK's client against server-everything directly and
#               through a zero-config `askgate gateway -- node .../index.js
#               stdio --auto-approve destructive` (no call confirmed, a
#               store of its own);
#               differential_compare.py holds the two transcripts field by
#               field, each operation a scenario, with the differences
#               askgate may make listed in allowed-differences.toml.
# - differential-python-bare: the lists only, by a Python client that
#               declares no sampling, roots or elicitation (as LangChain's):
#               server-everything offers fewer tools to such a client, and
#               must through the gateway too (askgate tells each upstream
#               the stdio client's capabilities).
# - tasks-typescript: tasks_typescript.mjs, a 2025-11-25 task-augmented
#               call (SEP-1686) of server-everything's simulate-research-query
#               (`execution.taskSupport: "required"`, a clarification asked
#               inside the task) by the TypeScript SDK's experimental tasks
#               API (callToolStream, tasks/get, tasks/list, tasks/cancel):
#               directly, where every scenario must pass, then through a
#               zero-config `askgate gateway -- node .../index.js stdio` (a
#               store of its own; the call confirmed by the client's person,
#               before the task exists), held against the direct run.
# - oauth:      oauth_python.py, MCP authorization on `--listen`: npm
#               `oidc-provider` (oauth_provider.mjs, a certified OpenID
#               Provider) issues client-credentials JWT access tokens on
#               loopback; the Python SDK's ClientCredentialsOAuthProvider
#               finds it from askgate's 401 (Protected Resource Metadata),
#               gets a token and calls tools as its principal; tokens for
#               another audience, without the scope, or expired are
#               refused with the right challenge.
#
# Every suite's CLI answers come from the config's person, their token in
# ASKGATE_TOKEN for the CLI only: the clients take it out of the environment
# before they start a gateway.
#
#   scripts/gateway-e2e.sh
#   GATEWAY_E2E_SUITES="differential-python differential-typescript" scripts/gateway-e2e.sh
#
# GATEWAY_E2E_SUITES, when set, names the suites to run (by the names above);
# the others are skipped.
#
# A scenario listed in interop/gateway/expected-failures.txt (a known gateway
# bug) must fail: it is reported as "known" and does not fail the run; when it
# passes, the run fails until it is taken off the list. Any other failure
# fails the run.
#
# Packages are pinned below and installed once into target/gateway-e2e (a
# venv and a node prefix); later runs reuse them. Without python3, node or
# npm the script skips, unless CI is set (then it fails).
set -euo pipefail

PY_MCP=2.3.0
TS_SDK=1.32.2
SERVER_EVERYTHING=2026.8.31
SERVER_FILESYSTEM=2026.8.31
OIDC_PROVIDER=9.13.3

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-"$root/target"}
out=${GATEWAY_E2E_OUT:-"$root/target/gateway-e2e"}
logs="$out/logs"

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v node >/dev/null 2>&1 || missing+=(node)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
    if [ -n "${CI:-}" ]; then
        echo "gateway-e2e: ${missing[*]} not installed, and CI must run the gateway end-to-end suites" >&2
        exit 1
    fi
    echo "gateway-e2e: SKIPPED — ${missing[*]} not installed" >&2
    exit 0
fi

mkdir -p "$out"
rm -rf "$logs"
mkdir -p "$logs"
started=$(date +%s)

# Python: a venv with the pinned `mcp`, made once per version.
venv="$out/venv"
if [ ! -f "$venv/.askgate-mcp-$PY_MCP" ]; then
    echo "gateway-e2e: installing mcp==$PY_MCP into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP"
    touch "$venv/.askgate-mcp-$PY_MCP"
fi

# Node: the client SDK and the two servers in a prefix of their own,
# installed once per pin. The servers run from their installed bins.
node_prefix="$out/node"
node_stamp="$node_prefix/.askgate-sdk-$TS_SDK-everything-$SERVER_EVERYTHING-filesystem-$SERVER_FILESYSTEM"
if [ ! -f "$node_stamp" ]; then
    echo "gateway-e2e: installing @modelcontextprotocol/sdk@$TS_SDK, server-everything@$SERVER_EVERYTHING and server-filesystem@$SERVER_FILESYSTEM into $node_prefix" >&2
    rm -rf "$node_prefix"
    mkdir -p "$node_prefix"
    npm install --prefix "$node_prefix" --save-exact --no-audit --no-fund --silent \
        "@modelcontextprotocol/sdk@$TS_SDK" \
        "@modelcontextprotocol/server-everything@$SERVER_EVERYTHING" \
        "@modelcontextprotocol/server-filesystem@$SERVER_FILESYSTEM"
    touch "$node_stamp"
fi
# The authorization server of the oauth suite, in a prefix of its own.
oidc_prefix="$out/oidc"
if [ ! -f "$oidc_prefix/.askgate-oidc-provider-$OIDC_PROVIDER" ]; then
    echo "gateway-e2e: installing oidc-provider@$OIDC_PROVIDER into $oidc_prefix" >&2
    rm -rf "$oidc_prefix"
    mkdir -p "$oidc_prefix"
    npm install --prefix "$oidc_prefix" --save-exact --no-audit --no-fund --silent "oidc-provider@$OIDC_PROVIDER"
    touch "$oidc_prefix/.askgate-oidc-provider-$OIDC_PROVIDER"
fi
everything="$node_prefix/node_modules/.bin/mcp-server-everything"
filesystem="$node_prefix/node_modules/.bin/mcp-server-filesystem"
installed=$(date +%s)

cargo build --quiet -p askgate -p askgate-conformance --bins
askgate="$target/debug/askgate"
example="$target/debug/askgate-example-upstream"
built=$(date +%s)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/askgate-gateway-e2e.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The person who answers parked asks from the CLI: a [[people]] entry of
# every config, with a token made for this run (never an agent's).
person=e2e-person
person_token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')

# A gateway config in `dir`: the three upstreams, server-filesystem rooted in
# dir/files, the notes in dir/notes, the store dir/askgate.db, the person
# who may answer every ask from the CLI. Rules make
# reads `read` (no prompt), write_file a medium write, append_note a low
# write; everything else is left to the default (medium_write) or to its
# destructiveHint (destructive). Nothing is auto-approved.
write_config() {
    local dir=$1
    mkdir -p "$dir/files" "$dir/notes"
    # server-filesystem resolves its root; give it the real path.
    local files
    files=$(cd "$dir/files" && pwd -P)
    cat >"$dir/askgate.toml" <<EOF
store = "sqlite://$dir/askgate.db"

[[people]]
name = "$person"
token = "$person_token"
answers_for = ["*"]

[[upstreams]]
name = "everything"
command = "$everything"
args = ["stdio"]

[[upstreams]]
name = "files"
command = "$filesystem"
args = ["$files"]

[[upstreams]]
name = "notes"
command = "$example"
args = ["--dir", "$dir/notes"]

[[rules]]
server = "files"
tool = "{read_*,list_*,search_files,get_file_info,directory_tree}"
risk = "read"

[[rules]]
server = "files"
tool = "write_file"
risk = "medium_write"

[[rules]]
server = "everything"
tool = "{echo,trigger-elicitation-request,trigger-sampling-request,get-roots-list}"
risk = "read"

[[rules]]
server = "notes"
tool = "{read_note,ask_name}"
risk = "read"

[[rules]]
server = "notes"
tool = "append_note"
risk = "low_write"
EOF
    echo "$files"
}

passed=0
failed=0
known=0
failed_suites=()
# Run one suite; its closing "N passed, N failed" line is added up.
suite() {
    local name=$1
    shift
    if [ -n "${GATEWAY_E2E_SUITES:-}" ] && [[ " $GATEWAY_E2E_SUITES " != *" $name "* ]]; then
        echo "== gateway-e2e $name: not in GATEWAY_E2E_SUITES, skipped" >&2
        return
    fi
    echo "== gateway-e2e $name" >&2
    local log="$logs/$name.out"
    local status=0
    "$@" 2>&1 | tee "$log" || status=$?
    local counts
    counts=$(sed -n 's/^[a-z-]*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log" | tail -1)
    if [ -n "$counts" ]; then
        passed=$((passed + ${counts% *}))
        failed=$((failed + ${counts#* }))
    fi
    local count
    count=$(sed -n 's/^[a-z-]*: \([0-9]*\) known failure.*/\1/p' "$log" | tail -1)
    known=$((known + ${count:-0}))
    if [ "$status" != 0 ] || [ -z "$counts" ]; then
        failed_suites+=("$name")
    fi
}

# Each suite gets a directory of its own: its config, files, notes, store.
for name in python typescript crash; do
    mkdir -p "$scratch/$name"
done
files=$(write_config "$scratch/python")
suite python env ASKGATE_TOKEN="$person_token" "$venv/bin/python" interop/gateway/python_client.py \
    --askgate "$askgate" --config "$scratch/python/askgate.toml" --store "sqlite://$scratch/python/askgate.db" \
    --root "$files" --notes "$scratch/python/notes" --logs "$logs" --person "$person"
files=$(write_config "$scratch/typescript")
suite typescript env ASKGATE_TOKEN="$person_token" node interop/gateway/typescript_client.mjs \
    --askgate "$askgate" --config "$scratch/typescript/askgate.toml" --store "sqlite://$scratch/typescript/askgate.db" \
    --root "$files" --notes "$scratch/typescript/notes" --logs "$logs" --modules "$node_prefix/node_modules" \
    --person "$person"
files=$(write_config "$scratch/crash")
suite crash env ASKGATE_TOKEN="$person_token" "$venv/bin/python" interop/gateway/crash.py \
    --askgate "$askgate" --config "$scratch/crash/askgate.toml" --store "sqlite://$scratch/crash/askgate.db" \
    --root "$files" --logs "$logs" --person "$person"

# The differential battery of one SDK (its command in "$@"): directly, then
# through the gateway with zero config, then compared. `--auto-approve
# destructive` so that no call is confirmed (ASKGATE_AUTO_APPROVE_RISK only
# lowers a threshold, and zero config has none). The transcripts and
# the servers' stderr stay in $logs.
everything_js="$node_prefix/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
differential() {
    local sdk=$1
    shift
    local direct="$logs/differential-$sdk-direct" gateway="$logs/differential-$sdk-gateway"
    mkdir -p "$scratch/differential-$sdk"
    "$@" --out "$direct.json" --log "$direct.log" -- node "$everything_js" stdio || return 1
    env ASKGATE_STORE="sqlite://$scratch/differential-$sdk/askgate.db" "$@" --out "$gateway.json" --log "$gateway.log" \
        -- "$askgate" gateway --auto-approve destructive -- node "$everything_js" stdio || return 1
    "$venv/bin/python" interop/gateway/differential_compare.py --sdk "$sdk" \
        --direct "$direct.json" --gateway "$gateway.json" --logs "$logs"
}
suite differential-python differential python "$venv/bin/python" interop/gateway/differential_python.py
suite differential-python-bare differential python-bare "$venv/bin/python" interop/gateway/differential_python.py --bare
suite differential-typescript differential typescript node interop/gateway/differential_typescript.mjs \
    --modules "$node_prefix/node_modules"

# Tasks: the same script directly, then through a zero-config gateway (no
# auto-approve: the call is confirmed by the client's person) given the
# direct run's transcript to hold its values against. The transcripts and the
# servers' stderr stay in $logs.
tasks() {
    local direct="$logs/tasks-typescript-direct" gateway="$logs/tasks-typescript-gateway"
    local run=(node interop/gateway/tasks_typescript.mjs --modules "$node_prefix/node_modules")
    mkdir -p "$scratch/tasks-typescript"
    "${run[@]}" --out "$direct.json" --log "$direct.log" -- node "$everything_js" stdio || return 1
    env ASKGATE_STORE="sqlite://$scratch/tasks-typescript/askgate.db" "${run[@]}" --direct "$direct.json" \
        --out "$gateway.json" --log "$gateway.log" -- "$askgate" gateway -- node "$everything_js" stdio
}
suite tasks-typescript tasks

suite oauth "$venv/bin/python" interop/gateway/oauth_python.py --askgate "$askgate" --example "$example" \
    --provider interop/gateway/oauth_provider.mjs --modules "$oidc_prefix/node_modules" \
    --dir "$scratch/oauth" --logs "$logs"

finished=$(date +%s)
echo "gateway-e2e: install $((installed - started))s, build $((built - installed))s, run $((finished - built))s (logs in $logs)" >&2
if [ "$known" -gt 0 ]; then
    echo "gateway-e2e: $known known failure(s), each a gateway bug listed in interop/gateway/expected-failures.txt" >&2
fi
if [ ${#failed_suites[@]} -gt 0 ]; then
    echo "gateway-e2e: FAILED — ${failed_suites[*]}" >&2
    echo "gateway-e2e: $passed passed, $failed failed"
    exit 1
fi
echo "gateway-e2e: $passed passed, $failed failed"
