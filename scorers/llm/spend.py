"""A run's spending cap: judge requests are sent only while their cost cannot take the run past it.

:class:`SpendCap` counts what the replies cost, from the usage they report, at the configured prices
(:func:`scorers.llm.configure` ``prices=``). Before each request (each attempt of a call that missed the cache,
re-asks included) the engine reserves a bound of its cost (:func:`request_bound`: its prompt tokens estimated as
:func:`estimate_prompt_tokens` does, and all of its ``max_tokens`` as output); the request is sent only when what
was spent, plus the reservations of the requests still in flight, plus its own stays within the cap (it waits for
those in flight to settle when only their reservations stand in the way). Its reply then replaces the reservation
by what it cost. So the run never passes the cap unless a reply bills more prompt tokens than estimated: by at
most the in-flight requests' shortfall. Once a request cannot fit even with nothing in flight the cap is reached,
and every later request is refused too (:class:`~scorers.errors.BudgetExceeded`, the row's error), so the rows
not judged are the run's last ones and ``--resume`` judges them.

One cap is active at a time in a process (:func:`capped`); the judges of a local run, ``--workers`` included, send
from this process, so they share it.

>>> cap = SpendCap(0.001, {"m": (1.0, 4.0)})
>>> request = ChatRequest(messages=[{"role": "user", "content": "x" * 400}], max_tokens=100)
>>> estimate_prompt_tokens(request), round(request_bound(request, (1.0, 4.0)), 6)
(100, 0.0005)
>>> import asyncio
>>> reservation = asyncio.run(cap.admit(request, "m", "Polite"))
>>> cap.settle(reservation, "m", prompt_tokens=1000, completion_tokens=10)
>>> round(cap.spent, 6), cap.reached
(0.00104, False)
>>> asyncio.run(cap.admit(request, "m", "Polite"))
Traceback (most recent call last):
...
scorers.errors.BudgetExceeded: Polite: not sent: the spending cap of $0.0010 would be passed ($0.0010 spent, this request up to $0.0005); --resume continues with a higher --max-cost
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
from typing import Any, AsyncIterator, Callable, Iterator, Mapping, Sequence

from ..errors import BudgetExceeded, ConfigError
from .protocol import ChatRequest
from .usage import ModelUsage, Prices

__all__ = [
    "SpendCap",
    "capped",
    "active_cap",
    "spending",
    "estimate_prompt_tokens",
    "request_bound",
    "ESTIMATE_RULE",
]

#: How prompt tokens are estimated where no tokenizer of the provider is available offline (none is, here).
ESTIMATE_RULE = "characters / 4, rounded up, of the messages' text and of the tool and response-format JSON"

_CHARS_PER_TOKEN = 4
#: Seconds between two looks at the cap by a request waiting for those in flight to settle.
_SETTLE_POLL_S = 0.005


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(part.get("text") or "" for part in content if isinstance(part, Mapping))
    return ""


def estimate_prompt_tokens(request: ChatRequest) -> int:
    """The prompt tokens of ``request`` by :data:`ESTIMATE_RULE` (an estimate: no provider's tokenizer runs
    offline without a download).

    >>> estimate_prompt_tokens(ChatRequest(messages=[{"role": "user", "content": "Is this polite?"}]))
    4
    """
    characters = sum(len(_text_of(m.get("content"))) for m in request.messages if isinstance(m, Mapping))
    for part in (request.tools, request.response_format):
        if part:
            characters += len(json.dumps(part, separators=(",", ":")))
    return math.ceil(characters / _CHARS_PER_TOKEN)


def price_of(prices: Prices, model: str) -> tuple[float, ...]:
    """The price of ``model`` (a :class:`~scorers.errors.ConfigError` when ``prices`` has none)."""
    try:
        return tuple(prices[model])
    except KeyError:
        raise ConfigError(
            f"a spending cap needs the price of every judge model, and {model!r} has none: give it with "
            f"--price {model}=IN,OUT or configure(prices={{{model!r}: (input, output)}}) (USD per 1M tokens)"
        ) from None


def request_bound(request: ChatRequest, price: Sequence[float]) -> float:
    """USD a request may cost at most, if its estimated prompt holds: the prompt at the input price and all of its
    ``max_tokens`` at the output price (a request without ``max_tokens``: its prompt only)."""
    return (estimate_prompt_tokens(request) * price[0] + (request.max_tokens or 0) * price[1]) / 1_000_000


class SpendCap:
    """The spending cap of one run, ``max_cost`` USD at ``prices``; see the module docstring."""

    def __init__(self, max_cost: float, prices: Prices) -> None:
        self.max_cost = float(max_cost)
        self.prices = dict(prices)
        self.spent = 0.0
        self.reserved = 0.0
        self.reached = False
        #: Requests not sent because of the cap.
        self.refused = 0
        self._lock = threading.Lock()

    async def admit(self, request: ChatRequest, model: str, scorer: str | None) -> float:
        """Reserve the bound of ``request``'s cost and return it, once it fits under the cap (waiting for requests
        in flight to settle when only their reservations stand in the way); raise
        :class:`~scorers.errors.BudgetExceeded` when it cannot fit (and from then on, for every request)."""
        bound = request_bound(request, price_of(self.prices, model))
        while True:
            with self._lock:
                if not self.reached and self.spent + self.reserved + bound <= self.max_cost:
                    self.reserved += bound
                    return bound
                waits = not self.reached and self.reserved > 0 and self.spent + bound <= self.max_cost
                if not waits:
                    self.reached = True
                    self.refused += 1
                    spent = self.spent
            if not waits:
                break
            await asyncio.sleep(_SETTLE_POLL_S)
        label = f"{scorer}: " if scorer else ""
        raise BudgetExceeded(
            f"{label}not sent: the spending cap of ${self.max_cost:.4f} would be passed (${spent:.4f} spent, this "
            f"request up to ${bound:.4f}); --resume continues with a higher --max-cost",
            scorer=scorer,
            attempts=0,
        )

    def settle(
        self, reservation: float, model: str, *, prompt_tokens: int = 0, completion_tokens: int = 0, cached: int = 0
    ) -> None:
        """Replace a reservation by what the reply cost (nothing for a request that got no reply)."""
        usage = ModelUsage(
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cached_prompt_tokens=cached
        )
        cost, _ = usage.cost(*price_of(self.prices, model)[:3])
        with self._lock:
            self.reserved = max(0.0, self.reserved - reservation)
            self.spent += cost

    def to_dict(self) -> dict[str, Any]:
        """What a run summary says of the cap."""
        return {
            "max_cost_usd": self.max_cost,
            "spent_usd": self.spent,
            "reached": self.reached,
            "requests_not_sent": self.refused,
        }


_ACTIVE: list[SpendCap] = []
_ACTIVE_LOCK = threading.Lock()


def active_cap() -> SpendCap | None:
    """The cap of the run in progress in this process, if any."""
    return _ACTIVE[0] if _ACTIVE else None


@contextlib.contextmanager
def capped(cap: SpendCap) -> Iterator[SpendCap]:
    """Make ``cap`` the one every judge request of this process is checked against while the block runs."""
    with _ACTIVE_LOCK:
        if _ACTIVE:
            raise ConfigError("another run with a spending cap is in progress in this process; one at a time")
        _ACTIVE.append(cap)
    try:
        yield cap
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.clear()


@contextlib.asynccontextmanager
async def spending(request: ChatRequest, model: str, scorer: str | None) -> AsyncIterator[Callable[..., None]]:
    """Around one request the engine sends: admitted by the active cap (raises
    :class:`~scorers.errors.BudgetExceeded`), and the block calls what it yields with the reply's tokens
    (``prompt``, ``completion``, ``cached``, as :class:`~scorers.llm.protocols.Tokens` lists them). Nothing happens
    without an active cap."""
    cap = active_cap()
    if cap is None:
        yield _ignore
        return
    reservation = await cap.admit(request, model, scorer)
    charged: list[tuple[int, int, int]] = []
    try:
        yield lambda prompt, completion, cached=0, *_: charged.append((prompt, completion, cached))
    finally:
        prompt, completion, cached = charged[-1] if charged else (0, 0, 0)
        cap.settle(reservation, model, prompt_tokens=prompt, completion_tokens=completion, cached=cached)


def _ignore(*tokens: int) -> None:
    """The charge of a request sent without a cap."""
