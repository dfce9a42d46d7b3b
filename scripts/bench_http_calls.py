"""Make N calls of server-everything's echo through a gateway on
Streamable HTTP (`gateway --listen`), with the official Python SDK's
client, one after another; for scripts/bench-read-instructions.sh --http,
which counts what they cost. Starts COMMAND (which must listen on PORT),
waits until it does, makes the calls, then stops it with SIGTERM and
waits for it to end (valgrind writes its counts then).

    python bench_http_calls.py N PORT COMMAND [ARGS...]
"""

import asyncio
import signal
import subprocess
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench_proc import until_listening


async def main(calls: int, port: int, argv: list[str]) -> None:
    gateway = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        # Under valgrind the gateway starts slowly.
        await until_listening(port, gateway, within_s=120)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for i in range(calls):
                    result = await session.call_tool("echo", {"message": f"hello {i}"})
                    if result.is_error:
                        raise SystemExit(f"call {i} failed: {result.content}")
    finally:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(timeout=120)
        except subprocess.TimeoutExpired:
            gateway.kill()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]))
