"""``python -m scorers loopback``: the loopback server in the foreground, answering judges offline."""

from __future__ import annotations

import math
import signal
import sys
import threading
from pathlib import Path
from typing import TextIO

from ..errors import ConfigError
from .auto import auto_reply
from .rules import load_rules
from .server import LoopbackLLM

__all__ = ["serve", "loopback_env"]


def loopback_env(server: LoopbackLLM, api: str = "chat") -> dict[str, str]:
    """The environment that points the judges of the wire protocol ``api`` at ``server``: the protocol (unless
    chat), its provider's base-URL and key variables (a placeholder key; the test credentials where requests are
    signed), and the cache off (it keys replies by URL, and another session on this port may answer differently);
    the base URL first.

    >>> with LoopbackLLM() as server:
    ...     env = loopback_env(server, "responses")
    >>> list(env)
    ['OPENAI_BASE_URL', 'SCORERS_API', 'OPENAI_API_KEY', 'SCORERS_CACHE']
    """
    from ..llm.protocols import wire

    protocol = wire(api)
    # first: a script reads it; OpenAI's clients take the URL with /v1, the others' SDKs add their API's whole path
    env = {protocol.endpoint.url_env[0]: server.base_url if protocol.client_family == "openai" else server.url}
    if api != "chat":
        env["SCORERS_API"] = protocol.name
    if protocol.endpoint.key_env:
        env[protocol.endpoint.key_env[0]] = "loopback"
    for counterpart in server.protocols:
        if counterpart.name == protocol.name:
            env.update(counterpart.client_env())
    env["SCORERS_CACHE"] = "off"
    return env


def serve(
    *,
    port: int = 8000,
    replies: str | Path | None = None,
    latency: float = 0.0,
    api: str = "chat",
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Serve judges offline on 127.0.0.1:``port`` until SIGINT (Ctrl-C) or SIGTERM; returns 0 (what
    ``python -m scorers loopback`` runs).

    Each request gets the first matching rule of the ``replies`` file (:data:`~scorers.testing.REPLIES_FORMAT`), else
    :func:`auto_reply`; ``latency`` delays every reply. ``out`` (stdout) gets the lines that point the
    judges of the wire protocol ``api`` here (:func:`loopback_env`), the URL (and so the port: ``--port 0`` takes
    a free one) on the first; for chat::

        export OPENAI_BASE_URL=http://127.0.0.1:8000/v1
        export OPENAI_API_KEY=loopback
        export SCORERS_CACHE=off

    The server answers every protocol whatever ``api`` is. A port in use, a bad replies file or latency, an unknown
    protocol raise :class:`ConfigError`.
    """
    out, err = out or sys.stdout, err or sys.stderr
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: a port from 1 to 65535, or 0 for any free one")
    if not 0 <= latency < math.inf:
        raise ConfigError(f"--latency {latency}: seconds, at least 0")
    from ..llm.protocols import wire

    wire(api)  # an unknown protocol: the ConfigError that lists them, before the server starts
    server = LoopbackLLM(default=auto_reply, latency=latency, port=port)
    server.rules.extend(load_rules(replies) if replies else ())
    stopped = threading.Event()
    handlers = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.start()
        except RuntimeError as exc:
            if not isinstance(exc.__cause__, OSError):
                raise
            raise ConfigError(
                f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.__cause__.strerror}); "
                "give another port, or --port 0 for any free one"
            ) from None
        rules = f"the {len(server.rules)} rules of {replies} first, then " if server.rules else ""
        print(
            f"loopback judge server on 127.0.0.1:{server.port}: answers every judge request offline with "
            f"{rules}a valid automatic answer (python -m scorers loopback --help); Ctrl-C stops it. "
            "In the shell that runs the judges:",
            file=err,
            flush=True,
        )
        lines = [f"export {name}={value}" for name, value in loopback_env(server, api).items()]
        print("\n".join(lines), file=out, flush=True)
        stopped.wait()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        server.stop()
    print(f"stopped after {server.request_count} requests", file=err, flush=True)
    return 0
