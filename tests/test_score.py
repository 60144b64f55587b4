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


def _column(errors=None, metadata=None):
    from scorers.score import ScoreColumn

    return ScoreColumn(
        "S", [0.5, math.nan, 1.0], {"signature": {"scorer": "S"}} if metadata is None else metadata, errors
    )


@pytest.mark.parametrize("metadata", [None, lambda i: {"row": i}])
def test_a_score_column_is_the_sequence_of_its_scores(metadata):
    from scorers.score import ScoreColumn

    column = _column(metadata=metadata)
    meta = [{"row": i} for i in range(3)] if metadata else [{"signature": {"scorer": "S"}}] * 3
    scores = [Score("S", v, m) for v, m in zip([0.5, None, 1.0], meta)]
    assert (
        column == scores
        and scores == column
        and column == tuple(scores)
        and column == ScoreColumn("S", [0.5, math.nan, 1.0], metadata or {"signature": {"scorer": "S"}})
    )
    assert list(column) == scores and column[-1] == scores[2] and column[1:] == scores[1:]
    assert column + [] == scores and [] + column == scores and len(column) == 3
    assert column.scores() == [0.5, None, 1.0] and column.values.dtype.name == "float64"
    assert [column.metadata(i) for i in range(3)] == meta and column != [scores[0]] and column != "x"
    assert (column.shared_metadata is None) == bool(metadata) and repr(column) == "ScoreColumn('S', 3 rows, 0 errors)"
    with pytest.raises(IndexError):
        column[3]
    with pytest.raises(TypeError):
        hash(column)


def test_each_score_read_from_a_column_has_its_own_metadata():
    column = _column()
    first = column[0]
    first.metadata["extra"] = 1
    assert "extra" not in column[0].metadata and column[0].metadata == {"signature": {"scorer": "S"}}


def test_a_column_with_failed_rows_gives_their_errors_and_travels():
    import pickle

    from scorers.errors import ScorerInputError

    error = ScorerInputError("S", "output", "is required but was missing")
    column = _column({1: error})
    assert column[1] is error and column.scores() == [0.5, None, 1.0]
    again = pickle.loads(pickle.dumps(column))
    assert again.scores() == column.scores() and str(again[1]) == str(error) and again[0] == column[0]


def test_a_column_placed_among_failed_rows():
    from scorers.errors import ScorerInputError

    error = ScorerInputError("S", "output", "is required but was missing")
    column = _column()
    assert column.placed(3, [0, 1, 2], [None] * 3) is column
    placed = column.placed(4, [0, 2, 3], [None, error, None, None])
    assert placed.scores() == [0.5, None, None, 1.0] and placed.errors == {1: error} and placed[1] is error
    assert _column(metadata=lambda i: {}).placed(4, [0, 2, 3], [None, error, None, None]) is None
    assert _column({0: error}).placed(4, [0, 2, 3], [None, error, None, None]) is None
