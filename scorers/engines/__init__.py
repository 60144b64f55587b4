"""Where :func:`scorers.evaluate` scores: engines, registered by name like scorers.

- :class:`Local` (``engine="local"``, the default): this machine (:mod:`scorers.engines.local`);
- :class:`Ray` (``engine="ray"`` or ``Ray(address="auto")``): Ray Data (:mod:`scorers.engines.ray`);
- :class:`Spark` (``engine="spark"`` or ``Spark(master="local[4,3]")``): Spark (:mod:`scorers.engines.spark`).

An engine's options are declared once, as the fields of its :class:`Engine` model; a name gives the engine with
its default options (:data:`registry`, which plugins extend through the ``scorers.engines`` entry-point group).
Ray and Spark share the driver of :mod:`scorers.engines.cluster`: every row exactly once, the same records and
summary as a local run. Ray, Spark and pyarrow are imported only when a run uses them.

>>> import scorers
>>> from scorers.engines import Local, Ray, Spark
>>> Spark(master="local[4,3]")
Spark(master='local[4,3]', conf={})
>>> run = scorers.evaluate([{"output": "a", "expected": "a"}], ["ExactMatch"], engine="local")
>>> [r.scores for r in run]
[{'ExactMatch': 1.0}]
"""

from __future__ import annotations

from .base import Engine, EngineError, Job, score_chunk
from .local import Local
from .ray import Ray
from .registry import EngineRegistry, engine_named, registry
from .spark import Spark

__all__ = [
    "Engine",
    "Local",
    "Ray",
    "Spark",
    "Job",
    "EngineError",
    "EngineRegistry",
    "registry",
    "engine_named",
    "score_chunk",
]
