"""Fixtures of tests/engines: one local Ray cluster and one Spark session for the whole test session (each takes
seconds to start), both with 2 workers, started and stopped by scorers.engines itself."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

#: Workers of every engine run in these tests (the machine has 2 cores).
WORKERS = 2


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A local Ray cluster on 127.0.0.1 (``scorers.engines.ray.connect``): runs in this session join it. Ray is
    imported first, as a program that uses it would: the cluster must stay on 127.0.0.1 all the same."""
    pytest.importorskip("ray", reason="the Ray engine needs pip install 'scorers[ray]' (scripts/setup.sh)")
    from scorers.engines.ray import connect

    with connect(None, WORKERS) as ray:
        yield ray


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    """A local Spark session on ``local[2,3]`` (``scorers.engines.spark.session``), used by every Spark run."""
    pytest.importorskip("pyspark", reason="the Spark engine needs pip install 'scorers[spark]' (scripts/setup.sh)")
    from scorers.engines.spark import session

    with session(None, WORKERS) as spark:
        yield spark


@pytest.fixture(
    params=[
        pytest.param("ray", marks=pytest.mark.needs_cluster),
        pytest.param("spark", marks=[pytest.mark.needs_cluster, pytest.mark.needs_java]),
    ]
)
def engine(request: pytest.FixtureRequest) -> str:
    """Each engine in turn, its cluster running."""
    request.getfixturevalue({"ray": "ray_cluster", "spark": "spark_session"}[request.param])
    return request.param
