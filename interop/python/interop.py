"""Interop: the Python MCP SDK (PyPI `mcp`) as the client of askgate's
interop server (crates/askgate-conformance, `askgate-interop-server`).

A scripted person answers the server's asks through the SDK's elicitation
callback. Each scenario calls the `deploy` tool and checks what the person
was asked and what the tool returned:

- accept:  the form arrives with its labelled choice, bounds and default;
           the answer omits replicas, the server applies the default (2).
- decline: the outcome is `declined`, not an error.
- cancel:  the outcome is `cancelled`, not an error.
- reask:   replicas 9 is refused; the second ask names the problem and asks
           only replicas; 3 settles it, with the environment of round one.
- mrtr-state (2026-07-28 only): the rounds driven by hand: the
           InputRequiredResult carries the ask under its key and a sealed
           requestState; a tampered or replayed state is refused.

The first four run on 2025-11-25 (`elicitation/create` sent and awaited)
and on 2026-07-28 (InputRequiredResult returned, the SDK retries), over
stdio (the SDK spawns the server) and over Streamable HTTP.

    python interop.py --server target/debug/askgate-interop-server

Exits non-zero when any scenario fails, saying which and why.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

SDK = f"mcp {importlib.metadata.version('mcp')}"
CLASSIC = "2025-11-25"
MRTR = "2026-07-28"
SCENARIO_TIMEOUT = 30


class Failed(Exception):
    """A scenario's check did not hold."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


class Person:
    """A scripted person: gives its answers in order, records each ask."""

    def __init__(self, *answers: tuple[str, dict[str, Any] | None]) -> None:
        self.answers = list(answers)
        self.asked: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ErrorData(code=types.INVALID_PARAMS, message=f"the person expected a form, got {params!r}")
        self.asked.append(params)
        if not self.answers:
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"the scripted person was asked more than expected: {params.message!r}"
            )
        action, content = self.answers.pop(0)
        return types.ElicitResult(action=action, content=content)


def outcome_of(result: types.CallToolResult) -> dict[str, Any]:
    """The deploy tool's JSON outcome."""
    check(not result.is_error, f"the tool call failed: {result.content!r}")
    check(len(result.content) == 1 and result.content[0].type == "text", f"expected one text block: {result.content!r}")
    return json.loads(result.content[0].text)


def check_path(outcome: dict[str, Any], era: str) -> None:
    path = "input_required" if era == MRTR else "elicitation/create"
    check(outcome.get("revision") == era, f"the server saw revision {outcome.get('revision')!r}, expected {era}")
    check(outcome.get("path") == path, f"the server asked by {outcome.get('path')!r}, expected {path}")


def labels(schema: dict[str, Any]) -> dict[str, str]:
    """A choice property's options, value -> label (titled oneOf, or legacy enum + enumNames)."""
    if "oneOf" in schema:
        return {o["const"]: o.get("title", o["const"]) for o in schema["oneOf"]}
    names = schema.get("enumNames", schema.get("enum", []))
    return dict(zip(schema.get("enum", []), names))


def check_first_ask(person: Person) -> None:
    check(len(person.asked) >= 1, "the person was never asked")
    ask = person.asked[0]
    check("billing" in ask.message, f"the message does not name the service: {ask.message!r}")
    props = ask.requested_schema.get("properties", {})
    check(
        list(props) == ["environment", "replicas", "confirm"],
        f"asked {list(props)}, expected environment, replicas, confirm",
    )
    env = labels(props["environment"])
    check(env == {"staging": "Staging", "production": "Production"}, f"environment options: {env}")
    replicas = props["replicas"]
    check(replicas.get("type") == "integer", f"replicas type: {replicas!r}")
    check((replicas.get("minimum"), replicas.get("maximum")) == (1, 5), f"replicas bounds: {replicas!r}")
    check(replicas.get("default") == 2, f"replicas default: {replicas!r}")
    check(props["confirm"].get("type") == "boolean", f"confirm type: {props['confirm']!r}")


def values(outcome: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    return {k: (v["value"], v["source"]) for k, v in outcome.get("values", {}).items()}


Connect = Callable[[Person, str], Client]


async def deploy(connect: Connect, person: Person, era: str) -> dict[str, Any]:
    async with connect(person, era) as client:
        check(client.protocol_version == era, f"negotiated {client.protocol_version}, expected {era}")
        result = await client.call_tool("deploy", {"service": "billing"})
        return outcome_of(result)


async def accept(connect: Connect, era: str) -> None:
    person = Person(("accept", {"environment": "staging", "confirm": True}))
    outcome = await deploy(connect, person, era)
    check(len(person.asked) == 1, f"asked {len(person.asked)} times, expected once")
    check_first_ask(person)
    check(outcome["outcome"] == "accepted", f"outcome: {outcome}")
    got = values(outcome)
    expected = {"environment": ("staging", "answered"), "replicas": (2, "defaulted"), "confirm": (True, "answered")}
    check(got == expected, f"values {got}, expected {expected}")
    check_path(outcome, era)


async def decline(connect: Connect, era: str) -> None:
    person = Person(("decline", None))
    outcome = await deploy(connect, person, era)
    check(len(person.asked) == 1, f"asked {len(person.asked)} times, expected once")
    check(outcome["outcome"] == "declined", f"outcome: {outcome}")
    check_path(outcome, era)


async def cancel(connect: Connect, era: str) -> None:
    person = Person(("cancel", None))
    outcome = await deploy(connect, person, era)
    check(len(person.asked) == 1, f"asked {len(person.asked)} times, expected once")
    check(outcome["outcome"] == "cancelled", f"outcome: {outcome}")
    check_path(outcome, era)


async def reask(connect: Connect, era: str) -> None:
    person = Person(
        ("accept", {"environment": "production", "replicas": 9, "confirm": True}),
        ("accept", {"replicas": 3}),
    )
    outcome = await deploy(connect, person, era)
    check(len(person.asked) == 2, f"asked {len(person.asked)} times, expected twice")
    check_first_ask(person)
    again = person.asked[1]
    check(
        re.search(r"Replicas: 9 is too large", again.message) is not None,
        f"the re-ask does not name the problem: {again.message!r}",
    )
    props = list(again.requested_schema.get("properties", {}))
    check(props == ["replicas"], f"the re-ask asks {props}, expected only replicas")
    check(outcome["outcome"] == "accepted", f"outcome: {outcome}")
    got = values(outcome)
    expected = {"environment": ("production", "answered"), "replicas": (3, "answered"), "confirm": (True, "answered")}
    check(got == expected, f"values {got}, expected {expected}")
    check_path(outcome, era)


async def mrtr_state(connect: Connect, era: str) -> None:
    """The rounds by hand: the InputRequiredResult, then a tampered and a replayed state."""
    arguments = {"service": "billing"}
    answer = {"deploy": {"action": "accept", "content": {"environment": "staging", "confirm": True}}}
    async with connect(Person(), era) as client:
        first = await client.session.call_tool("deploy", arguments, allow_input_required=True)
        check(isinstance(first, types.InputRequiredResult), f"expected an InputRequiredResult, got {first!r}")
        requests = first.input_requests or {}
        check(list(requests) == ["deploy"], f"input requests {list(requests)}, expected the key 'deploy'")
        check(requests["deploy"].method == "elicitation/create", f"input request: {requests['deploy']!r}")
        state = first.request_state
        check(isinstance(state, str) and len(state) > 16, f"expected a sealed requestState, got {state!r}")

        tampered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
        try:
            await client.session.call_tool(
                "deploy", arguments, input_responses=answer, request_state=tampered, allow_input_required=True
            )
            raise Failed("a tampered requestState was accepted")
        except MCPError as error:
            check(error.error.code == types.INVALID_PARAMS, f"tampered state: {error.error!r}, expected -32602")

        done = await client.session.call_tool(
            "deploy", arguments, input_responses=answer, request_state=state, allow_input_required=True
        )
        check(isinstance(done, types.CallToolResult), f"the answered retry did not complete: {done!r}")
        outcome = outcome_of(done)
        check(outcome["outcome"] == "accepted", f"outcome: {outcome}")
        check_path(outcome, era)

        try:
            await client.session.call_tool(
                "deploy", arguments, input_responses=answer, request_state=state, allow_input_required=True
            )
            raise Failed("a used requestState was accepted again")
        except MCPError as error:
            check(error.error.code == types.INVALID_PARAMS, f"replayed state: {error.error!r}, expected -32602")
            check("already used" in error.error.message, f"replayed state: {error.error.message!r}")


def stdio_connect(server: str, errlog: TextIO) -> Connect:
    def connect(person: Person, era: str) -> Client:
        params = StdioServerParameters(command=server, args=["--stdio"])
        transport = stdio_client(params, errlog=errlog)
        mode = "legacy" if era == CLASSIC else "auto"
        return Client(transport, mode=mode, elicitation_callback=person)

    return connect


def http_connect(url: str) -> Connect:
    def connect(person: Person, era: str) -> Client:
        mode = "legacy" if era == CLASSIC else "auto"
        return Client(url, mode=mode, elicitation_callback=person)

    return connect


def start_http(server: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start the HTTP server on a free port; its URL once it listens."""
    errlog = log.open("ab")
    process = subprocess.Popen([server, "--port", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = re.search(r"listening on (\S+)", log.read_text(errors="replace"))
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"interop python: the HTTP server did not start; its log:\n{log.read_text(errors='replace')}")


SCENARIOS: list[tuple[str, Callable[[Connect, str], Awaitable[None]], tuple[str, ...]]] = [
    ("accept", accept, (CLASSIC, MRTR)),
    ("decline", decline, (CLASSIC, MRTR)),
    ("cancel", cancel, (CLASSIC, MRTR)),
    ("reask", reask, (CLASSIC, MRTR)),
    ("mrtr-state", mrtr_state, (MRTR,)),
]


async def run(server: str, logs: Path, only: str | None) -> tuple[int, list[str]]:
    passed, failures = 0, []
    http_log = logs / "python-http-server.log"
    http_log.write_text("")
    process, url = start_http(server, http_log)
    stdio_log = (logs / "python-stdio-server.log").open("w")
    try:
        transports = [("stdio", stdio_connect(server, stdio_log)), ("http", http_connect(url))]
        for transport, connect in transports:
            for name, scenario, eras in SCENARIOS:
                if only and only != name:
                    continue
                for era in eras:
                    label = f"{SDK} {transport} {era} {name}"
                    try:
                        with anyio.fail_after(SCENARIO_TIMEOUT):
                            await scenario(connect, era)
                        passed += 1
                        print(f"ok     {label}", flush=True)
                    except TimeoutError:
                        failures.append(f"{label}: no result within {SCENARIO_TIMEOUT}s")
                        print(f"FAILED {failures[-1]}", flush=True)
                    except Failed as failure:
                        failures.append(f"{label}: {failure}")
                        print(f"FAILED {failures[-1]}", flush=True)
                    except Exception as error:  # an SDK or transport error is a failure too
                        failures.append(f"{label}: {type(error).__name__}: {error}")
                        print(f"FAILED {failures[-1]}", flush=True)
    finally:
        stdio_log.close()
        process.terminate()
        process.wait(timeout=10)
    return passed, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the askgate-interop-server binary")
    parser.add_argument("--logs", help="where the server logs go (default: a temp directory)")
    parser.add_argument("--only", help="run one scenario (accept, decline, cancel, reask, mrtr-state)")
    args = parser.parse_args()
    # rmcp answers a session's DELETE with 202 Accepted; the SDK expects 200
    # or 204 and warns. The session still ends: the warning is noise here.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)
    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="askgate-interop-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"interop python: {SDK}, MRTR ({MRTR}) supported by this SDK version", flush=True)
    passed, failures = anyio.run(run, args.server, logs, args.only)
    if failures:
        print(f"\ninterop python: {len(failures)} scenario(s) failed (server logs in {logs}):", file=sys.stderr)
        for failure in failures:
            print(f"  - {failure}", file=sys.stderr)
    print(f"python: {passed} passed, {len(failures)} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
