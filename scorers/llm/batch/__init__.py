"""Batch runs: a run's judge requests sent through the provider's batch API at about half the price
(``Run(batch=True)``, ``python -m scorers run --batch``), with the results file, cache entries and scores of an
online run.

- :mod:`~scorers.llm.batch.deferral`: the engine's side (requests held back in a pass, the batch's replies read
  through the online path);
- :mod:`~scorers.llm.batch.core`: the provider-neutral layer (grouping, limits, submission, polling, the state
  file ``OUT.batch.json`` that resumes batches out after a stop);
- :mod:`~scorers.llm.batch.openai` (``chat``, ``responses``), :mod:`~scorers.llm.batch.anthropic` (``anthropic``)
  and :mod:`~scorers.llm.batch.gemini` (``gemini``): one module per provider batch API
  (:data:`~scorers.llm.batch.providers.BATCH_APIS`);
- :mod:`~scorers.llm.batch.run`: the :class:`~scorers.llm.batch.run.Batched` engine that judges chunks in rounds.

Importing this package imports neither ``openai`` nor ``anthropic``.
"""

from __future__ import annotations

from .deferral import BatchAPIError, BatchRequestError, Deferred

__all__ = ["BatchAPIError", "BatchRequestError", "Deferred"]
