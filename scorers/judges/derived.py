"""Cache hits found before any prompt is rendered: a template judge's derived keys.

A row's prompts are a function of the judge (its template, settings, endpoint) and of the row's template
values. So a batch names each row's replies by *derived* keys (:func:`~scorers.llm.cache.derived_keys`: the
judge's fingerprint, the row's values, the request's position) and reads them in one query; each is linked to
the key of the reply stored for the rendered prompt (:meth:`~scorers.llm.cache.LLMCache.link`), written when a
row was last judged the long way (rendered, keyed, looked up or sent). The fingerprint holds the judge's class
and signature (its template's hash and every setting), the scorers version and the cache keys of the prompts
rendered from placeholder values (model, endpoint, instruction, tools and every setting sent): change any and the
derived keys are new, a clean miss. The check: a batch's first row answered this way is rendered all the same,
and its prompts' keys must be those its derived keys link to; where they differ, no derived hit of the batch is
used. Only rows whose template values are all text are derived (a template with attachments or conversations,
or an engine without a cache, is always rendered).

>>> from scorers.testing import LoopbackLLM, Reply
>>> from scorers.judges import LLMClassifier
>>> from scorers.llm import LLMEngine
>>> import os, tempfile
>>> with LoopbackLLM(default=Reply.choice("Y")) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="k", cache=os.path.join(tempfile.mkdtemp(), "c"))
...     judge = LLMClassifier("Kind", "Is {{output}} kind?", {"Y": 1, "N": 0}, engine=engine, use_cot=False)
...     first = judge.score_batch([{"output": "Thanks!"}])
...     again = judge.score_batch([{"output": "Thanks!"}])
>>> len(server.chat_requests), again[0].score, again[0].metadata["cached"]
(1, 1.0, True)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from .._version import __version__
from ..errors import ScorerError
from ..llm import ChatRequest, ChatResult, LLMEngine
from ..llm.cache import derived_keys
from .template import JudgeTemplate

__all__ = ["Derived", "derivation"]

log = logging.getLogger("scorers.llm")


class Judge(Protocol):
    """What derived keys read of a judge (an :class:`~scorers.judges.base.LLMJudge`; a template kind for
    :func:`derivation`)."""

    @property
    def name(self) -> str: ...

    @property
    def engine(self) -> Any: ...

    def _validate(self, result: ChatResult) -> Any: ...

    def _row_requests(self, fields: Mapping[str, Any]) -> list[ChatRequest]: ...


class TemplateJudge(Judge, Protocol):
    """A template kind (:class:`~scorers.judges.templated.TemplatedJudge`), as :func:`derivation` reads it."""

    @property
    def template(self) -> JudgeTemplate: ...

    def variables(self) -> tuple[str, ...]: ...

    def signature(self) -> dict[str, Any]: ...

    def _requests(self, variables: Mapping[str, Any]) -> list[ChatRequest]: ...


@dataclass
class Derived:
    """A batch's derived keys: ``keys[i]``, row ``i``'s (one per request; ``None``: a row that is rendered), and
    ``sent``, the settings each request position sends (``ChatResult.sent``)."""

    engine: LLMEngine
    keys: list[list[str] | None]
    sent: list[dict[str, Any]]

    def answered(self, judge: Judge, rows: Sequence[Mapping[str, Any]]) -> dict[int, list[ChatResult]]:
        """The rows whose every reply a derived key found (``{row index: replies}``), in one query, once the check
        holds: the first such row's rendered prompts have the reply keys its derived keys link to."""
        flat = [key for keys in self.keys if keys is not None for key in keys]
        if not flat:
            return {}
        positions = len(self.sent)
        hits, targets = self.engine.lookup_linked(flat, self.sent * (len(flat) // positions), validate=judge._validate)
        answered: dict[int, list[ChatResult]] = {}
        start = 0
        for index, keys in enumerate(self.keys):
            if keys is None:
                continue
            found = hits[start : start + positions]
            if None not in found:
                if not answered and not self._checked(judge, rows[index], targets[start : start + positions]):
                    return {}
                answered[index] = found  # type: ignore[assignment]
            start += positions
        return answered

    def _checked(self, judge: Judge, row: Mapping[str, Any], targets: list[str | None]) -> bool:
        """Whether ``row``'s rendered prompts have the keys ``targets`` (those of the replies its derived keys found)."""
        try:
            keyed = self.engine.request_keys(judge._row_requests(row))
        except ScorerError:
            keyed = None
        if keyed is None or [key for key, _ in keyed] != targets:
            log.debug("%s: derived cache keys disagree with the rendered prompt's; rendering every row", judge.name)
            return False
        return True

    def link(self, prepared: Sequence[tuple[int, list[ChatRequest]]], keys: list[str], results: Sequence[Any]) -> None:
        """Link the derived keys of the rows judged the long way (``prepared``: each row's index and requests, whose
        cache keys are ``keys`` in order) that got a score to their replies' keys, for the next run."""
        if len(keys) != sum(len(requests) for _, requests in prepared):
            return
        from ..score import Score

        pairs: list[tuple[str, str]] = []
        start = 0
        for index, requests in prepared:
            derived = self.keys[index]
            if derived is not None and len(derived) == len(requests) and isinstance(results[index], Score):
                pairs.extend(zip(derived, keys[start : start + len(requests)]))
            start += len(requests)
        self.engine.link(pairs)


def derivation(judge: TemplateJudge, rows: Sequence[Mapping[str, Any]]) -> Derived | None:
    """The derived keys of a batch of ``judge``'s (bound) ``rows``, or ``None`` where its prompts are rendered:
    an engine that is not an :class:`~scorers.llm.LLMEngine` with a cache, a template with attachments or
    conversations, a batch run."""
    engine, template = judge.engine, judge.template
    if type(engine) is not LLMEngine or template.attachments or template.budgets():
        return None
    names = judge.variables()
    try:  # the prompts of placeholder values: what every row's prompts share
        keyed = engine.request_keys(judge._requests({name: f"\x00{name}\x00" for name in names}))
    except ScorerError:
        return None
    if not keyed:
        return None
    fingerprint = {
        "judge": f"{type(judge).__module__}.{type(judge).__qualname__}",
        "signature": judge.signature(),
        "version": __version__,
        "prompts": [key for key, _ in keyed],
    }
    values: list[list[Any]] = [[row.get(name) for name in names] for row in rows]
    text = [index for index, row in enumerate(values) if all(type(value) is str for value in row)]
    flat = derived_keys(fingerprint, [values[index] for index in text], len(keyed))
    keys: list[list[str] | None] = [None] * len(rows)
    for position, index in enumerate(text):
        keys[index] = flat[position * len(keyed) : (position + 1) * len(keyed)]
    return Derived(engine, keys, [sent for _, sent in keyed])
