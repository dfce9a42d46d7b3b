"""Read calls' waits on a stdio proxy, from its system calls: run by
scripts/bench-read-gaps.sh on `perf script -F comm,tid,time,event,trace`
of `raw_syscalls:sys_enter` and `sys_exit`, recorded around the proxy (and
the upstream it starts, which is left out by its name: `node`) while a
client makes calls one at a time.

The proxy's four pipes are told apart by their traffic: the two read from
and the two written to most. The client's is the one of each it reads
from first (its `initialize`) and writes to last (the upstream is
written to before the client is answered). For each call, the time from
the end of the read that brought the client's line to the start of the
write upstream, and from the end of the read of the upstream's answer to
the start of the write to the client; the first 100 calls (warm-up) are
left out. Prints one markdown row; never pass/fail.

    python bench_read_gaps.py NAME PERF_SCRIPT_OUTPUT
"""

import re
import sys
from collections import Counter

READ, WRITE, WRITEV = 0, 1, 20
EVENT = re.compile(r"\s*(\S+)\s+(\d+)\s+([\d.]+):\s+raw_syscalls:sys_(enter|exit):\s+NR (\d+) (.*)")
WARM_UP = 100


def events(path: str) -> list[tuple[float, str, int]]:
    """The proxy's reads that brought bytes (at their end) and its writes
    (at their start): (time, "r" or "w", fd), in time order."""
    entered: dict[str, tuple[int, int]] = {}
    found = []
    with open(path) as lines:
        for line in lines:
            matched = EVENT.match(line)
            if not matched:
                continue
            comm, tid, at, edge, number, rest = matched.groups()
            if comm == "node":
                continue
            number, at = int(number), float(at)
            if edge == "enter":
                fd = int(rest.strip("()").split(", ")[0], 16)
                entered[tid] = (number, fd)
                if number in (WRITE, WRITEV):
                    found.append((at, "w", fd))
            else:
                call = entered.pop(tid, None)
                if call and call[0] == READ and int(rest.split("=")[1]) > 0:
                    found.append((at, "r", call[1]))
    found.sort()
    return found


def quartiles(waits: list[float]) -> str:
    waits = sorted(waits[WARM_UP:])
    if not waits:
        return "-"
    return " / ".join(f"{waits[len(waits) * q // 4]:.0f}" for q in (1, 2, 3))


def main(name: str, path: str) -> None:
    found = events(path)
    traffic = Counter((kind, fd) for _, kind, fd in found)
    reads = [fd for (kind, fd), _ in traffic.most_common() if kind == "r"][:2]
    writes = [fd for (kind, fd), _ in traffic.most_common() if kind == "w"][:2]
    if len(reads) < 2 or len(writes) < 2:
        raise SystemExit(f"{name}: not four pipes in the trace ({traffic.most_common(6)})")
    client_in = next(fd for _, kind, fd in found if kind == "r" and fd in reads)
    client_out = next(fd for _, kind, fd in reversed(found) if kind == "w" and fd in writes)
    upstream_in = next(fd for fd in writes if fd != client_out)
    upstream_out = next(fd for fd in reads if fd != client_in)
    going, coming = [], []
    line_at = answer_at = None
    for at, kind, fd in found:
        if kind == "r" and fd == client_in:
            line_at = at
        elif kind == "w" and fd == upstream_in and line_at is not None:
            going.append((at - line_at) * 1e6)
            line_at = None
        elif kind == "r" and fd == upstream_out:
            answer_at = at
        elif kind == "w" and fd == client_out and answer_at is not None:
            coming.append((at - answer_at) * 1e6)
            answer_at = None
    print(f"| {name} | {quartiles(going)} | {quartiles(coming)} | {len(going)} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
