"""CodeExecution: tests in the row or the settings, assert-style or on stdin, each failure's reason; hostile
programs stopped or refused, each a row's result, the run going on and the parent, the results file and the other
rows untouched."""

from __future__ import annotations

import os
import socket
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scorers
from scorers.code import CodeExecution, compare_output
from scorers.code import sandbox as sandbox_module
from scorers.code.scorer import _tests
from scorers.errors import ConfigError, ScorerInputError

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
#: Small limits; a wall-clock limit far above what the programs that end take, even on a loaded machine.
SMALL = {"timeout_s": 60.0, "cpu_s": 1.0, "memory_mb": 256, "processes": 16, "output_kb": 8}
#: For the programs that never end: the wall-clock limit stops them.
NEVER_ENDING = {**SMALL, "timeout_s": 3.0}


def _reasons(score):
    return [test["reason"] for test in score.metadata["tests"]]


@pytest.mark.parametrize(
    "tests,score,reasons",
    [
        (["assert add(1, 2) == 3"], 1.0, [None]),
        (["assert add(1, 2) == 3", "assert add(1, 2) == 4"], 0.5, [None, "wrong answer"]),
        ("assert add(2, 2) == 4", 1.0, [None]),
        (["add(1)"], 0.0, ["crash"]),
        (["x = [0] * (10**12)"], 0.0, ["memory"]),
    ],
)
def test_assert_style_tests(tests, score, reasons):
    result = CodeExecution(**SMALL)(output=ADD, tests=tests)
    assert (result.score, _reasons(result)) == (score, reasons)
    assert result.metadata["passed"] == reasons.count(None) and result.metadata["total"] == len(reasons)


ECHO_SUM = "a, b = map(int, input().split())\nprint(a + b)"


@pytest.mark.parametrize(
    "match,expected,passed",
    [
        ("rstrip", "7", True),
        ("rstrip", "7  \n\n", True),
        ("exact", "7\n", True),
        ("exact", "7", False),
        ("rstrip", "8", False),
    ],
)
def test_stdin_tests_compare_stdout_by_the_rule(match, expected, passed):
    scorer = CodeExecution(tests=[{"input": "3 4\n", "output": expected}], match=match, **SMALL)
    result = scorer(output=ECHO_SUM)
    assert result.score == float(passed) and _reasons(result) == [None if passed else "wrong answer"]


def test_the_rows_tests_win_over_the_settings():
    scorer = CodeExecution(tests=["assert add(1, 1) == 3"], **SMALL)
    assert scorer(output=ADD).score == 0.0
    assert scorer(output=ADD, tests=["assert add(1, 1) == 2"]).score == 1.0


def test_a_test_is_data_never_pasted_into_the_program():
    """A test that closes a string or a block of the program does not change the program's text."""
    program = 'NOTE = """'  # an open string: pasted together with a test, the test would become part of it
    result = CodeExecution(**SMALL)(output=program, tests=['"""\nassert True'])
    assert _reasons(result) == ["crash"] and "SyntaxError" in result.metadata["tests"][0]["stderr"]


@pytest.mark.parametrize(
    "tests,problem",
    [
        ([], "no tests"),
        ([3], "a test must be"),
        ([{"input": "1"}], "a test must be"),
        (None, "no tests"),
        (["assert '\ud800'"], "lone surrogate"),
        ([{"input": "\udfff", "output": ""}], "lone surrogate"),
    ],
)
def test_bad_tests_are_the_rows_input_error(tests, problem):
    with pytest.raises(ScorerInputError, match=problem):
        CodeExecution()(output=ADD, tests=tests)


def test_bad_settings_are_config_errors(monkeypatch):
    with pytest.raises(ConfigError, match="a test must be"):
        CodeExecution(tests=[1])
    with pytest.raises(ConfigError, match="language"):
        CodeExecution(language="cobol")
    with pytest.raises(ConfigError, match="is not an executable file"):
        CodeExecution(interpreter="/nonexistent/python")
    monkeypatch.delenv("SCORERS_CODE_ALLOW_NETWORK", raising=False)
    with pytest.raises(ConfigError, match="SCORERS_CODE_ALLOW_NETWORK=1"):
        CodeExecution(network="allow")


def test_without_namespaces_the_scorer_is_refused_unless_the_network_is_allowed(monkeypatch):
    monkeypatch.setattr(sandbox_module, "namespaces_available", lambda interpreter, network: "not allowed here")
    with pytest.raises(ConfigError, match="does not allow the sandbox's namespaces"):
        CodeExecution()
    monkeypatch.setenv("SCORERS_CODE_ALLOW_NETWORK", "1")
    with pytest.warns(UserWarning, match="without namespaces"):
        scorer = CodeExecution(network="allow", **SMALL)
    assert scorer(output=ADD, tests=["assert add(1, 2) == 3"]).score == 1.0


def test_compare_output_rules():
    assert compare_output("a \r\nb\t\n\n", "a\nb", "rstrip")
    assert not compare_output(" a", "a", "rstrip")


# ---------------------------------------------------------------- hostile programs
def test_the_environment_is_not_visible(monkeypatch):
    monkeypatch.setenv("SCORERS_TEST_CANARY", "canary-7f3a")
    program = (
        "import os, glob\nprint(dict(os.environ))\n"
        "for path in glob.glob('/proc/*/environ'):\n"
        "    try:\n        print(open(path, 'rb').read())\n    except OSError:\n        pass\n"
    )
    result = CodeExecution(**SMALL)(output=program, tests=["assert 'SCORERS_TEST_CANARY' not in os.environ"])
    assert result.score == 1.0
    assert "canary-7f3a" not in result.metadata["tests"][0]["stdout"]


def test_a_listening_socket_of_the_host_is_not_reached():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        program = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ns.sendall(b'hi')"
        result = CodeExecution(**SMALL)(output=program, tests=["pass"])
        assert _reasons(result) == ["crash"] and "OSError" in result.metadata["tests"][0]["stderr"]
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_writes_outside_the_directory_do_not_land(tmp_path):
    target = tmp_path / "escaped.txt"
    results = tmp_path / "results.jsonl"
    results.write_text('{"row": 1}\n')
    program = f"open({str(target)!r}, 'w').write('x')\nopen({str(results)!r}, 'a').write('x')"
    result = CodeExecution(**SMALL)(output=program, tests=["pass"])
    assert _reasons(result) == ["crash"] and "Read-only file system" in result.metadata["tests"][0]["stderr"]
    assert not target.exists() and results.read_text() == '{"row": 1}\n'


def test_its_own_directory_is_writable_and_removed_afterwards():
    program = "import os\nopen('notes.txt', 'w').write('x')\nprint(os.getcwd())"
    result = CodeExecution(**SMALL)(output=program, tests=["assert open('notes.txt').read() == 'x'"])
    assert result.score == 1.0
    assert not os.path.exists(result.metadata["tests"][0]["stdout"].strip())


def test_megabytes_of_output_are_cut_and_stop_the_run():
    result = CodeExecution(**SMALL)(output="import sys\nwhile True:\n    sys.stdout.write('x' * 65536)", tests=["pass"])
    test = result.metadata["tests"][0]
    assert test["reason"] == "output" and len(test["stdout"]) == 8 * 1024


def test_allocating_without_end_is_a_memory_failure():
    result = CodeExecution(**SMALL)(output="x = []\nwhile True:\n    x.append(bytearray(10**7))", tests=["pass"])
    assert _reasons(result) == ["memory"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "program,reason",
    [
        ("while True:\n    pass", "timeout"),  # the CPU limit
        ("import time\ntime.sleep(60)", "timeout"),  # the wall-clock limit
        ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass", "timeout"),
        ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n", None),  # left behind: killed
    ],
    ids=["loop", "sleep", "fork-bomb", "setsid-child"],
)
def test_programs_that_never_end_are_stopped(program, reason):
    result = CodeExecution(**NEVER_ENDING)(output=program, tests=["pass"])
    assert _reasons(result) == [reason]


@pytest.mark.slow
def test_the_number_of_processes_is_bounded():
    """RLIMIT_NPROC holds for a user other than root; as root (exempt from it) the PID namespace's pid_max, 301 at
    the lowest, bounds the count on Linux 6.14+ (docs/code.md)."""
    program = (
        "import os, time\nkids = 0\nfor _ in range(1000):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n"
        "    kids += 1\nprint(kids)"
    )
    result = CodeExecution(**{**SMALL, "processes": 8})(output=program, tests=["pass"])
    kids = int(result.metadata["tests"][0]["stdout"])
    assert kids < (8 if os.geteuid() != 0 else 301)


@pytest.mark.slow
def test_hostile_rows_are_each_their_rows_result_and_the_batch_goes_on(tmp_path):
    rows = [
        {"output": "while True:\n    pass"},
        {"output": ADD},
        {"output": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"},
        {"output": f"open({str(tmp_path / 'x')!r}, 'w')"},
        {"output": "print('x' * 10**7)"},
        {"output": ADD},
    ]
    before = (os.getcwd(), dict(os.environ), sys.path[:])
    limits = {**NEVER_ENDING, "timeout_s": 6.0}
    results = scorers.get("CodeExecution", tests=["assert add(1, 2) == 3"], **limits).score_batch(rows)
    assert [r.score for r in results] == [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    assert [_reasons(r)[0] for r in results] == ["timeout", None, "timeout", "crash", "output", None]
    assert (os.getcwd(), dict(os.environ), sys.path[:]) == before and not (tmp_path / "x").exists()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["input", "output", "x"]), inner),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(value=JSON)
def test_random_json_as_tests_is_a_list_of_tests_or_the_rows_input_error(value):
    """What test_fuzz leaves out (each test there would be a process): the check of a row's tests, run alone."""
    try:
        tests = _tests(value, "CodeExecution", "tests")
    except ScorerInputError:
        return
    assert tests and all(isinstance(t, str) or set(t) <= {"input", "output"} for t in tests)
