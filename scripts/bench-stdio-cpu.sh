#!/usr/bin/env bash
# The gateway's own CPU and bytes written per read call, read from its
# process (scripts/bench_stdio_cpu.py), with the official Python SDK's
# client; against another build of the gateway when one is given, and on
# stdio against askgate-bare-relay (lines copied between the client and
# the upstream, unread: the floor any stdio proxy pays). On stdio, or
# through `gateway --listen` with --http.
#
#   scripts/bench-stdio-cpu.sh                        # this checkout's build
#   scripts/bench-stdio-cpu.sh /tmp/askgate-before    # ... and an older binary
#   ASKGATE_STDIO_CPU_ARGS="-n 3000 --rounds 5" scripts/bench-stdio-cpu.sh
#   ASKGATE_STDIO_CPU_ARGS="--http" scripts/bench-stdio-cpu.sh   # Streamable HTTP
#
# Uses what scripts/bench-peers.sh's setup installs under
# $ASKGATE_BENCH_PREFIX (default /tmp/askgate-bench). Not run by CI:
# timings are not pass/fail.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_ready

bench_build

run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
candidates=(--candidate "this=$target/release/askgate")
mkdir -p "$run/this"
bench_config "$run/this.toml" "$run/this"
if [ $# -gt 0 ]; then
    mkdir -p "$run/other"
    bench_config "$run/other.toml" "$run/other"
    candidates+=(--candidate "other=$1")
fi

# shellcheck disable=SC2086 # ASKGATE_STDIO_CPU_ARGS is a list of arguments
"$prefix/venv/bin/python" "$root/scripts/bench_stdio_cpu.py" ${ASKGATE_STDIO_CPU_ARGS:-} \
    --config-dir "$run" "${candidates[@]}" \
    --on-tokio --bare-relay "$target/release/askgate-bare-relay" node "$everything" stdio
