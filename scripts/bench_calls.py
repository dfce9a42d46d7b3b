"""Make N calls of server-everything's echo through a gateway on stdio,
with the official Python SDK's client, one after another; for
scripts/bench-read-instructions.sh, which counts what they cost. The
client accepts each confirmation it is asked at once (`confirm: true`),
so the same calls through a gateway where echo is a write are confirmed
calls.

    python bench_calls.py N COMMAND [ARGS...]
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def accept(context, params):  # noqa: ARG001 - the SDK's signature
    return types.ElicitResult(action="accept", content={"confirm": True})


async def main(calls: int, argv: list[str]) -> None:
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, elicitation_callback=accept) as session:
                await session.initialize()
                for i in range(calls):
                    result = await session.call_tool("echo", {"message": f"hello {i}"})
                    if result.is_error:
                        raise SystemExit(f"call {i} failed: {result.content}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    asyncio.run(main(int(sys.argv[1]), sys.argv[2:]))
