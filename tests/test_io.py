import json

import pytest

from scorers.errors import DataError
from scorers.io import ResultWriter, count_rows, read_completed, read_rows


@pytest.mark.parametrize("name,content,rows", [
    ("a.jsonl", '{"output": "x"}\n\n{"output": "y"}\n', [{"output": "x"}, {"output": "y"}]),
    ("a.json", '[{"output": "x"}, {"output": 1}]', [{"output": "x"}, {"output": 1}]),
    ("a.csv", "output,expected\nx,y\n\"a,b\",c\n", [{"output": "x", "expected": "y"}, {"output": "a,b", "expected": "c"}]),
    ("a.tsv", "output\texpected\nx\ty\n", [{"output": "x", "expected": "y"}]),
])
def test_read_formats(tmp_path, name, content, rows):
    path = tmp_path / name
    path.write_text(content)
    assert list(read_rows(str(path))) == rows
    if not name.endswith(".json"):
        assert count_rows(str(path)) == len(rows)


@pytest.mark.parametrize("name,content,message", [
    ("a.jsonl", '{"output": "x"}\n{"output": \n', r"a.jsonl:2: invalid JSON"),
    ("a.jsonl", '{"output": "x"}\n[1, 2]\n', r"a.jsonl:2: expected a JSON object"),
    ("a.json", '{"output": "x"}', r"expected a JSON array"),
    ("a.json", '[{"output": "x"}, 3]', r"item 1 of the array is a int"),
    ("a.csv", "output,expected\nx,y,z\n", r"a.csv:2: more values"),
    ("a.csv", "output,expected\nx\n", r"a.csv:2: fewer values"),
    ("a.txt", "x", r"cannot tell the format"),
])
def test_bad_files_name_the_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        list(read_rows(str(path)))


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_rows(str(tmp_path / "none.jsonl"))


def test_read_completed_cuts_a_torn_last_line(tmp_path):
    path = tmp_path / "out.jsonl"
    with ResultWriter(str(path)) as writer:
        writer.write({"id": 1, "scores": {"S": 1.0}})
        writer.write({"id": 2, "scores": {"S": 0.5}})
    with open(path, "a") as fh:
        fh.write('{"id": 3, "scor')
    records = read_completed(str(path))
    assert [r["id"] for r in records] == [1, 2]
    assert path.read_text().endswith('"S": 0.5}}\n')


def test_read_completed_refuses_foreign_files(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps({"id": 1}) + "\n")
    with pytest.raises(DataError, match="no 'scores'"):
        read_completed(str(path))
