"""Make N calls of server-everything's echo through a gateway on stdio,
with the official Python SDK's client, one after another; for
scripts/bench-read-instructions.sh, which counts what they cost.

    python bench_calls.py N COMMAND [ARGS...]
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(calls: int, argv: list[str]) -> None:
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for i in range(calls):
                    result = await session.call_tool("echo", {"message": f"hello {i}"})
                    if result.is_error:
                        raise SystemExit(f"call {i} failed: {result.content}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    asyncio.run(main(int(sys.argv[1]), sys.argv[2:]))
