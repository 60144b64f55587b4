"""Adapters for the places users already evaluate.

- pytest: :func:`assert_score` (from :mod:`scorers.adapters.pytest_plugin`), an
  assertion on a scorer's verdict, recorded and summarised by the ``scorers``
  pytest plugin;
- Braintrust: :mod:`scorers.adapters.braintrust`;
- LangSmith: :mod:`scorers.adapters.langsmith`;
- promptfoo: :mod:`scorers.adapters.promptfoo` (``get_assert`` for a ``type: python`` assertion);
- promptflow: :mod:`scorers.adapters.promptflow` (a flex-flow entry, or a DAG's line tool and aggregation);
- DeepEval: :mod:`scorers.adapters.deepeval` (``metric`` for ``evaluate`` and ``assert_test``).

Importing this package imports neither pytest nor any harness.

>>> from scorers.adapters import assert_score
>>> from scorers.adapters.pytest_plugin import recording
>>> with recording():  # record into a list of our own, not into the session's report
...     assert_score("ExactMatch", 1.0, output="Paris", expected="Paris").score
1.0
"""

from __future__ import annotations

from .pytest_plugin import assert_score

__all__ = ["assert_score"]
