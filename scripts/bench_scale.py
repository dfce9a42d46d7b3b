"""The gateway at scale on Streamable HTTP (issue 19), with the official
Python SDK's client: run by scripts/bench-scale.sh, which starts the
servers. Three measures, each next to a baseline measured in the same run:

- memory: N idle sessions opened (initialize, notifications/initialized;
  with `--listening`, a GET stream each too, held open as the SDKs'
  clients hold theirs) on the gateway and on rmcp's own server (the
  conformance fixture, the baseline); the RSS each adds per session, a
  second after the last opened and again once they were quiet for
  `--quiet` seconds (the gateway rests a session quiet for half a
  second);
- waking: a `ping` (rmcp's to answer, not the express lane's) on a session
  just used, and on the same session after it was quiet for `--quiet`
  seconds (at rest on the gateway: woken by the ping); medians;
- load: C clients at once, each its own session calling server-everything's
  echo K times; errors, p50, p99 and calls/s, through the gateway (its
  stdio upstream) and directly (server-everything over its own Streamable
  HTTP, the baseline).

Prints a markdown report; never pass/fail (timings are not tests).
"""

import argparse
import asyncio
import socket
import sys
import time

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench_proc import rss_kib

HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}
VERSION = "2025-06-18"


async def ping_ms(http, url: str, session: str) -> float:
    headers = dict(HEADERS, **{"mcp-session-id": session, "mcp-protocol-version": VERSION})
    start = time.perf_counter()
    # Until the answer's event, as an SDK client reads it: the stream's end
    # comes in a write of its own, after it.
    async with http.stream("POST", url, headers=headers,
                           json={"jsonrpc": "2.0", "id": 2, "method": "ping"}) as answer:
        answer.raise_for_status()
        async for line in answer.aiter_lines():
            if line.startswith("data:") and '"result"' in line or line.startswith("{"):
                break
    return (time.perf_counter() - start) * 1000


async def waking(url: str, count: int, quiet: float) -> tuple[float, float]:
    """Median ms of a ping on a session just used, and after `quiet` s."""
    sessions = await open_sessions(url, count, 8)
    used, quieted = [], []
    # Each request in one write: no Nagle wait on the body (40 ms here).
    nodelay = httpx.AsyncHTTPTransport(
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    async with httpx.AsyncClient(transport=nodelay) as http:
        for session in sessions:
            await ping_ms(http, url, session)
            used.append(await ping_ms(http, url, session))
        await asyncio.sleep(quiet)
        for session in sessions:
            quieted.append(await ping_ms(http, url, session))
    used.sort()
    quieted.sort()
    return used[len(used) // 2], quieted[len(quieted) // 2]


async def open_sessions(url: str, count: int, at_once: int, listen=None) -> list[str]:
    """Open `count` sessions by hand, `at_once` at a time; their ids.
    With `listen`, an HTTP client: each session's GET stream is opened at
    once after its `initialized`, as the SDKs' clients open theirs, and
    held open (kept in `listen.streams`, unread)."""
    ids: list[str] = []
    gate = asyncio.Semaphore(at_once)
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=at_once)) as http:

        async def one() -> None:
            async with gate:
                opened = await http.post(url, headers=HEADERS, json={
                    "jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": VERSION, "capabilities": {},
                               "clientInfo": {"name": "bench-scale", "version": "1"}}})
                opened.raise_for_status()
                session = opened.headers["mcp-session-id"]
                headers = dict(HEADERS, **{"mcp-session-id": session,
                                           "mcp-protocol-version": VERSION})
                done = await http.post(url, headers=headers, json={
                    "jsonrpc": "2.0", "method": "notifications/initialized"})
                done.raise_for_status()
                ids.append(session)
                if listen is not None:
                    get = listen.build_request("GET", url, headers={
                        "accept": "text/event-stream", "mcp-session-id": session,
                        "mcp-protocol-version": VERSION})
                    stream = await listen.send(get, stream=True)
                    stream.raise_for_status()
                    listen.streams.append(stream)

        await asyncio.gather(*(one() for _ in range(count)))
    return ids


async def memory(url: str, pid: int, count: int, quiet: float, listening: bool):
    """RSS before, a second after the sessions opened, and after `quiet`
    seconds more; the two last per session. With `listening`, each
    session's client listens on its GET stream the whole time."""
    before = rss_kib(pid)
    start = time.perf_counter()
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=count + 16),
                                 timeout=None) as http:
        http.streams = []
        await open_sessions(url, count, 32, http if listening else None)
        opened_in = time.perf_counter() - start
        await asyncio.sleep(1)
        after = rss_kib(pid)
        await asyncio.sleep(quiet)
        quieted = rss_kib(pid)
        for stream in http.streams:
            await stream.aclose()
    return before, after, (after - before) / count, quieted, (quieted - before) / count, opened_in


async def load(url: str, tool: str, arguments: dict, clients: int, calls: int):
    """`clients` sessions at once, each `calls` calls; latencies and errors."""
    latencies: list[float] = []
    errors: list[str] = []

    async def client() -> None:
        try:
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for _ in range(calls):
                        start = time.perf_counter()
                        result = await session.call_tool(tool, arguments)
                        latencies.append(time.perf_counter() - start)
                        if result.is_error:
                            errors.append("isError")
        except Exception as error:  # noqa: BLE001 - counted, not raised
            errors.append(f"{type(error).__name__}: {error!r}"[:300])

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else float("nan")  # noqa: E731
    for error in sorted(set(errors))[:5]:
        print(f"  error ({errors.count(error)}x): {error}", file=sys.stderr)
    return {
        "calls": len(latencies),
        "errors": len(errors),
        "p50": p(0.50),
        "p99": p(0.99),
        "per_s": len(latencies) / elapsed if elapsed else 0.0,
    }


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gateway", required=True, help="the gateway's MCP URL")
    ap.add_argument("--gateway-pid", type=int, required=True)
    ap.add_argument("--baseline", required=True, help="rmcp's own server's MCP URL")
    ap.add_argument("--baseline-pid", type=int, required=True)
    ap.add_argument("--direct", required=True,
                    help="server-everything's own Streamable HTTP URL (the load baseline)")
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--quiet", type=float, default=4.0,
                    help="seconds the idle sessions stay quiet before the second measure")
    ap.add_argument("--listening", action="store_true",
                    help="each idle session's client listens on its GET stream, as the SDKs' do")
    args = ap.parse_args()

    listens = ", each client listening on its GET stream" if args.listening else ""
    print(f"## askgate at scale ({args.sessions} idle sessions{listens}; "
          f"{args.clients} clients x {args.calls} calls)\n")
    print(f"| server | idle sessions | opened in s | RSS before KiB | RSS 1 s after KiB | KiB per session "
          f"| RSS {args.quiet:g} s later KiB | KiB per session then |")
    print("|---|---|---|---|---|---|---|---|")
    for name, url, pid in (("rmcp's own server (baseline)", args.baseline, args.baseline_pid),
                           ("askgate gateway --listen", args.gateway, args.gateway_pid)):
        before, after, each, quieted, each_quiet, took = await memory(
            url, pid, args.sessions, args.quiet, args.listening)
        print(f"| {name} | {args.sessions} | {took:.1f} | {before} | {after} | {each:.1f} "
              f"| {quieted} | {each_quiet:.1f} |")
        sys.stdout.flush()

    print(f"\n| server | sessions | ping ms, session just used | ping ms, session quiet {args.quiet:g} s "
          f"| ratio |")
    print("|---|---|---|---|---|")
    for name, url in (("rmcp's own server (baseline)", args.baseline),
                      ("askgate gateway --listen (woken from rest)", args.gateway)):
        used, quieted = await waking(url, 50, args.quiet)
        print(f"| {name} | 50 | {used:.2f} | {quieted:.2f} | {quieted / used:.2f} |")
        sys.stdout.flush()

    print("\n| echo of server-everything | clients | calls | errors | p50 ms | p99 ms | calls/s | p99 / direct's |")
    print("|---|---|---|---|---|---|---|---|")
    direct = None
    for name, url in (("directly, over its own Streamable HTTP (baseline)", args.direct),
                      ("through askgate gateway --listen (stdio upstream)", args.gateway)):
        result = await load(url, "echo", {"message": "hello askgate"}, args.clients, args.calls)
        direct = direct or result
        ratio = result["p99"] / direct["p99"] if direct["p99"] else float("nan")
        print(f"| {name} | {args.clients} | {result['calls']} | {result['errors']} | "
              f"{result['p50']:.2f} | {result['p99']:.2f} | {result['per_s']:.0f} | {ratio:.2f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
