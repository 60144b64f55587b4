"""The report's jury section: a jury's agreement figures with their intervals, each juror's figures and the
distribution of vote shares, as a template context for ``templates/jury.html.j2``.

Sources: a results file's rows of a :class:`~scorers.judges.jury.Jury` (run with ``--metadata``: each row records
its jurors' verdicts and their scale, so the agreement is computed from the rows, as the run's summary computes it)
and a meta-eval JSON's ``jury`` section (which adds each juror's agreement with the labels).

>>> section = meta_eval_jury_section({"judge": {"name": "Polite"}, "jury": None})
>>> section is None
True
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from .results import ResultsFile

__all__ = ["results_jury_sections", "meta_eval_jury_section", "jury_section"]

_FIGURES = (("alpha", "Krippendorff's alpha"), ("fleiss_kappa", "Fleiss' kappa"))


def results_jury_sections(results: ResultsFile, *, resamples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """A section per jury of a results file (a scorer whose rows record jurors), in the file's scorer order."""
    sections = []
    for scorer in results.scorers:
        records = [_jury_record(record, results, scorer) for record in results.records]
        rows = [record for record in records if record is not None]
        if rows:
            sections.append(jury_section(scorer, rows, source=results.path, resamples=resamples, seed=seed))
    return sections


def meta_eval_jury_section(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The section of a meta-eval JSON's ``jury`` (``None`` when the judge was no jury)."""
    if not report.get("jury"):
        return None
    return jury_section(report["judge"]["name"], agreement=report["jury"], source=f"meta-eval, label {report['label']}")


def jury_section(
    scorer: str,
    rows: Sequence[tuple[Mapping[str, Any], float | None]] = (),
    *,
    agreement: Mapping[str, Any] | None = None,
    source: str = "",
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The context of one jury: from its ``rows`` (each ``(metadata or error record, score)``), or from an
    ``agreement`` already computed (a meta-eval's ``jury``; with rows too, the rows' counts are added).

    Keys: ``scorer``, ``source``, ``level``, ``jurors``, ``units``, ``unanimous``, ``figures`` (each ``name``,
    ``value``, ``low``, ``high``, ``n``, ``reason``), ``per_juror`` (each ``label``, ``answered``, ``with_jury``,
    ``with_labels`` as figures, and from rows ``failed`` and ``errors``: type → count), ``votes`` (from rows of a
    choice jury: ``rows``, ``ties``, ``shares``: share → rows, and ``svg``, their bar chart) and ``bootstrap``."""
    if agreement is None:
        agreement = _agreement(rows, resamples=resamples, seed=seed)
    failures = _failures(rows, agreement["jurors"])
    return {
        "scorer": scorer,
        "source": source,
        "level": agreement["level"],
        "jurors": list(agreement["jurors"]),
        "units": agreement["units"],
        "unanimous": agreement["unanimous"],
        "figures": [{"name": name, **_figure(agreement[key])} for key, name in _FIGURES],
        "per_juror": [
            {
                "label": label,
                "answered": own["answered"],
                "with_jury": _figure(own["with_jury"]),
                "with_labels": None if own.get("with_labels") is None else _figure(own["with_labels"]),
                **failures.get(label, {}),
            }
            for label, own in agreement["per_juror"].items()
        ],
        "votes": _votes(scorer, rows),
        "bootstrap": dict(agreement["bootstrap"]),
    }


def _jury_record(record: Mapping[str, Any], results: ResultsFile, scorer: str) -> tuple[Mapping[str, Any], Any] | None:
    """A row of a jury: its metadata and score, or its error record (which holds the jurors too)."""
    metadata = results.metadata(record, scorer)
    if isinstance(metadata.get("jurors"), Mapping):
        return metadata, record["scores"].get(scorer)
    error = (record.get("errors") or {}).get(scorer)
    return (error, None) if isinstance(error, Mapping) and isinstance(error.get("jurors"), Mapping) else None


def _agreement(rows: Sequence[tuple[Mapping[str, Any], float | None]], *, resamples: int, seed: int) -> dict[str, Any]:
    from ..judges.jury import JuryScale, jury_agreement_of, verdict_row

    scale_of = next((m["scale"] for m, _ in rows if isinstance(m.get("scale"), Mapping)), None)
    if scale_of is None:
        raise ValueError("no row of the jury records its scale: was it written by this version, with --metadata?")
    scale = JuryScale.from_dict(scale_of)
    jurors = list(rows[0][0]["jurors"])
    coded = [verdict_row(jurors, scale, metadata, score) for metadata, score in rows]
    return jury_agreement_of(jurors, scale, [row for row in coded if row is not None], resamples=resamples, seed=seed)


def _figure(figure: Mapping[str, Any]) -> dict[str, Any]:
    ci = figure.get("ci") or (None, None)
    return {"value": figure["value"], "low": ci[0], "high": ci[1], "n": figure["n"], "reason": figure.get("reason")}


def _failures(rows: Sequence[tuple[Mapping[str, Any], Any]], jurors: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per juror, from rows: how many rows it failed on, and its errors by type."""
    if not rows:
        return {}
    out: dict[str, dict[str, Any]] = {label: {"failed": 0, "errors": Counter()} for label in jurors}
    for metadata, _ in rows:
        for label, entry in metadata["jurors"].items():
            error = (entry or {}).get("error")
            if error and label in out:
                out[label]["failed"] += 1
                out[label]["errors"][error.get("type", "error")] += 1
    return {label: {"failed": own["failed"], "errors": dict(own["errors"])} for label, own in out.items()}


def _votes(scorer: str, rows: Sequence[tuple[Mapping[str, Any], Any]]) -> dict[str, Any] | None:
    """How the rows of a choice jury were voted on (a tie abstained is voted on, not scored): vote shares
    (rounded to 0.01) and ties."""
    scored = [metadata for metadata, _ in rows if metadata.get("vote_share") is not None]
    if not scored:
        return None
    shares = Counter(round(float(m["vote_share"]), 2) for m in scored)
    ordered = {f"{share:.2f}": shares[share] for share in sorted(shares)}
    return {
        "rows": len(scored),
        "ties": sum(bool(m.get("tie")) for m in scored),
        "shares": ordered,
        "svg": _shares_chart(scorer, ordered),
    }


def _shares_chart(scorer: str, shares: Mapping[str, int]) -> str:
    from .charts import _draw

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        ax.bar(list(shares), list(shares.values()), color="C0")
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("share of the jurors' votes behind the verdict")
        ax.set_ylabel("rows")
        ax.set_title(f"{scorer}: vote shares")

    return _draw(draw, height=2.2)
