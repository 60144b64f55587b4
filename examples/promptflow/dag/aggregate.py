"""The flow's aggregation node: each scorer's mean, logged with promptflow's log_metric."""

from typing import List

from promptflow.core import tool

from scorers.adapters.promptflow import aggregate


@tool
def aggregate_lines(lines: List[dict]) -> dict:
    return aggregate(lines)
