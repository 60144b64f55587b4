"""Derived cache keys (scorers.judges.derived): a cached batch is answered without rendering its prompts, equal to
the rendered way, and never with a reply of another prompt: a template edit, an input change and a setting change
each miss, and a link that disagrees with the rendered prompt's key is not used."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable

import pytest

from scorers import Score
from scorers.judges import LLMClassifier, PairwiseJudge
from scorers.judges.templated import TemplatedJudge
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, Reply

ROWS = [{"output": f"answer {i}", "expected": f"reference {i}"} for i in range(6)]
PROMPT = "Does {{output}} say what {{expected}} says?"


def engine(server: LoopbackLLM, cache: Any) -> LLMEngine:
    return LLMEngine(base_url=server.base_url, api_key="k", cache=cache, max_retries=0)


def classifier(server: LoopbackLLM, cache: Any, prompt: str = PROMPT, **settings: Any) -> Any:
    return LLMClassifier("Same", prompt, {"Y": 1, "N": 0}, engine=engine(server, cache), **settings)


def pairwise(server: LoopbackLLM, cache: Any, prompt: str = "Which is better, {{output}} or {{expected}}?") -> Any:
    return PairwiseJudge("Better", prompt, engine=engine(server, cache), swap=True)


def by_prompt(request: Any) -> Reply:
    """Each prompt's own verdict, so that a reply of another prompt would show."""
    return Reply.choice("Y" if sum(map(ord, request.last_user_message)) % 2 else "N", reasons="r")


def by_prompt_pair(request: Any) -> Reply:
    return Reply.choice("AB"[sum(map(ord, request.last_user_message)) % 2], reasons="r")


#: Each kind of judge tried: a classifier (one request per row), its samples, pairwise in both orders.
JUDGES: dict[str, tuple[Callable[..., Any], Callable[[Any], Reply]]] = {
    "classifier": (classifier, by_prompt),
    "samples": (lambda server, cache, **kw: classifier(server, cache, samples=3, temperature=0.5, **kw), by_prompt),
    "pairwise": (pairwise, by_prompt_pair),
}


@pytest.fixture(params=sorted(JUDGES))
def kind(request: pytest.FixtureRequest, llm_server: LoopbackLLM) -> Callable[..., Any]:
    make, reply = JUDGES[request.param]
    llm_server.default = reply
    return make


def renders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of rendered prompts (TemplatedJudge.render calls)."""
    count = [0]
    original = TemplatedJudge.render

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TemplatedJudge, "render", counted)
    return count


def one_row(judge: Any, count: list[int]) -> int:
    """How many prompts one row of ``judge`` renders (its requests)."""
    before = count[0]
    judge._row_requests(ROWS[0])
    return count[0] - before


def figures(results: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    """Score and metadata of each row, but the latency (a clock)."""
    return [(r.score, {k: v for k, v in r.metadata.items() if k != "latency_s"}) for r in results]


def test_a_cached_batch_is_answered_without_rendering_and_equals_the_rendered_way(
    kind, llm_server, tmp_path, monkeypatch
):
    cache = tmp_path / "c.sqlite"
    first = kind(llm_server, cache).score_batch(ROWS)
    sent = len(llm_server.chat_requests)
    with sqlite3.connect(cache) as connection:  # read the rendered way once more: no links
        connection.execute("DELETE FROM derived")
    count = renders(monkeypatch)
    rendered = kind(llm_server, cache).score_batch(ROWS)  # which links each row's derived keys
    assert len(llm_server.chat_requests) == sent
    judge = kind(llm_server, cache)
    per_row, count[0] = one_row(judge, count), 0
    derived = judge.score_batch(ROWS)
    assert all(isinstance(r, Score) and r.metadata["cached"] for r in derived)
    assert count[0] == 2 * per_row  # the placeholders' prompts and the check row's: no other row is rendered
    assert figures(derived) == figures(rendered)
    assert [r.score for r in first] == [r.score for r in derived]


def test_an_older_cache_without_links_is_read_the_rendered_way_then_linked(kind, llm_server, tmp_path, monkeypatch):
    cache = tmp_path / "c.sqlite"
    kind(llm_server, cache).score_batch(ROWS)
    with sqlite3.connect(cache) as connection:  # a cache written before derived keys: replies, no links
        connection.execute("DELETE FROM derived")
    sent = len(llm_server.chat_requests)
    count = renders(monkeypatch)
    judge = kind(llm_server, cache)
    per_row, count[0] = one_row(judge, count), 0
    again = judge.score_batch(ROWS)
    assert len(llm_server.chat_requests) == sent and all(r.metadata["cached"] for r in again)
    assert count[0] == (len(ROWS) + 1) * per_row  # the placeholders and every row
    count[0] = 0
    judge.score_batch(ROWS)
    assert count[0] == 2 * per_row  # linked by the run before


@pytest.mark.parametrize(
    "change",
    ["template edit", "input change", "setting change", "model change"],
)
def test_each_change_misses(change, llm_server, tmp_path):
    llm_server.default = by_prompt
    cache = tmp_path / "c.sqlite"
    classifier(llm_server, cache).score_batch(ROWS)
    rows, judge = list(ROWS), classifier(llm_server, cache)
    if change == "template edit":
        judge = classifier(llm_server, cache, prompt=PROMPT.replace("says?", "states?"))
    elif change == "input change":
        rows[2] = {**rows[2], "output": "answer 2, edited"}
    elif change == "setting change":
        judge = classifier(llm_server, cache, use_cot=False)
    else:
        judge = LLMClassifier("Same", PROMPT, {"Y": 1, "N": 0}, engine=engine(llm_server, cache), model="another-model")
    sent = len(llm_server.chat_requests)
    results = judge.score_batch(rows)
    fresh = [not r.metadata["cached"] for r in results]
    assert fresh == ([False, False, True, False, False, False] if change == "input change" else [True] * len(rows))
    assert len(llm_server.chat_requests) - sent == sum(fresh)
    again = judge.score_batch(rows)  # read back as answered
    assert [(r.score, r.metadata["choice"]) for r in again] == [(r.score, r.metadata["choice"]) for r in results]


def test_a_link_that_disagrees_with_the_rendered_prompt_is_not_used(llm_server, tmp_path):
    llm_server.default = by_prompt
    cache = tmp_path / "c.sqlite"
    right = classifier(llm_server, cache).score_batch(ROWS)
    classifier(llm_server, cache).score_batch(ROWS)
    with sqlite3.connect(cache) as connection:  # every link now names the reply of the next row's prompt
        links = connection.execute("SELECT key, reply_key FROM derived ORDER BY key").fetchall()
        targets = [target for _, target in links]
        connection.executemany(
            "UPDATE derived SET reply_key = ? WHERE key = ?",
            [(targets[(i + 1) % len(targets)], key) for i, (key, _) in enumerate(links)],
        )
    again = classifier(llm_server, cache).score_batch(ROWS)
    assert [r.score for r in again] == [r.score for r in right]
    assert [r.metadata["choice"] for r in again] == [r.metadata["choice"] for r in right]


def test_a_chunk_with_hits_and_misses(llm_server, tmp_path, monkeypatch):
    llm_server.default = by_prompt
    cache = tmp_path / "c.sqlite"
    classifier(llm_server, cache).score_batch(ROWS[::2])
    more = [*ROWS, {"output": "new", "expected": "row"}]
    sent = len(llm_server.chat_requests)
    results = classifier(llm_server, cache).score_batch(more)
    assert [r.metadata["cached"] for r in results] == [True, False, True, False, True, False, False]
    assert len(llm_server.chat_requests) - sent == 4
    alone = [classifier(llm_server, cache).score_batch([row])[0] for row in more]
    assert [(r.score, r.metadata["choice"]) for r in alone] == [(r.score, r.metadata["choice"]) for r in results]


@pytest.mark.parametrize("value", [{"a": 1}, 3.5, ["x", "y"]])
def test_rows_of_data_values_are_rendered(value, llm_server, tmp_path, monkeypatch):
    llm_server.default = by_prompt
    cache = tmp_path / "c.sqlite"
    rows = [{"output": value, "expected": "reference"}, {"output": "text", "expected": "reference"}]
    first = classifier(llm_server, cache).score_batch(rows)
    classifier(llm_server, cache).score_batch(rows)
    count = renders(monkeypatch)
    again = classifier(llm_server, cache).score_batch(rows)
    assert count[0] == 3  # the placeholders, the data row, the text row's check
    assert figures(again) == figures(classifier(llm_server, cache).score_batch(rows))
    assert [r.score for r in again] == [r.score for r in first]


def test_no_cache_no_derived_keys(llm_server, monkeypatch):
    llm_server.default = by_prompt
    judge = classifier(llm_server, False)
    judge.score_batch(ROWS)
    sent = len(llm_server.chat_requests)
    judge.score_batch(ROWS)
    assert len(llm_server.chat_requests) == 2 * sent


def test_derived_keys_survive_a_new_process_state(llm_server, tmp_path: Path):
    """The fingerprint is made of values a new process computes alike (no ids, no clock)."""
    from scorers.judges.derived import derivation

    llm_server.default = by_prompt
    cache = tmp_path / "c.sqlite"
    one, two = classifier(llm_server, cache), classifier(llm_server, cache)
    first, second = derivation(one, ROWS), derivation(two, ROWS)
    assert first is not None and second is not None and first.keys == second.keys
