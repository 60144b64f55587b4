"""Template files → registered judges: the built-in ``templates/``, ``SCORERS_TEMPLATES``, ``--templates DIR``.

Every file in the built-in directory, in the directories listed in ``SCORERS_TEMPLATES``
(``os.pathsep``-separated) and in directories given to :func:`add_template_dir` registers
as a scorer, built by its kind's judge class. An invalid file registers a scorer that
raises the file's problems when used; ``python -m scorers check`` lists them. A file
is read within the limits of :mod:`scorers.judges.limits`, so one that would cost
without bound (a YAML "billion laughs", ``{{ 9 ** 9 ** 9 }}``) is such an invalid file:
it costs the other judges nothing, and a run that does not use it goes on unwarned
(it is not that run's configuration), while a run that names it stops at once. The judge
class of each ``kind:`` is :data:`KIND_CLASSES` (:mod:`scorers.judges.spec`: the one registry of kinds),
filled by the kinds' classes as they are defined.

>>> judge = build_judge(parse_template({"kind": "rating", "prompt": "Rate {{output}}", "scale": {"min": 1, "max": 3}},
...                                    name="Tiny"))
>>> type(judge).__name__, judge.scale.max
('RatingJudge', 3)
"""

from __future__ import annotations

import difflib
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .._util import memoize
from ..errors import ConfigError, TemplateError
from .formats import Definition, Problem, camel_case, parse_document, read_file
from .spec import KIND_CLASSES
from .templated import TemplatedJudge

if TYPE_CHECKING:
    from ..registry import Registry
    from .jury import Jury

__all__ = [
    "KIND_CLASSES",
    "build_judge",
    "parse_template",
    "load_template_file",
    "check_templates",
    "template_warnings",
    "known_fields",
    "template_files",
    "template_dirs",
    "builtin_template_dir",
    "add_template_dir",
    "TEMPLATES_ENV",
]

#: Environment variable naming extra template directories (``os.pathsep``-separated).
TEMPLATES_ENV = "SCORERS_TEMPLATES"
TEMPLATE_SUFFIXES = (".yaml", ".yml")


def build_judge(definition: Definition, **overrides: Any) -> "TemplatedJudge | Jury":
    """The judge a definition describes; keyword arguments override its settings. A ``jury:`` (in the file, or
    given: ``-p NAME.jury=YAML``; ``None`` drops the file's) makes it a :class:`~scorers.judges.jury.Jury` of it."""
    judge_class: type[TemplatedJudge] = KIND_CLASSES.get(definition.kind)
    settings = dict(definition.settings)
    jury = overrides.pop("jury") if "jury" in overrides else settings.pop("jury", None)
    settings.pop("jury", None)
    judge = judge_class.from_definition(definition.template, settings, **overrides)
    if jury is None:
        return judge
    from .jury import jury_of

    return jury_of(judge, jury)


def parse_template(data: Mapping[str, Any], *, name: str = "Judge", file: str | None = None) -> Definition:
    """Parse one template given as a mapping (our DSL); raises :class:`TemplateError` listing every problem."""
    definitions, problems = parse_document(data, Path(file) if file else None)
    if problems or not definitions:
        raise TemplateError("invalid judge template:\n  " + "\n  ".join(map(str, problems)), scorer=name)
    (definition,) = definitions
    if file is None and "name" not in data:
        from dataclasses import replace

        definition = replace(definition, template=replace(definition.template, name=name))
    return definition


def load_template_file(path: str | os.PathLike[str]) -> list[Definition]:
    """Every definition in one YAML file; raises :class:`TemplateError` listing every problem with file and key."""
    definitions, problems = read_file(path)
    if problems:
        raise TemplateError(f"invalid judge template file {path}:\n  " + "\n  ".join(map(str, problems)))
    return definitions


def builtin_template_dir() -> Path:
    """The built-in templates: ``scorers/judge_templates`` in a wheel, ``templates/`` in a checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "judge_templates"
    return packaged if packaged.is_dir() else package.parent / "templates"


@memoize
def _extra_dirs() -> list[Path]:
    """Directories added by :func:`add_template_dir` in this process (one list, built on first use)."""
    return []


def template_dirs() -> list[Path]:
    """Built-in directory, then ``SCORERS_TEMPLATES`` directories, then those added by :func:`add_template_dir`."""
    env = [Path(p) for p in os.environ.get(TEMPLATES_ENV, "").split(os.pathsep) if p.strip()]
    return [builtin_template_dir(), *env, *_extra_dirs()]


def template_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Template files named by ``paths`` (a directory stands for its ``*.yaml``/``*.yml`` files, sorted)."""
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.suffix in TEMPLATE_SUFFIXES and f.is_file())
        else:
            files.append(p)
    return files


def check_templates(paths: Iterable[str | os.PathLike[str]] | None = None) -> list[Problem]:
    """Validate template files (default: every template directory); returns every problem found.

    Checks YAML syntax, keys, types (by the spec model), choice keys, template syntax, that the kind's
    judge accepts the settings, and names taken twice.
    """
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for path in template_files(template_dirs() if paths is None else paths):
        if not path.exists():
            problems.append(Problem(str(path), "", "no such file or directory"))
            continue
        definitions, file_problems = read_file(path)
        problems += file_problems
        for definition in definitions:
            name = definition.template.name
            other = seen.setdefault(name.lower(), str(path))
            if other != str(path):
                problems.append(Problem(str(path), "name", f"{name!r} is already defined in {other}"))
            if definition.template.choice_scores is not None or definition.kind != "classifier":
                try:  # what only the judge checks (e.g. a pairwise template that shows one output)
                    build_judge(definition)
                except ConfigError as exc:
                    problems.append(Problem(str(path), "", str(exc).split(": ", 1)[-1]))
    return problems


def template_warnings(paths: Iterable[str | os.PathLike[str]] | None = None) -> list[Problem]:
    """What may be wrong in valid template files (default: every template directory): each template variable
    that is no known field (:func:`known_fields`), with the known field it most resembles (a typo such as
    ``{{ouptut}}`` would otherwise pass ``check`` and fail the run: no row has such a column)."""
    known = known_fields()
    found: list[Problem] = []
    for path in template_files(template_dirs() if paths is None else paths):
        definitions, problems = read_file(path) if path.is_file() else ([], [])
        for template in (d.template for d in definitions if not problems):
            key = "prompt" if template.prompt is not None else "messages"
            for name in template.variables:
                if name in known:
                    continue
                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                found.append(
                    Problem(
                        str(path),
                        key,
                        f"template {template.name!r} reads {name!r}, which is no known field{hint} "
                        f"(a run needs a column {name!r}, or --map {name}=COLUMN)",
                    )
                )
    return found


def known_fields() -> frozenset[str]:
    """The field names the library knows: the standard ones, those of every registered scorer class, the
    variables of the built-in templates and autoevals' thread variables."""
    from ..fields import STANDARD_FIELDS
    from ..registry import entries
    from .conversation import THREAD_FIELD, THREAD_VARIABLES

    names = {*STANDARD_FIELDS, THREAD_FIELD, *THREAD_VARIABLES}
    names.update(f.name for entry in entries() if entry.scorer_class is not None for f in entry.scorer_class.fields)
    for path in template_files([builtin_template_dir()]):
        names.update(name for d in read_file(path)[0] for name in d.template.variables)
    return frozenset(names)


# ---------------------------------------------------------------- registration
def _register_files(registry: "Registry", files: Iterable[Path], source: str) -> None:
    from ..registry import Entry

    for path in files:
        definitions, problems = read_file(path)
        if problems:
            error = TemplateError(f"invalid judge template file {path}:\n  " + "\n  ".join(map(str, problems)))
            try:  # `get(name)` then explains what is wrong with the file
                registry.add(
                    Entry(
                        name=camel_case(path.stem),
                        factory=_raiser(error),
                        kind="llm",
                        description=f"INVALID template ({path}); run `python -m scorers check`",
                        source=str(path),
                    )
                )
            except ConfigError:
                warnings.warn(str(error), stacklevel=2)
            continue
        for definition in definitions:
            template = definition.template
            try:
                registry.add(
                    Entry(
                        name=template.name,
                        factory=_factory(definition),
                        kind="llm",
                        description=_one_line(template.description) or f"LLM judge from {path.name}",
                        source=source if source == "builtin" else str(path),
                    )
                )
            except ConfigError as exc:
                warnings.warn(f"judge template {template.name!r} in {path} is not registered: {exc}", stacklevel=2)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _raiser(error: TemplateError) -> Any:
    def invalid(**_params: Any) -> Any:
        raise error

    return invalid


def _factory(definition: Definition) -> Any:
    template = definition.template

    def build(**overrides: Any) -> "TemplatedJudge | Jury":
        return build_judge(definition, **overrides)

    build.__name__ = template.name
    build.__doc__ = template.description
    build.template = template  # type: ignore[attr-defined]  # read by `show`
    return build


def _load_default_dirs(registry: "Registry") -> None:
    _register_files(registry, template_files([builtin_template_dir()]), "builtin")
    env_dirs = [Path(p) for p in os.environ.get(TEMPLATES_ENV, "").split(os.pathsep) if p.strip()]
    _register_files(registry, template_files([d for d in env_dirs if d.is_dir()]), "env")


def add_template_dir(path: str | os.PathLike[str]) -> None:
    """Register every template in ``path`` (the CLI's ``--templates DIR``); loaded lazily on the next lookup."""
    directory = Path(path)
    if not directory.is_dir():
        raise TemplateError(f"--templates: {directory} is not a directory")
    _extra_dirs().append(directory)
    from ..registry import registry

    registry.add_loader(lambda reg: _register_files(reg, template_files([directory]), "user"))


def install() -> None:
    """Register the built-in and ``SCORERS_TEMPLATES`` templates lazily (before the registry's first lookup)."""
    from ..registry import registry

    registry.add_loader(_load_default_dirs)
