"""Gateway end to end: a parked ask survives a crash of the gateway, and the
call it held runs upstream exactly once.

A client without elicitation (plain JSON-RPC on the gateway's stdio, so the
test owns the process and can SIGKILL it) calls server-filesystem's
`edit_file` — destructive, by its own destructiveHint — through the real
gateway:

1. the call waits in the inbox: the result names the ask's inbox page (its
   id, `ask_...`, in the URL) and no command, the ask is pending in the
   store (`askgate asks list`), audited `waiting`; the file is untouched;
2. the gateway is killed with SIGKILL;
3. `askgate asks list` still shows the ask pending; `askgate asks answer
   <id> --content '{"confirm": true}'` answers it from the command line, as
   the person of the config whose token is in ASKGATE_TOKEN (the gateways
   never see that token);
4. a new gateway takes the same call with the same arguments: it proceeds,
   the edit is made once (the edit appends a mark; a second run would append
   a second one), audited as elicited with the CLI answer, by that person;
5. `askgate audit verify` passes.

Then (answer-confirms-one-call) the same call is made once more: the one
answer confirmed one edit, so it must not run again (it waits in the inbox
for a new answer).

    ASKGATE_TOKEN=... python crash.py --askgate BIN --config FILE --store URL --root DIR \
        --logs DIR --person NAME

Prints `crash: N passed, N failed`; exits non-zero when a step fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import anyio

from store_cli import StoreCli, Tally, check, decisions

PROTOCOL = "2025-11-25"
READ_TIMEOUT = 30


class Gateway:
    """`askgate gateway --config FILE` spoken to as a client without elicitation."""

    def __init__(self, askgate: str, config: str, errlog: BinaryIO) -> None:
        env = dict(os.environ, ASKGATE_LOG=os.environ.get("ASKGATE_LOG", "info"))
        self.process = subprocess.Popen(
            [askgate, "gateway", "--config", config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=env,
        )
        self.next_id = 0
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None  # opened with PIPE
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its response (notifications and server requests before it are skipped)."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + READ_TIMEOUT
        while True:
            line = self.read_line(deadline, method)
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                check("error" not in message, f"{method} failed: {message.get('error')}")
                return message["result"]
            if "method" in message and "id" in message:
                # A request to a client that declared nothing: refuse it.
                self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}})

    def read_line(self, deadline: float, method: str) -> bytes:
        """The next line on the gateway's stdout, waiting until `deadline` at most."""
        assert self.process.stdout is not None  # opened with PIPE
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            check(left > 0, f"no answer to {method} within {READ_TIMEOUT}s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                check(chunk != b"", f"the gateway closed its stdout before answering {method} (exit {self.process.poll()})")
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def initialize(self) -> None:
        result = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "crash-test", "version": "0"}},
        )
        check(result.get("protocolVersion") == PROTOCOL, f"negotiated {result.get('protocolVersion')}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """A tool call: (is_error, its text)."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        said = "\n".join(block.get("text", "") for block in result.get("content", []))
        return bool(result.get("isError")), said

    def kill(self) -> None:
        """SIGKILL: no chance to clean up."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None  # opened with PIPE
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# Where a waiting ask is, in the text the model gets: its inbox page.
INBOX_PAGE = re.compile(r"https?://[^\s()]+/asks/(ask_[A-Za-z0-9_-]+)")


def waiting_ask(said: str) -> str:
    """The id of the ask a call waits on: the text says it waits in the
    inbox and names the ask's inbox page, and names no command."""
    check("waits in the askgate inbox" in said, f"the held call does not say it waits in the inbox: {said!r}")
    check("askgate asks" not in said, f"the held call names a command: {said!r}")
    found = INBOX_PAGE.search(said)
    check(found is not None, f"the held call does not name the ask's inbox page: {said!r}")
    return found.group(1)


MARK = "runs:"


def runs(path: Path) -> int:
    """How many times the edit ran: each run turns `runs:` into `runs: x`, and `runs:` stays a prefix."""
    found = re.search(r"runs:((?: x)*)", path.read_text())
    check(found is not None, f"{path} lost its mark: {path.read_text()!r}")
    return found.group(1).count("x")


async def crash(args: argparse.Namespace, errlog: BinaryIO) -> None:
    store = StoreCli(args.askgate, args.store, config=args.config, token=args.token)
    path = Path(args.root) / "ledger.txt"
    path.write_text(f"{MARK}\n")
    arguments = {"path": str(path), "edits": [{"oldText": MARK, "newText": f"{MARK} x"}]}

    first = Gateway(args.askgate, args.config, errlog)
    try:
        first.initialize()
        is_error, said = first.call("files__edit_file", arguments)
        check(is_error, f"the destructive call was not held: {said!r}")
        ask_id = waiting_ask(said)
        check(runs(path) == 0, "the edit ran before anyone answered")
        check(ask_id in {row["id"] for row in store.pending()}, f"{ask_id} is not pending in the store")
    finally:
        first.kill()
    print(f"       crash: {ask_id} waits in the inbox; the gateway was killed (SIGKILL)", flush=True)

    pending = {row["id"]: row for row in store.pending()}
    check(ask_id in pending, f"{ask_id} is not pending after the crash: {list(pending)}")
    row = pending[ask_id]
    check(
        (row.get("server"), row.get("tool"), row.get("risk")) == ("files", "edit_file", "destructive"),
        f"the parked ask says what it is about: {row.get('server')!r}, {row.get('tool')!r}, {row.get('risk')!r}",
    )
    answered = store.answer(ask_id, {"confirm": True})
    check(answered.get("status") == "answered", f"the CLI answer left the ask {answered.get('status')!r}")
    check(ask_id not in {row["id"] for row in store.pending()}, f"{ask_id} is still pending after its answer")
    check(runs(path) == 0, "the edit ran before the call was retried")

    second = Gateway(args.askgate, args.config, errlog)
    try:
        second.initialize()
        is_error, said = second.call("files__edit_file", arguments)
        check(not is_error, f"the retried call did not proceed after the answer: {said!r}")
    finally:
        second.close()
    check(runs(path) == 1, f"the edit ran {runs(path)} times, expected once")
    entries = store.audit()
    audited = decisions(entries, "files", "edit_file")
    check(audited == ["waiting", "elicited"], f"audited {audited}, expected waiting, then elicited")
    last = [e for e in entries if e["tool"] == "edit_file"][-1]
    check(last.get("ask_id") == ask_id, f"the decision does not name the ask: {last}")
    check(last.get("answered_via") == "cli", f"the decision says it was answered via {last.get('answered_via')!r}")
    check(
        last.get("answered_by") == args.person,
        f"the decision says it was answered by {last.get('answered_by')!r}, expected the person {args.person!r}",
    )
    store.verify()


async def answer_confirms_one_call(args: argparse.Namespace, errlog: BinaryIO) -> None:
    """After the crash test: the person confirmed one edit, so the same call
    made again must not run again on that answer."""
    store = StoreCli(args.askgate, args.store)
    path = Path(args.root) / "ledger.txt"
    check(path.exists() and runs(path) == 1, "needs parked-ask-survives-sigkill to have passed")
    answered = {row["id"] for row in json.loads(store.run("asks", "list", "--status", "answered"))["asks"]}
    arguments = {"path": str(path), "edits": [{"oldText": MARK, "newText": f"{MARK} x"}]}
    gateway = Gateway(args.askgate, args.config, errlog)
    try:
        gateway.initialize()
        is_error, said = gateway.call("files__edit_file", arguments)
    finally:
        gateway.close()
    check(
        runs(path) == 1,
        f"the same call made again ran again on the one answer given for it (the edit has now run {runs(path)} "
        f"times; audited {decisions(store.audit(), 'files', 'edit_file')}); the gateway said: {said[:120]!r}",
    )
    check(is_error, f"the call made again did not run, yet did not say so: {said!r}")
    check(waiting_ask(said) not in answered, f"the call made again was taken on an answered ask: {said!r}")
    audited = decisions(store.audit(), "files", "edit_file")
    check(audited == ["waiting", "elicited", "waiting"], f"audited {audited}, expected the call made again waiting")


async def run(args: argparse.Namespace) -> int:
    logs = Path(args.logs)
    tally = Tally("crash")
    with (logs / "crash-gateway.log").open("wb") as errlog:
        await tally.run("parked-ask-survives-sigkill", lambda: crash(args, errlog))
        await tally.run("answer-confirms-one-call", lambda: answer_confirms_one_call(args, errlog))
    return tally.close(str(logs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--askgate", required=True, help="the askgate binary")
    parser.add_argument("--config", required=True, help="the gateway config (scripts/gateway-e2e.sh writes it)")
    parser.add_argument("--store", required=True, help="the config's store URL, for askgate asks|audit")
    parser.add_argument("--root", required=True, help="server-filesystem's root")
    parser.add_argument("--logs", required=True, help="where the gateway's stderr goes")
    parser.add_argument("--person", required=True, help="the config's [[people]] entry whose token is in ASKGATE_TOKEN")
    args = parser.parse_args()
    # The person's token answers from the CLI only: the gateways started
    # here (the agent's side) never get it in their environment.
    args.token = os.environ.pop("ASKGATE_TOKEN", "")
    if not args.token:
        print("crash.py: set ASKGATE_TOKEN to the token of the person --person names", file=sys.stderr)
        return 2
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
