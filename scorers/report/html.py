"""One self-contained HTML page from results files: summary with CIs, histograms, comparison, judges, worst rows
(with why a tool-call scorer gave each its score).

The page loads nothing: its CSS and its charts (inline SVG) are in the file, it
has no JavaScript, and its Content-Security-Policy forbids any request and any
script. Row text is untrusted and is HTML-escaped (Jinja2 autoescaping).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .._util import ABSENT, lookup
from .._version import __version__
from ..errors import ConfigError, DataError
from ..llm.usage import Prices
from ..stats.compare import CONFIDENCE
from . import charts
from .jury import meta_eval_jury_section, results_jury_sections
from .leaderboard import leaderboard_section
from .reliability import reliability_context
from .results import ResultsFile

__all__ = ["write_report"]

#: Row fields shown next to a low score or an error, and the columns they are read from by default.
SHOWN_FIELDS = ("input", "output", "expected")
#: Other columns shown, at most, in place of fields a file has no column for (a run with ``--map``).
MAX_OTHER_COLUMNS = 3
#: Characters of a shown field kept before it is cut (the page stays small for long rows).
MAX_TEXT = 600
#: Items of each kind (calls left unmatched, arguments that disagree, invalid calls, ...) a row's explanation
#: lists; the others are counted ("and 3 more").
MAX_EXPLAINED = 5
#: Characters of a tool name, a call's arguments, an argument's value or an error kept in an explanation.
MAX_VALUE = 120


def _text(value: Any) -> str:
    if value is ABSENT or value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _compact(value: Any) -> str:
    """A value as one line of JSON (a string keeps its quotes: ``"1"`` is not ``1``), cut to :data:`MAX_VALUE`."""
    return _cut(json.dumps(value, ensure_ascii=False, default=str))


def _call(item: Any) -> str:
    """A call of the tool-call scorers' metadata (``index``, ``name``, ``arguments``, and ToolCallValid's ``error``)
    on one line: ``#1 book {"hotel_id": 3}``; anything else as JSON."""
    if not isinstance(item, Mapping) or "name" not in item:
        return _compact(item)
    text = f"#{item.get('index', '?')} {_cut(str(item['name']))} {_compact(item.get('arguments', {}))}"
    return text if item.get("error") is None else f"{text}: {_cut(str(item['error']))}"


def _place(key: str, value: Any) -> str:
    """One key of TrajectoryMatch's ``parts_at``: ``message #1``, ``expected call #0``."""
    return f"{key.replace('_', ' ')} {f'#{value}' if isinstance(value, int) else _compact(value)}"


def _disagreements(pairs: list[Any]) -> list[str]:
    """The argument verdicts that disagreed, over ToolCallMatch's ``pairs`` (other shapes are not read)."""
    found = []
    for pair in pairs:
        verdicts = pair.get("arguments") if isinstance(pair, Mapping) else None
        for verdict in verdicts if isinstance(verdicts, list) else ():
            if isinstance(verdict, Mapping) and verdict.get("agree") is False:
                sides = ", ".join(
                    f"{side} {_compact(verdict[side]) if side in verdict else 'absent'}"
                    for side in ("expected", "actual")
                )
                found.append(
                    f"{_cut(str(pair.get('name')))} #{pair.get('expected')}↔#{pair.get('actual')} · "
                    f"{_cut(str(verdict.get('path')))} ({verdict.get('rule')}): {sides}"
                )
    return found


def _explanation(metadata: Mapping[str, Any]) -> list[tuple[str, list[str], int]]:
    """Why a row got its score, read from the metadata keys the tool-call scorers write, whichever scorer wrote
    them: ``(heading, the first MAX_EXPLAINED items, how many more)`` per key present and not empty.

    >>> _explanation({"unmatched_expected": [{"index": 1, "name": "get_weather", "arguments": {"city": "Paris"}}],
    ...               "unmatched_actual": [], "pairs": [{"expected": 0, "actual": 0, "name": "search", "arguments": [
    ...                   {"path": "limit", "rule": "exact", "agree": False, "expected": 10, "actual": "10"}]}]})
    [('unmatched expected calls', ['#1 get_weather {"city": "Paris"}'], 0), ('arguments that disagree', ['search #0↔#0 · limit (exact): expected 10, actual "10"'], 0)]
    """
    groups: list[tuple[str, list[str]]] = []
    if isinstance(reason := metadata.get("reason"), str):
        groups.append(("reason", [_cut(reason)]))
    if isinstance(parts := metadata.get("parts_at"), Mapping):
        where = ", ".join(_place(str(key), value) for key, value in parts.items() if key != "reason")
        groups.append(("trajectories part at", [f"{where}: {_cut(str(parts.get('reason')))}"]))
    for key, heading in (
        ("unmatched_expected", "unmatched expected calls"),
        ("unmatched_actual", "unmatched actual calls"),
    ):
        if isinstance(calls := metadata.get(key), list):
            groups.append((heading, [_call(call) for call in calls]))
    if isinstance(pairs := metadata.get("pairs"), list):
        groups.append(("arguments that disagree", _disagreements(pairs)))
    if isinstance(invalid := metadata.get("invalid"), list):
        groups.append(("invalid calls", [_call(call) for call in invalid]))
    for key in ("missing", "extra"):
        if isinstance(names := metadata.get(key), list):
            groups.append((key, [_cut(str(name)) for name in names]))
    return [(heading, items[:MAX_EXPLAINED], max(0, len(items) - MAX_EXPLAINED)) for heading, items in groups if items]


def _labels(paths: Sequence[str]) -> list[str]:
    """File names, or the paths as given where two files share a name."""
    names = [Path(p).name for p in paths]
    return [name if names.count(name) == 1 else str(path) for name, path in zip(names, paths)]


def _mean_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95 % interval of the mean that :func:`scorers.stats.compare` gives (scipy's BCa bootstrap, its
    resamples and seed); None for fewer than two rows."""
    import numpy as np

    from ..stats.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, mean_interval

    low, high = mean_interval(np.asarray(values, dtype=float), DEFAULT_RESAMPLES["bs"], DEFAULT_SEED)
    return None if low is None or high is None else (low, high)


def _comparison(files: list[ResultsFile], labels: list[str], key: str | None) -> dict[str, Any] | None:
    """:func:`scorers.stats.compare` of the files (the first is the baseline), and per-row difference charts."""
    if len(files) < 2:
        return None
    from ..stats.compare import align_rows, compare, format_p_value

    result = compare([f.path for f in files], key=key)
    names = dict(zip(result.files, labels))
    figures = [
        {
            "scorer": f.scorer,
            "figure": f.figure,
            "rows": f.rows,
            "excluded": f.excluded,
            "note": f.note,
            "direction": {True: "higher is better", False: "lower is better", None: "direction unknown"}[
                f.higher_is_better
            ],
            "systems": [
                {
                    **vars(s),
                    "label": names[s.file],
                    "p_text": None if s.p_value is None else format_p_value(s.p_value, result.alpha),
                }
                for s in f.systems
            ],
        }
        for f in result.figures
    ]
    aligned = align_rows([f.path for f in files], [f.records for f in files], key)
    charts_ = []
    for name in dict.fromkeys(f.scorer for f in result.figures):
        base = [_score(r, name) for r in aligned[0]]
        series = {
            f"{label} − {labels[0]}": [
                b - a for a, b in zip(base, (_score(r, name) for r in records)) if a is not None and b is not None
            ]
            for label, records in zip(labels[1:], aligned[1:])
        }
        charts_.append({"scorer": name, "svg": charts.differences(series, title=f"{name}: per-row differences")})
    return {
        "figures": figures,
        "charts": charts_,
        "not_compared": result.not_compared,
        "rows": result.rows,
        "matched_by": f"the field {key}" if key else "position",
        "resamples": result.resamples,
        "seed": result.seed,
        "alpha": result.alpha,
        "test": {"bs": "paired bootstrap", "ar": "approximate randomisation"}[result.test],
    }


def _format_file(source: str | Path | Mapping[str, Any], kind: str, fmt: str, version: int, write_one: str) -> Any:
    """The ``kind`` file at ``source`` (or its dict), read and checked to be in scorers' format ``fmt`` at
    ``version``; a DataError names the file and what is wrong (missing, invalid JSON, another format or version)."""
    if isinstance(source, Mapping):
        data: Any = source
    else:
        try:
            with open(source, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            raise DataError(f"{source}: no such file") from None
        except json.JSONDecodeError as exc:
            raise DataError(f"{source}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    where = kind if isinstance(source, Mapping) else str(source)
    if not isinstance(data, Mapping) or data.get("format") != fmt:
        raise DataError(f'{where}: not a {kind} file (no "format": "{fmt}"); write one with {write_one}')
    if data.get("format_version") != version:
        raise DataError(
            f"{where}: {kind} format_version {data.get('format_version')!r}; this scorers reads version {version}"
        )
    return data


def _meta_eval(path: str) -> dict[str, Any]:
    """A meta-eval JSON file (:mod:`scorers.stats.metaeval`'s format) as the page shows it: figures, confusion."""
    from ..stats.metaeval import FORMAT, FORMAT_VERSION
    from . import shapes

    data = _format_file(
        path,
        "meta-eval",
        FORMAT,
        FORMAT_VERSION,
        "python -m scorers meta-eval DATA -s JUDGE --label FIELD -o META.json",
    )
    shapes.check(data, shapes.MetaEvalFile, path, "meta-eval")
    confusion = data.get("confusion")
    svg = None
    if confusion:
        svg = charts.confusion(
            confusion["matrix"],
            confusion["labels"],
            title=f"{data['judge']['name']} vs {data['label']}",
            rows_label=f"label ({confusion['rows']})",
            columns_label=confusion["columns"],
        )
    failures = [
        (f.get("key", f["index"]), "; ".join(f"{e['type']}: {_text(e['message'])}" for e in f["errors"]))
        for f in data["failures"][:50]
    ]
    return {
        **data,
        "path": path,
        "label_field": data["label"],
        "svg": svg,
        "failure_rows": failures,
        "model": (data["judge"].get("signature") or {}).get("model"),
        "jury_section": meta_eval_jury_section(data),
    }


def _calibration(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """A calibration file (``calibrate --scores -o``) or its dict, as the page shows it: the reliability diagram
    and the held-out figures before and after the map."""
    from ..calibration.scores import FORMAT, FORMAT_VERSION

    data = _format_file(
        source,
        "calibration",
        FORMAT,
        FORMAT_VERSION,
        "python -m scorers calibrate LABELS.jsonl -s JUDGE --label FIELD --scores isotonic -o MAP.json",
    )
    return reliability_context(data)


def _correlation(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """A correlation file (``correlate -o``, :mod:`scorers.stats.correlation`'s format) or its dict, as the page
    shows it: per human column a table of every scorer's figures and a chart of one coefficient (Spearman's when
    given) with its intervals; the tests between metrics."""
    from ..stats.correlation import FORMAT, FORMAT_VERSION
    from . import shapes

    data = _format_file(
        source,
        "correlation",
        FORMAT,
        FORMAT_VERSION,
        "python -m scorers correlate RESULTS.jsonl --human COLUMN -o CORR.json",
    )
    shapes.check(
        data, shapes.CorrelationFile, "correlation" if isinstance(source, Mapping) else str(source), "correlation"
    )
    figures = data["figures"]
    coefficients = list(dict.fromkeys(f["coefficient"] for f in figures))
    levels = list(dict.fromkeys(f["level"] for f in figures))
    charted = "spearman" if "spearman" in coefficients else coefficients[0] if coefficients else None
    found = {(f["scorer"], f["human"], f["level"], f["coefficient"]): f for f in figures}
    humans = []
    for human in data["human"]:
        rows = []
        for scorer in data["scorers"]:
            for level in levels:
                cells = [found[(scorer, human, level, c)] for c in coefficients]
                rows.append(
                    {
                        "scorer": scorer,
                        "level": level,
                        "n": cells[0]["n"],
                        "skipped": cells[0]["skipped"],
                        "cells": cells,
                    }
                )
        svg = None
        if charted is not None:
            bars = {
                scorer: {
                    level: (f["value"], f["low"], f["high"])
                    for level in levels
                    for f in [found[(scorer, human, level, charted)]]
                }
                for scorer in data["scorers"]
            }
            svg = charts.correlations(bars, title=f"{human}: {charted}", ylabel=f"{charted} with {human}")
        humans.append({"name": human, "rows": rows, "svg": svg})
    label = ("" if isinstance(source, Mapping) else str(source)) or data.get("results") or ""
    return {**data, "label": label, "coefficients": coefficients, "charted": charted, "humans": humans}


def _score(record: Mapping[str, Any], name: str) -> float | None:
    """A row's score of ``name``; None when it failed or gave none (as :func:`scorers.stats.compare` leaves it out)."""
    value = record["scores"].get(name)
    return None if value is None or name in (record.get("errors") or {}) else float(value)


@dataclass(frozen=True)
class _Columns:
    """The columns a file's rows are shown with: ``(heading, column or dotted path)``, and the fields of
    :data:`SHOWN_FIELDS` it has no column for (their place taken by its other columns)."""

    shown: tuple[tuple[str, str], ...]
    missing: tuple[str, ...]

    @classmethod
    def of(cls, results: ResultsFile, mapping: Mapping[str, str]) -> "_Columns":
        """``input``, ``output`` and ``expected`` from the columns ``mapping`` names (``output (response)``),
        else their own; fields with neither leave room for up to :data:`MAX_OTHER_COLUMNS` other columns,
        which is where a run's ``--map output=response`` left its output.

        >>> import json, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
        >>> _ = open(path, "w").write(json.dumps({"id": 1, "response": "Paris", "expected": "Paris",
        ...                                       "scores": {"ExactMatch": 1.0}}) + "\\n")
        >>> _Columns.of(ResultsFile.read(path), {})
        _Columns(shown=(('expected', 'expected'), ('response', 'response')), missing=('input', 'output'))
        """
        rows = [results.row(i) for i in range(len(results.records))]
        shown = [
            (name if name not in mapping else f"{name} ({mapping[name]})", mapping.get(name, name))
            for name in SHOWN_FIELDS
            if name in mapping or any(lookup(row, name) is not ABSENT for row in rows)
        ]
        missing = tuple(name for name in SHOWN_FIELDS if name not in mapping and (name, name) not in shown)
        if missing:
            taken = {column for _, column in shown} | {"id"}
            others = [column for column in dict.fromkeys(key for row in rows for key in row) if column not in taken]
            shown += [(column, column) for column in others[:MAX_OTHER_COLUMNS]]
        return cls(tuple(shown), missing)


class _Row:
    """One row of a results file as the page shows it."""

    def __init__(self, results: ResultsFile, index: int, columns: _Columns, scorer: str | None) -> None:
        record = results.records[index]
        row = results.row(index)
        self.line = index + 1
        self.id = _text(row.get("id", ""))
        self.fields = [(heading, _text(lookup(row, column))) for heading, column in columns.shown]
        self.score = None if scorer is None else record["scores"].get(scorer)
        metadata = results.metadata(record, scorer) if scorer else {}
        rationale = metadata.get("rationale")
        self.choice = _text(metadata.get("choice"))
        self.rationale = _text(" | ".join(map(str, rationale)) if isinstance(rationale, list) else rationale)
        self.explanation = _explanation(metadata)
        self.errors = [
            (name, _text(e.get("type")), _text(e.get("message"))) for name, e in (record.get("errors") or {}).items()
        ]


def _context(
    files: list[ResultsFile],
    labels: list[str],
    mapping: Mapping[str, str],
    prices: Prices | None,
    lowest: int,
    max_errors: int,
    key: str | None,
) -> dict[str, Any]:
    """What the page template renders of the results ``files`` (see :func:`write_report` for the options)."""
    scorers = list(dict.fromkeys(name for f in files for name in f.scorers))
    summaries = [f.summary(prices) for f in files]
    summary_rows = [_summary_row(name, files, summaries) for name in scorers]
    histograms = [_histogram(name, files, labels) for name in scorers]
    judges = [
        _judge_section(name, files, labels, summaries) for name in scorers if any(f.is_judge(name) for f in files)
    ]
    per_file = [_file_section(results, label, mapping, lowest, max_errors) for results, label in zip(files, labels)]
    return {
        "version": __version__,
        "files": [
            {"label": label, "path": f.path, "rows": len(f.records), "metadata": f.has_metadata}
            for f, label in zip(files, labels)
        ],
        "confidence": CONFIDENCE,
        "summary": summary_rows,
        "comparison": _comparison(files, labels, key),
        "histograms": histograms,
        "judges": judges,
        "per_file": per_file,
        "lowest": lowest,
        "max_errors": max_errors,
        "without_metadata": _judges_without_metadata(files, labels),
    }


def _judges_without_metadata(files: list[ResultsFile], labels: list[str]) -> list[tuple[str, list[str]]]:
    """``(label, judges)`` of each file written without metadata that holds judges' scores (whose rationales and
    choices it therefore lacks)."""
    return [
        (label, judges_run)
        for f, label in zip(files, labels)
        if not f.has_metadata and (judges_run := _judges(f.scorers))
    ]


def _summary_row(name: str, files: list[ResultsFile], summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary table's row of scorer ``name``: per file, its summary figures with the mean's confidence
    interval, or ``None`` where the file has no such scorer."""
    cells: list[dict[str, Any] | None] = []
    for results, summary in zip(files, summaries):
        figures = summary.get(name)
        if figures is None:
            cells.append(None)
            continue
        ci = _mean_ci(results.values(name)) if figures["n"] else None
        cells.append({**figures, "ci": ci})
    return {"scorer": name, "cells": cells}


def _histogram(name: str, files: list[ResultsFile], labels: list[str]) -> dict[str, Any]:
    """The histogram of scorer ``name``'s values in each file that has it."""
    values = {label: f.values(name) for f, label in zip(files, labels) if name in f.scorers}
    return {"scorer": name, "svg": charts.histogram(values, title=name)}


def _judge_section(
    name: str, files: list[ResultsFile], labels: list[str], summaries: list[dict[str, Any]]
) -> dict[str, Any]:
    """Judge ``name``'s usage per file and the chart of its choices (``None`` when no file has any)."""
    counts = {label: f.choices(name) for f, label in zip(files, labels) if f.choices(name)}
    usage = [
        (label, summary[name]["usage"]) for label, summary in zip(labels, summaries) if "usage" in summary.get(name, {})
    ]
    return {"scorer": name, "usage": usage, "svg": charts.choices(counts, title=f"{name}: choices") if counts else None}


def _file_section(
    results: ResultsFile, label: str, mapping: Mapping[str, str], lowest: int, max_errors: int
) -> dict[str, Any]:
    """One file's part of the page: its lowest-scoring rows per scorer and its first ``max_errors`` failed rows."""
    columns = _Columns.of(results, mapping)
    explained = _tool_call_scorers(results.scorers)
    low = [_lowest_rows(results, name, columns, lowest, explained) for name in results.scorers]
    failed = [i for i, r in enumerate(results.records) if r.get("errors")]
    return {
        "label": label,
        "lowest": low,
        "errors_total": len(failed),
        "missing": columns.missing,
        "without_metadata": [] if results.has_metadata else explained,
        "errors": [_Row(results, i, columns, None) for i in failed[:max_errors]],
    }


def _lowest_rows(
    results: ResultsFile, name: str, columns: _Columns, lowest: int, explained: Sequence[str]
) -> dict[str, Any]:
    """The ``lowest`` rows of ``results`` by scorer ``name``'s score, and the heading of their last column: "why"
    for a scorer whose metadata explains a score (``explained``, or any of these rows has an explanation),
    else "judge"."""
    scored = [(v, i) for i, v in enumerate(results.column(name)) if v is not None]
    scored.sort()
    rows = [_Row(results, i, columns, name) for _, i in scored[:lowest]]
    why = name in explained or any(r.explanation for r in rows)
    return {"scorer": name, "rows": rows, "last_column": "why" if why else "judge"}


def _judges(names: Sequence[str]) -> list[str]:
    """The names that the registry knows as LLM judges."""
    from ..registry import registry

    return [name for name in names if name in registry and registry.entry(name).kind == "llm"]


def _tool_call_scorers(names: Sequence[str]) -> list[str]:
    """The names that the registry knows as tool-call scorers (their metadata says why a row scored low)."""
    from ..agents.tool_calls import ToolCallF1, ToolCallMatch, ToolCallValid, TrajectoryMatch
    from ..registry import registry

    kinds = (ToolCallF1, ToolCallMatch, ToolCallValid, TrajectoryMatch)
    return [
        name
        for name in names
        if name in registry and (cls := registry.entry(name).scorer_class) is not None and issubclass(cls, kinds)
    ]


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("scorers.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def write_report(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    meta_evals: Sequence[str | Path] = (),
    correlations: Sequence[str | Path | Mapping[str, Any]] = (),
    rankings: Sequence[str | Path | Mapping[str, Any]] = (),
    calibrations: Sequence[str | Path | Mapping[str, Any]] = (),
    key: str | None = None,
    mapping: Mapping[str, str] | None = None,
    prices: Prices | None = None,
    lowest: int = 10,
    max_errors: int = 50,
) -> Path:
    """Write one self-contained HTML report of the results files ``paths`` to ``out``; returns ``out``.

    ``meta_evals``: meta-eval JSON files (``python -m scorers meta-eval -o``), shown
    with their agreement figures and confusion matrix as a heat map. ``correlations``:
    correlation JSON files (``python -m scorers correlate -o``) or their dicts
    (:meth:`scorers.stats.correlation.Correlation.to_dict`), shown as tables with a bar
    chart per human column (one coefficient, Spearman's when given, with its intervals).
    ``rankings``: ranking files (``python -m scorers rank -o``) or their dicts, shown as
    leaderboards with their intervals. ``calibrations``: calibration files
    (``python -m scorers calibrate --scores -o``) or their dicts, shown as reliability
    diagrams with their held-out figures. A jury in a results file (run with ``--metadata``)
    or a meta-eval file gets its own section: the agreement between its jurors.

    The first file is the baseline of the comparison (:func:`scorers.stats.compare`;
    rows matched by position, or by the field ``key``). ``mapping`` says which column
    holds each shown field (``{"output": "response"}``), ``prices`` give judges'
    cost estimates (USD per 1M input and output tokens per model), ``lowest`` is
    how many lowest-scoring rows are listed per scorer and ``max_errors`` how many
    failed rows per file.

    >>> import json, os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "run.jsonl"), "w") as fh:
    ...     for x in (0.2, 0.9):
    ...         _ = fh.write(json.dumps({"output": "<b>hi</b>", "scores": {"Levenshtein": x}}) + "\\n")
    >>> page = write_report([os.path.join(folder, "run.jsonl")], os.path.join(folder, "report.html")).read_text()
    >>> "&lt;b&gt;hi&lt;/b&gt;" in page and "<b>hi</b>" not in page
    True
    """
    if not (paths or meta_evals or correlations or rankings or calibrations):
        raise ConfigError(
            "write_report: give at least one results file or meta-eval file, or a correlation file, ranking file or "
            "calibration file"
        )
    if lowest < 0 or max_errors < 0:
        raise ConfigError(f"write_report: lowest and max_errors must be at least 0, got {lowest}, {max_errors}")
    files = [ResultsFile.read(p) for p in paths]
    labels = _labels([str(p) for p in paths])
    page = (
        _environment()
        .get_template("report.html.j2")
        .render(
            **_context(files, labels, dict(mapping or {}), prices, lowest, max_errors, key),
            meta_evals=[_meta_eval(str(p)) for p in meta_evals],
            correlations=[_correlation(c) for c in correlations],
            juries=[section for f in files for section in results_jury_sections(f)],
            rankings=[leaderboard_section(r) for r in rankings],
            calibrations=[_calibration(c) for c in calibrations],
        )
    )
    out = Path(out)
    try:
        out.write_text(page, encoding="utf-8", errors="backslashreplace")  # a lone surrogate shows as \ud800
    except OSError as exc:
        raise DataError(f"{out}: cannot write the report ({exc.strerror})") from None
    return out
