"""The differential test's judge (issue 16): a transcript of the battery run
directly against server-everything, held field by field against one run
through `askgate gateway`, by the same SDK (differential_python.py or
differential_typescript.mjs wrote them).

Every operation is a scenario of the suite `differential-<sdk>`, so
expected-failures.txt lists known differences per operation. A scenario
passes when the two answers are the same once the allowances of
allowed-differences.toml (the one place that says what askgate may change)
are applied; else each difference is printed as `path: direct X vs gateway
Y`. Numbers keep their kind: 1 and 1.0 differ (the Python transcript tells
them apart).

    python differential_compare.py --sdk python --direct FILE --gateway FILE

Prints `differential-<sdk>: N passed, N failed`; exits non-zero when any
scenario fails.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import fnmatch
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio

from store_cli import Failed, Tally, check

ALLOWED = Path(__file__).with_name("allowed-differences.toml")
ABSENT = object()
SHOWN = 160


class Rules:
    """allowed-differences.toml, for one operation."""

    def __init__(self, allowed: dict[str, Any], op: str) -> None:
        def mine(kind: str) -> list[dict[str, Any]]:
            return [rule for rule in allowed.get(kind, []) if fnmatch.fnmatchcase(op, rule.get("op", "*"))]

        self.keyed: dict[str, str] = allowed.get("keyed", {})
        self.volatile = [(re.compile(r["pattern"]), r["replace"]) for r in mine("volatile")]
        self.unordered = [glob(r["path"]) for r in mine("unordered")]
        self.ignore = [glob(r["path"]) for r in mine("ignore")]
        self.may_add = [glob(r["path"]) for r in mine("gateway_may_add")]
        self.contains = [glob(r["path"]) for r in mine("gateway_contains")]
        self.strip = [(glob(r["path"]), re.compile(r["pattern"])) for r in mine("gateway_strip")]


def glob(pattern: str) -> re.Pattern[str]:
    """A path pattern: `*` is any run within one segment (a key, or inside
    brackets), `**` any run of segments."""
    out, inside, i = [], False, 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        c = pattern[i]
        if c == "*":
            out.append(r"[^\]]*" if inside else r"[^.\[\]]*")
        else:
            inside = {"[": True, "]": False}.get(c, inside)
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def hits(patterns: list[re.Pattern[str]], path: str) -> bool:
    return any(p.match(path) for p in patterns)


def child(path: str, key: str | int) -> str:
    """The path of `key` below `path`: `a.b`, `a[0]`, and `a[name]` for an
    entry of a keyed list (stored under `[name]`) or a key with dots."""
    if isinstance(key, str) and key.startswith("[") and key.endswith("]"):
        return f"{path}{key}"
    if isinstance(key, int) or re.search(r"[.\[\]]", key) or not key:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def decoded(text: str) -> str | None:
    """A base64 blob that holds UTF-8 text, as its text."""
    try:
        said = base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return said if said.isprintable() else None


def normalise(value: Any, rules: Rules, path: str = "") -> Any:
    """Both sides alike: text blobs decoded, volatile text replaced, lists
    keyed by their names, unordered lists sorted."""
    if isinstance(value, str):
        if path.endswith(".blob") and (text := decoded(value)) is not None:
            value = f"base64({text})"
        for pattern, replace in rules.volatile:
            value = pattern.sub(replace, value)
        return value
    if isinstance(value, dict):
        return {k: normalise(v, rules, child(path, k)) for k, v in value.items()}
    if isinstance(value, list):
        key = next((k for p, k in rules.keyed.items() if glob(p).match(path)), None)
        if key is not None and all(isinstance(v, dict) and key in v for v in value):
            return {f"[{v[key]}]": normalise(v, rules, f"{path}[{v[key]}]") for v in value}
        items = [normalise(v, rules, child(path, i)) for i, v in enumerate(value)]
        if hits(rules.unordered, path):
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return items
    return value


def shown(value: Any) -> str:
    if value is ABSENT:
        return "<absent>"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}… ({len(text)} chars)"


def same_scalar(direct: Any, gateway: Any) -> bool:
    return type(direct) is type(gateway) and direct == gateway


def differences(direct: Any, gateway: Any, rules: Rules, path: str = "") -> list[str]:
    """Each difference, as `path: direct X vs gateway Y`."""
    if path and hits(rules.ignore, path):
        return []
    if isinstance(gateway, str):
        for pattern, strip in rules.strip:
            if pattern.match(path):
                gateway = strip.sub("", gateway)
        if gateway == "" and direct is ABSENT:
            return []
    if direct is ABSENT:
        if hits(rules.may_add, path):
            return []
        # A map the gateway adds is fine when all it holds may be added.
        if isinstance(gateway, dict) and not any(
            differences(ABSENT, v, rules, child(path, k)) for k, v in gateway.items()
        ):
            return []
        return [f"{path}: direct {shown(direct)} vs gateway {shown(gateway)}"]
    if gateway is ABSENT:
        return [f"{path}: direct {shown(direct)} vs gateway {shown(gateway)}"]
    if isinstance(direct, dict) and isinstance(gateway, dict):
        found = []
        for key in list(direct) + [k for k in gateway if k not in direct]:
            found += differences(direct.get(key, ABSENT), gateway.get(key, ABSENT), rules, child(path, key))
        return found
    if isinstance(direct, list) and isinstance(gateway, list):
        found = []
        for i in range(max(len(direct), len(gateway))):
            ours = direct[i] if i < len(direct) else ABSENT
            theirs = gateway[i] if i < len(gateway) else ABSENT
            found += differences(ours, theirs, rules, child(path, i))
        return found
    if isinstance(direct, str) and isinstance(gateway, str) and hits(rules.contains, path):
        if direct.strip() in gateway:
            return []
        return [f"{path}: direct {shown(direct)} is not within gateway {shown(gateway)}"]
    if same_scalar(direct, gateway):
        return []
    return [f"{path}: direct {shown(direct)} vs gateway {shown(gateway)}"]


def by_op(transcript: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["op"]: {k: v for k, v in entry.items() if k != "op"} for entry in transcript["operations"]}


def judge(op: str, direct: dict[str, Any] | None, gateway: dict[str, Any] | None, allowed: dict[str, Any]) -> None:
    """One scenario: the operation's two answers, the same but for what is allowed."""
    if direct is None or gateway is None:
        raise Failed(f"not run {'directly' if direct is None else 'through the gateway'}")
    if op == "coverage":
        # The battery's own completeness, told by the server itself (tools-list compares the names).
        uncalled = direct.get("result", {}).get("uncalled", [])
        check(not uncalled, f"tools the battery calls nowhere: {uncalled}; add them to differential_battery.json")
        return
    rules = Rules(allowed, op)
    found = differences(normalise(direct, rules), normalise(gateway, rules), rules)
    if found:
        for line in found:
            print(f"       {op}: {line}", flush=True)
        more = f" (and {len(found) - 3} more, above)" if len(found) > 3 else ""
        raise Failed(f"{len(found)} difference(s): {'; '.join(found[:3])}{more}")


async def run(args: argparse.Namespace) -> int:
    allowed = tomllib.loads(ALLOWED.read_text())
    direct = json.loads(Path(args.direct).read_text())
    gateway = json.loads(Path(args.gateway).read_text())
    print(f"differential {args.sdk}: {direct.get('client')}; direct {' '.join(direct['server'])}", flush=True)
    print(f"differential {args.sdk}: gateway {' '.join(gateway['server'])}", flush=True)
    tally = Tally(f"differential-{args.sdk}")
    ours, theirs = by_op(direct), by_op(gateway)
    for op in list(ours) + [o for o in theirs if o not in ours]:

        async def scenario(op: str = op) -> None:
            judge(op, ours.get(op), theirs.get(op), allowed)

        await tally.run(op, scenario)
    return tally.close(args.logs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk", required=True, help="the SDK both transcripts were made with: python or typescript")
    parser.add_argument("--direct", required=True, help="the transcript of the run against the server itself")
    parser.add_argument("--gateway", required=True, help="the transcript of the run through askgate gateway")
    parser.add_argument("--logs", default=".", help="where the runs' logs are (named in the summary)")
    return anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
