"""The stdio gateway's own cost per call, read from its process (issue 19).

The official Python SDK's client calls server-everything's echo (ruled a
read) through each candidate gateway on stdio, in interleaved rounds; each
round reads the gateway process's CPU time (`/proc/<pid>/stat`, user +
system) and the bytes it wrote (`/proc/<pid>/io`, `wchar`: the pipes and
its store) before and after the measured calls. Unlike gateway_peers.py's
tree CPU minus direct's, this is the gateway process alone, so two builds
of it can be told apart by a few percent.

    python bench_stdio_cpu.py --candidate new=/path/askgate \
        --candidate old=/path/old-askgate --config-dir DIR -n 6000 --rounds 3

Each candidate runs `BIN gateway --config DIR/<name>.toml` (the store in
DIR/<name>/, kept across rounds as a deployment's would grow). Timings are
printed, never judged.
"""

import argparse
import asyncio
import os
import statistics
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench_proc import cpu_ms, gateway_pid, written_bytes


async def measure(binary: str, config: str, calls: int, in_flight: int) -> dict:
    params = StdioServerParameters(command=binary, args=["gateway", "--config", config])
    async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(200):  # warm up: the upstream listed, pages in
                await session.call_tool("echo", {"message": "hi"})
            pid = gateway_pid()
            cpu, wrote = cpu_ms(pid), written_bytes(pid)
            start = asyncio.get_running_loop().time()
            room = asyncio.Semaphore(in_flight)

            async def one():
                async with room:
                    result = await session.call_tool("echo", {"message": "hi"})
                    if result.is_error:
                        raise RuntimeError("echo failed")

            await asyncio.gather(*(one() for _ in range(calls)))
            elapsed = asyncio.get_running_loop().time() - start
            return {
                "cpu_ms": (cpu_ms(pid) - cpu) / calls,
                "bytes": (written_bytes(pid) - wrote) / calls,
                "rate": calls / elapsed,
            }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", action="append", required=True, help="NAME=BINARY")
    parser.add_argument("--config-dir", required=True)
    parser.add_argument("-n", type=int, default=6000, help="calls per round")
    parser.add_argument("--in-flight", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    candidates = [c.split("=", 1) for c in args.candidate]
    runs: dict[str, list[dict]] = {name: [] for name, _ in candidates}
    for round_ in range(args.rounds):
        for name, binary in candidates:
            config = os.path.join(args.config_dir, f"{name}.toml")
            run = await measure(binary, config, args.n, args.in_flight)
            runs[name].append(run)
            print(
                f"round {round_ + 1} {name}: {run['rate']:.0f} calls/s, "
                f"{run['cpu_ms']:.4f} ms CPU and {run['bytes']:.0f} bytes written per call",
                file=sys.stderr,
            )
    print(f"\n{args.n} calls a round at {args.in_flight} in flight, {args.rounds} rounds, medians:\n")
    print("| gateway | CPU ms per call | bytes written per call | calls/s |")
    print("|---|---|---|---|")
    for name, _ in candidates:
        median = lambda key: statistics.median(run[key] for run in runs[name])  # noqa: E731
        print(f"| {name} | {median('cpu_ms'):.4f} | {median('bytes'):.0f} | {median('rate'):.0f} |")


asyncio.run(main())
