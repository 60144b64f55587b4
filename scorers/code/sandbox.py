"""Run one program in its own process, isolated and limited: the sandbox of :class:`~scorers.code.CodeExecution`.

Each run is a fresh process (the launcher, ``scorers/code/_launcher.py``, run with ``python -I -S``) in a new
session, given an empty environment (``PATH``, ``LANG``, ``HOME`` and ``TMPDIR`` alone), a private temporary
directory as its working directory (removed afterwards) and these limits: wall-clock time (the whole process group
is killed, and with namespaces the PID namespace with it), CPU time (``RLIMIT_CPU``), address space
(``RLIMIT_AS``), file size (``RLIMIT_FSIZE``), processes (``RLIMIT_NPROC``, counted inside the user
namespace; root outside is exempt from it, and there the PID namespace's ``pid_max``, at least 301, bounds them) and
output (stdout and stderr read as they come; past the limit the program is killed). Where the kernel allows user
namespaces, the program also runs in new user, mount, PID, IPC, UTS and network namespaces: no network (not even
the host's loopback), a read-only file system but for its directory, no view of the host's processes.
:func:`namespaces_available` says whether this machine allows them (tried once per interpreter and setting).

>>> outcome = run(["/bin/echo", "hi"], files={}, limits=Limits(), namespaces=False, network=True)
>>> outcome.status, outcome.stdout
('exit', 'hi\\n')
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Mapping, Sequence

__all__ = ["Limits", "Outcome", "run", "namespaces_available", "LAUNCHER"]

#: The script that isolates itself and then runs the program (standard library only).
LAUNCHER = str(Path(__file__).with_name("_launcher.py"))
#: The program's whole environment (its directory is added as HOME and TMPDIR).
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
_CHUNK = 65536


@dataclass(frozen=True)
class Limits:
    """What one run may take. ``memory_mb`` bounds each process's address space, ``file_mb`` any file it writes,
    ``processes`` how many it may have at once (itself included), ``output_kb`` stdout and stderr each."""

    wall_s: float = 10.0
    cpu_s: float = 5.0
    memory_mb: int = 1024
    file_mb: int = 16
    processes: int = 32
    output_kb: int = 64


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``status`` is ``exit`` (``code`` its exit status), ``signal`` (``code`` the signal),
    ``timeout`` (past the wall-clock limit), ``output`` (past the output limit) or ``sandbox`` (the isolation
    could not be set up: ``stderr`` says why). ``stdout`` and ``stderr`` are at most the output limit each."""

    status: str
    code: int | None
    stdout: str
    stderr: str


def run(
    argv: Sequence[str],
    *,
    files: Mapping[str, str],
    limits: Limits,
    namespaces: bool,
    network: bool,
    stdin: str = "",
) -> Outcome:
    """Write ``files`` into a fresh directory, run ``argv`` there under ``limits`` and remove the directory.

    ``namespaces``: isolate as the module says (else rlimits, the process group and the environment alone);
    ``network``: keep the host's network (with namespaces, skip the network namespace)."""
    workdir = tempfile.mkdtemp(prefix="scorers-code-")
    try:
        for name, text in files.items():
            Path(workdir, name).write_text(text, encoding="utf-8")
        return _launch(list(argv), workdir, stdin, limits, namespaces, network)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _launch(argv: list[str], workdir: str, stdin: str, limits: Limits, namespaces: bool, network: bool) -> Outcome:
    read_end, write_end = os.pipe()
    config = {
        "argv": argv,
        "env": {**BASE_ENV, "HOME": workdir, "TMPDIR": workdir},
        "workdir": workdir,
        "namespaces": namespaces,
        "network": network,
        "report_fd": write_end,
        "limits": {
            "cpu_s": limits.cpu_s,
            "memory_bytes": limits.memory_mb << 20,
            "file_bytes": limits.file_mb << 20,
            "processes": limits.processes,
        },
    }
    with tempfile.TemporaryFile() as given:  # stdin from a file: no pipe to keep fed
        given.write(stdin.encode("utf-8", "surrogateescape"))
        given.seek(0)
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", LAUNCHER, json.dumps(config)],
                stdin=given,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=BASE_ENV,
                cwd=workdir,
                pass_fds=(write_end,),
                start_new_session=True,
            )
        finally:
            os.close(write_end)
        with os.fdopen(read_end, "rb") as report:
            status, out, err = _collect(process, limits)
            reported = report.read().decode("utf-8", "replace")
    if status is None:
        kind, _, value = reported.partition(" ")
        if kind in ("exit", "signal"):
            return Outcome(kind, int(value), out, err)
        return Outcome("sandbox", None, out, value or f"the launcher ended with status {process.returncode}")
    return Outcome(status, None, out, err)


def _collect(process: subprocess.Popen[bytes], limits: Limits) -> tuple[str | None, str, str]:
    """Read stdout and stderr as they come until both close; kill the process group past the wall-clock or the
    output limit (then the reason), keeping at most the limit of each."""
    deadline = time.monotonic() + limits.wall_s
    bound = limits.output_kb * 1024
    kept: dict[IO[bytes], bytearray] = {}
    reason = None
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            assert stream is not None
            kept[stream] = bytearray()
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                reason = "timeout"
                break
            for key, _ in selector.select(min(left, 3600.0)):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer = kept[key.fileobj]  # type: ignore[index]
                buffer += chunk[: bound + 1 - len(buffer)]
                if len(buffer) > bound:
                    reason = "output"
            if reason:
                break
    if reason is None:
        try:
            process.wait(min(max(deadline - time.monotonic(), 0.001), 3600.0))
        except subprocess.TimeoutExpired:
            reason = "timeout"
    _kill(process)
    out, err = (kept[s][:bound].decode("utf-8", "replace") for s in (process.stdout, process.stderr))  # type: ignore[index]
    for stream in (process.stdout, process.stderr):
        assert stream is not None
        stream.close()
    return reason, out, err


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the launcher's process group (the PID namespace ends with its first process) and reap the launcher."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@functools.lru_cache(maxsize=None)
def namespaces_available(interpreter: str, network: bool) -> str | None:
    """None where a program can run in the namespaces here (tried once), else the reason it cannot."""
    outcome = run([interpreter, "-I", "-S", "-c", "pass"], files={}, limits=Limits(), namespaces=True, network=network)
    if outcome.status == "exit" and outcome.code == 0:
        return None
    return outcome.stderr.strip() or f"the trial run ended with {outcome.status} {outcome.code}"
