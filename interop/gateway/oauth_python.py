"""The `oauth` suite of scripts/gateway-e2e.sh: MCP authorization on
`askgate gateway --listen`, with a real authorization server and the
official Python SDK's OAuth support.

- npm `oidc-provider` (oauth_provider.mjs) issues client-credentials JWT
  access tokens on 127.0.0.1;
- askgate listens with `[listen.oauth]` trusting it, for the resource
  `http://127.0.0.1:PORT/mcp`, needing the scope `askgate:call`;
- the SDK's `ClientCredentialsOAuthProvider` finds everything from
  askgate's 401 (its Protected Resource Metadata, the issuer's metadata),
  gets a token and calls a tool, whose ask is the client's principal's;
- tokens got by hand are refused as the spec says: for another audience
  (401 invalid_token), without the scope (403 insufficient_scope), expired
  (401 invalid_token); a request without a token is told where to get one;
- an opaque token (not a JWT) is taken as the provider's introspection
  endpoint says, askgate signing in there as its own client; one for
  another audience is refused.

  python oauth_python.py --askgate BIN --example BIN --provider oauth_provider.mjs \
      --modules NODE_MODULES --dir SCRATCH --logs DIR
"""

import argparse
import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client

SCOPE = "askgate:call"
results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def secret(client: str) -> str:
    return f"{client}-secret-0123456789abcdef"


class Memory:
    """Token storage for one run."""

    def __init__(self) -> None:
        self.tokens = None
        self.info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.info

    async def set_client_info(self, info) -> None:
        self.info = info


def wait_for_line(log: Path, needle: str, process: subprocess.Popen, timeout: float = 60) -> None:
    """Wait until `process`'s log holds `needle`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"no line with {needle!r} in {log}")


async def token(issuer: str, client: str, resource: str, scope: str) -> str:
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(client, secret(client)),
        )
        answer.raise_for_status()
        return answer.json()["access_token"]


async def initialize(url: str, bearer: str | None) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream"}
    if bearer is not None:
        headers["authorization"] = f"Bearer {bearer}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "oauth-e2e", "version": "1"},
        },
    }
    async with httpx.AsyncClient() as http:
        return await http.post(url, json=body, headers=headers)


async def run(args: argparse.Namespace, url: str, issuer: str) -> None:
    origin = url.rsplit("/mcp", 1)[0]
    metadata = f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'

    # The SDK's own OAuth flow, from askgate's 401 to a tool's result.
    provider = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=Memory(),
        client_id="ci-agent",
        client_secret=secret("ci-agent"),
        scope=SCOPE,
        issuer=issuer,
    )
    try:
        async with httpx.AsyncClient(auth=provider, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = [t.name for t in (await session.list_tools()).tools]
                    check("sdk-lists-tools", "read_note" in tools, str(tools))
                    read_result = await session.call_tool("read_note", {"name": "todo"})
                    check(
                        "sdk-read-runs",
                        not read_result.is_error and "ship the release" in str(read_result),
                        str(read_result),
                    )
                    write_result = await session.call_tool("write_note", {"name": "todo", "text": "x"})
                    check(
                        "sdk-write-waits-for-a-person",
                        bool(write_result.is_error) and "inbox" in str(write_result),
                        str(write_result),
                    )
    except Exception as error:  # noqa: BLE001 - reported as the scenario's failure
        check("sdk-oauth-flow", False, repr(error))
    listed = subprocess.run(
        [args.askgate, "asks", "list", "--json", "--store", f"sqlite://{args.dir}/askgate.db"],
        capture_output=True,
        text=True,
    )
    check("ask-is-the-tokens-principal", '"principal": "oauth:ci-agent"' in listed.stdout.replace('":"', '": "'), listed.stdout[:400])

    answer = await initialize(url, None)
    check(
        "no-token-is-told-where",
        answer.status_code == 401 and answer.headers.get("www-authenticate") == f"Bearer {metadata}",
        f"{answer.status_code} {answer.headers.get('www-authenticate')}",
    )
    other = await token(issuer, "ci-agent", "http://127.0.0.1:1/mcp", SCOPE)
    answer = await initialize(url, other)
    check(
        "another-audience-is-refused",
        answer.status_code == 401
        and answer.headers.get("www-authenticate") == f'Bearer error="invalid_token", {metadata}',
        f"{answer.status_code} {answer.headers.get('www-authenticate')}",
    )
    narrow = await token(issuer, "narrow", url, "other")
    answer = await initialize(url, narrow)
    check(
        "missing-scope-is-forbidden",
        answer.status_code == 403
        and answer.headers.get("www-authenticate")
        == f'Bearer error="insufficient_scope", scope="{SCOPE}", {metadata}',
        f"{answer.status_code} {answer.headers.get('www-authenticate')}",
    )
    brief = await token(issuer, "brief", url, SCOPE)
    answer = await initialize(url, brief)
    check("a-fresh-token-works", answer.status_code == 200, str(answer.status_code))
    # Past its one second and askgate's leeway.
    await asyncio.sleep(12)
    answer = await initialize(url, brief)
    check(
        "an-expired-token-is-refused",
        answer.status_code == 401
        and answer.headers.get("www-authenticate") == f'Bearer error="invalid_token", {metadata}',
        f"{answer.status_code} {answer.headers.get('www-authenticate')}",
    )
    opaque = await token(issuer, "opaque-agent", url, SCOPE)
    answer = await initialize(url, opaque)
    check(
        "an-opaque-token-is-introspected",
        opaque.count(".") != 2 and answer.status_code == 200,
        f"{opaque.count('.')} dots, {answer.status_code} {answer.text[:200]}",
    )
    elsewhere = await token(issuer, "opaque-agent", "http://127.0.0.1:1/mcp", SCOPE)
    answer = await initialize(url, elsewhere)
    check(
        "an-opaque-token-for-another-audience-is-refused",
        answer.status_code == 401
        and answer.headers.get("www-authenticate") == f'Bearer error="invalid_token", {metadata}',
        f"{answer.status_code} {answer.headers.get('www-authenticate')}",
    )
    log = Path(args.logs, "oauth-gateway.log").read_text()
    check(
        "no-token-in-the-log",
        all(t not in log for t in [brief, narrow, opaque, secret("askgate-rs")]),
        "a token or a secret was logged",
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag in ["askgate", "example", "provider", "modules", "dir", "logs"]:
        parser.add_argument(f"--{flag}", required=True)
    args = parser.parse_args()
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    provider_port, gateway_port = free_port(), free_port()
    issuer = f"http://127.0.0.1:{provider_port}"
    url = f"http://127.0.0.1:{gateway_port}/mcp"
    Path(args.dir, "notes").mkdir(exist_ok=True)
    Path(args.dir, "notes", "todo.txt").write_text("ship the release\n")
    config = Path(args.dir, "askgate.toml")
    config.write_text(
        f'store = "sqlite://{args.dir}/askgate.db"\n\n'
        f'[listen]\naddr = "127.0.0.1:{gateway_port}"\n\n'
        f'[listen.oauth]\nissuer = "{issuer}"\nresource = "{url}"\nscopes = ["{SCOPE}"]\n\n'
        f'[listen.oauth.introspection]\nclient_id = "askgate-rs"\nclient_secret = "{secret("askgate-rs")}"\n\n'
        f'[[upstreams]]\nname = "notes"\ncommand = "{args.example}"\nargs = ["--dir", "{args.dir}/notes"]\n\n'
        '[[rules]]\ntool = "read_note"\nrisk = "read"\n'
    )
    provider_log, gateway_log = Path(args.logs, "oauth-provider.log"), Path(args.logs, "oauth-gateway.log")
    processes = []
    try:
        with provider_log.open("w") as out:
            oidc = subprocess.Popen(
                ["node", args.provider, str(provider_port), args.modules], stdout=out, stderr=out
            )
        processes.append(oidc)
        wait_for_line(provider_log, "ready", oidc)
        with gateway_log.open("w") as out:
            gateway = subprocess.Popen(
                [args.askgate, "gateway", "--config", str(config), "--listen", f"127.0.0.1:{gateway_port}"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=out,
            )
        processes.append(gateway)
        wait_for_line(gateway_log, "Streamable HTTP at", gateway)
        asyncio.run(run(args, url, issuer))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"oauth: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
