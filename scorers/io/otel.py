"""OpenTelemetry in and out: OTLP JSON trace exports read as rows, and scores written as OpenTelemetry GenAI
evaluation events (``gen_ai.evaluation.result``) in OTLP JSON logs.

**Traces in.** An export is the JSON of an ``ExportTraceServiceRequest`` (``resourceSpans``, ``scopeSpans``,
``spans``), a whole file or JSON Lines of them, as the OpenTelemetry Collector's file exporter writes them. A trace's
spans may be spread over several documents; they are gathered by trace id first. :func:`otlp_rows` gives one row
per trace (``rows="trace"``), or one per span whose ``gen_ai.operation.name`` is ``OP`` (``rows="span:OP"``), that
span and the spans under it. A row holds ``trace_id`` and ``span_id`` (lowercase hex; for a trace, its root
span's), ``input`` (the text of the conversation's first user message, None when it has none) and ``output`` (the
conversation, read by :func:`scorers.agents.read_conversation`, in the OpenAI chat format; a trace it cannot read
keeps its spans as OTLP JSON, which the scorers then report as that row's error). A trace with no GenAI span
(no ``gen_ai.*`` attribute) is not a row.

**Sampling** (``sample``) keeps a trace by its id alone, so every run keeps the same traces, in whatever order the
file lists them: the OpenTelemetry consistent probability sampling rule, the randomness being the trace id's last
7 bytes (56 bits) and the rejection threshold ``round((1 - sample) * 2**56)`` (:func:`sampled`).

**Results out.** :class:`EvaluationEvents` writes, per row, one line: an ``ExportLogsServiceRequest`` holding one
log record per score, with the event name ``gen_ai.evaluation.result`` and the attributes the semantic conventions
(v1.41.0) give it, ``traceId`` and ``spanId`` the row's ``trace_id`` and ``span_id``.

>>> conversation = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
>>> export = conversation_to_otlp(conversation, trace_id="0af7651916cd43dd8448eb211c80319c")
>>> [span["name"] for span in export["resourceSpans"][0]["scopeSpans"][0]["spans"]]
['invoke_agent', 'chat']
>>> row = next(rows_of_documents([export]))
>>> row["trace_id"], row["input"], row["output"] == conversation
('0af7651916cd43dd8448eb211c80319c', 'Hi', True)
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .._util import json_error_reason
from .._version import __version__
from ..errors import ConfigError, DataError, ScorerInputError
from .encoding import json_line
from .writers import ResultWriter

if TYPE_CHECKING:
    from ..batch import RowResult

__all__ = [
    "EVENT_NAME",
    "SEMCONV_VERSION",
    "is_otlp_traces",
    "read_otlp",
    "otlp_rows",
    "rows_of_documents",
    "sampled",
    "conversation_to_otlp",
    "evaluation_events",
    "EvaluationEvents",
]

#: The event a score is written as, and the version of the semantic conventions its attributes follow.
EVENT_NAME = "gen_ai.evaluation.result"
SEMCONV_VERSION = "1.41.0"
#: Bits of a trace id that consistent probability sampling reads as its randomness (the last 7 bytes).
_RANDOM_BITS = 56
_ID_BYTES = {"traceId": 16, "spanId": 8}
_HEX_ID = {key: re.compile(f"[0-9a-f]{{{2 * size}}}") for key, size in _ID_BYTES.items()}
#: Metadata keys a score's label and explanation are taken from, first found first.
_LABEL_KEYS = ("choice", "label", "verdict")
_EXPLANATION_KEYS = ("explanation", "rationale", "reason")


# ---------------------------------------------------------------------------------------------------- traces in
def is_otlp_traces(path: str) -> bool:
    """Whether ``path``, a ``.json`` file, holds JSON objects (an OTLP export or JSON Lines of them) rather than the
    JSON array of rows a ``.json`` input is otherwise.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "traces.json")
    >>> _ = open(path, "w").write('  {"resourceSpans": []}')
    >>> is_otlp_traces(path), is_otlp_traces(path + ".missing")
    (True, False)
    """
    if path == "-" or not os.path.isfile(path):
        return False
    with open(path, "rb") as fh:
        head = fh.read(4096)
    head = head[len(codecs.BOM_UTF8) :] if head.startswith(codecs.BOM_UTF8) else head
    return head.lstrip()[:1] == b"{"


def read_otlp(path: str) -> list[dict[str, Any]]:
    """The documents of the OTLP JSON file ``path``: one JSON document (indented or not), or JSON Lines of them.
    What is not JSON, or a document with no ``resourceSpans`` list, is a :class:`DataError` naming the line."""
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte offset {exc.start}); scorers reads UTF-8 only") from None
    try:
        documents = [json.loads(text)]
    except json.JSONDecodeError as whole:
        if whole.msg != "Extra data":
            raise DataError(f"{path}:{whole.lineno}: invalid JSON ({json_error_reason(whole)})") from None
        documents = list(_json_lines(path, text))
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{path}: unreadable JSON ({exc})") from None
    for index, document in enumerate(documents):
        if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
            where = f"{path}: document {index + 1}" if len(documents) > 1 else path
            raise DataError(
                f"{where}: not an OTLP trace export (a JSON object with a resourceSpans list); a .json input "
                "of rows is a JSON array of objects"
            )
    return documents


def _json_lines(path: str, text: str) -> Iterator[Any]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield json.loads(line)
            except (ValueError, RecursionError) as exc:
                reason = json_error_reason(exc) if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise DataError(f"{path}:{lineno}: invalid JSON ({reason})") from None


def otlp_rows(path: str, rows: str = "trace", sample: float | None = None) -> Iterator[dict[str, Any]]:
    """The rows of the OTLP trace export ``path`` (see the module): one per trace, or per span of the operation
    ``OP`` with ``rows="span:OP"``; with ``sample``, those of the traces :func:`sampled` keeps."""
    return rows_of_documents(read_otlp(path), rows, sample, where=path)


def rows_of_documents(
    documents: Iterable[Mapping[str, Any]], rows: str = "trace", sample: float | None = None, *, where: str = "input"
) -> Iterator[dict[str, Any]]:
    """The rows of OTLP trace documents (:func:`otlp_rows`), traces in the order their first span comes."""
    operation = _operation(rows)
    for trace_id, spans in _traces(documents, where).items():
        if sample is not None and not sampled(trace_id, sample):
            continue
        if not any(_is_genai(span) for span in spans):
            continue
        if operation is None:
            yield _row(trace_id, _root(spans), spans)
            continue
        chosen = [span for span in spans if _attribute(span, "gen_ai.operation.name") == operation]
        for span in sorted(chosen, key=_start):
            yield _row(trace_id, span, _subtree(span, spans))


def _operation(rows: str) -> str | None:
    """The operation of ``span:OP``, None for ``trace``."""
    if rows == "trace":
        return None
    kind, _, operation = rows.partition(":")
    if kind != "span" or not operation:
        raise ConfigError(f"otel_rows={rows!r}: give trace, or span:OP (OP a gen_ai.operation.name such as chat)")
    return operation


def _traces(documents: Iterable[Mapping[str, Any]], where: str) -> dict[str, list[dict[str, Any]]]:
    """Every span, by trace id (lowercase hex), in the order the traces first appear."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for number, document in enumerate(documents, 1):
        for resource in _list(document, "resourceSpans"):
            for scope in _list(resource, "scopeSpans"):
                for span in _list(scope, "spans"):
                    if not isinstance(span, dict):
                        raise DataError(f"{where}: document {number}: a span is not a JSON object")
                    trace_id = _hex(span.get("traceId"), "traceId")
                    if trace_id is None:
                        raise DataError(
                            f"{where}: document {number}: span {span.get('name')!r} has no valid traceId "
                            f"(32 hex digits), got {span.get('traceId')!r}"
                        )
                    traces.setdefault(trace_id, []).append(span)
    return traces


def _list(container: Any, key: str) -> list[Any]:
    value = container.get(key) if isinstance(container, Mapping) else None
    return value if isinstance(value, list) else []


def _hex(value: Any, key: str) -> str | None:
    """An OTLP id as lowercase hex: OTLP JSON writes hex; the protobuf JSON mapping (some exporters) base64."""
    if not isinstance(value, str):
        return None
    if _HEX_ID[key].fullmatch(value.lower()):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == _ID_BYTES[key] else None


def sampled(trace_id: str, fraction: float) -> bool:
    """Whether a sample of ``fraction`` of the traces holds the trace ``trace_id`` (32 hex digits): its last 56
    bits, read as a number, reach the threshold ``round((1 - fraction) * 2**56)``. A trace kept at one fraction is
    kept at every larger one (this one's last 56 bits are 0.807 of 2**56: kept from 0.193 on).

    >>> sampled("4bf92f3577b34da6a3ce929d0e0e4736", 0.2), sampled("4bf92f3577b34da6a3ce929d0e0e4736", 0.1)
    (True, False)
    """
    threshold = round((1 - Fraction(fraction)) * 2**_RANDOM_BITS)
    return int(trace_id[-_RANDOM_BITS // 4 :], 16) >= threshold


def _attribute(span: Mapping[str, Any], key: str) -> Any:
    for attribute in _list(span, "attributes"):
        if isinstance(attribute, Mapping) and attribute.get("key") == key:
            value = attribute.get("value")
            return next(iter(value.values()), None) if isinstance(value, Mapping) else None
    return None


def _is_genai(span: Mapping[str, Any]) -> bool:
    return any(
        isinstance(a, Mapping) and str(a.get("key", "")).startswith("gen_ai.") for a in _list(span, "attributes")
    )


def _start(span: Mapping[str, Any]) -> int:
    try:
        return int(span.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


def _root(spans: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The trace's root: the first span (by start) whose parent is not in the trace."""
    ids = {_hex(span.get("spanId"), "spanId") for span in spans}
    roots = [span for span in spans if _hex(span.get("parentSpanId"), "spanId") not in ids]
    return min(roots or spans, key=_start)


def _subtree(top: dict[str, Any], spans: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``top`` and the spans under it."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    for span in spans:
        children.setdefault(_hex(span.get("parentSpanId"), "spanId"), []).append(span)
    found, pending = [], [top]
    while pending:
        span = pending.pop()
        found.append(span)
        pending.extend(children.get(_hex(span.get("spanId"), "spanId"), []))
    return found


def _row(trace_id: str, span: Mapping[str, Any], spans: list[dict[str, Any]]) -> dict[str, Any]:
    from ..agents import read_conversation

    document = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    row: dict[str, Any] = {"trace_id": trace_id, "span_id": _hex(span.get("spanId"), "spanId"), "input": None}
    try:
        conversation = read_conversation(document, scorer="otel", field="output")
    except ScorerInputError:
        row["output"] = document  # the scorers say what is wrong with it, as this row's error
        return row
    users = conversation.by_role("user")
    row["input"] = users[0].content if users else None
    row["output"] = conversation.to_list()
    return row


# ---------------------------------------------------------------------------------------------------- writing spans
def conversation_to_otlp(
    conversation: Any, *, trace_id: str, start_ns: int = 1_767_225_600_000_000_000, step_ns: int = 1_000_000
) -> dict[str, Any]:
    """An OTLP trace export (an ``ExportTraceServiceRequest`` as JSON) of ``conversation`` (any format
    :func:`scorers.agents.read_conversation` reads) under the GenAI semantic conventions: an ``invoke_agent``
    root span, then a ``chat`` span per assistant message (its input: the messages before it; its output: it), a
    last ``chat`` span with the messages after the last assistant message, and an ``execute_tool`` span for a
    tool result that names its tool. Span ids count up from 1; span ``i`` starts at ``start_ns + i * step_ns``.
    Not carried: attachments, and a failed tool result's error flag when it names no tool.
    """
    from ..agents import read_conversation

    messages = list(read_conversation(conversation, scorer="conversation_to_otlp", field="conversation"))
    system = messages.pop(0) if messages and messages[0].role == "system" else None
    spans = [_span(trace_id, 1, None, "invoke_agent", start_ns, step_ns, [("gen_ai.operation.name", "invoke_agent")])]

    def chat(inputs: list[Any], output: Any) -> None:
        attributes = [("gen_ai.operation.name", "chat")]
        if system is not None:
            attributes.append(("gen_ai.system_instructions", json.dumps([_text_part(system.content)])))
        attributes.append(("gen_ai.input.messages", json.dumps([_semconv(m) for m in inputs])))
        if output is not None:
            attributes.append(("gen_ai.output.messages", json.dumps([_semconv(output)])))
        spans.append(_span(trace_id, len(spans) + 1, 1, "chat", start_ns, step_ns, attributes))

    answered = 0  # the messages up to the last assistant message
    for index, message in enumerate(messages):
        if message.role == "assistant":
            chat(messages[:index], message)
            answered = index + 1
        elif message.role == "tool" and message.name is not None:
            spans.append(_tool_span(trace_id, len(spans) + 1, start_ns, step_ns, message))
    if answered < len(messages) or len(spans) == 1:
        chat(messages, None)
    resource = {"attributes": [_key_value("service.name", "scorers-example")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "scorers"}, "spans": spans}]}]}


def _span(
    trace_id: str, number: int, parent: int | None, name: str, start_ns: int, step_ns: int, attributes: list[Any]
) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": trace_id, "spanId": f"{number:016x}"}
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    start = start_ns + number * step_ns
    span |= {
        "name": name,
        "kind": 3 if name == "chat" else 1,  # CLIENT for a model call, INTERNAL otherwise
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + step_ns // 2),
        "attributes": [_key_value(key, value) for key, value in attributes],
    }
    return span


def _tool_span(trace_id: str, number: int, start_ns: int, step_ns: int, message: Any) -> dict[str, Any]:
    attributes = [("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", message.name)]
    if message.tool_call_id is not None:
        attributes.append(("gen_ai.tool.call.id", message.tool_call_id))
    attributes.append(("gen_ai.tool.call.result", message.content))
    span = _span(trace_id, number, 1, "execute_tool", start_ns, step_ns, attributes)
    if message.is_error:
        span["status"] = {"code": 2}
    return span


def _text_part(content: str | None) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _semconv(message: Any) -> dict[str, Any]:
    """A message in the GenAI semantic conventions' shape (``role``, ``parts``)."""
    from ..agents.model import thaw

    if message.role == "tool":
        parts = [{"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}]
    else:
        parts = [_text_part(message.content)] if message.content is not None else []
        parts += [
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": thaw(call.arguments)}
            for call in message.tool_calls
        ]
    out: dict[str, Any] = {"role": message.role, "parts": parts}
    if message.name is not None and message.role != "tool":
        out["name"] = message.name
    return out


def _key_value(key: str, value: Any) -> dict[str, Any]:
    """An OTLP ``KeyValue``: the key and its ``AnyValue`` (64-bit integers as JSON strings, as OTLP JSON has them)."""
    if isinstance(value, bool):
        kind, value = "boolValue", value
    elif isinstance(value, int):
        kind, value = "intValue", str(value)
    elif isinstance(value, float):
        kind = "doubleValue"
    else:
        kind = "stringValue"
    return {"key": key, "value": {kind: value}}


# ---------------------------------------------------------------------------------------------------- results out
def evaluation_events(result: RowResult, *, time_ns: int | None = None) -> dict[str, Any]:
    """The ``ExportLogsServiceRequest`` (as OTLP JSON) of one row's scores: a ``gen_ai.evaluation.result`` log
    record per scorer that scored the row or failed on it (a skipped score has none), linked to the row's
    ``trace_id`` and ``span_id`` when it has them (32 and 16 hex digits).

    >>> from scorers.batch import RowResult
    >>> from scorers.score import Score
    >>> row = {"trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7ad6b7169203331"}
    >>> result = RowResult(0, row, {"Politeness": Score("Politeness", 1.0, {"choice": "polite", "rationale": "Says please."})})
    >>> record = evaluation_events(result, time_ns=1)["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    >>> record["eventName"], record["traceId"], record["spanId"]
    ('gen_ai.evaluation.result', '0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331')
    >>> [(a["key"], *a["value"].values()) for a in record["attributes"]]  # doctest: +NORMALIZE_WHITESPACE
    [('gen_ai.evaluation.name', 'Politeness'), ('gen_ai.evaluation.score.value', 1.0),
     ('gen_ai.evaluation.score.label', 'polite'), ('gen_ai.evaluation.explanation', 'Says please.')]
    """
    stamp = str(time.time_ns() if time_ns is None else time_ns)
    link = {key: _hex(result.row.get(field), key) for key, field in (("traceId", "trace_id"), ("spanId", "span_id"))}
    records = []
    for name, score in result.results.items():
        if score.score is None:
            continue
        attributes = [
            _key_value("gen_ai.evaluation.name", name),
            _key_value("gen_ai.evaluation.score.value", float(score.score)),
        ]
        for key, keys in (
            ("gen_ai.evaluation.score.label", _LABEL_KEYS),
            ("gen_ai.evaluation.explanation", _EXPLANATION_KEYS),
        ):
            text = next((score.metadata[k] for k in keys if isinstance(score.metadata.get(k), str)), None)
            if text is not None:
                attributes.append(_key_value(key, text))
        records.append(_log_record(stamp, link, attributes))
    for name, error in result.errors.items():
        attributes = [
            _key_value("gen_ai.evaluation.name", name),
            _key_value("error.type", str(error.get("type", "_OTHER"))),
        ]
        records.append(_log_record(stamp, link, attributes))
    if not records:
        return {"resourceLogs": []}
    scope = {"scope": {"name": "scorers", "version": __version__}, "logRecords": records}
    resource = {"attributes": [_key_value("service.name", "scorers")]}
    return {"resourceLogs": [{"resource": resource, "scopeLogs": [scope]}]}


def _log_record(stamp: str, link: Mapping[str, str | None], attributes: list[Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"timeUnixNano": stamp, "eventName": EVENT_NAME, "attributes": attributes}
    record |= {key: value for key, value in link.items() if value is not None}
    return record


class EvaluationEvents:
    """The file ``path`` of evaluation events: a JSON line per row (:func:`evaluation_events`), what the
    Collector's ``otlpjsonfile`` receiver reads. Each line is handed to the OS as it is written, before the row's
    results line, so a stopped run loses none; resumed (``resume=previous``, the records the results file keeps),
    the file keeps a line per kept record (writing those it lacks from the records) and the rest is cut.
    """

    def __init__(self, path: str, *, resume: Sequence[Mapping[str, Any]] | None = None) -> None:
        kept = _cut_lines(path, len(resume)) if resume is not None else 0
        self._writer = ResultWriter(path, append=resume is not None)
        if resume is not None:
            from ..batch import RowResult

            for record in resume[kept:]:
                self.write(RowResult.from_record(record))

    def write(self, result: RowResult) -> None:
        """Write ``result`` 's events and hand them to the OS."""
        self._writer.write_lines(json_line(evaluation_events(result)))
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> "EvaluationEvents":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _cut_lines(path: str, count: int) -> int:
    """Cut ``path`` after its first ``count`` whole lines (a torn last line is dropped); how many it keeps."""
    if not os.path.exists(path):
        return 0
    kept = 0
    with open(path, "r+b") as fh:
        while kept < count:
            line = fh.readline()
            if not line.endswith(b"\n"):
                fh.seek(fh.tell() - len(line))
                break
            kept += 1
        fh.truncate(fh.tell())
    return kept
