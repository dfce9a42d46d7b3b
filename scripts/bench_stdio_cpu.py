"""The gateway's own cost per call, read from its process (issue 19).

The official Python SDK's client calls server-everything's echo (ruled a
read) through each candidate gateway on stdio (or, with `--http`, on
Streamable HTTP: `gateway --listen`), in interleaved rounds; each
round reads the gateway process's CPU time (`/proc/<pid>/stat`, user +
system) and the bytes it wrote (`/proc/<pid>/io`, `wchar`: the pipes and
its store) before and after the measured calls, and its resident memory
after them (`VmRSS`). Unlike gateway_peers.py's
tree CPU minus direct's, this is the gateway process alone, so two builds
of it can be told apart by a few percent.

    python bench_stdio_cpu.py --candidate new=/path/askgate \
        --candidate old=/path/old-askgate --config-dir DIR -n 6000 --rounds 3
    python bench_stdio_cpu.py --http ...   # the same, through --listen

Each candidate runs `BIN gateway --config DIR/<name>.toml` (the store in
DIR/<name>/, kept across rounds as a deployment's would grow). Timings are
printed, never judged.
"""

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench_proc import cpu_split_ms, gateway_pid, rss_kib, until_listening, written_bytes


async def measure(binary: str, config: str, calls: int, in_flight: int, http: bool) -> dict:
    if not http:
        return await measure_stdio([binary, "gateway", "--config", config], b"gateway", calls, in_flight)
    port = free_port()
    gateway = subprocess.Popen(
        [binary, "gateway", "--config", config, "--listen", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        await until_listening(port, gateway)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write) as session:
                return await measure_session(session, gateway.pid, calls, in_flight)
    finally:
        gateway.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            gateway.wait(timeout=10)
        if gateway.poll() is None:
            gateway.kill()


async def measure_stdio(argv: list[str], marker: bytes, calls: int, in_flight: int) -> dict:
    """Through `argv` on stdio, the process measured being the child with
    `marker` among its arguments."""
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            return await measure_session(session, gateway_pid(marker), calls, in_flight)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def measure_session(session: ClientSession, pid: int, calls: int, in_flight: int) -> dict:
    await session.initialize()
    for _ in range(200):  # warm up: the upstream listed, pages in
        await session.call_tool("echo", {"message": "hi"})
    (user, system), wrote = cpu_split_ms(pid), written_bytes(pid)
    start = asyncio.get_running_loop().time()
    room = asyncio.Semaphore(in_flight)

    async def one():
        async with room:
            result = await session.call_tool("echo", {"message": "hi"})
            if result.is_error:
                raise RuntimeError("echo failed")

    await asyncio.gather(*(one() for _ in range(calls)))
    elapsed = asyncio.get_running_loop().time() - start
    user_after, system_after = cpu_split_ms(pid)
    return {
        "cpu_ms": (user_after - user + system_after - system) / calls,
        "user_ms": (user_after - user) / calls,
        "system_ms": (system_after - system) / calls,
        "bytes": (written_bytes(pid) - wrote) / calls,
        "rate": calls / elapsed,
        "rss_mib": rss_kib(pid) / 1024,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", action="append", required=True, help="NAME=BINARY")
    parser.add_argument("--config-dir", required=True)
    parser.add_argument("-n", type=int, default=6000, help="calls per round")
    parser.add_argument("--in-flight", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--http", action="store_true", help="through `gateway --listen`, not stdio")
    parser.add_argument("--bare-relay", nargs="+", metavar="ARG",
                        help="also measure askgate-bare-relay (stdio only): its binary, then the "
                             "upstream's command; the floor any stdio proxy pays")
    parser.add_argument("--on-tokio", action="store_true",
                        help="with --bare-relay, also measure it relaying on a tokio runtime as "
                             "the gateway does its I/O (`askgate-bare-relay --on-tokio`)")
    args = parser.parse_args()
    candidates = [c.split("=", 1) for c in args.candidate]
    if args.bare_relay and not args.http:
        candidates.append(["bare-relay", None])
        if args.on_tokio:
            candidates.append(["bare-relay-on-tokio", None])
    runs: dict[str, list[dict]] = {name: [] for name, _ in candidates}
    for round_ in range(args.rounds):
        for name, binary in candidates:
            config = os.path.join(args.config_dir, f"{name}.toml")
            if binary is None:
                relay = args.bare_relay[:1] + ["--on-tokio"] * (name != "bare-relay") + args.bare_relay[1:]
                run = await measure_stdio(relay, b"bare-relay", args.n, args.in_flight)
            else:
                run = await measure(binary, config, args.n, args.in_flight, args.http)
            runs[name].append(run)
            print(
                f"round {round_ + 1} {name}: {run['rate']:.0f} calls/s, "
                f"{run['cpu_ms']:.4f} ms CPU ({run['user_ms']:.4f} user, "
                f"{run['system_ms']:.4f} system) and {run['bytes']:.0f} bytes written per call, "
                f"{run['rss_mib']:.1f} MiB resident",
                file=sys.stderr,
            )
    transport = "Streamable HTTP (--listen)" if args.http else "stdio"
    print(f"\n{transport}: {args.n} calls a round at {args.in_flight} in flight, "
          f"{args.rounds} rounds, medians:\n")
    print("| gateway | CPU ms per call | of it user | of it system | bytes written per call "
          "| calls/s | RSS MiB after |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in candidates:
        median = lambda key: statistics.median(run[key] for run in runs[name])  # noqa: E731
        print(f"| {name} | {median('cpu_ms'):.4f} | {median('user_ms'):.4f} "
              f"| {median('system_ms'):.4f} | {median('bytes'):.0f} | {median('rate'):.0f} "
              f"| {median('rss_mib'):.1f} |")


asyncio.run(main())
