"""What the bench scripts read of a process from /proc: its CPU time, its
resident memory, the bytes it wrote, and the gateway a script started;
and when a gateway a script started listens. Imported by bench_confirm.py,
bench_confirm_cpu.py, bench_http_calls.py, bench_scale.py and
bench_stdio_cpu.py (they run from this folder, so it is on their import
path)."""

import asyncio
import contextlib
import os
import socket
import subprocess
import time


def gateway_pid(marker: bytes = b"gateway", wait_s: float = 5.0) -> int:
    """The askgate gateway this process started (stdio_client's child):
    the child with `marker` among its arguments. Looked for again for up
    to `wait_s` seconds: a scan of /proc can miss a process (once in a few
    runs, as seen), and a retry finds it."""
    me = str(os.getpid())
    deadline = time.monotonic() + wait_s
    while True:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    command = cmdline.read().split(b"\0")
            except OSError:
                continue
            if fields[1] == me and any(marker in argument for argument in command):
                return int(entry)
        if time.monotonic() > deadline:
            raise RuntimeError(f"no child of this process with {marker!r} in its arguments")
        time.sleep(0.1)


def cpu_ms(pid: int) -> float:
    """The CPU time `pid` has used, user and system, in milliseconds."""
    return sum(cpu_split_ms(pid))


def cpu_split_ms(pid: int) -> tuple[float, float]:
    """The CPU time `pid` has used in milliseconds: in user space, and in
    the kernel on its behalf (system calls, wake-ups)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) * 1000 / tick, int(fields[12]) * 1000 / tick


def rss_kib(pid: int) -> int:
    """What `pid` holds resident, in KiB."""
    return int(_field(f"/proc/{pid}/status", "VmRSS:"))


def written_bytes(pid: int) -> int:
    """The bytes `pid` has written (`wchar`: pipes, sockets and files)."""
    return int(_field(f"/proc/{pid}/io", "wchar:"))


def _field(path: str, name: str) -> str:
    with open(path) as lines:
        for line in lines:
            if line.startswith(name):
                return line.split()[1]
    raise RuntimeError(f"no {name} in {path}")


async def until_listening(port: int, gateway: subprocess.Popen, within_s: float = 30) -> None:
    """Wait until `gateway` (a process this script started) accepts
    connections on `port`, for at most `within_s` seconds; an error if it
    exits first or does not listen in time."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if gateway.poll() is not None:
            raise RuntimeError(f"the gateway exited with {gateway.returncode} before listening")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the gateway did not listen on port {port} within {within_s:.0f} s")
