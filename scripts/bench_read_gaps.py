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
the start of the write to the client; and, for what lies outside the
proxy, from its write upstream to the read of the answer (the upstream's
time, pipes included) and from its write to the client to the read of
the client's next line (the client's). The first 100 calls (warm-up) are left out.
Prints one markdown row; never pass/fail.

With `--confirmed` the calls are confirmed ones (the client's person
accepting at once): each call is split into its legs from the gateway's
side — its line read to the ask written, the ask to the answer read (the
client's), the answer to the record's sync, the sync itself, the sync's
end to the call written upstream, the upstream's time, and its answer
read to the result written — a row each (p25 / p50 / p75).

    python bench_read_gaps.py [--confirmed] NAME PERF_SCRIPT_OUTPUT
"""

import bisect
import re
import sys
from collections import Counter

READ, WRITE, WRITEV, FSYNC, FDATASYNC = 0, 1, 20, 74, 75
EVENT = re.compile(r"\s*(\S+)\s+(\d+)\s+([\d.]+):\s+raw_syscalls:sys_(enter|exit):\s+NR (\d+) (.*)")
WARM_UP = 100


def events(path: str) -> list[tuple[float, str, int]]:
    """The proxy's reads that brought bytes (at their end), its writes (at
    their start) and its syncs (at their start and end): (time, "r", "w",
    "s" or "S", fd), in time order."""
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
                args = rest.strip("()").split(", ")
                fd = int(args[0], 16)
                entered[tid] = (number, fd)
                # Not the log (stderr), nor a wake-up (an eventfd's 8 bytes).
                if number == WRITEV or (number == WRITE and fd != 2 and int(args[2], 16) != 8):
                    found.append((at, "w", fd))
                elif number in (FSYNC, FDATASYNC):
                    found.append((at, "s", fd))
            else:
                call = entered.pop(tid, None)
                got = int(rest.split("=")[1])
                if call and call[0] == READ and got > 0 and got != 8:
                    found.append((at, "r", call[1]))
                elif call and call[0] in (FSYNC, FDATASYNC):
                    found.append((at, "S", call[1]))
    found.sort()
    return found


def quartiles(waits: list[float]) -> str:
    waits = sorted(waits[WARM_UP:])
    if not waits:
        return "-"
    return " / ".join(f"{waits[len(waits) * q // 4]:.0f}" for q in (1, 2, 3))


def pipes(name: str, found) -> tuple[int, int, int, int]:
    """The client's pipe read, the client's written, the upstream's
    written and the upstream's read."""
    traffic = Counter((kind, fd) for _, kind, fd in found if kind in "rw")
    reads = [fd for (kind, fd), _ in traffic.most_common() if kind == "r"][:2]
    writes = [fd for (kind, fd), _ in traffic.most_common() if kind == "w"][:2]
    if len(reads) < 2 or len(writes) < 2:
        raise SystemExit(f"{name}: not four pipes in the trace ({traffic.most_common(6)})")
    client_in = next(fd for _, kind, fd in found if kind == "r" and fd in reads)
    client_out = next(fd for _, kind, fd in reversed(found) if kind == "w" and fd in writes)
    upstream_in = next(fd for fd in writes if fd != client_out)
    upstream_out = next(fd for fd in reads if fd != client_in)
    return client_in, client_out, upstream_in, upstream_out


# A confirmed call's landmarks, in the order they come.
LEGS = [
    ("the call's line read -> the ask written", "line", "asked"),
    ("the ask written -> the answer read (the client)", "asked", "answered"),
    ("the answer read -> the record's sync begun", "answered", "sync"),
    ("the record's sync", "sync", "synced"),
    ("the sync's end -> the call written upstream", "synced", "sent"),
    ("the call written -> its answer read (the upstream)", "sent", "back"),
    ("the upstream's answer read -> the result written", "back", "done"),
    ("in all: the call's line read -> the result written", "line", "done"),
]


def confirmed(name: str, path: str) -> None:
    found = events(path)
    client_in, client_out, upstream_in, upstream_out = pipes(name, found)
    times: dict[str, list[float]] = {
        "client read": [at for at, kind, fd in found if kind == "r" and fd == client_in],
        "client written": [at for at, kind, fd in found if kind == "w" and fd == client_out],
        "upstream read": [at for at, kind, fd in found if kind == "r" and fd == upstream_out],
        "sync begun": [at for at, kind, _ in found if kind == "s"],
        "sync ended": [at for at, kind, _ in found if kind == "S"],
    }

    def before(what: str, at: float) -> float:
        index = bisect.bisect_left(times[what], at) - 1
        if index < 0:
            raise IndexError(what)
        return times[what][index]

    def after(what: str, at: float) -> float:
        return times[what][bisect.bisect_right(times[what], at)]

    # Each call from where it is sent upstream: the landmarks before it
    # (the record's sync, the answer, the ask, the call's line) and after.
    calls = []
    sends = [at for at, kind, fd in found if kind == "w" and fd == upstream_in]
    for sent, sent_before in zip(sends[1:], sends):
        try:
            synced = before("sync ended", sent)
            sync = before("sync begun", synced)
            answered = before("client read", sync)
            asked = before("client written", answered)
            line = before("client read", asked)
            back = after("upstream read", sent)
            done = after("client written", back)
        except IndexError:
            continue
        # All of them this call's: none before the call sent ahead of it.
        if sent_before < line < asked < answered < sync < synced:
            calls.append(dict(line=line, asked=asked, answered=answered, sync=sync,
                              synced=synced, sent=sent, back=back, done=done))
    print(f"{name}: {len(calls) - WARM_UP} confirmed calls after {WARM_UP} left out\n")
    print("| leg | µs (p25 / p50 / p75) |")
    print("|---|---|")
    for what, start, end in LEGS:
        print(f"| {what} | {quartiles([(c[end] - c[start]) * 1e6 for c in calls])} |")


def main(name: str, path: str) -> None:
    found = events(path)
    client_in, client_out, upstream_in, upstream_out = pipes(name, found)
    going, upstream, coming, client = [], [], [], []
    line_at = sent_at = answer_at = written_at = None
    for at, kind, fd in found:
        if kind == "r" and fd == client_in:
            line_at = at
            if written_at is not None:
                client.append((at - written_at) * 1e6)
                written_at = None
        elif kind == "w" and fd == upstream_in and line_at is not None:
            going.append((at - line_at) * 1e6)
            line_at, sent_at = None, at
        elif kind == "r" and fd == upstream_out:
            answer_at = at
            if sent_at is not None:
                upstream.append((at - sent_at) * 1e6)
                sent_at = None
        elif kind == "w" and fd == client_out and answer_at is not None:
            coming.append((at - answer_at) * 1e6)
            answer_at, written_at = None, at
    print(f"| {name} | {quartiles(going)} | {quartiles(coming)} | {quartiles(upstream)} "
          f"| {quartiles(client)} | {len(going)} |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--confirmed":
        confirmed(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2])
    else:
        raise SystemExit(__doc__)
