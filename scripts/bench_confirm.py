"""What a person's confirmation adds to a call (issue 19), with the official
Python SDK's client over stdio: run by scripts/bench-confirm.sh, which
writes the two configs. server-everything's echo is called through two
gateways in one run:

- `read`: echo ruled a read (no one asked; the express lane);
- `confirmed`: echo ruled medium_write, and the client's person accepts
  each confirmation at once (`min_answer_ms = 0`, so an instant accept
  counts as read).

The budget it is held to: one durable commit (SQLite, WAL, synchronous
FULL, one row, in the same folder as the gateways' stores) plus one round
trip between the client and the gateway (a ping through it) — the
elicitation's. A ping is the least an elicitation can take; what one
takes with this client, from a server with no gateway between, is
measured too (`--everything`): server-everything's
trigger-elicitation-request (it elicits, the client's callback answers,
it returns) against its echo, called directly. Prints a markdown report;
never pass/fail.
"""

import argparse
import asyncio
import os
import sqlite3
import sys
import time

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from bench_proc import cpu_ms, gateway_pid, rss_kib


def p50(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2] * 1000


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


async def accept(context, params):  # noqa: ARG001 - the SDK's signature
    return types.ElicitResult(action="accept", content={"confirm": True})


async def calls(command: list[str], n: int, warmup: int):
    """Echo `n` times through the gateway run by `command`; each call's
    time, and each ping's."""
    server = StdioServerParameters(command=command[0], args=command[1:])
    # The gateways' logs (a line per decision) are not the report.
    with open(os.devnull, "w") as quiet:
        return await calls_logged(server, n, warmup, quiet)


async def calls_logged(server, n: int, warmup: int, errlog):
    async with stdio_client(server, errlog=errlog) as (read, write):
        async with ClientSession(read, write, elicitation_callback=accept) as session:
            await session.initialize()
            for _ in range(warmup):
                await session.call_tool("echo", {"message": "warm"})
            took, pings = [], []
            for _ in range(n):
                start = time.perf_counter()
                result = await session.call_tool("echo", {"message": "hello askgate"})
                took.append(time.perf_counter() - start)
                if result.is_error:
                    raise RuntimeError(f"the call failed: {result.content}")
                start = time.perf_counter()
                await session.send_ping()
                pings.append(time.perf_counter() - start)
            return took, pings


async def decline(context, params):  # noqa: ARG001 - the SDK's signature
    return types.ElicitResult(action="decline")


async def direct(everything: str, n: int, warmup: int):
    """`n` of server-everything's echo and `n` of its elicitation (the
    client's callback declining at once: the same round trip as an
    accept, without filling its form), called directly, interleaved."""
    server = StdioServerParameters(command="node", args=[everything, "stdio"])
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server, errlog=quiet) as (read, write):
            async with ClientSession(read, write, elicitation_callback=decline) as session:
                await session.initialize()
                for _ in range(warmup):
                    await session.call_tool("echo", {"message": "warm"})
                    await session.call_tool("trigger-elicitation-request", {})
                echo, elicited = [], []
                for _ in range(n):
                    start = time.perf_counter()
                    await session.call_tool("echo", {"message": "hello askgate"})
                    echo.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await session.call_tool("trigger-elicitation-request", {})
                    elicited.append(time.perf_counter() - start)
                return echo, elicited


def commits(folder: str, n: int) -> list[float]:
    """`n` one-row durable commits in a SQLite file in `folder`."""
    path = os.path.join(folder, "commit-baseline.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)")
    took = []
    for i in range(n):
        start = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t (v) VALUES (?)", (f"row {i}",))
        db.execute("COMMIT")
        took.append(time.perf_counter() - start)
    db.close()
    return took


def pending(store: str) -> int:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM asks WHERE status = 'pending'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


async def held(askgate: str, config: str, store: str, n: int):
    """`n` calls at once from a client that shows no ask: each waits for a
    person in the inbox. The time until all `n` wait, and the gateway's CPU
    and memory for them."""
    server = StdioServerParameters(command=askgate, args=["gateway", "--config", config])
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server, errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                pid = gateway_pid()
                base = pending(store)
                cpu, rss = cpu_ms(pid), rss_kib(pid)
                start = time.perf_counter()
                waiting = [asyncio.create_task(session.call_tool("echo", {"message": f"held {i}"}))
                           for i in range(n)]
                while pending(store) - base < n:
                    await asyncio.sleep(0.01)
                took = time.perf_counter() - start
                cpu, rss = cpu_ms(pid) - cpu, rss_kib(pid) - rss
                for call in waiting:
                    call.cancel()
                await asyncio.gather(*waiting, return_exceptions=True)
                return took, cpu, rss


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--askgate", required=True)
    ap.add_argument("--read-config", required=True)
    ap.add_argument("--confirm-config", required=True)
    ap.add_argument("--folder", required=True, help="where the stores are (the commit baseline goes there)")
    ap.add_argument("--held-config", help="a config whose echo waits for a person in the inbox")
    ap.add_argument("--held-store", help="that config's store file")
    ap.add_argument("--everything", help="server-everything's dist/index.js: the elicitation's "
                    "round trip measured without a gateway")
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    read, confirmed, pings, commit, echo, elicited = [], [], [], [], [], []
    for _ in range(args.rounds):
        if args.everything:
            took, asked = await direct(args.everything, args.n, 5)
            echo += took
            elicited += asked
        took, ping = await calls([args.askgate, "gateway", "--config", args.read_config], args.n, 20)
        read += took
        pings += ping
        took, ping = await calls([args.askgate, "gateway", "--config", args.confirm_config], args.n, 5)
        confirmed += took
        pings += ping
        commit += commits(args.folder, args.n)
        sys.stderr.write(".")
        sys.stderr.flush()
    sys.stderr.write("\n")

    added = p50(confirmed) - p50(read)
    budget = p50(commit) + p50(pings)
    print(f"## A confirmed call against a read ({args.rounds} rounds x {args.n} calls, stdio)\n")
    print("| what | p50 ms | p99 ms |")
    print("|---|---|---|")
    print(f"| read (no one asked) | {p50(read):.3f} | {p99(read):.3f} |")
    print(f"| confirmed (the person accepts at once) | {p50(confirmed):.3f} | {p99(confirmed):.3f} |")
    print(f"| one durable SQLite commit (WAL, FULL) | {p50(commit):.3f} | {p99(commit):.3f} |")
    print(f"| one round trip client <-> gateway (ping) | {p50(pings):.3f} | {p99(pings):.3f} |")
    print(f"\nadded by the confirmation (p50): {added:.3f} ms; "
          f"budget (one commit + one round trip): {budget:.3f} ms; "
          f"added / budget: {added / budget:.2f}")
    if echo:
        trip = p50(elicited) - p50(echo)
        print(f"\nan elicitation's round trip with this client, no gateway between (p50 of "
              f"server-everything's trigger-elicitation-request {p50(elicited):.3f} ms, less its "
              f"echo {p50(echo):.3f} ms): {trip:.3f} ms; budget with it (one commit + that "
              f"round trip): {p50(commit) + trip:.3f} ms; added / that budget: "
              f"{added / (p50(commit) + trip):.2f}")
    if not args.held_config:
        return
    print("\n## Calls held for a person at once (a client that shows no ask: each waits in the inbox)\n")
    print("| calls held | until all wait, s | gateway CPU ms per call | gateway RSS KiB per call |")
    print("|---|---|---|---|")
    per_call = {}
    for n in (100, 1000):
        took, cpu, rss = await held(args.askgate, args.held_config, args.held_store, n)
        per_call[n] = cpu / n
        print(f"| {n} | {took:.2f} | {cpu / n:.3f} | {rss / n:.1f} |")
    print(f"\nCPU per call at 1,000 held / at 100: {per_call[1000] / per_call[100]:.2f} (flat is 1.00)")


if __name__ == "__main__":
    asyncio.run(main())
