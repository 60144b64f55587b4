"""Judges on every wire protocol, each as a share of its bare client's ceiling, side by side in one run.

For each registered protocol (``chat``, ``responses``, ``anthropic``, ``gemini``, ``bedrock``: those whose client
is installed), 1,000 Factuality judgments at 32 in flight against :class:`scorers.testing.LoopbackLLM` (in its own
process, so the figures measure the client side only) with 100 ms latency, then the same requests (the bodies our
protocol built, to the same paths) sent by the provider's bare client at 32 in flight:

* ``chat``, ``responses``: the ``openai`` SDK's ``client.post`` (raw response), over aiohttp as our engine sends;
* ``anthropic``: the ``anthropic`` SDK's ``client.post`` (raw response);
* ``gemini``: plain ``aiohttp`` posts with the ``x-goog-api-key`` header (the raw client, as our protocol sends
  through the engine's own HTTP client: the ``google-genai`` SDK takes its own types, not a REST body);
* ``bedrock``: requests signed by ``botocore``'s ``SigV4Auth`` (the loopback server checks the signature with its
  test credentials), posted with ``aiohttp``.

The ratio is the ceiling's wall time over ours (rows/s ours / rows/s ceiling), the median of ``--rounds`` turns
(ours, then the ceiling right after it, so both meet the same load); the goal is >= 0.95 for each protocol. Every
client is warmed up first and every timed run starts from a collected heap, as in ``bench_judge.py``.

    python benchmarks/judge_protocols.py [--rows 1000] [--rounds 3] [--latency 0.1] [--concurrency 32] [--only API ...]
                                         [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_judge import API_KEY, ServerProcess, _rows, run_ours  # noqa: E402
from benchmarks.common import versions, write_json  # noqa: E402

MODEL = "judge-model"
GOAL = 0.95
#: Rows that warm each contender up (other rows than the timed ones).
WARM_UP = [{"input": f"Warm-up {i}", "output": "yes", "expected": "no"} for i in range(4)]


# ------------------------------------------------------------------ endpoints
def base_url(protocol: Any, server: ServerProcess) -> str:
    """The server's root with the path of the provider's default URL (``/v1`` for OpenAI's, none for the others)."""
    default = protocol.endpoint.default_url
    default = default({}) if callable(default) else default
    return server.base_url.removesuffix("/v1") + urlsplit(default).path.rstrip("/")


def aws_credentials() -> dict[str, str]:
    """The AWS credentials the loopback server checks Bedrock signatures with (set in the environment: the
    engine reads them through the AWS credential chain)."""
    from scorers.testing.protocols import LOOPBACK_AWS_ACCESS_KEY_ID, LOOPBACK_AWS_SECRET_ACCESS_KEY

    return {
        "AWS_ACCESS_KEY_ID": LOOPBACK_AWS_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": LOOPBACK_AWS_SECRET_ACCESS_KEY,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


# ------------------------------------------------------------------ the ceilings
Post = Callable[[dict[str, Any]], Awaitable[Any]]


async def _openai_sdk(url: str, path: str) -> tuple[Post, Callable[[], Awaitable[None]]]:
    import openai

    from scorers.llm.transport import httpx_module

    client = openai.AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0, http_client=openai.DefaultAioHttpClient())
    raw = httpx_module().Response

    async def post(body: dict[str, Any]) -> Any:
        response = await client.post(path, body=body, cast_to=raw, options={"max_retries": 0, "timeout": 60.0})
        return json.loads(response.content)

    return post, client.close


async def _anthropic_sdk(url: str, path: str) -> tuple[Post, Callable[[], Awaitable[None]]]:
    import importlib

    import anthropic

    # the raw response class of the httpx flavour the SDK sends with
    flavour = next(c for c in anthropic.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    raw = importlib.import_module(flavour.__module__.split(".")[0]).Response
    client = anthropic.AsyncAnthropic(
        base_url=url, api_key=API_KEY, max_retries=0, http_client=anthropic.DefaultAioHttpClient()
    )

    async def post(body: dict[str, Any]) -> Any:
        response = await client.post(path, body=body, cast_to=raw, options={"timeout": 60.0})
        return json.loads(response.content)

    return post, client.close


async def _aiohttp(url: str, path: str, sign: Callable[[str, bytes], dict[str, str]]) -> tuple[Post, Any]:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def post(body: dict[str, Any]) -> Any:
        data = json.dumps({k: v for k, v in body.items() if k != "model"}).encode()  # the model is in the path
        async with session.post(url + path, data=data, headers=sign(url + path, data)) as response:
            return json.loads(await response.read())

    return post, session.close


async def _gemini_raw(url: str, path: str) -> tuple[Post, Any]:
    return await _aiohttp(
        url, path, lambda _url, _data: {"x-goog-api-key": API_KEY, "content-type": "application/json"}
    )


async def _bedrock_signed(url: str, path: str) -> tuple[Post, Any]:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    credentials = aws_credentials()
    signer = SigV4Auth(
        Credentials(credentials["AWS_ACCESS_KEY_ID"], credentials["AWS_SECRET_ACCESS_KEY"]),
        "bedrock",
        credentials["AWS_REGION"],
    )

    def sign(target: str, data: bytes) -> dict[str, str]:
        request = AWSRequest(method="POST", url=target, data=data, headers={"content-type": "application/json"})
        signer.add_auth(request)
        return dict(request.headers.items())

    return await _aiohttp(url, path, sign)


#: Each protocol's bare client, by ``api`` name.
CEILINGS: dict[str, tuple[str, Callable[[str, str], Awaitable[tuple[Post, Any]]]]] = {
    "chat": ("openai SDK", _openai_sdk),
    "responses": ("openai SDK", _openai_sdk),
    "anthropic": ("anthropic SDK", _anthropic_sdk),
    "gemini": ("aiohttp (raw)", _gemini_raw),
    "bedrock": ("botocore SigV4 + aiohttp", _bedrock_signed),
}


# ------------------------------------------------------------------- the runs
def run_ceiling(api: str, url: str, path: str, bodies: list[dict[str, Any]], concurrency: int) -> tuple[float, float]:
    """Wall and CPU seconds to send ``bodies`` with ``api``'s bare client, ``concurrency`` in flight."""

    async def go() -> None:
        post, close = await CEILINGS[api][1](url, path)
        semaphore = asyncio.Semaphore(concurrency)

        async def one(body: dict[str, Any]) -> Any:
            async with semaphore:
                return await post(body)

        try:
            await asyncio.gather(*(one(body) for body in bodies))
        finally:
            await close()

    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(
    api: str, server: ServerProcess, rows: list[dict[str, str]], concurrency: int, rounds: int
) -> dict[str, Any]:
    """Ours and the bare client's ceiling on ``api``, warmed up first, taking turns ``rounds`` times (a slow spell
    of a shared machine then hits both alike); the figures are each side's median round."""
    import scorers
    from scorers.llm import LLMEngine
    from scorers.llm.protocols import PROTOCOLS

    protocol = PROTOCOLS.get(api)
    url = base_url(protocol, server)
    engine = LLMEngine(api=api, base_url=url, api_key=API_KEY, max_concurrency=concurrency, cache=False)
    judge = scorers.get("Factuality", model=MODEL, engine=engine)
    path = protocol.path(MODEL)
    bodies = [protocol.body(judge.build_request(row), MODEL, False) for row in rows]
    run_ours(judge, WARM_UP, concurrency)
    run_ceiling(api, url, path, bodies[:4], concurrency)
    ours_runs, bare_runs, shares = [], [], []
    for _ in range(rounds):
        before = server.requests()
        ours_wall, ours_cpu, ours = run_ours(judge, rows, concurrency)
        requests = server.requests() - before
        failed = [r for r in ours if not isinstance(r, scorers.Score)]
        if failed or requests != len(rows):
            raise SystemExit(f"{api}: {len(failed)} rows failed, {requests} requests, first: {failed[:1]!r}")
        bare_wall, bare_cpu = run_ceiling(api, url, path, bodies, concurrency)
        ours_runs.append((ours_wall, ours_cpu))
        bare_runs.append((bare_wall, bare_cpu))
        shares.append(bare_wall / ours_wall)
    (ours_wall, ours_cpu), (bare_wall, bare_cpu) = median(ours_runs), median(bare_runs)
    n = len(rows)
    return {
        "api": api,
        "ceiling": CEILINGS[api][0],
        "ours_rows_per_s": n / ours_wall,
        "ceiling_rows_per_s": n / bare_wall,
        "share_of_ceiling": statistics.median(shares),
        "shares": shares,
        "ours_client_cpu_ms_per_call": 1000 * ours_cpu / n,
        "ceiling_client_cpu_ms_per_call": 1000 * bare_cpu / n,
        "requests_per_round": n,
    }


def median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The median run by wall time, (wall, CPU)."""
    return sorted(runs)[len(runs) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="turns of ours then the ceiling per protocol")
    parser.add_argument("--only", nargs="*", metavar="API", help="these protocols only (default: every one installed)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    import aiohttp  # noqa: F401  the HTTP stack is imported before any timing, for every contender alike
    import openai  # noqa: F401

    import scorers.judges.template  # noqa: F401  (registers the built-in judges)
    from scorers.llm.protocols import PROTOCOLS

    apis = [api for api in PROTOCOLS.names() if api in CEILINGS and (not args.only or api in args.only)]
    if "bedrock" in apis:
        os.environ.update(aws_credentials())  # the engine's AWS credential chain reads them
    rows = _rows(args.rows)
    ideal = args.concurrency / args.latency
    server = ServerProcess(args.latency)
    try:
        figures = [measure(api, server, rows, args.concurrency, args.rounds) for api in apis]
        load = os.getloadavg()
    finally:
        server.stop()

    print(
        f"Factuality, {len(rows)} rows per protocol and round, {args.rounds} rounds (median), server latency "
        f"{args.latency * 1000:.0f} ms, {args.concurrency} in flight; ideal {ideal:.0f} rows/s; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'api':<10} {'ours rows/s':>11} {'bare client':<26} {'rows/s':>7} {'ours/bare':>9} "
        f"{'CPU/call ours':>13} {'bare':>8}  goal >= {GOAL}"
    )
    for f in figures:
        print(
            f"{f['api']:<10} {f['ours_rows_per_s']:>11.0f} {f['ceiling']:<26} {f['ceiling_rows_per_s']:>7.0f} "
            f"{f['share_of_ceiling']:>9.3f} {f['ours_client_cpu_ms_per_call']:>10.2f} ms "
            f"{f['ceiling_client_cpu_ms_per_call']:>5.2f} ms  {'met' if f['share_of_ceiling'] >= GOAL else 'NOT met'}"
        )
    unmeasured = [api for api in PROTOCOLS.names() if api not in CEILINGS]
    if unmeasured:
        print(f"not measured (no bare client named in CEILINGS): {', '.join(unmeasured)}")
    if args.json:
        extra = {"load_average": load, "versions": versions("openai", "anthropic", "google-genai", "botocore")}
        write_json(args.json, figures, extra)
    return 0 if all(f["share_of_ceiling"] >= GOAL for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
