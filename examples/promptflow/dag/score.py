"""The flow's line node: each line scored by the scorers named in flow.dag.yaml."""

from promptflow.core import tool

from scorers.adapters.promptflow import LineScores, score_line


@tool
def score(scorers: str, output: str, expected: str, input: str = "") -> LineScores:
    return score_line(scorers, output=output, expected=expected, input=input)
