"""OpenTelemetry in and out (scorers.io.otel): OTLP trace exports read as rows, sampling by trace id, and scores
written as gen_ai.evaluation.result events that the real OTLP protobuf messages parse."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers.agents import read_conversation
from scorers.batch import RowResult
from scorers.errors import ConfigError, DataError
from scorers.io.otel import (
    EVENT_NAME,
    conversation_to_otlp,
    evaluation_events,
    otlp_rows,
    read_otlp,
    rows_of_documents,
    sampled,
)
from scorers.options import OtelOptions
from scorers.score import Score

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CONVERSATIONS = [json.loads(line) for line in (EXAMPLES / "conversations.jsonl").read_text().splitlines()]
FIXTURE = ROOT / "tests" / "agents" / "fixtures" / "otel_genai.json"
TOOLS = "ToolCallValid.tools=[{name: get_weather}, {name: get_order}, {name: refund}, {name: get_time}]"


def _trace_ids(count: int, seed: int = 7) -> list[str]:
    draw = random.Random(seed)
    return [f"{draw.getrandbits(128):032x}" for _ in range(count)]


def _export(path: Path, documents: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return path


def _events(path: Path) -> list[dict[str, Any]]:
    return [
        record
        for line in path.read_text().splitlines()
        for resource in json.loads(line)["resourceLogs"]
        for scope in resource["scopeLogs"]
        for record in scope["logRecords"]
    ]


def _attributes(record: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}


# ------------------------------------------------------------------------------------------------ round trip
@pytest.mark.parametrize("example", CONVERSATIONS, ids=[c["id"] for c in CONVERSATIONS])
def test_an_example_conversation_written_as_spans_reads_back_into_the_same_row(example):
    trace_id = _trace_ids(1)[0]
    (row,) = rows_of_documents([conversation_to_otlp(example["conversation"], trace_id=trace_id)])
    conversation = read_conversation(example["conversation"], scorer="test", field="conversation")
    assert row["output"] == conversation.to_list()
    assert row["input"] == conversation.by_role("user")[0].content
    assert (row["trace_id"], row["span_id"]) == (trace_id, "0000000000000001")


def test_the_example_export_holds_the_example_conversations_in_order():
    rows = list(otlp_rows(str(EXAMPLES / "agent_traces.json")))
    expected = [read_conversation(c["conversation"], scorer="t", field="c").to_list() for c in CONVERSATIONS]
    assert [row["output"] for row in rows] == expected
    assert len({row["trace_id"] for row in rows}) == len(CONVERSATIONS)


def test_the_example_export_is_what_its_seeded_script_writes(tmp_path, monkeypatch):
    import runpy

    script = runpy.run_path(str(EXAMPLES / "make_agent_traces.py"))
    for name in ("conversations.jsonl",):
        (tmp_path / name).write_bytes((EXAMPLES / name).read_bytes())
    script["main"].__globals__["HERE"] = tmp_path
    script["main"]()
    assert (tmp_path / "agent_traces.json").read_bytes() == (EXAMPLES / "agent_traces.json").read_bytes()


def test_an_indented_single_document_reads_with_its_root_span():
    (row,) = otlp_rows(str(FIXTURE))
    assert row["span_id"] == "eee19b7ec3c1b174"
    assert row["output"] == read_conversation(json.loads(FIXTURE.read_text()), scorer="t", field="o").to_list()


def test_a_traces_spans_spread_over_lines_are_gathered_by_trace_id(tmp_path):
    first, second = _trace_ids(2)
    exports = [conversation_to_otlp(c["conversation"], trace_id=t) for c, t in zip(CONVERSATIONS[:2], (first, second))]
    documents = []
    for export in exports:  # every span a document of its own, the two traces interleaved
        for span in export["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            documents.append({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    interleaved = documents[::2] + documents[1::2]
    rows = list(otlp_rows(str(_export(tmp_path / "t.json", interleaved))))
    assert sorted(r["trace_id"] for r in rows) == sorted((first, second))
    assert {r["trace_id"]: r["output"] for r in rows} == {
        t: next(rows_of_documents([e]))["output"] for t, e in zip((first, second), exports)
    }


def test_base64_ids_of_the_protobuf_json_mapping_read_as_hex():
    trace_id = _trace_ids(1)[0]
    export = conversation_to_otlp(CONVERSATIONS[0]["conversation"], trace_id=trace_id)
    for span in export["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["traceId"] = base64.b64encode(bytes.fromhex(span["traceId"])).decode()
    assert next(rows_of_documents([export]))["trace_id"] == trace_id


def test_a_trace_without_genai_spans_is_no_row():
    span = {"traceId": _trace_ids(1)[0], "spanId": "00000000000000aa", "name": "GET /", "attributes": []}
    assert list(rows_of_documents([{"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}])) == []


@pytest.mark.parametrize(
    "text,problem",
    [
        ("[]", "not an OTLP trace export"),
        ('{"resourceSpans": []}\n{"spans": []}\n', "document 2: not an OTLP trace export"),
        ('{"resourceSpans": [}', "invalid JSON"),
        ('{"resourceSpans": []}\n{oops\n', ":2: invalid JSON"),
    ],
)
def test_what_is_not_an_export_is_a_data_error_naming_where(tmp_path, text, problem):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(DataError, match=problem):
        read_otlp(str(path))


# ------------------------------------------------------------------------------------------------ span rows
def _refund(trace_id: str) -> dict[str, Any]:
    return conversation_to_otlp(
        CONVERSATIONS[1]["conversation"], trace_id=trace_id
    )  # 3 assistant turns, 2 tool results


@pytest.mark.parametrize("operation,count", [("chat", 3), ("invoke_agent", 1), ("execute_tool", 2)])
def test_one_row_per_span_of_the_chosen_operation(operation, count):
    trace_id = _trace_ids(1)[0]
    rows = list(rows_of_documents([_refund(trace_id)], f"span:{operation}"))
    assert len(rows) == count
    assert all(row["trace_id"] == trace_id for row in rows)
    assert len({row["span_id"] for row in rows}) == count


def test_a_span_row_holds_its_span_and_those_under_it():
    trace_id = _trace_ids(1)[0]
    (whole,) = rows_of_documents([_refund(trace_id)])
    (agent,) = rows_of_documents([_refund(trace_id)], "span:invoke_agent")
    chats = list(rows_of_documents([_refund(trace_id)], "span:chat"))
    assert agent["output"] == whole["output"]
    assert [len(row["output"]) for row in chats] == [2, 4, 6]  # each model call: its input and its reply
    assert chats[-1]["output"] == whole["output"]


@pytest.mark.parametrize("value", ["spans", "span:", "span", "", "chat"])
def test_a_bad_rows_option_is_a_config_error(value):
    with pytest.raises(ConfigError, match="otel_rows"):
        OtelOptions(otel_rows=value)


# ------------------------------------------------------------------------------------------------ sampling
#: (the last 56 bits of the trace id, fraction, kept): the threshold is round((1 - fraction) * 2**56).
SAMPLING = [
    (0, 1.0, True),
    (0, 0.999999, False),
    (2**56 - 1, 1e-9, True),
    (2**55, 0.5, True),
    (2**55 - 1, 0.5, False),
    (round(0.75 * 2**56), 0.25, True),
    (round(0.75 * 2**56) - 1, 0.25, False),
]


@pytest.mark.parametrize("randomness,fraction,kept", SAMPLING)
def test_sampling_keeps_a_trace_by_its_last_56_bits(randomness, fraction, kept):
    trace_id = "ab" * 2 + f"{randomness:014x}".rjust(28, "0")
    assert sampled(trace_id, fraction) is kept
    assert sampled("ff" + trace_id[2:], fraction) is kept  # the first bytes do not count


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.5, 0.9])
def test_sampling_selects_the_same_traces_whatever_the_order(fraction):
    trace_ids = _trace_ids(400)
    exports = [conversation_to_otlp(CONVERSATIONS[0]["conversation"], trace_id=t) for t in trace_ids]
    kept = {row["trace_id"] for row in rows_of_documents(exports, sample=fraction)}
    shuffled = exports[:]
    random.Random(3).shuffle(shuffled)
    assert {row["trace_id"] for row in rows_of_documents(shuffled, sample=fraction)} == kept
    assert kept == {t for t in trace_ids if sampled(t, fraction)}
    assert abs(len(kept) - fraction * 400) < 5 * (400 * fraction * (1 - fraction)) ** 0.5
    assert kept <= {row["trace_id"] for row in rows_of_documents(exports, sample=min(1.0, fraction * 2))}


@pytest.mark.parametrize("value", [0, -0.1, 1.5, float("nan"), True])
def test_a_bad_sample_is_a_config_error(value):
    with pytest.raises(ConfigError, match="sample"):
        OtelOptions(sample=value)


# ------------------------------------------------------------------------------------------------ events out
def _protobuf_round_trip(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` parsed into the real ExportLogsServiceRequest and written back as OTLP JSON (ids as hex)."""
    pytest.importorskip("opentelemetry.proto", reason="the dev extra installs opentelemetry-proto")
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    as_protobuf_json = json.loads(json.dumps(document))
    for resource in as_protobuf_json["resourceLogs"]:  # OTLP JSON writes ids as hex, the protobuf mapping base64
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    message = json_format.Parse(json.dumps(as_protobuf_json), ExportLogsServiceRequest())
    back = json_format.MessageToDict(message)
    for resource in back.get("resourceLogs", []):
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return back


def _result(**scores: Any) -> RowResult:
    row = {"trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7ad6b7169203331", "output": "x"}
    result = RowResult(0, row)
    for name, value in scores.items():
        if isinstance(value, Exception):
            result.errors[name] = {"type": type(value).__name__, "message": str(value)}
        else:
            result.results[name] = value
    return result


EVENT_CASES = {
    "score": _result(Exact=Score("Exact", 1.0, {})),
    "label and explanation": _result(Judge=Score("Judge", 0.5, {"choice": "partly", "rationale": "One of two."})),
    "error": _result(Judge=ValueError("no reply")),
    "skipped": _result(Exact=Score("Exact", None, {})),
    "several": _result(A=Score("A", 0.0, {"reason": "none"}), B=ValueError("x"), C=Score("C", 1.0, {})),
}


@pytest.mark.parametrize("result", EVENT_CASES.values(), ids=EVENT_CASES)
def test_events_parse_into_the_otlp_protobuf_messages_as_written(result):
    document = evaluation_events(result, time_ns=1_767_225_600_000_000_000)
    assert _protobuf_round_trip(document) == {key: value for key, value in document.items() if value}  # [] is left out


def test_an_events_attributes_are_the_semantic_conventions():
    (scored,) = _events_of(EVENT_CASES["label and explanation"])
    assert scored["eventName"] == EVENT_NAME == "gen_ai.evaluation.result"
    assert _attributes(scored) == {
        "gen_ai.evaluation.name": "Judge",
        "gen_ai.evaluation.score.value": 0.5,
        "gen_ai.evaluation.score.label": "partly",
        "gen_ai.evaluation.explanation": "One of two.",
    }
    assert (scored["traceId"], scored["spanId"]) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
    (failed,) = _events_of(EVENT_CASES["error"])
    assert _attributes(failed) == {"gen_ai.evaluation.name": "Judge", "error.type": "ValueError"}
    assert _events_of(EVENT_CASES["skipped"]) == []


def test_a_row_without_trace_ids_gives_unlinked_events():
    (record,) = _events_of(RowResult(0, {"output": "x", "trace_id": "not hex"}, {"E": Score("E", 1.0, {})}))
    assert "traceId" not in record and "spanId" not in record


def _events_of(result: RowResult) -> list[dict[str, Any]]:
    return [r for res in evaluation_events(result)["resourceLogs"] for s in res["scopeLogs"] for r in s["logRecords"]]


# ------------------------------------------------------------------------------------------------ the run
def test_run_scores_an_export_and_writes_linked_events_line_per_row(tmp_path):
    out, events = tmp_path / "out.jsonl", tmp_path / "events.jsonl"
    scorer = scorers.get("ToolCallValid", tools=[{"name": n} for n in ("get_weather", "get_order", "refund")])
    otel = OtelOptions(otel_out=str(events))
    result = scorers.Run(str(EXAMPLES / "agent_traces.json"), [scorer], output=str(out), otel=otel).execute()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    lines = events.read_text().splitlines()
    assert result.summary.rows == len(records) == len(lines) == len(CONVERSATIONS)
    for record, line in zip(records, lines):
        assert _protobuf_round_trip(json.loads(line)) == json.loads(line)
        (event,) = _events(_export(tmp_path / "one.jsonl", [json.loads(line)]))
        assert (event["traceId"], event["spanId"]) == (record["trace_id"], record["span_id"])
        assert _attributes(event)["gen_ai.evaluation.score.value"] == record["scores"]["ToolCallValid"]


def test_a_resumed_run_keeps_one_events_line_per_row_it_keeps(tmp_path):
    out, events = tmp_path / "out.jsonl", tmp_path / "events.jsonl"
    scorer = scorers.get("ToolCallF1")
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"output": [], "expected": [], "trace_id": t}) + "\n" for t in _trace_ids(6)))
    run = {"output": str(out), "otel": OtelOptions(otel_out=str(events))}
    scorers.Run(str(data), [scorer], **run).execute()
    full = events.read_text().splitlines()
    # a stop: the results hold 2 rows, the events (written first) 4 and a torn fifth
    out.write_text("".join(out.read_text().splitlines(keepends=True)[:2]))
    events.write_text("\n".join(full[:4]) + "\n" + full[4][:10])
    scorers.Run(str(data), [scorer], resume=True, **run).execute()
    resumed = events.read_text().splitlines()
    trace = [_events(_export(tmp_path / "l.jsonl", [json.loads(line)]))[0]["traceId"] for line in resumed]
    assert trace == _trace_ids(6)
    # fewer events lines than results rows (a first run without --otel-out): the missing ones are written
    events.write_text(full[0] + "\n")
    out.write_text("".join(out.read_text().splitlines(keepends=True)[:3]))
    scorers.Run(str(data), [scorer], resume=True, **run).execute()
    assert len(events.read_text().splitlines()) == 6


def test_the_command_line_reads_spans_and_samples(tmp_path, capsys):
    from scorers.cli import main

    out, events = tmp_path / "out.jsonl", tmp_path / "events.jsonl"
    args = ["run", str(EXAMPLES / "agent_traces.json"), "-s", "ToolCallValid", "-p", TOOLS, "-o", str(out)]
    code = main([*args, "--otel-rows", "span:chat", "--sample", "0.5", "--otel-out", str(events)])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    everything = list(otlp_rows(str(EXAMPLES / "agent_traces.json"), "span:chat"))
    assert [r["span_id"] for r in rows] == [r["span_id"] for r in everything if sampled(r["trace_id"], 0.5)]
    assert 0 < len(rows) < len(everything)
    assert len(events.read_text().splitlines()) == len(rows)


@pytest.mark.parametrize("flag", [["--sample", "0.5"], ["--otel-rows", "span:chat"]])
def test_trace_options_without_an_export_name_their_flag(tmp_path, capsys, flag):
    from scorers.cli import main

    code = main(
        ["run", str(EXAMPLES / "conversations.jsonl"), "-s", "ToolCallF1", "-o", str(tmp_path / "o.jsonl"), *flag]
    )
    assert code == 2
    assert f"{flag[0]} needs an OTLP trace export" in capsys.readouterr().err


def test_a_json_array_of_rows_is_still_rows(tmp_path):
    data = tmp_path / "rows.json"
    data.write_text(json.dumps([{"output": "a", "expected": "a"}]))
    assert scorers.Run(str(data), ["ExactMatch"], output=str(tmp_path / "o.jsonl")).execute().summary.rows == 1
