"""Properties every registered scorer must have: its settings in its signature, and it travels (pickle, cloudpickle)."""

from __future__ import annotations

import inspect
import pickle
import re

import cloudpickle
import pytest

import scorers
from scorers.cli.catalog import describe
from scorers.judges import LLMClassifier, TemplatedJudge
from scorers.judges.base import LLMJudge
from scorers.judges.rag import MultiStepJudge, step_prompt
from scorers.llm import LLMEngine
from scorers.registry import registry
from scorers.score import ScoreColumn
from scorers.testing import LoopbackLLM, Reply, auto_reply

NAMES = scorers.names()
try:  # the module builds every scorer, at collection too: without one's extra it is skipped, naming the extra
    for _name in NAMES:
        scorers.get(_name, **({"pattern": "cat"} if _name == "RegexMatch" else {}))
except scorers.errors.MissingExtraError as exc:
    pytest.skip(str(exc), allow_module_level=True)

#: Constructor parameters that do not change the number, and why.
NOT_IN_SIGNATURE = {
    "name": "the registered name, already the signature's scorer",
    "client": "how requests are sent, not what is asked",
    "engine": "how requests are sent, not what is asked",
    "api_key": "a credential; never recorded",
    "max_reasks": "how often an unusable reply is re-asked; a usable reply is the same",
    "description": "text shown by `show`, not sent to the model",
    "batch_size": "batching does not change the numbers (tested per family)",
    "device": "where the model runs",
    "max_items": "a bound on a list's length: refuses a row, never changes a number",
    "timeout_s": "a bound on a match's CPU time: refuses a row, never changes a number",
    "allow_download": "whether a model may be fetched, not which",
    "prompt_template": "enters as the template's content hash",
    "messages": "enters as the template's content hash",
    "template": "enters as the template's content hash",
    "choice_scores": "enters as the template's content hash",
    "examples": "enters as the template's content hash (every template judge: tests/judges/test_examples.py)",
    "max_chars": "a bound on the input's length: refuses a row, never changes a number",
    "max_calls": "a bound on how many tool calls a row holds: refuses a row, never changes a number",
    "max_steps": "a bound on an edit search's steps: refuses a row, never changes a number",
    "max_conversation_tokens": "a bound on a conversation's length: refuses a row, never changes a number",
}
#: Per scorer: parameters that do not change the number on their own, and why.
NOT_IN_SIGNATURE_FOR = {
    ("BERTScore", "lang"): "picks bert-score's baseline file; the baseline used enters the signature as `baseline`",
    ("TER", "processes"): "how many worker processes score a big batch; the numbers are the same (tests/text)",
}

#: A value other than the default, per constructor parameter (parameters missing here fail the test).
OTHER_VALUE = {
    "ignore_case": True,
    "strip_reasoning": False,
    "strip": True,
    "normalize": "NFC",
    "mode": "all",
    "pattern": "x+",
    "full": True,
    "schema": {"type": "object"},
    "string_scorer": "ExactMatch",
    "number_scorer": "ExactMatch",
    "preserve_strings": True,
    "pairwise_scorer": "ExactMatch",
    "allow_extra_entities": True,
    "tokenize": "intl",
    "smooth_method": "floor",
    "smooth_value": 0.5,
    "lowercase": True,
    "effective_order": False,
    "max_ngram_order": 3,
    "char_order": 4,
    "word_order": 1,
    "beta": 3,
    "whitespace": True,
    "eps_smoothing": True,
    "normalized": True,
    "no_punct": True,
    "asian_support": True,
    "case_sensitive": True,
    "rouge_type": "rouge2",
    "use_stemmer": True,
    "tokenizer": "unicode",
    "alpha": 0.8,
    "gamma": 0.4,
    "preprocess": "none",
    "stemmer": "none",
    "synonyms": "none",
    "use_cot": False,
    "model": "another-model",
    "temperature": 0.7,
    "max_tokens": 77,
    "response_mode": "json",
    "samples": 3,
    "aggregate": "majority",
    "num_layers": 3,
    "idf": True,
    "idf_sents": ["a b c", "a d"],
    "rescale_with_baseline": True,
    "baseline_path": "BASELINE",
    "use_fast_tokenizer": True,
    "model_type": "another/model",
    "provider": "openai",
    "prefix": "query: ",
    "expected_min": 0.5,
    "base_url": "http://127.0.0.1:9/v1",
    "threshold": 3.0,
    "scale": {"min": 0, "max": 10},
    "criteria": [{"name": "tone", "description": "Neutral tone."}],
    "reasoning_effort": "high",
    "api": "responses",
    "extra_args": {"top_p": 0.5},
    "idk_is_unfaithful": True,
    "questions": 3,
    "sample_temperature": 0.5,
    "prompts": None,  # per multi-step judge, in OTHER_VALUE_FOR
    "settings": {"model": "another-model"},  # a judge's request settings as one value
    "arguments": "loose",
    "rules": {"*": {"request_id": "ignore"}},
    "order": "in_order",
    "extra_calls": "ignore",
    "multiset": False,
    "max_repeats": 5,
    "max_cycles": 4,
    "max_period": 3,
    "similarity": 0.5,
    "max_turn_repeats": 2,
    "ngram": 2,
    "tokens": "characters",
    "min_tokens": 1,
    "allow": ["search*"],
    "deny": ["shell_*"],
    "constraints": [{"tool": "read_file", "argument": "path", "prefix": "/srv/data"}],
    "tools": [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}],
    "window": 2,
    "aspect": "concise",
    "normalization": "mean_probability",
    "idf_output_sents": ["a b", "c"],
    "stop_words": ["the"],
    "score_map": "complement",
    "calibration": "CALIBRATION",  # a map fitted for the very judge: resolve() below
}
#: Settings both scorers get, where the parameter only makes sense with them.
CONTEXT = {
    "smooth_value": {"smooth_method": "floor"},
    "aggregate": {"samples": 3, "temperature": 0.7},
    "samples": {"temperature": 0.7},
    "base_url": {"provider": "openai"},
    "model_type": {"num_layers": 3},
    "idf_sents": {"idf": True, "idf_sents": ["x y"]},
    "idf_output_sents": {"idf": True, "idf_sents": ["x y"]},
}
#: Settings that must change together with the parameter.
COUPLED = {
    "idf": {"idf_sents": ["a b c", "a d"]},
    "rescale_with_baseline": {"baseline_path": "BASELINE"},
    "baseline_path": {"rescale_with_baseline": True},
}
#: Per scorer, other values where the shared one is not valid for it.
OTHER_VALUE_FOR = {
    "METEOR": {"tokenizer": "whitespace", "beta": 2.0},
    "ROUGE": {"rouge_type": "rouge1"},
    "ROUGE-1": {"rouge_type": "rouge2"},
    "ROUGE-2": {"rouge_type": "rouge1"},
    "EmbeddingSimilarity": {"model": "another-model"},
    "SelfCheck": {"samples": 2},
    "TrajectoryMatch": {"mode": "unordered"},
}
#: A multi-step judge's ``prompts``: its last step's built-in prompt, reworded.
for _name in NAMES:
    _cls = registry.entry(_name).scorer_class
    if _cls is not None and issubclass(_cls, MultiStepJudge):
        OTHER_VALUE_FOR.setdefault(_name, {})["prompts"] = {
            _cls.steps[-1]: step_prompt(_cls.steps[-1], _cls.prompt_dir) + "\nBe strict."
        }


def _scorer_class(name: str) -> type:
    entry = registry.entry(name)
    return entry.scorer_class or type(entry.create())


def _cases() -> list[tuple[str, str]]:
    return [
        (name, p.name)
        for name in NAMES
        for p in inspect.signature(_scorer_class(name).__init__).parameters.values()
        if p.name != "self"
        and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.name not in NOT_IN_SIGNATURE
        and (name, p.name) not in NOT_IN_SIGNATURE_FOR
    ]


@pytest.mark.parametrize("name,param", _cases())
def test_every_setting_that_changes_the_number_is_in_the_signature(name, param, tmp_path, monkeypatch, fake_api_key):
    assert param in OTHER_VALUE, (
        f"{name}.{param}: add a non-default value to OTHER_VALUE (or a reason to NOT_IN_SIGNATURE)"
    )
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    baseline_file = tmp_path / "baseline.csv"  # bert-score's format: a row of P, R, F per layer
    baseline_file.write_text("LAYER,P,R,F\n" + "".join(f"{layer},0.5,0.5,0.5\n" for layer in range(13)))

    def resolve(value):
        if value == "CALIBRATION":  # a map checked against the judge's signature (scorers.calibration.scores)
            fitted, platt = {"signature": scorers.get(name).signature()}, {"method": "platt", "a": 0, "b": 1}
            return {"format": "scorers-calibration", "format_version": 1, "map": platt, "judge": fitted}
        return str(baseline_file) if value == "BASELINE" else value

    value = resolve(OTHER_VALUE_FOR.get(name, {}).get(param, OTHER_VALUE[param]))
    context = {k: resolve(v) for k, v in CONTEXT.get(param, {}).items()}
    coupled = {k: resolve(v) for k, v in COUPLED.get(param, {}).items()}
    baseline = scorers.get(name, **context)
    changed = scorers.get(name, **{**context, **coupled, param: value})
    before, after = baseline.signature(), changed.signature()
    assert before != after, f"{name}: {param}={value!r} does not change the signature {before}"
    differing = {k for k in after if before.get(k) != after.get(k)}
    assert differing, f"{name}: {param} missing from the signature"


#: Tool calls (OpenAI chat format) and a conversation that makes them, for the tool-call scorers' rows.
TOOL_CALLS = [
    {"id": f"c{i}", "type": "function", "function": {"name": "search", "arguments": '{"q": "the cat sat"}'}}
    for i in range(2)
]
#: A ChatCompletion with its usage (what TokenBudget reads).
CHAT_COMPLETION = {
    "choices": [{"message": {"role": "assistant", "content": "the cat sat on the mat"}}],
    "usage": {"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60},
}
#: The image a field a judge's template declares an attachment holds (scorers.attachments).
IMAGE = scorers.Attachment.from_base64(scorers.attachments.TINY_PNG)
CONVERSATION = [
    {"role": "user", "content": "the cat sat on the mat"},
    {"role": "assistant", "content": None, "tool_calls": TOOL_CALLS},
    *({"role": "tool", "tool_call_id": call["id"], "content": "the cat sat"} for call in TOOL_CALLS),
]


def _row(name: str) -> dict:
    scorer = scorers.get(name)
    row = {field: "the cat sat on the mat" for field in scorer.required_fields()}
    # a field a judge's template declares a conversation holds one (text is not a conversation), an attachment an image
    template = getattr(scorer, "template", None)
    row.update({field: CONVERSATION for field, _ in getattr(template, "conversations", ())})
    row.update({field: IMAGE for field in getattr(template, "attachments", ())})
    special = {
        "NumericDiff": {"output": 3, "expected": 4},
        "ListContains": {"output": ["a", "b"], "expected": ["a"]},
        "ValidJSON": {"output": '{"a": 1}'},
        "JSONDiff": {"output": {"a": 1}, "expected": {"a": 2}},
        "RegexMatch": {},
        "Translation": {"language": "French"},
        "ToolCallMatch": {"output": TOOL_CALLS, "expected": TOOL_CALLS[:1]},
        "TrajectoryMatch": {"output": CONVERSATION, "expected": CONVERSATION},
        "ToolCallValid": {"output": TOOL_CALLS, "tools": OTHER_VALUE["tools"]},
        "ToolCallF1": {"output": TOOL_CALLS, "expected": ["search"]},
        "ToolLoop": {"output": CONVERSATION},
        "ToolPermission": {"output": TOOL_CALLS},
        "StepBudget": {"output": CONVERSATION, "budget": {"steps": 3}},
        "TokenBudget": {"output": CHAT_COMPLETION, "budget": {"total_tokens": 100}},
        "CodeExecution": {"output": "x = 1", "tests": ["assert x == 1"]},
        **dict.fromkeys(
            ("ArgumentCorrectness", "TurnRelevancy", "KnowledgeRetention", "ConversationCompleteness"),
            {"conversation": [*CONVERSATION, {"role": "assistant", "content": "the cat sat on the mat"}]},
        ),
    }
    row.update(special.get(name, {}))
    return row


def _first_choice(request) -> Reply:
    """Any judge's first choice, read from the enum of the request's select_choice tool. A multi-step
    judge's step gets an empty extraction, or the first verdict for each numbered item; a sample gets text."""
    tools = request.body.get("tools")
    if not tools:
        return Reply.text("the cat sat on the mat")
    function = tools[0]["function"]
    properties = function["parameters"]["properties"]
    if "choice" in properties:
        return Reply.choice(properties["choice"]["enum"][0], reasons="the first choice")
    if any(p.get("type") == "integer" for p in properties.values()):  # a rubric's or rating's grades: the lowest
        return Reply.tool_call(
            {key: p["enum"][0] if "enum" in p else "reasons" for key, p in properties.items()}, name=function["name"]
        )
    items = len(re.findall(r"(?m)^\d+\. ", request.last_user_message))
    verdicts = properties.get("verdicts")
    reply = (
        {"verdicts": [{"verdict": verdicts["items"]["properties"]["verdict"]["enum"][0]}] * items}
        if verdicts
        else {key: [] for key in properties}
    )
    return Reply.tool_call(reply, name=function["name"])


@pytest.fixture(scope="module")
def judge_server():
    with LoopbackLLM(default=_first_choice) as server:
        yield server


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("name", NAMES)
def test_every_scorer_travels_before_and_after_first_use(name, dumps, judge_server, monkeypatch, fake_api_key):
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    kwargs = {"pattern": "cat"} if name == "RegexMatch" else {}
    scorer = scorers.get(name, **kwargs)
    fresh = pickle.loads(dumps(scorer))  # before first use
    row = _row(name)
    first = scorer(**row)
    used = pickle.loads(dumps(scorer))  # after first use: models, caches, clients are rebuilt
    for copy in (fresh, used):
        again = copy(**row)
        assert (again.name, again.score) == (first.name, first.score)
        assert again.metadata["signature"] == first.metadata["signature"]


@pytest.mark.parametrize("name", NAMES)
def test_every_scorer_scores_a_lone_surrogate_or_refuses_it_with_a_scorer_error(
    name, judge_server, monkeypatch, fake_api_key
):
    """JSON can carry "\\ud800": a text with a lone surrogate gets a score, or that row's ScorerError, never a crash."""
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    scorer = scorers.get(name, **({"pattern": "cat"} if name == "RegexMatch" else {}))
    normal = _row(name)
    for field in [f for f, value in normal.items() if isinstance(value, str)]:
        row = {**normal, field: normal[field].replace("cat", "c\ud800t \udfff")}
        for outcome in (lambda: scorer(**row), lambda: scorer.score_batch([row])[0]):
            try:
                result = outcome()
            except scorers.ScorerError:
                continue
            assert isinstance(result, (scorers.Score, scorers.ScorerError))


JUDGES = [name for name in NAMES if isinstance(scorers.get(name), LLMJudge)]
#: What a judge's requests per row comes to on its contract row (one context chunk, one item per extraction),
#: where ``show``'s formula does not start with the number.
REQUESTS_ON_THE_CONTRACT_ROW = {"ContextRelevancy": 2}


def _one_of_each(request) -> Reply:
    """Every judge's main path: the first choice or lowest grade; an extraction step gets one item (the
    lowest number a numbered list offers, else text); a verdict step one verdict per numbered item."""
    tools = request.body.get("tools")
    if not tools:
        return Reply.text("the cat sat on the mat")
    function = tools[0]["function"]
    properties = function["parameters"]["properties"]
    if "choice" in properties or any(p.get("type") == "integer" for p in properties.values()):
        return _first_choice(request)
    verdicts = properties.get("verdicts")
    if verdicts:
        numbered = [part for part in request.last_user_message.split("\n\n") if re.search(r"(?m)^1\. ", part)]
        items = len(re.findall(r"(?m)^\d+\. ", numbered[-1]))  # the last numbered list: the items to judge
        return Reply.tool_call(
            {"verdicts": [{"verdict": verdicts["items"]["properties"]["verdict"]["enum"][0]}] * items},
            name=function["name"],
        )
    return Reply.tool_call({key: [_item(p.get("items", {}))] for key, p in properties.items()}, name=function["name"])


def _item(schema: dict) -> object:
    if schema.get("type") == "object":
        return {key: _item(p) for key, p in schema.get("properties", {}).items()}
    if "enum" in schema:
        return schema["enum"][0]
    return 1 if schema.get("type") == "integer" else "the cat sat on the mat"


@pytest.mark.parametrize("name", JUDGES)
def test_every_judge_makes_the_requests_per_row_that_show_states(name, fake_api_key):
    """`show` states each judge's requests per row; a row on the judge's main path makes exactly that many."""
    with LoopbackLLM(default=_one_of_each) as server:
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=False, max_reasks=0)
        judge = scorers.get(name, engine=engine)
        stated = judge.describe()["requests_per_row"]
        assert stated == judge.requests_per_row and f"requests per row: {stated}" in describe(judge)
        expected = REQUESTS_ON_THE_CONTRACT_ROW.get(name) or int(re.match(r"\d+", stated).group())
        if name == "GEval" or stated.startswith("1, and 1 more once"):
            expected += 1  # the evaluation steps, written on the first row
        score = judge(**_row(name))
        assert score.score is not None, score.metadata
        made = len(server.chat_requests) + len(server.completion_requests)  # GPTScore asks /v1/completions
        assert made == expected, (stated, [r.last_user_message[:80] for r in server.chat_requests])


@pytest.mark.parametrize("name", [name for name in JUDGES if isinstance(scorers.get(name), LLMClassifier)])
def test_every_sampled_classifier_states_its_choice_probabilities(name, fake_api_key):
    """With samples=k a classifier makes k requests and states each choice's share of them (every choice, in order,
    summing to 1) with its interval: the choice probabilities where a provider gives no log-probabilities."""
    with LoopbackLLM(default=auto_reply) as server:  # auto_reply draws each sample's choice by its seed
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=False, max_reasks=0)
        judge = scorers.get(name, engine=engine, samples=4, temperature=0.7)
        meta = judge(**_row(name)).metadata
        assert len(server.chat_requests) == 4 and judge.requests_per_row == "4 (independent samples)"
    shares = meta["choice_probabilities"]
    assert shares == {choice: meta["choices"].count(choice) / 4 for choice in judge.choices}
    assert list(shares) == list(meta["choice_intervals"]) == list(judge.choices) and sum(shares.values()) == 1
    assert meta["temperature"] == 0.7


SYNC = [
    name for name in NAMES if not scorers.get(name, **({"pattern": "cat"} if name == "RegexMatch" else {})).is_async
]
#: Values of other types and shapes a field may be sent, each valid for some scorers and refused by others.
ODD_VALUES = [None, 7, 2.5, True, ["the", "cat"], {"a": 1}, "", "c\ud800t", "the cat " * 40]


def _outcome(scorer, row: dict):
    try:
        return scorer(**row)
    except scorers.ScorerError as exc:
        return exc


def _same(batch, single, *, float32: bool) -> bool:
    """Equal outcomes; a model's fp32 numbers may differ in the last digits with the batch's padding."""
    if isinstance(single, scorers.ScorerError):
        return type(batch) is type(single) and str(batch) == str(single)
    if float32 and isinstance(batch, scorers.Score):
        return _close(batch.to_dict(), single.to_dict())
    return isinstance(batch, scorers.Score) and batch == single


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) < 1e-6
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def _random_rows(name: str, rng, n: int, *, clean: bool) -> list[dict]:
    """Rows like the contract row, texts drawn at random; unless ``clean``, some with a field missing, of an odd
    type or value, or a key no scorer reads."""
    words = "the cat sat on a mat dog ran far away quickly big small 12 3.5 ! ?".split()
    base = _row(name)
    rows = []
    for _ in range(n):
        row = {
            key: " ".join(rng.choices(words, k=rng.randint(0, 12))) if isinstance(value, str) else value
            for key, value in base.items()
        }
        if not clean and rng.random() < 0.5:
            key = rng.choice([*row, "outptu"])
            change = rng.random()
            if change < 0.2:
                row.pop(key, None)
            else:
                row[key] = rng.choice(ODD_VALUES)
        rows.append(row)
    return rows


#: Scorers whose rows each start processes: their random batches (some 200 rows) are in the slow tier.
SLOW_BATCHES = {"CodeExecution": "each test of a row is a sandboxed process (tests/code)"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_BATCHES else n for n in SYNC])
def test_every_scorer_batch_equals_its_rows_one_by_one(name):
    """The batch primitive's fast paths (fields bound per column, a scorer's columnar hook) give each row what
    scoring it alone gives: the same Score, or the same error, on random clean and dirty batches."""
    import random

    rng = random.Random(sum(map(ord, name)))
    kwargs = {"pattern": "cat"} if name == "RegexMatch" else {}
    if "max_chars" in scorers.get(name, **kwargs).constructor_params():
        kwargs["max_chars"] = 120  # the long odd value is then refused
    scorer = scorers.get(name, **kwargs)
    texts = [key for key, value in _row(name).items() if isinstance(value, str)]
    variants = [scorer] + ([scorer.partial(**{texts[-1]: "the cat sat"})] if texts else [])
    for variant in variants:
        for clean in (True, True, False, False):
            rows = _random_rows(name, rng, 12, clean=clean)
            if variant is not scorer:
                for row in rows:
                    if rng.random() < 0.5:
                        row.pop(texts[-1], None)  # the bound value then fills it
            batch = variant.score_batch(rows)
            single = [_outcome(variant, row) for row in rows]
            mismatches = [
                (row, b, s)
                for row, b, s in zip(rows, batch, single)
                if not _same(b, s, float32=scorer.kind == "embedding")
            ]
            assert not mismatches, mismatches[:3]
            if isinstance(batch, ScoreColumn):
                _check_columns(variant, batch, single)


#: The scorers whose kernel takes columns: a clean batch is a ScoreColumn (no Score made until one is read).
COLUMNAR = ["ExactMatch", "Levenshtein", "NumericDiff", "ROUGE", "ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-Lsum"]


@pytest.mark.parametrize("name", COLUMNAR)
def test_the_columnar_scorers_give_a_column(name):
    import random

    rows = _random_rows(name, random.Random(1), 40, clean=True)
    if name == "NumericDiff":
        rows = [{"output": i / 7, "expected": i % 5} for i in range(40)]
    batch = scorers.get(name).score_batch(rows)
    assert isinstance(batch, ScoreColumn) and not batch.errors
    _check_columns(scorers.get(name), batch, [_outcome(scorers.get(name), row) for row in rows])


def _check_columns(scorer, column: ScoreColumn, single: list) -> None:
    """A ScoreColumn's columns (its values, errors and metadata, read without a Score) say what its rows' Scores
    say, and the scorer's summary of the column equals its summary of those Scores."""
    failed = [i for i, outcome in enumerate(single) if isinstance(outcome, scorers.ScorerError)]
    assert sorted(column.errors) == failed
    assert column.scores() == [None if i in failed else s.score for i, s in enumerate(single)]
    assert [column.metadata(i) for i in range(len(single)) if i not in failed] == [
        s.metadata for i, s in enumerate(single) if i not in failed
    ]
    by_column, by_score = scorer.aggregator(), scorer.aggregator()
    by_column.add_column(column)
    for outcome in single:
        if isinstance(outcome, scorers.Score):
            by_score.add(outcome)
    assert by_column.result() == by_score.result()


#: Every template judge as a jury of two jurors (``-p NAME.jury=...``): the contract holds for a jury too.
TEMPLATED = [name for name in JUDGES if isinstance(scorers.get(name), TemplatedJudge)]


def _jury(name: str, **changes) -> dict:
    votes = scorers.get(name).judge_kind in ("classifier", "pairwise")
    rule = {"aggregate": "majority", "tie": "tie"} if votes else {"aggregate": "median"}
    return {"jurors": [{"model": "juror-a"}, {"model": "juror-b", "temperature": 0.5}], **rule, **changes}


@pytest.mark.parametrize("name", TEMPLATED)
def test_every_template_judge_as_a_jury_keeps_the_contract(name, fake_api_key):
    """A jury's requests per row are its jurors' (counted over HTTP), it travels, and its settings are signed."""
    with LoopbackLLM(default=_one_of_each) as server:
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=False, max_reasks=0)
        jury = scorers.get(name, engine=engine, jury=_jury(name))
        stated = jury.describe()["requests_per_row"]
        assert stated.startswith("2 (juror-a: 1, juror-b: 1)") and f"requests per row: {stated}" in describe(jury)
        score = jury(**_row(name))
        assert score.score is not None and score.metadata["jurors_failed"] == [], score.metadata
        assert len(server.chat_requests) == 2
        assert {r.body["model"] for r in server.chat_requests} == {"juror-a", "juror-b"}
        for dumps in (pickle.dumps, cloudpickle.dumps):
            again = pickle.loads(dumps(jury))(**_row(name))
            assert (again.score, again.metadata["signature"]) == (score.score, score.metadata["signature"])
    signed = jury.signature()
    for change in ({"min_jurors": 1}, {"jurors": [{"model": "juror-a"}, {"model": "juror-c"}]}):
        assert scorers.get(name, jury=_jury(name, **change)).signature() != signed, change
