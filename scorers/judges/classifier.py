"""LLM judges: :class:`LLMClassifier` asks a model to pick one of a template's choices.

The prompt is rendered from a template (see :mod:`scorers.judges.template`) and sent to
an OpenAI-compatible chat-completions endpoint through the shared engine
(:mod:`scorers.llm`: cache, retries, concurrency limit, usage accounting). The
score is ``choice_scores[choice]``; an unusable reply is re-asked a bounded
number of times and then raises :class:`~scorers.errors.JudgeError` carrying the
raw reply — never a ``KeyError``, never a made-up score.

Response modes (``response_mode``), always recorded in the score's metadata:

``tools`` (default)
    one tool, ``select_choice``, forced through ``tool_choice``; its parameters
    are ``reasons`` (with chain of thought, placed first) and ``choice`` (an enum).
``json``
    a JSON-schema ``response_format`` with the same two properties.
``json_object``
    a ``json_object`` response format, the schema in the prompt (servers without ``json_schema``).
``text``
    the choice alone on the reply's last line, read like OpenAI evals'
    model-graded classify (punctuation stripped, lines scanned from the end).

>>> judge = LLMClassifier("Polite", "Is this reply polite?\\n{{output}}", {"Yes": 1, "No": 0})
>>> [f.name for f in judge.fields], judge.choices
(['output'], ('Yes', 'No'))

Against an OpenAI-compatible server (here :class:`~scorers.testing.LoopbackLLM`, which
answers every request with the scripted reply):

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> with LoopbackLLM(default=Reply.choice("Yes", reasons="It thanks the reader.")) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     polite = LLMClassifier("Polite", "Is this reply polite?\\n{{output}}", {"Yes": 1, "No": 0}, engine=engine)
...     score = polite(output="Thanks a lot!")
...     batch = polite.score_batch([{"output": "Thanks!"}, {"output": "Go away."}])
>>> score.score, score.metadata["choice"], score.metadata["rationale"]
(1.0, 'Yes', 'It thanks the reader.')
>>> [s.score for s in batch], server.chat_requests[0].body["tool_choice"]["function"]["name"]
([1.0, 1.0], 'select_choice')
"""

from __future__ import annotations

import collections
import re
import string
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from ..llm import ChatRequest, ChatResult, InvalidReply
from ..score import Score
from .reply import REASONS_DESCRIPTION, ReplyFormat, answer_text, reasons_text
from .sampled import interval, shares
from .spec import ClassifierSpec
from .template import JudgeTemplate
from .templated import TemplatedJudge

__all__ = ["LLMClassifier", "Verdict", "parse_text_choice", "read_reply", "TOOL_NAME", "AGGREGATES"]

TOOL_NAME = "select_choice"
AGGREGATES = ("mean", "majority")

_PUNCTUATION = str.maketrans("", "", string.punctuation)


@dataclass(frozen=True)
class Verdict:
    """A usable judge reply: the choice and, with chain of thought, the reasons."""

    choice: str
    rationale: str | None = None


# ------------------------------------------------------------------- parsing
def _word_match(line: str, choice: str) -> bool:
    if line == choice:
        return True
    return bool(re.match(re.escape(choice) + r"(\s|$)", line) or re.search(r"(^|\s)" + re.escape(choice) + "$", line))


def parse_text_choice(text: str, choices: Sequence[str]) -> str | None:
    """The choice a free-text reply ends with, or ``None``.

    Lines are scanned from the end; each is stripped of punctuation and matched
    when it starts or ends with a choice as a whole word (case-sensitive), the
    way OpenAI evals' model-graded classify reads ``cot_classify`` answers.

    >>> parse_text_choice("The facts agree, and more is said.\\n**Answer: B**", "ABCDE")
    'B'
    >>> parse_text_choice("Actually, I am not sure.", "ABCDE") is None
    True
    """
    for line in reversed(text.strip().split("\n")):
        cleaned = " ".join(line.translate(_PUNCTUATION).split())
        if not cleaned:
            continue
        for choice in choices:
            if _word_match(cleaned, choice):
                return choice
    return None


def reply_format(choices: Sequence[str], use_cot: bool) -> ReplyFormat:
    """The ``select_choice`` object: ``reasons`` first (with chain of thought), then ``choice`` (an enum)."""
    properties: dict[str, Any] = {}
    if use_cot:
        properties["reasons"] = {"type": "string", "description": REASONS_DESCRIPTION}
    properties["choice"] = {"type": "string", "enum": list(choices), "description": "The selected choice."}
    return ReplyFormat(
        TOOL_NAME,
        "Record the selected choice.",
        {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False},
    )


#: Reads the ``select_choice`` object of a reply (the schema plays no part in reading).
_READER = ReplyFormat(TOOL_NAME, "", {})


def read_reply(result: ChatResult, mode: str, choices: Sequence[str]) -> Verdict:
    """Read a judge reply in ``mode``; raises :class:`~scorers.llm.engine.InvalidReply` (the engine re-asks)."""
    if mode == "text":
        text = answer_text(result.content).strip()
        if not text:
            raise InvalidReply("the reply has no text content")
        found = parse_text_choice(text, choices)
        if found is None:
            raise InvalidReply(f"no line of the reply starts or ends with one of {', '.join(choices)}")
        choice, rationale = found, (text.rsplit("\n", 1)[0].strip() if "\n" in text else None)
    else:
        parsed = _READER.read(result, mode)
        picked = parsed.get("choice")
        if not isinstance(picked, str):
            raise InvalidReply("no 'choice' string in the reply")
        choice, rationale = picked.strip(), reasons_text(parsed.get("reasons"))
    if choice not in choices:
        raise InvalidReply(f"choice {choice!r} is not one of {', '.join(choices)}")
    return Verdict(choice, rationale)


# ------------------------------------------------------------------- the judge
class LLMClassifier(TemplatedJudge):
    """An LLM judge that picks one of ``choice_scores``; the score is the picked choice's value.

    ``prompt_template`` is mustache/Jinja text (``{{output}}``, ``{{expected}}``,
    ``{{input}}`` and any other variable, which becomes a field of the scorer);
    ``messages`` is a list of ``{"role", "content"}`` templates instead.
    ``samples=k`` asks k independent judgments (needs ``temperature > 0``) and
    aggregates them by ``mean`` or ``majority`` (ties go to the lowest score);
    ``agreement`` in the metadata is the share of samples that picked the modal choice,
    ``choice_probabilities`` each choice's share of the samples (every choice, summing to 1; the estimate of the
    choice probabilities where an endpoint gives no log-probabilities) with ``choice_intervals``, the 95 %
    Wilson interval of each share (:mod:`scorers.judges.sampled`), and ``temperature`` the samples'.
    ``reasoning_effort``, ``api`` (``chat`` | ``responses``) and ``extra_args`` (any other
    request parameter, sent verbatim) are request settings; all of them enter the signature.

    >>> judge = LLMClassifier("Grounded", "Is {{output}} supported by {{context}}?", {"Y": 1, "N": 0},
    ...                       use_cot=False, response_mode="json")
    >>> judge.required_fields(), judge.params()["response_mode"]
    (['output', 'context'], 'json')
    """

    description = "LLM judge: the model picks one of the template's choices; the score is that choice's value."
    spec_model = ClassifierSpec
    max_tokens_default = (64, 1024)

    def _spec_fields(self, name: str, template: JudgeTemplate | None, fields: dict[str, Any]) -> dict[str, Any]:
        if fields["choice_scores"] is None and template is not None and template.choice_scores is not None:
            fields["choice_scores"] = dict(template.choice_scores)
        if fields["choice_scores"] is None:
            where = template.where() if template is not None else name
            choices = list(template.choices) if template is not None else []
            raise ConfigError(
                f"{name}: {where} defines no choice_scores; pass choice_scores={{...}}"
                + (f" for the choices {choices}" if choices else ""),
                scorer=name,
            )
        return fields

    def _configure_kind(self, spec: Any) -> None:
        if list(spec.choice_scores) != list(self.template.choices):  # a template given with other choices
            raise ConfigError(
                f"{self.name}: choice_scores must cover exactly the template's choices {list(self.template.choices)}",
                scorer=self.name,
            )
        self.choice_scores: dict[str, float] = dict(spec.choice_scores)
        self.choices: tuple[str, ...] = tuple(self.choice_scores)
        self.samples: int = spec.samples
        self.aggregate: str = spec.aggregate
        if self.samples > 1:
            self.requests_per_row = f"{self.samples} (independent samples)"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "choice_scores": self.choice_scores}

    # --------------------------------------------------------------- requests
    def _instruction(self) -> str:
        options = ", ".join(self.choices)
        if self.response_mode == "tools":
            if self.use_cot:
                return (
                    f"Answer by calling the {TOOL_NAME} function. Put your step-by-step reasoning in "
                    f"`reasons` first, then set `choice` to exactly one of: {options}."
                )
            return f"Answer by calling the {TOOL_NAME} function with `choice` set to exactly one of: {options}."
        if self.response_mode in ("json", "json_object"):
            schema = (
                f" It must match this JSON schema: {self._format().schema_text()}"
                if self.response_mode == "json_object"
                else ""
            )
            if self.use_cot:
                return (
                    'Reply with a JSON object only. Its key "reasons" holds your step-by-step reasoning; '
                    f'its key "choice" comes after it and holds exactly one of: {options}.{schema}'
                )
            return f'Reply with a JSON object only, with the key "choice" holding exactly one of: {options}.{schema}'
        if self.use_cot:
            return (
                f"Reason step by step first. Then write your final answer, exactly one of {options}, alone on "
                "the last line, with nothing else on it."
            )
        return f"Reply with exactly one of {options} and nothing else."

    def _format(self) -> ReplyFormat:
        return reply_format(self.choices, self.use_cot)

    def _requests(self, variables: Mapping[str, Any]) -> list[ChatRequest]:
        """The requests of one row: one, or one per self-consistency sample."""
        if self.samples == 1:
            return [self.build_request(variables)]
        return [self.build_request(variables, sample=i) for i in range(self.samples)]

    # ---------------------------------------------------------------- scoring
    def _validate(self, result: ChatResult) -> Verdict:
        return read_reply(result, self.response_mode, self.choices)

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        verdicts: list[Verdict] = [r.parsed for r in results]
        if len(verdicts) == 1:  # one judgment: its choice is the mode and the mean
            modal, top = verdicts[0].choice, 1
            value = self.choice_scores[modal]
        else:
            counts = collections.Counter(v.choice for v in verdicts)
            top = max(counts.values())
            modal = min(
                (c for c in counts if counts[c] == top), key=lambda c: (self.choice_scores[c], self.choices.index(c))
            )
            if self.aggregate == "majority":
                value = self.choice_scores[modal]
            else:
                value = sum(self.choice_scores[v.choice] for v in verdicts) / len(verdicts)
        metadata: dict[str, Any] = {
            "choice": modal,
            "rationale": verdicts[0].rationale if len(verdicts) == 1 else [v.rationale for v in verdicts],
            **self.call_metadata(results, latency),
        }
        if not self.use_cot:
            metadata.pop("rationale")
        if self.samples > 1:
            metadata.update(
                choices=[v.choice for v in verdicts],
                agreement=top / len(verdicts),
                aggregate=self.aggregate,
                cached_samples=sum(r.cached for r in results),
            )
            picked = [v.choice for v in verdicts]
            metadata.update(
                choice_probabilities=shares(picked, self.choices),
                choice_intervals={c: interval(picked.count(c), len(picked)) for c in self.choices},
                temperature=self.temperature,
            )
        return self.make_score(value, **metadata)
