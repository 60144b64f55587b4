"""Token usage totals and an optional cost estimate from user-supplied prices.

Prices are USD per one million tokens, ``(input, output)`` per model. Replies
served from the cache are counted apart and cost nothing.

>>> usage = Usage()
>>> usage.add_tokens("gpt-4o-mini", 1_000_000, 200_000)
>>> usage.add_tokens("gpt-4o-mini", 500, 20, cached=True)
>>> round(usage.cost({"gpt-4o-mini": (0.15, 0.60)}), 4)
0.27
>>> usage.to_dict()["requests"], usage.to_dict()["cached"]
(1, 1)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .config import configured_prices

__all__ = ["Usage", "ModelUsage"]

Prices = Mapping[str, "tuple[float, float]"]


@dataclass
class ModelUsage:
    """Totals for one model: calls answered by the endpoint (``requests``) or the cache (``cached``)."""

    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Usage:
    """Accumulates token usage per model across judge calls."""

    def __init__(self) -> None:
        self.by_model: dict[str, ModelUsage] = {}

    def add_tokens(self, model: str, prompt_tokens: int, completion_tokens: int, *, cached: bool = False) -> None:
        """Count one judge call; cached calls add no billed tokens."""
        entry = self.by_model.setdefault(model, ModelUsage())
        if cached:
            entry.cached += 1
            return
        entry.requests += 1
        entry.prompt_tokens += int(prompt_tokens)
        entry.completion_tokens += int(completion_tokens)

    def add(self, result: Any) -> None:
        """Count a :class:`~scorers.llm.engine.ChatResult` (or anything with the same fields)."""
        self.add_tokens(result.model, result.prompt_tokens, result.completion_tokens, cached=result.cached)

    def merge(self, other: "Usage") -> None:
        for model, theirs in other.by_model.items():
            mine = self.by_model.setdefault(model, ModelUsage())
            mine.requests += theirs.requests
            mine.cached += theirs.cached
            mine.prompt_tokens += theirs.prompt_tokens
            mine.completion_tokens += theirs.completion_tokens

    @property
    def prompt_tokens(self) -> int:
        return sum(m.prompt_tokens for m in self.by_model.values())

    @property
    def completion_tokens(self) -> int:
        return sum(m.completion_tokens for m in self.by_model.values())

    def cost(self, prices: Prices | None = None) -> float | None:
        """Estimated USD, or ``None`` when a model with billed tokens has no price.

        ``prices`` defaults to those given to ``configure(prices=...)``.
        """
        table = configured_prices() if prices is None else prices
        total = 0.0
        for model, entry in self.by_model.items():
            if entry.requests == 0:
                continue
            if model not in table:
                return None
            price_in, price_out = table[model]
            total += (entry.prompt_tokens * price_in + entry.completion_tokens * price_out) / 1_000_000
        return total

    def to_dict(self, prices: Prices | None = None) -> dict[str, Any]:
        """Totals, per-model figures and ``cost_usd`` (``None`` when unknown) for a run summary."""
        table = configured_prices() if prices is None else prices
        return {
            "requests": sum(m.requests for m in self.by_model.values()),
            "cached": sum(m.cached for m in self.by_model.values()),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "cost_usd": self.cost(table) if table else None,
            "unpriced_models": sorted(m for m, e in self.by_model.items() if e.requests and m not in table),
            "by_model": {model: vars(entry).copy() for model, entry in sorted(self.by_model.items())},
        }
