#!/usr/bin/env bash
# What a person's confirmation adds to a call (issue 19), with the official
# Python SDK's client on stdio (scripts/bench_confirm.py): server-everything's
# echo through one gateway where it is a read and one where it is a
# medium_write the client's person accepts at once, against the budget of
# one durable commit and one round trip, measured in the same run.
#
#   scripts/bench-confirm.sh
#   ASKGATE_CONFIRM_ARGS="-n 500 --rounds 5" scripts/bench-confirm.sh
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
mkdir -p "$run/read" "$run/confirm"
bench_config "$run/read.toml" "$run/read"
# The same, echo a medium_write, an instant accept taken for a person's.
bench_confirm_config "$run/confirm.toml" "$run/confirm"

# The same as confirm.toml, for a client that shows no ask: its calls wait
# in the inbox (at most the hour inbox_wait allows).
mkdir -p "$run/held"
bench_config "$run/held.toml" "$run/held"
sed -i 's/^risk = "read"$/risk = "medium_write"/' "$run/held.toml"
sed -i '1i inbox_wait = "1h"' "$run/held.toml"
sed -i 's/^\[inbox\]$/[limits]\npending_asks_per_principal = 2000\n\n[inbox]/' "$run/held.toml"

# shellcheck disable=SC2086 # ASKGATE_CONFIRM_ARGS is a list of arguments
"$prefix/venv/bin/python" scripts/bench_confirm.py ${ASKGATE_CONFIRM_ARGS:-} \
    --askgate "$target/release/askgate" \
    --read-config "$run/read.toml" --confirm-config "$run/confirm.toml" \
    --folder "$run" \
    --held-config "$run/held.toml" --held-store "$run/held/store.db" \
    --everything "$everything"
