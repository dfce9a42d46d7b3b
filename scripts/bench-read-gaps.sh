#!/usr/bin/env bash
# Where a read call waits on the gateway itself (issue 19's stdio p50),
# timed by its system calls: `perf record -e raw_syscalls:*` around the
# official Python SDK's client making N calls of server-everything's echo
# (ruled a read) through each build, and through askgate-bare-relay (lines
# copied, unread: the floor). scripts/bench_read_gaps.py prints, for each,
# the time from the read that brought the client's line to the write of
# the line upstream, and from the read of the upstream's answer to the
# write of the client's: the handling on a call's way, without the
# client's and the upstream's time, which make a p50 move from hour to
# hour.
#
#   scripts/bench-read-gaps.sh                        # this checkout's build
#   scripts/bench-read-gaps.sh /tmp/askgate-before    # ... and an older binary
#   ASKGATE_GAPS_CALLS=3000 scripts/bench-read-gaps.sh
#   scripts/bench-read-gaps.sh --confirmed [OTHER]    # confirmed calls, by leg
#
# With --confirmed, echo is a medium_write the client's person accepts at
# once (as in scripts/bench-confirm.sh), the bare relay is left out (it
# asks no one), and each build's calls are split into their legs: the
# gateway's own before the ask, the client's answer, the record's sync,
# the upstream's time and the gateway's own between them.
#
# Needs perf (and leave to trace: kernel.perf_event_paranoid <= 1, or
# root). Uses what scripts/bench-peers.sh's setup installs under
# $ASKGATE_BENCH_PREFIX (default /tmp/askgate-bench). Not run by CI:
# timings are not pass/fail.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/bench-lib.sh
. "$root/scripts/bench-lib.sh"
bench_ready
bench_build
command -v perf >/dev/null || { echo "bench: perf is needed" >&2; exit 1; }

confirmed=()
if [ "${1:-}" = --confirmed ]; then
    confirmed=(--confirmed)
    shift
fi
calls=${ASKGATE_GAPS_CALLS:-1500}
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
builds=("this=$target/release/askgate")
if [ ${#confirmed[@]} -eq 0 ]; then
    builds+=("bare-relay=$target/release/askgate-bare-relay")
fi
if [ $# -gt 0 ]; then
    builds+=("other=$1")
fi

if [ ${#confirmed[@]} -eq 0 ]; then
    echo "| build | client line read -> upstream write, µs (p25 / p50 / p75) | upstream line read -> client write, µs (p25 / p50 / p75) | upstream write -> its answer read (the upstream's) | client write -> its next line read (the client's) | calls |"
    echo "|---|---|---|---|---|---|"
fi
for build in "${builds[@]}"; do
    name=${build%%=*}
    binary=${build#*=}
    rm -rf "$run/store"
    mkdir -p "$run/store"
    if [ ${#confirmed[@]} -gt 0 ]; then
        bench_confirm_config "$run/gateway.toml" "$run/store"
    else
        bench_config "$run/gateway.toml" "$run/store"
    fi
    if [ "$name" = bare-relay ]; then
        command=("$binary" node "$everything" stdio)
    else
        command=("$binary" gateway --config "$run/gateway.toml")
    fi
    "$prefix/venv/bin/python" scripts/bench_calls.py "$calls" \
        perf record -q -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -o "$run/$name.data" -- "${command[@]}"
    perf script -i "$run/$name.data" -F comm,tid,time,event,trace 2>/dev/null > "$run/$name.txt"
    "$prefix/venv/bin/python" scripts/bench_read_gaps.py "${confirmed[@]}" "$name" "$run/$name.txt"
done
