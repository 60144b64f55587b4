"""``loopback``: serve an offline OpenAI-compatible judge on 127.0.0.1."""

from __future__ import annotations

import argparse

from .._replies_format import REPLIES_FORMAT
from ._common import Command, file_path

LOOPBACK_EPILOG = (
    REPLIES_FORMAT
    + """
a session:
  python -m scorers loopback                  # shell 1: serves until Ctrl-C; prints the export lines
                                              # (--api anthropic|gemini|bedrock: those of that provider)
  export OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=loopback SCORERS_CACHE=off     # shell 2
  python -m scorers run examples/qa.jsonl -s Factuality --metadata -o qa.results.jsonl
  python -m scorers report qa.results.jsonl -o report.html
"""
)


def add_loopback(sub: argparse._SubParsersAction[argparse.ArgumentParser], templates: argparse.ArgumentParser) -> None:
    p_loopback = sub.add_parser(
        "loopback",
        help="serve an offline judge on 127.0.0.1 (no API key): run, meta-eval and report without a key",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=LOOPBACK_EPILOG,
        description="Serve an offline judge endpoint on 127.0.0.1 (OpenAI's APIs, Anthropic, Gemini, Bedrock) in the foreground until Ctrl-C (or SIGTERM). "
        "Every judge request (each built-in judge, every response mode, both APIs) gets a valid answer "
        "drawn from the request: the same prompt, the same verdict. It prints the lines to paste "
        "into the shell that runs the judges, the URL first.",
    )
    p_loopback.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default: 8000; 0: any free one)")
    p_loopback.add_argument(
        "--replies",
        type=file_path,
        metavar="FILE",
        help="JSONL rules answered before the automatic answer (format below)",
    )
    p_loopback.add_argument(
        "--latency", type=float, default=0.0, metavar="S", help="seconds to wait before each reply (default: 0)"
    )
    p_loopback.add_argument(
        "--api",
        default="chat",
        metavar="PROTOCOL",
        help="print the lines for judges of this wire protocol: chat, responses, anthropic, gemini, bedrock "
        "(default: chat; the server answers every protocol whatever this is)",
    )


def cmd_loopback(args: argparse.Namespace) -> int:
    from ..testing import serve

    return serve(port=args.port, replies=args.replies, latency=args.latency, api=args.api)


COMMANDS = {"loopback": Command(add_loopback, cmd_loopback)}
