"""Budgets of an agent's run: its steps and tool calls (:class:`StepBudget`), its tokens and their cost
(:class:`TokenBudget`), each against a limit the user gives. No model, exact, explained in the metadata.

``output`` is the agent's conversation in any format :mod:`scorers.agents.readers` reads. A **step** is one
assistant message of the conversation as read: one model response (OpenAI's ``function_call`` items and
Anthropic's ``tool_use`` blocks belong to the assistant message they follow, so a response that says something
and calls three tools is one step). A **tool call** is one call an assistant message makes, function or MCP.
Tokens are those of the usage each format carries (:class:`~scorers.agents.model.Usage`), summed once per model
response; a budget on a count the format does not carry is the row's error, never a count of 0.

The score is 1 when every budgeted quantity is within its budget, else 0. With ``hard_limits``, a quantity over
its budget scores ``(hard_limit - value) / (hard_limit - budget)`` (1 at the budget, 0 at the hard limit and
past it), one without a hard limit 0, and the row scores the lowest of its quantities' scores.

>>> from scorers import get
>>> run = [{"role": "user", "content": "Weather?"},
...        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "weather", "arguments": "{}"}}]},
...        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
...        {"role": "assistant", "content": "18C."}]
>>> get("StepBudget", max_steps=1, hard_limits={"steps": 3})(output=run).score  # 2 steps: halfway to 3
0.5
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ..base import Scorer
from ..errors import ConfigError, ScorerInputError
from ..fields import Field
from ..params import param
from ..registry import register
from ..score import Score
from .model import Conversation, Usage
from .readers import read_conversation

__all__ = ["StepBudget", "TokenBudget", "PRICED"]

#: The token counts a price per million tokens may be given for (``prices``); the cache prices default to the
#: input price.
PRICED = ("input", "output", "cache_read", "cache_write")
_MILLION = 1_000_000

_HARD_LIMITS = param(
    "per budgeted quantity, the value where the graded score reaches 0 (1 at its budget, linear between); "
    "None: pass/fail",
    default=None,
    expected="a mapping of budgeted quantities (e.g. steps, total_tokens, cost) to numbers above their budgets, "
    "or None",
)


def _exact(number: float) -> Fraction:
    """A number as written (``0.1`` is one tenth, not the float nearest it)."""
    return Fraction(number) if isinstance(number, int) else Fraction(Decimal(repr(number)))


class _Budget(Scorer):
    """What the budgets share: the conversation read once, the quantities measured against their budgets."""

    fields = (
        Field(
            "output",
            (list, tuple, dict, str, Conversation),
            description="the agent's conversation, in any format the agent readers take",
        ),
        Field(
            "budget",
            (dict,),
            required=False,
            description="this row's budgets, by quantity (e.g. {\"steps\": 5}): over the scorer's for those quantities",
        ),
    )
    hard_limits: Mapping[str, float] | None

    #: each budgeted quantity's name, and the parameter that holds its budget
    _QUANTITIES: dict[str, str] = {}

    def __post_init__(self) -> None:
        for quantity, limit in (self.hard_limits or {}).items():
            if quantity not in self._QUANTITIES:
                raise ConfigError(
                    f"{self.name}: hard_limits names {quantity!r}: accepted: {', '.join(self._QUANTITIES)}",
                    scorer=self.name,
                )
            if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 <= limit < float("inf"):
                raise ConfigError(
                    f"{self.name}: the hard limit of {quantity!r} must be a finite number >= 0, got {limit!r}",
                    scorer=self.name,
                )
            budget = getattr(self, self._QUANTITIES[quantity])
            if budget is not None and not _exact(limit) > _exact(budget):
                raise ConfigError(
                    f"{self.name}: the hard limit of {quantity!r} ({limit}) must be above its budget ({budget})",
                    scorer=self.name,
                )

    def _budgets(self, row: Any) -> dict[str, int | float]:
        """The budget of each budgeted quantity: the scorer's, with the row's ``budget`` over it."""
        budgets = {q: getattr(self, p) for q, p in self._QUANTITIES.items() if getattr(self, p) is not None}
        if row is not None:
            for quantity, budget in row.items():
                if quantity not in self._QUANTITIES:
                    raise ScorerInputError(
                        self.name, "budget", f"names {quantity!r}: accepted: {', '.join(self._QUANTITIES)}"
                    )
                if type(budget) not in (int, float) or not 0 <= budget < float("inf"):
                    raise ScorerInputError(
                        self.name, "budget", f"gives {quantity!r} {budget!r}, not a finite number >= 0"
                    )
                budgets[quantity] = budget
        if not budgets:
            raise ScorerInputError(
                self.name,
                "budget",
                f"is required: no budget is given (set {', '.join(self._QUANTITIES.values())} on the scorer, or "
                f"give the row a budget such as {{{next(iter(self._QUANTITIES))!r}: 10}})",
            )
        for quantity, limit in (self.hard_limits or {}).items():
            if quantity in budgets and not _exact(limit) > _exact(budgets[quantity]):
                raise ScorerInputError(
                    self.name,
                    "budget",
                    f"gives {quantity!r} {budgets[quantity]}, not below its hard limit {limit} (hard_limits)",
                )
        return budgets

    def _conversation(self, output: Any) -> Conversation:
        if isinstance(output, Conversation):
            return output
        return read_conversation(output, scorer=self.name, field="output")

    def _judged(
        self, budgets: Mapping[str, int | float], measured: Mapping[str, Fraction | int], **metadata: Any
    ) -> Score:
        """The score of the measured quantities against their budgets, each one explained in ``budgets``."""
        grades, explained = [], {}
        for quantity, given in budgets.items():
            value, budget = Fraction(measured[quantity]), _exact(given)
            limit = (self.hard_limits or {}).get(quantity)
            if value <= budget:
                grade = Fraction(1)
            elif limit is None:
                grade = Fraction(0)
            else:
                grade = max(Fraction(0), (_exact(limit) - value) / (_exact(limit) - budget))
            grades.append(grade)
            explained[quantity] = {
                "value": _number(value),
                "budget": given,
                "hard_limit": limit,
                "over": value > budget,
                "score": float(grade),
            }
        passed = not any(entry["over"] for entry in explained.values())
        return self.make_score(float(min(grades)), passed=passed, budgets=explained, **metadata)


def _number(value: Fraction) -> int | float:
    return value.numerator if value.denominator == 1 else float(value)


@register
class StepBudget(_Budget):
    """1 if the agent took at most ``max_steps`` steps and made at most ``max_tool_calls`` tool calls, else 0
    (graded between a budget and its hard limit with ``hard_limits``: see :mod:`scorers.agents.budgets`).

    A step is one assistant message of the conversation as read (one model response, whatever it holds); a tool
    call is one call one of them makes (a function or an MCP tool). Metadata: ``passed``, and per budgeted
    quantity its ``value``, ``budget``, ``hard_limit``, whether it is ``over`` and its ``score``; ``steps`` and
    ``tool_calls`` (``function`` and ``mcp``) as counted.
    """

    name = "StepBudget"
    description = "1 if the agent's steps and tool calls are within budget (graded to a hard limit if given)"
    example = (
        'StepBudget(max_tool_calls=1)(output=[{"role": "assistant", "tool_calls": '
        '[{"function": {"name": "a"}}, {"function": {"name": "b"}}]}])  # 0.0'
    )
    _QUANTITIES = {"steps": "max_steps", "tool_calls": "max_tool_calls"}

    max_steps: int | None = param("most steps (assistant messages) allowed; None: not budgeted", default=None, ge=0)
    max_tool_calls: int | None = param("most tool calls allowed; None: not budgeted", default=None, ge=0)
    hard_limits: Mapping[str, float] | None = _HARD_LIMITS

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, budget: Any = None, **_: Any) -> Score:  # type: ignore[override]
        budgets = self._budgets(budget)
        conversation = self._conversation(output)
        steps = len(conversation.by_role("assistant"))
        calls = conversation.tool_calls
        mcp = sum(call.kind == "mcp" for call in calls)
        return self._judged(
            budgets,
            {"steps": steps, "tool_calls": len(calls)},
            steps=steps,
            tool_calls={"total": len(calls), "function": len(calls) - mcp, "mcp": mcp},
        )


#: What each of TokenBudget's quantities is read from: a Usage count, or the cost.
_TOKEN_QUANTITIES = {
    "input_tokens": "max_input_tokens",
    "output_tokens": "max_output_tokens",
    "total_tokens": "max_total_tokens",
    "cost": "max_cost",
}


@register
class TokenBudget(_Budget):
    """1 if the agent's tokens (input, output, total) and their cost are within budget, else 0 (graded between a
    budget and its hard limit with ``hard_limits``: see :mod:`scorers.agents.budgets`).

    Tokens are read from the usage each format carries (a ChatCompletion's or a Response's ``usage``, an
    Anthropic Message's, LangChain's ``usage_metadata``, OpenTelemetry's ``gen_ai.usage.*`` on inference spans),
    summed once per model response; input tokens include the cached ones. A budget on a count some response does
    not carry is the row's :class:`~scorers.errors.ScorerInputError`, naming the field and the format.

    The cost is ``prices`` per million tokens (``{"input": 2.5, "output": 10}``, and optionally ``cache_read``
    and ``cache_write``, which otherwise cost the input price) times the tokens, computed exactly (fractions of
    the prices as written; the budget compared exactly; the metadata's cost the nearest float). There is no
    built-in price table: prices change, and are the user's data. Metadata: ``passed``, ``budgets`` (as
    :class:`StepBudget`'s), ``usage`` (the counts, responses and source) and ``cost`` (``None`` without prices).
    """

    name = "TokenBudget"
    description = "1 if the agent's tokens and their cost are within budget (graded to a hard limit if given)"
    example = (
        'TokenBudget(max_total_tokens=100)(output={"choices": [{"message": {"role": "assistant", "content": "Hi"}}], '
        '"usage": {"prompt_tokens": 90, "completion_tokens": 20, "total_tokens": 110}})  # 0.0'
    )
    _QUANTITIES = _TOKEN_QUANTITIES

    max_input_tokens: int | None = param("most input tokens allowed; None: not budgeted", default=None, ge=0)
    max_output_tokens: int | None = param("most output tokens allowed; None: not budgeted", default=None, ge=0)
    max_total_tokens: int | None = param(
        "most tokens allowed, input and output; None: not budgeted", default=None, ge=0
    )
    max_cost: float | None = param(
        "most cost allowed, in the currency of prices; None: not budgeted", default=None, ge=0, lt=float("inf")
    )
    prices: Mapping[str, float] | None = param(
        "price per million tokens: input, output, and optionally cache_read, cache_write (default: input's)",
        default=None,
        expected="a mapping of input, output, cache_read, cache_write to prices per million tokens, or None",
    )
    hard_limits: Mapping[str, float] | None = _HARD_LIMITS

    def __post_init__(self) -> None:
        super().__post_init__()
        prices = self.prices or {}
        unknown = sorted(set(prices) - set(PRICED))
        if unknown:
            raise ConfigError(
                f"{self.name}: prices names {', '.join(map(repr, unknown))}: accepted: {', '.join(PRICED)}",
                scorer=self.name,
            )
        for kind, price in prices.items():
            if isinstance(price, bool) or not isinstance(price, (int, float)) or not 0 <= price < float("inf"):
                raise ConfigError(
                    f"{self.name}: prices[{kind!r}] must be a finite number >= 0, got {price!r}", scorer=self.name
                )
        if self.prices is not None and not {"input", "output"} <= set(prices):
            raise ConfigError(f"{self.name}: prices must give both input and output", scorer=self.name)
        if self.max_cost is not None and self.prices is None:
            raise ConfigError(
                f"{self.name}: max_cost needs prices (per million tokens, e.g. prices={{'input': 2.5, "
                "'output': 10}): there is no built-in price table",
                scorer=self.name,
            )

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook's **fields)
    def _score(self, *, output: Any, budget: Any = None, **_: Any) -> Score:  # type: ignore[override]
        budgeted = self._budgets(budget)
        if "cost" in budgeted and self.prices is None:
            raise ScorerInputError(
                self.name,
                "budget",
                "budgets the cost, which needs prices (per million tokens, e.g. prices={'input': 2.5, 'output': "
                "10}): there is no built-in price table",
            )
        usage = self._conversation(output).usage
        needed = {
            count
            for quantity in budgeted
            for count in (
                self._priced_counts()
                if quantity == "cost"
                else ("input_tokens", "output_tokens")
                if quantity == "total_tokens"
                else (quantity,)
            )
        }
        if usage is None:
            raise ScorerInputError(
                self.name,
                "output",
                f"carries no token usage, which {', '.join(_TOKEN_QUANTITIES[q] for q in budgeted)} needs: give "
                "the format's whole responses with their usage (a ChatCompletion or Response with 'usage', Anthropic "
                "Messages with 'usage', LangChain AI messages with usage_metadata, OpenTelemetry inference spans "
                "with gen_ai.usage.*); OpenAI chat messages and Responses items carry none",
            )
        for count in sorted(needed):
            if getattr(usage, count) is None:
                raise ScorerInputError(self.name, "output", _unknown(usage, count))
        cost = self._cost(usage)
        measured: dict[str, Fraction | int] = {q: getattr(usage, q) for q in budgeted if q != "cost"}
        if "cost" in budgeted:
            assert cost is not None
            measured["cost"] = cost
        return self._judged(budgeted, measured, usage=usage.to_dict(), cost=None if cost is None else float(cost))

    def _priced_counts(self) -> tuple[str, ...]:
        """The counts the cost needs: the cached ones only where they have prices of their own."""
        cached = tuple(f"{kind}_tokens" for kind in ("cache_read", "cache_write") if kind in (self.prices or {}))
        return ("input_tokens", "output_tokens", *cached)

    def _cost(self, usage: Usage) -> Fraction | None:
        """The exact cost of ``usage`` at ``prices``, or None without prices or a count it needs."""
        if self.prices is None or any(getattr(usage, count) is None for count in self._priced_counts()):
            return None
        price = {kind: _exact(self.prices.get(kind, self.prices["input"])) for kind in PRICED}
        read = usage.cache_read_tokens if "cache_read" in self.prices else 0
        written = usage.cache_write_tokens if "cache_write" in self.prices else 0
        assert usage.input_tokens is not None and usage.output_tokens is not None
        uncached = usage.input_tokens - (read or 0) - (written or 0)
        total = (
            uncached * price["input"]
            + (read or 0) * price["cache_read"]
            + (written or 0) * price["cache_write"]
            + usage.output_tokens * price["output"]
        )
        return total / _MILLION


def _unknown(usage: Usage, count: str) -> str:
    """Why ``count`` of ``usage`` is unknown: responses without usage, or a field its format left out."""
    unreported = usage.responses - usage.reported
    if unreported:
        return (
            f"carries usage in {usage.reported} of its {usage.responses} model responses ({usage.source}): "
            f"{count} would be undercounted"
        )
    return f"has no {count}: its usage ({usage.source}) has no {usage.missing.get(count, count)}"
