#!/usr/bin/env bash
# The instructions a read call costs the gateway (issue 19), counted by
# valgrind's callgrind: the official Python SDK's client makes 300 and then
# 1,300 calls of server-everything's echo (ruled a read) through each
# build, and the difference over 1,000 calls is printed — what a call
# costs, without the start and the handshake. Unlike CPU time, the count
# moves little from run to run, so two builds a few percent apart are told
# apart; under valgrind, SHA-256 runs without the CPU's SHA instructions
# and weighs more than on the machine.
#
#   scripts/bench-read-instructions.sh                       # this checkout's build
#   scripts/bench-read-instructions.sh /tmp/askgate-before   # ... and an older binary
#   scripts/bench-read-instructions.sh --http [OTHER]        # through `gateway --listen`
#
# Needs valgrind. Uses what scripts/bench-peers.sh's setup installs under
# $ASKGATE_BENCH_PREFIX (default /tmp/askgate-bench). Not run by CI:
# figures are not pass/fail.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_ready
bench_build
command -v valgrind >/dev/null || { echo "bench: valgrind is needed" >&2; exit 1; }

http=0
if [ "${1:-}" = --http ]; then
    http=1
    shift
fi

run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
builds=("this=$target/release/askgate")
if [ $# -gt 0 ]; then
    builds+=("other=$1")
fi

for build in "${builds[@]}"; do
    name=${build%%=*}
    binary=${build#*=}
    declare -A total=()
    for calls in 300 1300; do
        rm -rf "$run/store"
        mkdir -p "$run/store"
        bench_config "$run/gateway.toml" "$run/store"
        counted=(valgrind --tool=callgrind --callgrind-out-file="$run/$calls.out"
            "$binary" gateway --config "$run/gateway.toml")
        if [ "$http" = 1 ]; then
            port=$("$prefix/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
            "$prefix/venv/bin/python" scripts/bench_http_calls.py "$calls" "$port" \
                "${counted[@]}" --listen "127.0.0.1:$port"
        else
            "$prefix/venv/bin/python" scripts/bench_calls.py "$calls" "${counted[@]}"
        fi
        total[$calls]=$(callgrind_annotate "$run/$calls.out" | awk '/PROGRAM TOTALS/ && !seen { gsub(",", "", $1); print $1; seen = 1 }')
    done
    over=stdio
    [ "$http" = 1 ] && over="--listen"
    echo "$name ($binary): $(( (total[1300] - total[300]) / 1000 )) instructions a read call ($over)"
done
