"""Cached prompt tokens and reasoning tokens in the usage record: summed, priced (a cached-input price), shown only
when not zero, so a run on an endpoint that reports neither writes what it wrote before."""

from __future__ import annotations

import json

import pytest

import scorers
from scorers.cli import main
from scorers.cli._common import parse_prices
from scorers.errors import ConfigError
from scorers.llm.config import configured_prices
from scorers.llm.usage import ModelUsage, Usage, describe_usage, failed_call_usage, summed_usage
from scorers.report.results import ResultsFile
from scorers.testing import LoopbackLLM, Reply


def test_zero_details_leave_every_record_as_it_was():
    figures = {"requests": 1, "attempts": 1, "prompt_tokens": 10, "completion_tokens": 2}
    assert list(summed_usage([figures])) == [
        "requests",
        "failed_calls",
        "cached",
        "attempts",
        "prompt_tokens",
        "completion_tokens",
        "failed_prompt_tokens",
        "failed_completion_tokens",
        "total_tokens",
    ]
    assert "cached_prompt_tokens" not in failed_call_usage(1, 10, 2)
    usage = Usage()
    usage.add_figures("m", figures)
    shown = usage.to_dict({"m": (1.0, 2.0)})
    assert "cached_prompt_tokens" not in shown and "reasoning_tokens" not in shown["by_model"]["m"]
    assert "cached input" not in describe_usage(shown) and "reasoning" not in describe_usage(shown)


def test_details_are_summed_and_shown_when_reported():
    usage = Usage()
    usage.add_figures("m", {"requests": 1, "prompt_tokens": 1000, "completion_tokens": 300, "reasoning_tokens": 250})
    usage.add_figures("m", {"requests": 1, "prompt_tokens": 1000, "completion_tokens": 50, "cached_prompt_tokens": 900})
    shown = usage.to_dict({"m": (1.0, 4.0)})
    assert (shown["cached_prompt_tokens"], shown["reasoning_tokens"]) == (900, 250)
    assert shown["by_model"]["m"]["cached_prompt_tokens"] == 900
    assert "; cached input tokens 900, reasoning tokens 250;" in describe_usage(shown)
    assert summed_usage([{"reasoning_tokens": 3}])["reasoning_tokens"] == 3


def test_a_cached_input_price_bills_the_cached_prompt_tokens_at_it():
    entry = ModelUsage(prompt_tokens=1000, completion_tokens=100, cached_prompt_tokens=600, failed_prompt_tokens=500)
    cost, failed = entry.cost(2.0, 8.0, 0.5)
    assert cost == pytest.approx((400 * 2.0 + 600 * 0.5 + 100 * 8.0) / 1e6)
    assert failed == pytest.approx((400 * 2.0 + 600 * 0.5) / 2 / 1e6)  # half the prompt tokens, at the mean price
    assert entry.cost(2.0, 8.0) == entry.cost(2.0, 8.0, None)  # no cached price: the input price
    assert entry.cost(2.0, 8.0)[0] == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)


def test_prices_take_two_or_three_numbers(monkeypatch):
    assert parse_prices(["m=1,2", "n=1,2,0.1"]) == {"m": (1.0, 2.0), "n": (1.0, 2.0, 0.1)}
    for bad in ("m=1", "m=1,2,3,4", "m=a,b"):
        with pytest.raises(ConfigError, match="INPUT,OUTPUT"):
            parse_prices([bad])
    try:
        scorers.configure(prices={"n": (1, 2, 0.25)})
        assert configured_prices() == {"n": (1.0, 2.0, 0.25)}
        for bad in ({"n": (1,)}, {"n": (1, 2, -1)}, {"n": (1, float("nan"))}):
            with pytest.raises(ConfigError, match=r"prices\['n'\]"):
                scorers.configure(prices=bad)
    finally:
        scorers.configure(prices=None)


def chat_reply_with_details(prompt: int, completion: int, cached: int, reasoning: int) -> Reply:
    """A chat completion choosing "Yes" whose usage states cached prompt tokens and reasoning tokens, as OpenAI's
    does (``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``)."""
    call = {"id": "call_1", "type": "function", "function": {"name": "select_choice", "arguments": '{"choice": "Yes"}'}}
    return Reply.raw(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": reasoning},
            },
        }
    )


@pytest.mark.slow  # renders the HTML report
def test_a_run_counts_prices_and_shows_what_the_endpoint_reports(fake_api_key, tmp_path, capsys):
    rows = [{"output": f"Thanks {n}!"} for n in range(3)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    summary_path = tmp_path / "summary.json"
    with LoopbackLLM(default=chat_reply_with_details(1000, 50, 800, 30)) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key)
        code = main(
            ["run", str(data), "-s", "Humor", "-p", "Humor.use_cot=false", "--model", "m", "-o", str(tmp_path / "o")]
            + ["--price", "m=1,4,0.1", "--summary-json", str(summary_path), "--metadata"]
        )
        assert code == 0 and server.request_count == 3
    usage = json.loads(summary_path.read_text())["scorers"]["Humor"]["usage"]
    assert (usage["prompt_tokens"], usage["cached_prompt_tokens"], usage["reasoning_tokens"]) == (3000, 2400, 90)
    assert usage["cost_usd"] == pytest.approx(3 * (200 * 1.0 + 800 * 0.1 + 50 * 4.0) / 1e6)
    assert "         cached input tokens 2,400, reasoning tokens 90\n" in capsys.readouterr().err
    first = json.loads((tmp_path / "o").read_text().splitlines()[0])
    assert first["metadata_scores"]["Humor"]["usage"]["cached_prompt_tokens"] == 800
    reported = ResultsFile.read(tmp_path / "o").summary({"m": (1.0, 4.0, 0.1)})["Humor"]["usage"]
    assert reported["cached_prompt_tokens"] == 2400 and reported["cost_usd"] == pytest.approx(usage["cost_usd"])
    html = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "o"), "-o", str(html), "--price", "m=1,4,0.1"]) == 0
    page = html.read_text()
    assert "cached: 2,400" in page and "reasoning: 90" in page
