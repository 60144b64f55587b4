import json
import math

import pytest

from scorers import Score


@pytest.mark.parametrize("value", [0, 0.0, 0.5, 1, 1.0, None])
def test_valid_scores_round_trip_through_json(value):
    score = Score("S", value, {"signature": {"scorer": "S"}, "nested": [1, "x"]})
    again = Score.from_dict(json.loads(score.to_json()))
    assert again == score
    assert again.score == (None if value is None else float(value))


@pytest.mark.parametrize(
    "value,error",
    [
        (-0.1, ValueError),
        (1.0000001, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (True, TypeError),
        ("0.5", TypeError),
    ],
)
def test_invalid_scores_are_rejected(value, error):
    with pytest.raises(error, match="S: score"):
        Score("S", value)


def test_skipped():
    assert Score("S", None).skipped and not Score("S", 0.0).skipped
