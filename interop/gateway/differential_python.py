"""The differential battery, Python side (issue 16): the PyPI `mcp`
ClientSession on stdio runs every operation of differential_battery.json
against the server the command after `--` starts — server-everything
directly, or `askgate gateway -- ...` in front of it — and writes what came
back as a JSON transcript, for differential_compare.py to hold against the
other run.

The client declares elicitation (form and url), sampling and roots, and
answers the server's requests with the battery's fixed answers. Per
operation the transcript holds the result or the error (code, message,
data), the server's requests the client answered during it, the progress
notifications of its call (with `progress`) and the notifications it awaits
(with `await`). Besides the battery: `initialize` (the handshake's result),
`coverage` (listed tools no operation calls) and `notifications-elsewhere`
(the methods of the notifications no operation claimed).

    python differential_python.py --out FILE [--log FILE] -- COMMAND [ARGS...]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import BaseModel

SDK = f"mcp {importlib.metadata.version('mcp')}"
BATTERY = Path(__file__).with_name("differential_battery.json")
OPERATION_TIMEOUT = 30
# The battery speaks 2025-11-25, where setLevel and subscribe are current.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


def dump(value: Any) -> Any:
    """What a model says on the wire (camelCase, no nulls)."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


def failure(error: BaseException) -> dict[str, Any]:
    """An error as the transcript records it: a JSON-RPC error's code,
    message and data, else what the SDK raised."""
    if isinstance(error, MCPError):
        said: dict[str, Any] = {"code": error.error.code, "message": error.error.message}
        if error.error.data is not None:
            said["data"] = error.error.data
        return said
    if isinstance(error, BaseExceptionGroup):
        return failure(error.exceptions[0])
    if isinstance(error, TimeoutError):
        return {"exception": "TimeoutError", "message": f"no answer within {OPERATION_TIMEOUT}s"}
    return {"exception": type(error).__name__, "message": " ".join(str(error).split())}


class Client:
    """The client's side: its fixed answers, and what the server sent it."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.notifications: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        said = dump(params)
        self.requests.append({"method": "elicitation/create", "params": said})
        answer = self.answers["elicitation_url" if said.get("mode") == "url" else "elicitation_form"]
        return types.ElicitResult.model_validate(answer)

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.requests.append({"method": "sampling/createMessage", "params": dump(params)})
        return types.CreateMessageResult.model_validate(self.answers["sampling"])

    async def roots(self, context: Any) -> types.ListRootsResult:
        # Not recorded: the server asks at a moment of its own (after the
        # handshake), not during one operation.
        return types.ListRootsResult.model_validate({"roots": self.answers["roots"]})

    async def notified(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.notifications.append({"method": "<exception>", "params": {"message": str(message)}})
        elif isinstance(message, BaseModel):
            self.notifications.append(dump(message))


def matches(notification: dict[str, Any], wanted: dict[str, Any]) -> bool:
    if notification.get("method") != wanted["method"]:
        return False
    pattern = wanted.get("match")
    return pattern is None or re.search(pattern, json.dumps(notification.get("params", {}))) is not None


async def all_pages(list_page: Any, key: str) -> dict[str, Any]:
    """Every page of a list, as one result."""
    items: list[Any] = []
    cursor = None
    while True:
        page = await list_page(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        said = dump(page)
        items.extend(said.get(key, []))
        cursor = page.next_cursor
        if not cursor:
            said[key] = items
            said.pop("nextCursor", None)
            return said


async def request(session: ClientSession, step: dict[str, Any], progress: list[dict[str, Any]]) -> Any:
    """Send one operation of the battery the SDK's way; its result."""
    method, params = step["method"], step.get("params", {})
    if method == "ping":
        return dump(await session.send_ping())
    if method == "logging/setLevel":
        return dump(await session.set_logging_level(params["level"]))
    if method == "tools/list":
        return await all_pages(session.list_tools, "tools")
    if method == "prompts/list":
        return await all_pages(session.list_prompts, "prompts")
    if method == "resources/list":
        return await all_pages(session.list_resources, "resources")
    if method == "resources/templates/list":
        return await all_pages(session.list_resource_templates, "resourceTemplates")
    if method == "resources/read":
        return dump(await session.read_resource(params["uri"]))
    if method == "resources/subscribe":
        return dump(await session.subscribe_resource(params["uri"]))
    if method == "resources/unsubscribe":
        return dump(await session.unsubscribe_resource(params["uri"]))
    if method == "prompts/get":
        return dump(await session.get_prompt(params["name"], params.get("arguments")))
    if method == "completion/complete":
        ref = params["ref"]
        typed = types.PromptReference if ref["type"] == "ref/prompt" else types.ResourceTemplateReference
        context = params.get("context", {}).get("arguments")
        return dump(await session.complete(typed.model_validate(ref), params["argument"], context))
    if method == "tools/call":

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            seen: dict[str, Any] = {"progress": done}
            if total is not None:
                seen["total"] = total
            if message is not None:
                seen["message"] = message
            progress.append(seen)

        callback = on_progress if step.get("progress") else None
        return dump(await session.call_tool(params["name"], params.get("arguments"), progress_callback=callback))
    raise ValueError(f"the battery names a method this client does not send: {method}")


async def operation(
    session: ClientSession, client: Client, step: dict[str, Any], await_seconds: float, claimed: set[int]
) -> dict[str, Any]:
    """Run one operation; what the transcript says of it."""
    first_notification, first_request = len(client.notifications), len(client.requests)
    progress: list[dict[str, Any]] = []
    said: dict[str, Any] = {"op": step["op"]}
    try:
        with anyio.fail_after(OPERATION_TIMEOUT):
            said["result"] = await request(session, step, progress)
    except Exception as error:  # every error is part of the transcript
        said["error"] = failure(error)
    awaited = step.get("await", [])
    deadline = time.monotonic() + await_seconds
    while awaited and time.monotonic() < deadline:
        seen = client.notifications[first_notification:]
        if all(any(matches(n, wanted) for n in seen) for wanted in awaited):
            break
        await anyio.sleep(0.05)
    if awaited:
        said["notifications"] = []
        for index in range(first_notification, len(client.notifications)):
            if any(matches(client.notifications[index], wanted) for wanted in awaited):
                said["notifications"].append(client.notifications[index])
                claimed.add(index)
    if step.get("progress"):
        said["progress"] = progress
    said["requests"] = client.requests[first_request:]
    return said


# What a bare client runs: the lists.
BARE_OPS = {"tools-list", "prompts-list", "resources-list", "resources-templates-list"}


def names(operation: dict[str, Any]) -> dict[str, Any]:
    """A list operation as the names (or URIs) it listed."""
    result = operation.get("result")
    if not isinstance(result, dict):
        return {"op": operation["op"] + "-names", **{k: v for k, v in operation.items() if k != "op"}}
    listed = next((v for v in result.values() if isinstance(v, list)), [])
    keys = [item.get("name") or item.get("uri") or item.get("uriTemplate") for item in listed]
    # A set, as a map: a missing one shows as itself.
    return {"op": operation["op"] + "-names", "result": {k: True for k in sorted(k for k in keys if k)}}


def coverage(operations: list[dict[str, Any]], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The listed tools no operation of the battery calls."""
    listed = next((o for o in operations if o["op"] == "tools-list"), {})
    names = [tool.get("name") for tool in listed.get("result", {}).get("tools", [])]
    called = {s["params"]["name"] for s in steps if s["method"] == "tools/call"}
    return {"op": "coverage", "result": {"uncalled": sorted(n for n in names if n not in called)}}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    battery = json.loads(BATTERY.read_text())
    client = Client(battery["answers"])
    operations: list[dict[str, Any]] = []
    claimed: set[int] = set()
    params = StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
    # A bare client (as LangChain's is) declares no sampling, roots or
    # elicitation: a server that offers tools by the client's capabilities
    # offers fewer, and so must it through the gateway.
    steps = [s for s in battery["operations"] if not args.bare or s["op"] in BARE_OPS]
    callbacks = {} if args.bare else {
        "elicitation_callback": client.elicit,
        "sampling_callback": client.sample,
        "list_roots_callback": client.roots,
    }
    with open(args.log, "w") if args.log else open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=client.notified, **callbacks) as session:
                try:
                    with anyio.fail_after(OPERATION_TIMEOUT):
                        operations.append({"op": "initialize", "result": dump(await session.initialize())})
                except Exception as error:
                    operations.append({"op": "initialize", "error": failure(error)})
                    return {"client": SDK, "server": args.command, "operations": operations}
                for step in steps:
                    operations.append(await operation(session, client, step, battery["await_seconds"], claimed))
    if args.bare:
        # What a bare client is offered: the names listed, nothing else
        # (the fields of each are the full battery's to compare).
        return {"client": SDK, "server": args.command, "operations": [names(o) for o in operations if o["op"] in BARE_OPS]}
    operations.append(coverage(operations, steps))
    # By method (a set, as a map: a missing one shows as itself).
    elsewhere = {n["method"]: True for i, n in enumerate(client.notifications) if i not in claimed}
    operations.append({"op": "notifications-elsewhere", "result": {"methods": dict(sorted(elsewhere.items()))}})
    return {"client": SDK, "server": args.command, "operations": operations}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where the JSON transcript goes")
    parser.add_argument("--log", help="where the server's stderr goes")
    parser.add_argument("--bare", action="store_true", help="declare no capabilities; only list")
    parser.add_argument("command", nargs="+", help="the stdio server to run, after --")
    args = parser.parse_args()
    transcript = anyio.run(run, args)
    Path(args.out).write_text(json.dumps(transcript, indent=2, ensure_ascii=False) + "\n")
    failed = [o["op"] for o in transcript["operations"] if "error" in o]
    said = f"{len(transcript['operations'])} operations, {len(failed)} answered with an error"
    print(f"differential_python: {said}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
