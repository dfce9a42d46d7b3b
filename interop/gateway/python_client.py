"""Gateway end to end: the Python MCP SDK (PyPI `mcp`, a `ClientSession`
on stdio) as the client of the real `askgate gateway`, which has three real
upstreams behind it (see scripts/gateway-e2e.sh for the config):

- `everything`: npm @modelcontextprotocol/server-everything
- `files`:      npm @modelcontextprotocol/server-filesystem, rooted in --root
- `notes`:      the repository's askgate-example-upstream, notes in --notes

A scripted person answers through the SDK's elicitation callback, like a
person: after reading for PERSON_READS seconds, longer than the gateway's
`min_answer_ms` (250 ms by default; an answer sooner was shown to nobody).
The client speaks 2025-11-25 (`ClientSession.initialize`) unless a scenario
says otherwise. Each scenario spawns the gateway afresh (`askgate gateway
--config FILE`) and checks what the person was asked, what the tool
returned, what the upstream did (files on disk) and what the store recorded
(`askgate asks|audit`). The config sets no `caller_confirm`: only a person
approves.

- tools:         every upstream's tools are listed as <server>__<tool>;
                 no tool offers `confirm` (the caller may stand in for
                 nobody), gated tools carry their risk in the description
- read:          a tool a rule makes `read` runs without asking anyone
- write-accept:  a write is confirmed through elicitation, then runs,
                 audited as elicited
- write-decline: declined after reading: a blocked result that says the
                 no is final, the file is not written; the same call again
                 (even with `confirm: true`) is refused without asking
- destructive-no-elicitation: a client without elicitation: the ask waits
                 in the inbox (pending in the store; the text names the
                 inbox's page and no command; the note not deleted); the
                 same call with `confirm: true` still waits; the person
                 answers with `askgate asks answer` (their token in
                 ASKGATE_TOKEN) and the retry runs once, audited as
                 elicited via the CLI; the call made once more waits again
- headless:      a client that declines every elicitation at once (as
                 `claude -p` or `codex exec` do): the write does not run and
                 waits in the inbox, audited `waiting` / "not shown: the
                 client declined ..."; the person answers with the CLI and
                 the retry writes the file, audited as elicited via the CLI
- relay-everything, relay-notes: the upstream's own elicitation reaches the
                 person, and the answer reaches the upstream
- relay-sampling, relay-roots: the upstream's sampling and roots requests
                 reach a client that declared them
- sampling-undeclared: a client without sampling is not offered the
                 server's sampling tool, as directly: askgate tells each
                 upstream the stdio client's sampling and roots as declared
- mrtr-write-accept, mrtr-relay-notes: the same on 2026-07-28 (`Client`,
                 mode "auto"): the confirmation and the upstream's own ask
                 come back as InputRequiredResult, and the SDK retries with
                 the person's answer (given after reading)
- audit:         the decisions made above (not_required, elicited, blocked,
                 waiting; never caller_confirmed) are in the audit chain,
                 without argument values, and `askgate audit verify` passes

    ASKGATE_TOKEN=... python python_client.py --askgate BIN --config FILE --store URL --root DIR \
        --notes DIR --logs DIR --person NAME

Prints `python: N passed, N failed`; exits non-zero when any scenario fails.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp.types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from store_cli import StoreCli, Tally, check, decisions

SDK = f"mcp {importlib.metadata.version('mcp')}"
ELICITING_TOOL = "everything__trigger-elicitation-request"
CLASSIC = "2025-11-25"
MRTR = "2026-07-28"
# How long the scripted person reads an ask before answering: longer than
# the gateway's min_answer_ms (250 ms by default), under which an answer
# counts as shown to nobody.
PERSON_READS = 0.3
# Where a waiting ask is, in the text the model gets: its inbox page.
INBOX_PAGE = re.compile(r"https?://[^\s()]+/asks/(ask_[A-Za-z0-9_-]+)")


class Person:
    """A scripted person: reads each ask for `reads` seconds, then gives its
    answers in order; records each ask. `reads=0` is no person at all: a
    client that answers before anyone could have read the ask."""

    def __init__(self, *answers: tuple[str, dict[str, Any] | None], reads: float = PERSON_READS) -> None:
        self.answers = list(answers)
        self.reads = reads
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
        if self.reads:
            await anyio.sleep(self.reads)
        return types.ElicitResult(action=action, content=content)


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def succeeded(result: types.CallToolResult, what: str) -> str:
    check(not result.is_error, f"{what} failed: {text(result)!r}")
    return text(result)


def blocked(result: types.CallToolResult, what: str) -> str:
    check(result.is_error is True, f"{what} was not blocked: {text(result)!r}")
    return text(result)


def waiting_ask(said: str, tool: str) -> str:
    """The id of the ask a call waits on: the text says it waits in the
    inbox, names the inbox page, asks for the same call again, and names no
    command (nothing the model could run to approve it)."""
    check("waits in the askgate inbox" in said, f"the result does not say the ask waits in the inbox: {said!r}")
    check(f"call {tool} again with the same arguments" in said, f"the result does not say to retry {tool}: {said!r}")
    check("askgate asks" not in said, f"the result names a command: {said!r}")
    found = INBOX_PAGE.search(said)
    check(found is not None, f"the result does not name the ask's inbox page: {said!r}")
    return found.group(1)


def check_waiting(entry: dict[str, Any], reason: str) -> None:
    """An audit entry for a call that waits in the inbox, for `reason`."""
    check(entry["decision"] == "waiting", f"audited {entry['decision']!r}, expected waiting: {entry}")
    check(entry["reason"].startswith(reason), f"audited the reason {entry['reason']!r}, expected {reason!r}...")


def check_answered_in_cli(entry: dict[str, Any], ask_id: str, person: str) -> None:
    """An audit entry for a call the person confirmed with `askgate asks answer`."""
    check(entry["decision"] == "elicited", f"audited {entry['decision']!r}, expected elicited: {entry}")
    check(entry.get("ask_id") == ask_id, f"the decision does not name the ask {ask_id}: {entry}")
    check(entry.get("answered_via") == "cli", f"the decision says it was answered via {entry.get('answered_via')!r}")
    check(
        entry.get("answered_by") == person,
        f"the decision says it was answered by {entry.get('answered_by')!r}, expected the person {person!r}",
    )


def entries_of(entries: list[dict[str, Any]], server: str, tool: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["server"] == server and e["tool"] == tool]


def check_confirmation(person: Person, tool: str) -> None:
    """The person was asked once, to confirm `tool`, with one pre-ticked checkbox."""
    check(len(person.asked) == 1, f"the person was asked {len(person.asked)} times, expected once")
    ask = person.asked[0]
    check(tool in ask.message, f"the confirmation does not name {tool}: {ask.message!r}")
    props = ask.requested_schema.get("properties", {})
    check(list(props) == ["confirm"], f"the confirmation asks {list(props)}, expected only confirm")
    check(props["confirm"].get("type") == "boolean", f"confirm is not a boolean: {props['confirm']!r}")
    check(props["confirm"].get("default") is True, f"confirm is not pre-ticked: {props['confirm']!r}")


class Gateway:
    """How to reach the gateway under test, and what is behind it."""

    def __init__(self, args: argparse.Namespace, errlog: TextIO) -> None:
        self.askgate = args.askgate
        self.config = args.config
        self.root = Path(args.root)
        self.notes = Path(args.notes)
        self.person = args.person
        # Answers as the config's person; the gateways never get the token.
        self.store = StoreCli(args.askgate, args.store, config=args.config, token=args.token)
        self.errlog = errlog

    @asynccontextmanager
    async def session(self, person: Person | None, **callbacks: Any) -> AsyncIterator[ClientSession]:
        """A session with a freshly spawned gateway; with `person`, the client declares elicitation,
        with `sampling_callback` or `list_roots_callback` sampling or roots."""
        env = dict(os.environ, ASKGATE_LOG=os.environ.get("ASKGATE_LOG", "info"))
        params = StdioServerParameters(command=self.askgate, args=["gateway", "--config", self.config], env=env)
        async with stdio_client(params, errlog=self.errlog) as (read, write):
            async with ClientSession(read, write, elicitation_callback=person, **callbacks) as session:
                result = await session.initialize()
                check(result.protocol_version == CLASSIC, f"negotiated {result.protocol_version}, expected {CLASSIC}")
                yield session


    @asynccontextmanager
    async def mrtr_client(self, person: Person) -> AsyncIterator[Client]:
        """A client on 2026-07-28 (multi round-trip): asks come back as InputRequiredResult, the SDK retries."""
        env = dict(os.environ, ASKGATE_LOG=os.environ.get("ASKGATE_LOG", "info"))
        params = StdioServerParameters(command=self.askgate, args=["gateway", "--config", self.config], env=env)
        async with Client(stdio_client(params, errlog=self.errlog), mode="auto", elicitation_callback=person) as client:
            check(client.protocol_version == MRTR, f"negotiated {client.protocol_version}, expected {MRTR}")
            yield client


async def all_tools(session: ClientSession) -> dict[str, types.Tool]:
    tools: dict[str, types.Tool] = {}
    cursor = None
    while True:
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.update({tool.name: tool for tool in page.tools})
        cursor = page.next_cursor
        if not cursor:
            return tools


async def tools(gw: Gateway) -> None:
    async with gw.session(Person()) as session:
        listed = await all_tools(session)
    expected = [
        "everything__echo",
        ELICITING_TOOL,
        "files__read_text_file",
        "files__write_file",
        "files__edit_file",
        "notes__read_note",
        "notes__append_note",
        "notes__delete_all_notes",
        "notes__ask_name",
    ]
    missing = [name for name in expected if name not in listed]
    check(not missing, f"not listed: {missing}; listed: {sorted(listed)}")
    # Besides the upstreams' tools, only askgate's own `ask` tool (offer_ask_tool, default on).
    unprefixed = [name for name in listed if not re.match(r"^(everything|files|notes)__", name) and name != "ask"]
    check(not unprefixed, f"listed without a server's namespace: {unprefixed}")
    # No caller_confirm in the config: the caller's word stands in for no
    # person, so no tool offers `confirm`, gated or not.
    for name in ["files__write_file", "files__edit_file", "notes__delete_all_notes"]:
        props = listed[name].input_schema.get("properties", {})
        check("confirm" not in props, f"{name} offers confirm, which the config allows for no risk: {list(props)}")
        check(
            "confirm" not in listed[name].input_schema.get("required", []),
            f"{name} requires confirm: {listed[name].input_schema}",
        )
    for name in ["files__read_text_file", "everything__echo"]:
        props = listed[name].input_schema.get("properties", {})
        check("confirm" not in props, f"{name} is a read but offers confirm")
    described = listed["notes__delete_all_notes"].description or ""
    check("[askgate: risk destructive]" in described, f"the risk is not in the description: {described!r}")


async def read(gw: Gateway) -> None:
    (gw.root / "readme.txt").write_text("read me, no questions asked\n")
    person = Person()
    async with gw.session(person) as session:
        got = succeeded(
            await session.call_tool("files__read_text_file", {"path": str(gw.root / "readme.txt")}), "the file read"
        )
        echoed = succeeded(await session.call_tool("everything__echo", {"message": "hello askgate"}), "echo")
    check("read me, no questions asked" in got, f"read {got!r}")
    check("hello askgate" in echoed, f"echo returned {echoed!r}")
    check(not person.asked, f"a read asked the person: {[a.message for a in person.asked]}")
    entries = gw.store.audit()
    check(decisions(entries, "files", "read_text_file") == ["not_required"], "the read is not audited as not_required")


async def write_accept(gw: Gateway) -> None:
    path = gw.root / "accepted.txt"
    person = Person(("accept", {"confirm": True}))
    async with gw.session(person) as session:
        result = await session.call_tool("files__write_file", {"path": str(path), "content": "written after a yes"})
    succeeded(result, "the confirmed write")
    check_confirmation(person, "write_file")
    check(path.exists() and path.read_text() == "written after a yes", f"{path} was not written as asked")
    check(decisions(gw.store.audit(), "files", "write_file")[-1] == "elicited", "the write is not audited as elicited")


async def write_decline(gw: Gateway) -> None:
    path = gw.root / "declined.txt"
    person = Person(("decline", None))
    async with gw.session(person) as session:
        result = await session.call_tool("files__write_file", {"path": str(path), "content": "never written"})
    said = blocked(result, "the declined write")
    check_confirmation(person, "write_file")
    check("declined" in said and "final" in said, f"the result does not say the decline is final: {said!r}")
    check(not path.exists(), f"{path} was written although the person declined")
    check(decisions(gw.store.audit(), "files", "write_file")[-1] == "blocked", "the decline is not audited as blocked")

    # The person's no stands for the same call, with or without confirm:
    # refused again without asking anyone.
    again = Person()
    async with gw.session(again) as session:
        result = await session.call_tool(
            "files__write_file", {"path": str(path), "content": "never written", "confirm": True}
        )
    said = blocked(result, "the declined write made again with confirm: true")
    check("already declined" in said, f"the call made again does not say a person declined it: {said!r}")
    check(not again.asked, f"the call made again asked the person again: {[a.message for a in again.asked]}")
    check(not path.exists(), f"{path} was written on a call a person had declined")
    check(decisions(gw.store.audit(), "files", "write_file")[-1] == "blocked", "the call made again is not blocked")


async def destructive_no_elicitation(gw: Gateway) -> None:
    note = gw.notes / "doomed.txt"
    async with gw.session(None) as session:
        # low_write: proceeds without asking, even without elicitation.
        succeeded(await session.call_tool("notes__append_note", {"name": "doomed", "text": "x"}), "append_note")
        check(note.exists(), f"append_note did not write {note}")
        said = blocked(await session.call_tool("notes__delete_all_notes", {}), "delete_all_notes without elicitation")
        check("cannot show a confirmation" in said, f"the result does not say why the call waits: {said!r}")
        ask_id = waiting_ask(said, "notes__delete_all_notes")
        pending = {row["id"]: row for row in gw.store.pending()}
        check(ask_id in pending, f"{ask_id} is not pending in the store: {list(pending)}")
        check(pending[ask_id]["status"] == "pending", f"{ask_id}: {pending[ask_id]['status']}")
        check(note.exists(), "the note was deleted while the ask waited")
        last = entries_of(gw.store.audit(), "notes", "delete_all_notes")[-1]
        check_waiting(last, "this client cannot show a confirmation")

        # The caller's confirm: true is the same call, and stands in for nobody.
        said = blocked(
            await session.call_tool("notes__delete_all_notes", {"confirm": True}), "delete_all_notes with confirm: true"
        )
        check(waiting_ask(said, "notes__delete_all_notes") == ask_id, f"confirm: true made a new ask: {said!r}")
        check(note.exists(), "the caller's confirm: true deleted the note")
        last = entries_of(gw.store.audit(), "notes", "delete_all_notes")[-1]
        check_waiting(last, "an ask for this exact call already waits for a person")
        check("confirm: true was not taken" in last["reason"], f"the audit does not say confirm was refused: {last}")

        # The person answers in the inbox (here its CLI); the retry runs once.
        answered = gw.store.answer(ask_id, {"confirm": True})
        check(answered.get("status") == "answered", f"the CLI answer left the ask {answered.get('status')!r}")
        done = succeeded(await session.call_tool("notes__delete_all_notes", {}), "delete_all_notes after the answer")
        check("deleted 1 notes" in done, f"the upstream said {done!r}")
        check(not note.exists(), f"{note} survived the confirmed delete")
        check_answered_in_cli(entries_of(gw.store.audit(), "notes", "delete_all_notes")[-1], ask_id, gw.person)

        # The answer confirmed one call: the same call once more waits again.
        succeeded(await session.call_tool("notes__append_note", {"name": "doomed", "text": "y"}), "append_note")
        said = blocked(await session.call_tool("notes__delete_all_notes", {}), "delete_all_notes once more")
        check(waiting_ask(said, "notes__delete_all_notes") != ask_id, f"the answered ask was taken again: {said!r}")
        check(note.exists(), "one answer deleted the notes twice")
    audited = decisions(gw.store.audit(), "notes", "delete_all_notes")
    check(audited == ["waiting", "waiting", "elicited", "waiting"], f"audited {audited}")


async def headless(gw: Gateway) -> None:
    path = gw.root / "headless.txt"
    arguments = {"path": str(path), "content": "written once a person said yes"}
    # Declines at once, before anyone could read the ask: nobody was shown it.
    client = Person(("decline", None), reads=0)
    async with gw.session(client) as session:
        said = blocked(await session.call_tool("files__write_file", arguments), "the write from a headless client")
        check(len(client.asked) == 1, f"the client was asked {len(client.asked)} times, expected once")
        check("final" not in said, f"a decline nobody read is taken as final: {said!r}")
        check("before a person could have read it" in said, f"the result does not say why the call waits: {said!r}")
        ask_id = waiting_ask(said, "files__write_file")
        check(not path.exists(), f"{path} was written although nobody confirmed it")
        pending = {row["id"]: row for row in gw.store.pending()}
        check(ask_id in pending, f"{ask_id} is not pending in the store: {list(pending)}")
        check_waiting(entries_of(gw.store.audit(), "files", "write_file")[-1], "not shown: the client declined")

        # The person answers in the inbox (here its CLI); the same call again runs.
        answered = gw.store.answer(ask_id, {"confirm": True})
        check(answered.get("status") == "answered", f"the CLI answer left the ask {answered.get('status')!r}")
        succeeded(await session.call_tool("files__write_file", arguments), "the write retried after the answer")
    check(len(client.asked) == 1, f"the retry asked the client again ({len(client.asked)} asks)")
    check(path.exists() and path.read_text() == arguments["content"], f"{path} was not written as asked")
    check_answered_in_cli(entries_of(gw.store.audit(), "files", "write_file")[-1], ask_id, gw.person)


async def relay_everything(gw: Gateway) -> None:
    person = Person(("accept", {"name": "Ada Lovelace", "check": True}))
    async with gw.session(person) as session:
        said = succeeded(await session.call_tool(ELICITING_TOOL, {}), ELICITING_TOOL)
    check(len(person.asked) == 1, f"the person was asked {len(person.asked)} times, expected once (the server's ask)")
    ask = person.asked[0]
    check("Please provide inputs" in ask.message, f"not the server's ask: {ask.message!r}")
    props = ask.requested_schema.get("properties", {})
    for name in ["name", "check", "email", "integer", "untitledSingleSelectEnum", "titledMultipleSelectEnum"]:
        check(name in props, f"the relayed schema lost {name!r}: {list(props)}")
    check(ask.requested_schema.get("required") == ["name"], f"required: {ask.requested_schema.get('required')}")
    check("Name: Ada Lovelace" in said, f"the answer did not reach the server: {said!r}")


async def relay_notes(gw: Gateway) -> None:
    person = Person(("accept", {"name": "Grace"}))
    async with gw.session(person) as session:
        said = succeeded(await session.call_tool("notes__ask_name", {}), "ask_name")
    check(len(person.asked) == 1, f"the person was asked {len(person.asked)} times, expected once")
    check(person.asked[0].message == "What is your name?", f"not the server's ask: {person.asked[0].message!r}")
    check("Hello, Grace" in said, f"the answer did not reach the server: {said!r}")


async def mrtr_write_accept(gw: Gateway) -> None:
    path = gw.root / "accepted-mrtr.txt"
    person = Person(("accept", {"confirm": True}))
    async with gw.mrtr_client(person) as client:
        result = await client.call_tool("files__write_file", {"path": str(path), "content": "written after a yes"})
    succeeded(result, "the confirmed write on 2026-07-28")
    check_confirmation(person, "write_file")
    check(path.exists() and path.read_text() == "written after a yes", f"{path} was not written as asked")
    check(decisions(gw.store.audit(), "files", "write_file")[-1] == "elicited", "the write is not audited as elicited")


async def mrtr_relay_notes(gw: Gateway) -> None:
    person = Person(("accept", {"name": "Grace"}))
    async with gw.mrtr_client(person) as client:
        said = succeeded(await client.call_tool("notes__ask_name", {}), "ask_name on 2026-07-28")
    check(len(person.asked) == 1, f"the person was asked {len(person.asked)} times, expected once")
    check(person.asked[0].message == "What is your name?", f"not the server's ask: {person.asked[0].message!r}")
    check("Hello, Grace" in said, f"the answer did not reach the server: {said!r}")


SAMPLED = "a sampled answer from the client's model"
ROOT = "file:///srv/askgate-e2e-root"


async def relay_sampling(gw: Gateway) -> None:
    asked: list[types.CreateMessageRequestParams] = []

    async def model(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=SAMPLED), model="scripted"
        )

    async with gw.session(Person(), sampling_callback=model) as session:
        said = succeeded(
            await session.call_tool("everything__trigger-sampling-request", {"prompt": "say something"}),
            "trigger-sampling-request",
        )
    check(len(asked) == 1, f"the client's model was asked {len(asked)} times, expected once")
    check(SAMPLED in said, f"the sampled message did not reach the server: {said!r}")


async def sampling_undeclared(gw: Gateway) -> None:
    async with gw.session(Person()) as session:
        listed = {tool.name for tool in (await session.list_tools()).tools}
        check(
            "everything__trigger-sampling-request" not in listed,
            "a client without sampling was offered the server's sampling tool",
        )
        check("everything__echo" in listed, f"the server's other tools are missing: {sorted(listed)}")
        try:
            result = await session.call_tool("everything__trigger-sampling-request", {"prompt": "say something"})
        except Exception as error:  # the gateway's -32602: no server lists it
            said = str(error)
        else:
            said = text(result)
            check(result.is_error is True, f"an unlisted sampling tool ran: {said!r}")
    check("unknown tool" in said, f"the refusal does not say the tool is not listed: {said!r}")


async def relay_roots(gw: Gateway) -> None:
    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=ROOT, name="e2e")])

    async with gw.session(Person(), list_roots_callback=roots) as session:
        said = succeeded(await session.call_tool("everything__get-roots-list", {}), "get-roots-list")
    check(ROOT in said, f"the client's root did not reach the server: {said!r}")


async def audit(gw: Gateway) -> None:
    raw = gw.store.audit_text()
    values = ["written after a yes", "never written", "written once a person said yes", "hello askgate", "Ada Lovelace"]
    for value in [*values, "Grace"]:
        check(value not in raw, f"an argument or answer value is in the audit log: {value!r}")
    found = {e["decision"] for e in gw.store.audit()}
    for decision in ["not_required", "elicited", "blocked", "waiting"]:
        check(decision in found, f"no {decision} decision audited: {sorted(found)}")
    # No caller_confirm in the config: the caller's word never stood in.
    check("caller_confirmed" not in found, f"a call was confirmed by its caller: {sorted(found)}")
    gw.store.verify()


SCENARIOS = [
    ("tools", tools),
    ("read", read),
    ("write-accept", write_accept),
    ("write-decline", write_decline),
    ("destructive-no-elicitation", destructive_no_elicitation),
    ("headless", headless),
    ("relay-everything", relay_everything),
    ("relay-notes", relay_notes),
    ("relay-sampling", relay_sampling),
    ("sampling-undeclared", sampling_undeclared),
    ("relay-roots", relay_roots),
    ("mrtr-write-accept", mrtr_write_accept),
    ("mrtr-relay-notes", mrtr_relay_notes),
    ("audit", audit),
]


async def run(args: argparse.Namespace) -> int:
    logs = Path(args.logs)
    tally = Tally("python", prefix=f"{SDK} ")
    with (logs / "python-gateway.log").open("w") as errlog:
        gw = Gateway(args, errlog)
        for name, scenario in SCENARIOS:
            if args.only and args.only != name:
                continue
            await tally.run(name, lambda scenario=scenario: scenario(gw))
    return tally.close(str(logs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--askgate", required=True, help="the askgate binary")
    parser.add_argument("--config", required=True, help="the gateway config (scripts/gateway-e2e.sh writes it)")
    parser.add_argument("--store", required=True, help="the config's store URL, for askgate asks|audit")
    parser.add_argument("--root", required=True, help="server-filesystem's root")
    parser.add_argument("--notes", required=True, help="the example upstream's notes directory")
    parser.add_argument("--logs", required=True, help="where the gateway's stderr goes")
    parser.add_argument("--person", required=True, help="the config's [[people]] entry whose token is in ASKGATE_TOKEN")
    parser.add_argument("--only", help="run one scenario")
    args = parser.parse_args()
    # The person's token answers from the CLI only: the gateways started
    # here (the agent's side) never get it in their environment.
    args.token = os.environ.pop("ASKGATE_TOKEN", "")
    if not args.token:
        print("python_client.py: set ASKGATE_TOKEN to the token of the person --person names", file=sys.stderr)
        return 2
    print(f"gateway-e2e python: {SDK}", flush=True)
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
