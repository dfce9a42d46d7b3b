"""What a confirmed call costs the gateway itself (issue 19), with the
official Python SDK's client over stdio: `-n` calls of echo, back to back,
through each candidate's `gateway --config CONFIG` (echo ruled a write, the
client's person accepting each confirmation at once, `min_answer_ms =
0`), interleaved over `--rounds`. For each run: the calls' p50, and the
gateway's CPU and context switches a call from /proc (all its threads, and
by thread name). Prints a markdown table; never pass/fail.

    $ASKGATE_BENCH_PREFIX/venv/bin/python scripts/bench_confirm_cpu.py \
        --candidate base=/tmp/askgate-base --candidate new=target/release/askgate \
        --config confirm.toml -n 2000 --rounds 4

`confirm.toml` as scripts/bench-confirm.sh writes its confirm config.
"""

import argparse
import asyncio
import glob
import os
import time

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from bench_proc import cpu_ms, gateway_pid


async def accept(context, params):  # noqa: ARG001 - the SDK's signature
    return types.ElicitResult(action="accept", content={"confirm": True})


def by_thread(pid: int) -> dict[str, tuple[int, int]]:
    """Context switches and CPU clock ticks of `pid`'s threads, summed by
    thread name."""
    seen: dict[str, tuple[int, int]] = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/comm") as comm:
                name = comm.read().strip()
            switches = 0
            with open(f"{task}/status") as status:
                for line in status:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split()[1])
            with open(f"{task}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])
        except OSError:
            continue
        before = seen.get(name, (0, 0))
        seen[name] = (before[0] + switches, before[1] + ticks)
    return seen


async def run(binary: str, config: str, n: int):
    """p50 ms, CPU ms a call, switches a call, and by thread name: switches
    a call and CPU ms a call."""
    server = StdioServerParameters(command=binary, args=["gateway", "--config", config])
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server, errlog=quiet) as (read, write):
            async with ClientSession(read, write, elicitation_callback=accept) as session:
                await session.initialize()
                for _ in range(50):
                    await session.call_tool("echo", {"message": "warm"})
                pid = gateway_pid()
                cpu, threads = cpu_ms(pid), by_thread(pid)
                took = []
                for _ in range(n):
                    start = time.perf_counter()
                    result = await session.call_tool("echo", {"message": "hello askgate"})
                    took.append(time.perf_counter() - start)
                    if result.is_error:
                        raise RuntimeError(f"the call failed: {result.content}")
                cpu = (cpu_ms(pid) - cpu) / n
                after = by_thread(pid)
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    per_thread = {
        name: ((s - threads.get(name, (0, 0))[0]) / n, (t - threads.get(name, (0, 0))[1]) * tick_ms / n)
        for name, (s, t) in after.items()
    }
    took.sort()
    switches = sum(s for s, _ in per_thread.values())
    return took[len(took) // 2] * 1000, cpu, switches, per_thread


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidate", action="append", required=True, help="NAME=BINARY")
    parser.add_argument("--config", required=True,
                        help="the gateway's config; {name} in it is the candidate's name (a store each, "
                        "when the candidates' schemas differ)")
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    candidates = [c.split("=", 1) for c in args.candidate]
    print("| round | candidate | p50 ms | CPU ms a call | switches a call | by thread: switches, CPU ms a call |")
    print("|---|---|---|---|---|---|")
    for round_ in range(args.rounds):
        for name, binary in candidates:
            p50, cpu, switches, per_thread = await run(binary, args.config.replace("{name}", name), args.n)
            threads = "; ".join(
                f"{thread} {s:.1f}, {t:.2f}" for thread, (s, t) in sorted(per_thread.items()) if s or t
            )
            print(f"| {round_ + 1} | {name} | {p50:.3f} | {cpu:.3f} | {switches:.1f} | {threads} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
