"""The gateway end-to-end checks' view of the store: `askgate asks ...` and
`askgate audit ...` run as an operator would, with `--json`, and the small
plumbing every check shares (`Failed`, `check`, a suite's tally against
the expected failures).

Used by python_client.py and crash.py (interop/gateway/).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

SCENARIO_TIMEOUT = 60


class Failed(Exception):
    """A check did not hold."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


class StoreCli:
    """`askgate asks|audit ... --store URL --json`; with `config` (the
    gateway's, naming its [[people]]) and `token` (a person's), answers as
    that person: the token goes to `askgate asks answer` only, in
    ASKGATE_TOKEN, never on a command line."""

    def __init__(self, askgate: str, store: str, config: str | None = None, token: str | None = None) -> None:
        self.askgate = askgate
        self.store = store
        self.config = config
        self.token = token

    def run(self, *args: str, expect: int = 0, token: str | None = None) -> str:
        command = [self.askgate, *args, "--store", self.store, "--json"]
        if self.config is not None:
            command += ["--config", self.config]
        env = {k: v for k, v in os.environ.items() if k != "ASKGATE_TOKEN"}
        if token is not None:
            env["ASKGATE_TOKEN"] = token
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, env=env, stdin=subprocess.DEVNULL)
        check(
            done.returncode == expect,
            f"`askgate {' '.join(args)}` exited {done.returncode}, expected {expect}: {done.stderr.strip()}",
        )
        return done.stdout

    def pending(self) -> list[dict[str, Any]]:
        """The pending asks (`askgate asks list`)."""
        return json.loads(self.run("asks", "list"))["asks"]

    def ask(self, ask_id: str) -> dict[str, Any]:
        return json.loads(self.run("asks", "show", ask_id))

    def answer(self, ask_id: str, content: dict[str, Any]) -> dict[str, Any]:
        """`askgate asks answer`, as the person whose token this was given."""
        check(self.token is not None, "answering needs a person's token (ASKGATE_TOKEN)")
        return json.loads(self.run("asks", "answer", ask_id, "--content", json.dumps(content), token=self.token))

    def audit(self) -> list[dict[str, Any]]:
        """The audit chain's entries, oldest first (`askgate audit list`)."""
        return [record["entry"] for record in json.loads(self.run("audit", "list"))]

    def audit_text(self) -> str:
        return self.run("audit", "list")

    def verify(self) -> dict[str, Any]:
        """`askgate audit verify`: exits 0 only for an intact chain."""
        verification = json.loads(self.run("audit", "verify"))
        check(verification.get("broken") is None, f"the audit chain is broken: {verification}")
        check(verification.get("entries", 0) > 0, f"the audit chain is empty: {verification}")
        return verification


EXPECTED_FAILURES = Path(__file__).with_name("expected-failures.txt")


def expected_failures(tag: str) -> dict[str, str]:
    """The scenarios of suite `tag` known to fail, each with why: lines of
    `SUITE SCENARIO  # why` in expected-failures.txt beside this file."""
    known = {}
    for line in EXPECTED_FAILURES.read_text().splitlines():
        entry, _, why = line.partition("#")
        words = entry.split()
        if len(words) == 2 and words[0] == tag:
            known[words[1]] = why.strip()
    return known


def explain(error: BaseException) -> str:
    """What went wrong, in one line: a task group's errors unwrapped to their causes."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(explain(inner) for inner in error.exceptions)
    if isinstance(error, TimeoutError):
        return f"no result within {SCENARIO_TIMEOUT}s"
    if isinstance(error, Failed):
        return str(error)
    said = " ".join(str(error).split())
    return f"{type(error).__name__}: {said[:300]}{'…' if len(said) > 300 else ''}"


class Tally:
    """A suite's scenarios: each passes or fails on its own. A scenario
    listed in expected-failures.txt must fail (a known bug); when it passes,
    that is a failure too, until it is taken off the list."""

    def __init__(self, tag: str, prefix: str = "") -> None:
        self.tag = tag
        self.prefix = prefix
        self.passed = 0
        self.failures: list[str] = []
        self.expected = expected_failures(tag)
        self.known: list[str] = []

    async def run(self, name: str, scenario: Callable[[], Awaitable[None]]) -> None:
        label = f"{self.prefix}{name}"
        why = None
        try:
            with anyio.fail_after(SCENARIO_TIMEOUT):
                await scenario()
        except Exception as error:  # an SDK, transport or CLI error is a failure too
            why = explain(error)
        if name in self.expected:
            if why is None:
                why = f"passes, but is listed in {EXPECTED_FAILURES.name} ({self.expected[name]}): take it off the list"
            else:
                self.known.append(f"{label}: {why}")
                print(f"known  {self.tag} {label}: {why} [{self.expected[name]}]", flush=True)
                return
        if why is None:
            self.passed += 1
            print(f"ok     {self.tag} {label}", flush=True)
            return
        self.failures.append(f"{label}: {why}")
        print(f"FAILED {self.tag} {label}: {why}", flush=True)

    def close(self, logs: str) -> int:
        """Print the summary line; the exit code."""
        if self.known:
            print(f"{self.tag}: {len(self.known)} known failure(s), listed in {EXPECTED_FAILURES}", flush=True)
        if self.failures:
            print(f"\n{self.tag}: {len(self.failures)} scenario(s) failed (gateway logs in {logs}):", flush=True)
            for failure in self.failures:
                print(f"  - {failure}", flush=True)
        print(f"{self.tag}: {self.passed} passed, {len(self.failures)} failed", flush=True)
        return 1 if self.failures else 0


def decisions(entries: list[dict[str, Any]], server: str, tool: str) -> list[str]:
    """The decisions audited for `server`/`tool`, oldest first."""
    return [e["decision"] for e in entries if e["server"] == server and e["tool"] == tool]
