"""Spend you can predict and cap: ``run --dry-run`` counts what a run then sends (checked against the loopback
server's request log), and ``--max-cost`` stops sending before the spend passes the cap, the rows not judged left
as BudgetExceeded errors that ``--resume`` completes. Every request goes over real HTTP to a LoopbackLLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

import scorers
from scorers import Run
from scorers.cli import main
from scorers.errors import ConfigError
from scorers.judges import LLMClassifier
from scorers.judges.geval import GEvalJudge
from scorers.judges.rag import Faithfulness
from scorers.judges.selfcheck import SelfCheck
from scorers.llm.spend import estimate_prompt_tokens, request_bound
from scorers.testing import LoopbackLLM, Reply
from scorers.testing.auto import auto_reply

MODEL = "judge-model"
ROWS = [
    {"input": f"What is the capital of country {n}?", "output": f"It is city {n}. It has {n} bridges.", "context": "x"}
    for n in range(5)
]


#: Twenty distinct rows (a row equal to an earlier one would be answered by the cache, at no cost).
MANY = [{"output": f"Answer number {n}."} for n in range(20)]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def classifier(**options: Any) -> LLMClassifier:
    return LLMClassifier("Polite", "Is {{output}} polite?", {"Yes": 1.0, "No": 0.0}, model=MODEL, **options)


JUDGES: dict[str, Callable[[], Any]] = {
    "classifier with samples": lambda: classifier(samples=3, temperature=0.7),
    "G-Eval writing its steps": lambda: GEvalJudge(
        "Coherent", "Answer: {{output}}", criteria="Is it coherent?", scale={"min": 1, "max": 5}, model=MODEL
    ),
    "Faithfulness": lambda: Faithfulness(model=MODEL),
    "SelfCheck": lambda: SelfCheck(samples=2, model=MODEL),
}


@pytest.mark.parametrize("kind", list(JUDGES))
def test_the_dry_run_counts_what_the_run_then_sends(kind, fake_api_key, tmp_path):
    with LoopbackLLM(default=auto_reply) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key, prices={MODEL: (1.0, 2.0)})
        judge = JUDGES[kind]()
        out = tmp_path / "out.jsonl"
        planned = Run(ROWS, [judge], output=str(out), dry_run=True).execute().plan
        assert planned is not None and server.request_count == 0 and not out.exists()  # nothing sent or written
        assert planned.scorers[0].rows == len(ROWS) and planned.scorers[0].cached == 0
        Run(ROWS, [judge], output=str(out)).execute()
        # exact, but for requests identical to an earlier one, which the cache answers once that one has answered
        # (SelfCheck's support checks of the stand-in replies' sentences and samples, the same for every row)
        repeats = planned.scorers[0].repeats
        assert planned.requests - repeats <= server.request_count <= planned.requests
        sent_prompts = [request.body for request in server.requests]
        again = Run(ROWS, [judge], output=str(tmp_path / "again.jsonl"), dry_run=True).execute().plan
    assert again is not None and again.requests == 0 and again.scorers[0].cached > 0  # the cache answers all
    if kind not in ("Faithfulness", "SelfCheck"):  # the others' requests are known before any reply, and distinct
        assert planned.scorers[0].stepwise == planned.scorers[0].repeats == 0
    costs = planned.costs()
    assert costs is not None and costs[0] == pytest.approx(planned.scorers[0].prompt_tokens * 1.0 / 1e6)
    assert costs[1] == pytest.approx(costs[0] + planned.scorers[0].max_output_tokens * 2.0 / 1e6)
    assert len(sent_prompts) == server.request_count


def test_identical_requests_of_a_run_are_counted_apart(fake_api_key):
    """SelfCheck samples answers to the input: rows with the same input make the same sample requests."""
    with LoopbackLLM(default=auto_reply) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key)
        same_input = [{**row, "input": "What is the capital of France?"} for row in ROWS]
        planned = Run(same_input, [SelfCheck(samples=2, model=MODEL)], dry_run=True).execute().plan
        assert server.request_count == 0
    assert planned is not None and planned.requests == 25
    assert planned.scorers[0].repeats >= 2 * (len(ROWS) - 1)  # the samples (and support checks of equal sentences)
    assert f"{planned.scorers[0].repeats} of its requests repeat an identical earlier one" in planned.describe()


def test_the_estimate_rule_is_what_it_says():
    request = scorers.llm.ChatRequest(
        messages=[{"role": "system", "content": "abcd"}, {"role": "user", "content": [{"type": "text", "text": "ef"}]}],
        tools=[{"type": "function", "function": {"name": "f"}}],
        max_tokens=10,
    )
    tools = len(json.dumps(request.tools, separators=(",", ":")))
    assert estimate_prompt_tokens(request) == -(-(4 + 2 + tools) // 4)
    assert request_bound(request, (1.0, 3.0)) == pytest.approx((estimate_prompt_tokens(request) + 30) / 1e6)


def test_the_dry_run_of_the_command_line_prints_the_plan_and_writes_its_json(fake_api_key, tmp_path, capsys):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    with LoopbackLLM(default=auto_reply) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key)
        code = main(
            ["run", str(data), "-s", "Faithfulness", "-s", "ExactMatch", "--model", MODEL, "--dry-run"]
            + ["--price", f"{MODEL}=0.5,1.5", "--summary-json", str(tmp_path / "plan.json"), "-o", str(tmp_path / "o")]
        )
        assert server.request_count == 0
    printed = capsys.readouterr().out
    assert code == 0 and not (tmp_path / "o").exists()
    assert printed.startswith("dry run: nothing was sent\nscorer ")
    assert "prompt tokens are estimates: characters / 4" in printed and "ExactMatch" not in printed
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["requests"] == 2 * len(ROWS) and plan["scorers"][0]["stepwise"] == 2 * len(ROWS)


def capped_run(server: LoopbackLLM, tmp_path: Path, cap: float, **options: Any) -> tuple[Run, Any]:
    judge = classifier(max_tokens=50)
    run = Run(MANY, [judge], output=str(tmp_path / "out.jsonl"), max_cost=cap, **options)
    return judge, run.execute()


def test_a_capped_run_stops_before_the_cap_and_resume_judges_the_rest(fake_api_key, tmp_path):
    with LoopbackLLM(default=Reply.choice("Yes", usage=(100, 10))) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key, prices={MODEL: (1.0, 1.0)})
        judge, result = capped_run(server, tmp_path, 0.001, concurrency=1)
        bound = request_bound(judge._row_requests(MANY[0])[0], (1.0, 1.0))
        written = records(tmp_path / "out.jsonl")
        judged = [r for r in written if "errors" not in r]
        assert written[: len(judged)] == judged  # the rows not judged are the last ones
        assert {r["errors"]["Polite"]["type"] for r in written[len(judged) :]} == {"BudgetExceeded"}
        assert server.request_count == len(judged) == 8
        spend = result.spend
        assert spend["reached"] and spend["spent_usd"] == pytest.approx(len(judged) * 110 / 1e6)
        assert spend["spent_usd"] <= 0.001 < spend["spent_usd"] + bound  # stopped only when the next could pass
        assert spend["requests_not_sent"] == len(written) - len(judged)
        assert not result.passed and any(f.startswith("spending cap reached: $0.0009 spent") for f in result.failures)

        planned = Run(MANY, [judge], output=str(tmp_path / "out.jsonl"), resume=True, dry_run=True).execute().plan
        assert planned is not None and planned.requests == len(MANY) - len(judged)  # the rows --resume judges
        assert records(tmp_path / "out.jsonl") == written  # a dry run leaves OUT as it is
        resumed = Run(MANY, [judge], output=str(tmp_path / "out.jsonl"), resume=True, max_cost=1.0).execute()
        assert resumed.passed and resumed.spend is not None and not resumed.spend["reached"]
        assert server.request_count == len(MANY)  # the judged rows' requests were not sent again
    final = records(tmp_path / "out.jsonl")
    assert len(final) == len(MANY) and all("errors" not in r for r in final)
    assert final[: len(judged)] == judged


def test_requests_in_flight_pass_the_cap_only_by_what_their_estimates_missed(fake_api_key, tmp_path):
    """Eight in flight: a reply that bills its estimate or less never takes the run past the cap; one that bills
    more (here 2,000 prompt tokens, estimated at under 100) passes it by at most the in-flight shortfall."""
    for billed, cap in ((80, 0.001), (2_000, 0.01)):
        with LoopbackLLM(default=Reply.choice("Yes", usage=(billed, 5)), latency=0.02) as server:
            scorers.configure(base_url=server.base_url, api_key=fake_api_key, prices={MODEL: (1.0, 1.0)})
            (tmp_path / str(billed)).mkdir()
            judge, result = capped_run(server, tmp_path / str(billed), cap, concurrency=8)
            estimate = estimate_prompt_tokens(judge._row_requests(MANY[0])[0])
            shortfall = max(0, billed - estimate) / 1e6
            assert result.spend["reached"] and server.request_count < len(MANY)
            assert result.spend["spent_usd"] <= cap + 8 * shortfall
            if not shortfall:
                assert result.spend["spent_usd"] <= cap


@pytest.mark.slow
def test_the_cap_holds_with_worker_processes(fake_api_key, tmp_path):
    """--workers scores the CPU-bound scorers in processes; the judges send from this one, under one counter."""
    with LoopbackLLM(default=Reply.choice("Yes", usage=(100, 10))) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key, prices={MODEL: (1.0, 1.0)})
        judge = classifier(max_tokens=50)
        rows = [{**row, "expected": row["output"]} for row in MANY]
        run = Run(rows, [judge, "ExactMatch"], output=str(tmp_path / "o.jsonl"), max_cost=0.001, workers=2)
        result = run.execute()
        assert result.spend["reached"] and server.request_count == 8 and result.spend["spent_usd"] <= 0.001


def test_a_cap_needs_a_price_for_every_judge_model_before_any_request(fake_api_key, tmp_path):
    with LoopbackLLM(default=Reply.choice("Yes")) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key, prices={"other": (1.0, 1.0)})
        with pytest.raises(ConfigError, match=f"{MODEL!r} has none: give it with --price {MODEL}=IN,OUT"):
            Run(ROWS, [classifier()], output=str(tmp_path / "o.jsonl"), max_cost=1.0).execute()
        assert server.request_count == 0
    with pytest.raises(ConfigError, match="max_cost works on the local engine only"):
        Run(ROWS, [classifier()], engine="ray", max_cost=1.0)
    with pytest.raises(ConfigError, match="max_cost"):
        Run(ROWS, [classifier()], max_cost=-1.0)


def test_the_command_line_cap_says_it_was_reached(fake_api_key, tmp_path, capsys):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in MANY))
    args = ["run", str(data), "-s", "Humor", "--model", MODEL, "--price", f"{MODEL}=1,1", "--concurrency", "1"]
    with LoopbackLLM(default=Reply.choice("Yes", usage=(100, 10))) as server:
        scorers.configure(base_url=server.base_url, api_key=fake_api_key)
        code = main(
            [*args, "-o", str(tmp_path / "o.jsonl"), "--max-cost", "0.002", "--summary-json", str(tmp_path / "s")]
        )
        sent = server.request_count
    printed = capsys.readouterr().err
    assert code == 1 and 0 < sent < len(MANY)
    assert "spending cap reached: $" in printed and "BudgetExceeded" in printed
    assert json.loads((tmp_path / "s").read_text())["spend"]["requests_not_sent"] == len(MANY) - sent


def protocols() -> list[str]:
    from scorers.llm.protocols import PROTOCOLS

    return PROTOCOLS.names()


@pytest.mark.parametrize("api", protocols())
def test_every_protocol_is_planned_and_capped_from_its_own_usage(api, tmp_path, monkeypatch):
    """The requests of a judge on each wire protocol are counted before the run, and its cap reads that protocol's
    usage (the loopback server's word counts, in each provider's usage shape)."""
    from scorers.testing import loopback_env

    with LoopbackLLM(default=auto_reply) as server:
        for name, value in loopback_env(server, api).items():
            monkeypatch.setenv(name, value)
        if api == "bedrock":  # signed with the test credentials the server checks, in a region
            from scorers.testing.protocols import LOOPBACK_AWS_ACCESS_KEY_ID, LOOPBACK_AWS_SECRET_ACCESS_KEY

            monkeypatch.setenv("AWS_ACCESS_KEY_ID", LOOPBACK_AWS_ACCESS_KEY_ID)
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", LOOPBACK_AWS_SECRET_ACCESS_KEY)
            monkeypatch.setenv("AWS_REGION", "us-east-1")
        scorers.configure(prices={MODEL: (1.0, 1.0)})
        judge = classifier(samples=2, temperature=0.5, max_tokens=50)
        planned = Run(MANY, [judge], dry_run=True).execute().plan
        assert planned is not None and server.request_count == 0
        capped = Run(MANY, [judge], output=str(tmp_path / "o.jsonl"), max_cost=0.001).execute()
        sent = server.request_count
        Run(MANY, [judge], output=str(tmp_path / "all.jsonl")).execute()
        assert server.request_count - sent == planned.requests == 2 * len(MANY)
    assert capped.spend is not None and capped.spend["reached"] and 0 < sent < 2 * len(MANY)
    assert 0 < capped.spend["spent_usd"] <= 0.001  # the server bills fewer tokens than the estimate
    assert {r["errors"]["Polite"]["type"] for r in records(tmp_path / "o.jsonl") if "errors" in r} == {"BudgetExceeded"}


def test_a_dry_run_without_an_api_key_counts_every_request_and_says_why():
    planned = Run(ROWS, [classifier()], dry_run=True).execute().plan
    assert planned is not None and planned.requests == len(ROWS) and "no API key" in planned.scorers[0].cache_note
    assert "Polite: the cache could not be read, every request is counted: no API key" in planned.describe()
