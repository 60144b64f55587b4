"""Token usage totals and an optional cost estimate from user-supplied prices.

Prices are USD per one million tokens, ``(input, output)`` or ``(input, output, cached input)``
per model. Replies served from the cache are counted apart and cost nothing. The figures, per
model and in total:

``requests``
    calls the endpoint answered with a usable reply;
``failed_calls``
    calls that ended without one (the judge's row failed), and calls of a failed row;
``cached``
    calls the cache answered;
``attempts``
    HTTP requests sent: every retry and re-ask, whether it got an answer or not (one that
    could not connect is counted too, so it can exceed what the server saw);
``prompt_tokens``, ``completion_tokens``
    every token the endpoint reported, failed attempts included: what is billed;
``failed_prompt_tokens``, ``failed_completion_tokens``
    the part of those spent on replies that were not used (unreadable, refused and asked
    again, or of a failed call). The cost estimate covers them, and ``failed_cost_usd``
    says what they cost;
``cached_prompt_tokens``, ``reasoning_tokens``
    of ``prompt_tokens``, those the provider read from its prompt cache (billed at the cached-input
    price when one is given, else at the input price); of ``completion_tokens``, the model's
    thinking. These two appear in a summary only when they are not zero, so a run on an endpoint
    that reports neither writes what it wrote before.

>>> usage = Usage()
>>> usage.add_tokens("gpt-4o-mini", 1_000_000, 200_000)
>>> usage.add_tokens("gpt-4o-mini", 500, 20, cached=True)
>>> round(usage.cost({"gpt-4o-mini": (0.15, 0.60)}), 4)
0.27
>>> usage.to_dict()["requests"], usage.to_dict()["cached"]
(1, 1)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Iterable, Mapping

from .config import configured_prices

__all__ = [
    "Usage",
    "ModelUsage",
    "USAGE_FIELDS",
    "call_usage",
    "failed_call_usage",
    "summed_usage",
    "as_failed",
    "describe_usage",
]

#: Model name → ``(input, output)`` or ``(input, output, cached input)`` USD per 1M tokens.
Prices = Mapping[str, "tuple[float, ...]"]


@dataclass
class ModelUsage:
    """Totals for one model (see the module docstring for each figure)."""

    requests: int = 0
    failed_calls: int = 0
    cached: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed_prompt_tokens: int = 0
    failed_completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, figures: Mapping[str, Any]) -> None:
        """Add the figures of a call, a row (``Score.metadata["usage"]``, a failed row's error) or a model."""
        for name in (*USAGE_FIELDS, *SHOWN_IF_NOT_ZERO):
            setattr(self, name, getattr(self, name) + int(figures.get(name) or 0))

    def cost(self, price_in: float, price_out: float, price_cached: float | None = None) -> tuple[float, float]:
        """USD of every token billed, and of the failed part. Cached prompt tokens cost ``price_cached`` (default:
        ``price_in``); the failed prompt tokens are priced at the model's mean input price then.

        >>> ModelUsage(prompt_tokens=1000, completion_tokens=10, cached_prompt_tokens=800).cost(1.0, 4.0, 0.1)
        (0.00032, 0.0)
        """
        if not self.cached_prompt_tokens or price_cached is None or not self.prompt_tokens:
            return (
                (self.prompt_tokens * price_in + self.completion_tokens * price_out) / 1_000_000,
                (self.failed_prompt_tokens * price_in + self.failed_completion_tokens * price_out) / 1_000_000,
            )
        cached = min(self.cached_prompt_tokens, self.prompt_tokens)
        prompt_cost = (self.prompt_tokens - cached) * price_in + cached * price_cached
        return (
            (prompt_cost + self.completion_tokens * price_out) / 1_000_000,
            (prompt_cost * self.failed_prompt_tokens / self.prompt_tokens + self.failed_completion_tokens * price_out)
            / 1_000_000,
        )

    def figures(self) -> dict[str, int]:
        """The figures as a summary shows them: those of :data:`SHOWN_IF_NOT_ZERO` only when not zero."""
        return {name: value for name, value in asdict(self).items() if value or name not in SHOWN_IF_NOT_ZERO}


#: The figures a summary shows only when they are not zero (endpoints that report none leave summaries as they were).
SHOWN_IF_NOT_ZERO = ("cached_prompt_tokens", "reasoning_tokens")
#: The figures of :class:`ModelUsage` every summary shows, in the order it shows them (then those of
#: :data:`SHOWN_IF_NOT_ZERO` that are not zero).
USAGE_FIELDS = tuple(f.name for f in fields(ModelUsage) if f.name not in SHOWN_IF_NOT_ZERO)


def call_usage(result: Any) -> dict[str, int]:
    """The figures of one answered call (a :class:`~scorers.llm.engine.ChatResult`); a cached one costs nothing."""
    if result.cached:
        return {"cached": 1}
    return _with_details(
        {
            "requests": 1,
            "attempts": result.attempts,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "failed_prompt_tokens": result.failed_prompt_tokens,
            "failed_completion_tokens": result.failed_completion_tokens,
        },
        getattr(result, "cached_prompt_tokens", 0),
        getattr(result, "reasoning_tokens", 0),
    )


def failed_call_usage(
    attempts: int,
    prompt_tokens: int,
    completion_tokens: int,
    cached_prompt_tokens: int = 0,
    reasoning_tokens: int = 0,
) -> dict[str, int]:
    """The figures of a call that got no usable reply: its attempts, and its tokens, all failed."""
    return _with_details(
        {
            "failed_calls": 1,
            "attempts": attempts,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "failed_prompt_tokens": prompt_tokens,
            "failed_completion_tokens": completion_tokens,
        },
        cached_prompt_tokens,
        reasoning_tokens,
    )


def _with_details(figures: dict[str, int], cached_prompt_tokens: int, reasoning_tokens: int) -> dict[str, int]:
    """``figures`` with the cached prompt and reasoning tokens, each only when not zero."""
    if cached_prompt_tokens:
        figures["cached_prompt_tokens"] = int(cached_prompt_tokens)
    if reasoning_tokens:
        figures["reasoning_tokens"] = int(reasoning_tokens)
    return figures


def summed_usage(figures: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Every figure summed, plus ``total_tokens`` (what a Score's ``metadata["usage"]`` holds); those of
    :data:`SHOWN_IF_NOT_ZERO` only when not zero."""
    total = dict.fromkeys((*USAGE_FIELDS, *SHOWN_IF_NOT_ZERO), 0)  # ModelUsage's figures, as ModelUsage.add sums
    for entry in figures:
        for name, value in entry.items():
            if name in total:
                total[name] += int(value or 0)
    for name in SHOWN_IF_NOT_ZERO:
        if not total[name]:
            del total[name]
    total["total_tokens"] = total["prompt_tokens"] + total["completion_tokens"]
    return total


def as_failed(figures: Mapping[str, Any]) -> dict[str, int]:
    """The figures of a row's calls once the row failed: none of their replies was used, so the answered calls
    count as failed calls and all their tokens as failed tokens (cached calls stay cached)."""
    failed = summed_usage([figures])
    failed["failed_calls"] += failed.pop("requests")
    failed.update(
        requests=0, failed_prompt_tokens=failed["prompt_tokens"], failed_completion_tokens=failed["completion_tokens"]
    )
    return failed


class Usage:
    """Accumulates token usage per model across judge calls."""

    def __init__(self) -> None:
        self.by_model: dict[str, ModelUsage] = {}

    def add_tokens(self, model: str, prompt_tokens: int, completion_tokens: int, *, cached: bool = False) -> None:
        """Count one answered call of one attempt; cached calls add no billed tokens."""
        figures = (
            {"cached": 1}
            if cached
            else {"requests": 1, "attempts": 1, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
        )
        self.add_figures(model, figures)

    def add(self, result: Any) -> None:
        """Count a :class:`~scorers.llm.engine.ChatResult` (or anything with the same fields)."""
        self.add_figures(result.model, call_usage(result))

    def add_figures(self, model: str, figures: Mapping[str, Any]) -> None:
        """Count figures of ``model``: a row's ``Score.metadata["usage"]``, a failed row's error ``usage``, ..."""
        self.by_model.setdefault(model, ModelUsage()).add(figures)

    def merge(self, other: "Usage") -> None:
        for model, theirs in other.by_model.items():
            self.add_figures(model, asdict(theirs))

    @property
    def cached_prompt_tokens(self) -> int:
        return sum(m.cached_prompt_tokens for m in self.by_model.values())

    @property
    def reasoning_tokens(self) -> int:
        return sum(m.reasoning_tokens for m in self.by_model.values())

    @property
    def prompt_tokens(self) -> int:
        return sum(m.prompt_tokens for m in self.by_model.values())

    @property
    def completion_tokens(self) -> int:
        return sum(m.completion_tokens for m in self.by_model.values())

    def _billed(self) -> dict[str, ModelUsage]:
        return {
            model: entry for model, entry in self.by_model.items() if entry.prompt_tokens or entry.completion_tokens
        }

    def costs(self, prices: Prices | None = None) -> tuple[float, float] | None:
        """Estimated USD of every billed token and of the failed part, or ``None`` when a model with billed
        tokens has no price. ``prices`` defaults to those given to ``configure(prices=...)``."""
        table = configured_prices() if prices is None else prices
        total = failed = 0.0
        for model, entry in self._billed().items():
            if model not in table:
                return None
            cost, failed_cost = entry.cost(*table[model][:3])
            total, failed = total + cost, failed + failed_cost
        return total, failed

    def cost(self, prices: Prices | None = None) -> float | None:
        """Estimated USD of every billed token, failed attempts included (``None``: a model has no price)."""
        costs = self.costs(prices)
        return None if costs is None else costs[0]

    def to_dict(self, prices: Prices | None = None) -> dict[str, Any]:
        """Totals, per-model figures, ``cost_usd`` and ``failed_cost_usd`` (``None`` when unknown) for a run summary."""
        table = configured_prices() if prices is None else prices
        costs = self.costs(table) if table else None
        return {
            **summed_usage(asdict(entry) for entry in self.by_model.values()),
            "cost_usd": None if costs is None else costs[0],
            "failed_cost_usd": None if costs is None else costs[1],
            "unpriced_models": sorted(m for m in self._billed() if m not in table),
            "by_model": {model: entry.figures() for model, entry in sorted(self.by_model.items())},
        }


def describe_usage(figures: Mapping[str, Any]) -> str:
    """One line for people of :meth:`Usage.to_dict`'s figures, the failed attempts' share apart.

    >>> usage = Usage()
    >>> usage.add_figures("m", {"requests": 9, "failed_calls": 1, "attempts": 14, "prompt_tokens": 1200,
    ...                         "completion_tokens": 90, "failed_prompt_tokens": 300, "failed_completion_tokens": 20})
    >>> print(describe_usage(usage.to_dict({"m": (1.0, 4.0)})))
    9 calls answered, 1 failed, 0 cached; 14 HTTP attempts; tokens in/out 1,200/90, of which failed attempts 300/20; cost $0.0016 (failed attempts $0.0004)
    >>> usage.add_figures("m", {"prompt_tokens": 800, "cached_prompt_tokens": 800, "reasoning_tokens": 40})
    >>> print(describe_usage(usage.to_dict({"m": (1.0, 4.0, 0.1)})))  # doctest: +ELLIPSIS
    9 calls ...; tokens in/out 2,000/90, ...; cached input tokens 800, reasoning tokens 40; cost $0.0016 ...
    """
    line = (
        f"{figures['requests']:,} calls answered, {figures['failed_calls']:,} failed, {figures['cached']:,} cached; "
        f"{figures['attempts']:,} HTTP attempts; tokens in/out {figures['prompt_tokens']:,}/"
        f"{figures['completion_tokens']:,}, of which failed attempts {figures['failed_prompt_tokens']:,}/"
        f"{figures['failed_completion_tokens']:,}"
    )
    details = [
        f"{label} {figures[name]:,}"
        for name, label in (("cached_prompt_tokens", "cached input tokens"), ("reasoning_tokens", "reasoning tokens"))
        if figures.get(name)
    ]
    if details:  # shown only when the endpoint reports them (see SHOWN_IF_NOT_ZERO)
        line = f"{line}; {', '.join(details)}"
    if figures.get("cost_usd") is None:
        unpriced = ", ".join(figures.get("unpriced_models") or ())
        return f"{line}; no cost estimate{f' (no price for {unpriced})' if unpriced else ''}: --price MODEL=IN,OUT"
    return f"{line}; cost ${figures['cost_usd']:.4f} (failed attempts ${figures['failed_cost_usd']:.4f})"
