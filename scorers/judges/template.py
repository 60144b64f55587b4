"""Judge templates: YAML files that become LLM judges in the registry.

A template file holds a prompt (or a system + user ``messages`` list) with
mustache-style variables and the ``choice_scores`` the judge picks from::

    name: Politeness                 # optional; default: the file name in CamelCase
    description: Is the reply polite?
    prompt: |
      Is this reply polite?
      {{output}}
    choice_scores:
      "Yes": 1
      "No": 0

Files written for autoevals (``prompt`` + ``choice_scores``) load unchanged, and
so do OpenAI evals model-graded spec files (``prompt``, ``choice_strings``,
``{var}`` placeholders, ``input_outputs``, several specs per file).

Prompts are rendered with Jinja2's sandbox (no HTML escaping, strict undefined):
``{{var}}``, ``{{{var}}}`` and dotted ``{{a.b}}`` work; non-string values render
as JSON; a template cannot reach Python internals.

Every file in the built-in ``templates/`` directory, in the directories listed
in ``SCORERS_TEMPLATES`` (``os.pathsep``-separated) and in directories given to
:func:`add_template_dir` registers as a scorer.

>>> t = parse_template({"prompt": "Is {{output}} a colour?", "choice_scores": {"Y": 1, "N": 0}}, name="IsColour")
>>> t.variables
('output',)
>>> t.render({"output": "red"})
[{'role': 'user', 'content': 'Is red a colour?'}]
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import string
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .._util import lazy, lazy_names, memoize
from ..errors import TemplateError

if TYPE_CHECKING:
    from .classifier import LLMClassifier
    from ..registry import Registry

__all__ = [
    "JudgeTemplate",
    "Problem",
    "parse_template",
    "load_template_file",
    "check_templates",
    "template_files",
    "builtin_template_dir",
    "template_dirs",
    "add_template_dir",
    "RESPONSE_MODES",
]

#: How a judge asks for its verdict (see :class:`~scorers.judges.LLMClassifier`).
RESPONSE_MODES = ("tools", "json", "text")
#: Environment variable naming extra template directories (``os.pathsep``-separated).
TEMPLATES_ENV = "SCORERS_TEMPLATES"
TEMPLATE_SUFFIXES = (".yaml", ".yml")

_DSL_KEYS = {
    "name", "description", "prompt", "messages", "choice_scores", "use_cot", "model",
    "temperature", "max_tokens", "response_mode",
}
_EVALS_KEYS = {
    "prompt", "choice_strings", "choice_scores", "input_outputs", "eval_type", "output_template",
    "key", "group", "format_type",
}
_ROLES = ("system", "user", "assistant")


# --------------------------------------------------------------------- problems
@dataclass(frozen=True)
class Problem:
    """One thing wrong with a template file, located by file, key and (if known) line."""

    file: str
    key: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key or '<file>'}: {self.message}"


class _Problems(list):
    """Collects :class:`Problem` items for one file."""

    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file

    def add(self, key: str, message: str, line: int | None = None) -> None:
        self.append(Problem(self.file, key, message, line))


# ------------------------------------------------------------------- rendering
def _render_value(value: Any) -> Any:
    """Jinja ``finalize``: strings as they are, everything else as JSON (never Python repr)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "model_dump"):  # pydantic v2 models
        return value.model_dump()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot render a {type(value).__name__} in a judge prompt; pass text or JSON-like data")


@memoize
def _environment() -> Any:
    """The process-wide sandboxed Jinja2 environment, built on first use (jinja2 is imported lazily)."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class JudgeEnvironment(SandboxedEnvironment):
        # ``{{a.b}}`` on a mapping reads the key ``b`` first (``{{d.items}}`` is the item, not the method).
        def getattr(self, obj: Any, attribute: str) -> Any:
            if isinstance(obj, Mapping) and attribute in obj:
                return obj[attribute]
            return super().getattr(obj, attribute)

    return JudgeEnvironment(autoescape=False, undefined=StrictUndefined, finalize=_render_value,
                            keep_trailing_newline=False)


_TRIPLE = re.compile(r"\{\{\{\s*(.+?)\s*\}\}\}")
_AMPERSAND = re.compile(r"\{\{&\s*(.+?)\s*\}\}")
_COMMENT = re.compile(r"\{\{!.*?\}\}", re.S)
_SECTION = re.compile(r"\{\{\s*([#^/>])\s*([\w.]*)\s*\}\}")


def mustache_to_jinja(source: str) -> str:
    """Rewrite the mustache forms Jinja lacks (``{{{x}}}``, ``{{& x}}``, ``{{! c}}``) into Jinja.

    >>> mustache_to_jinja("{{{language}}} {{& text}}{{! note }}")
    '{{ language }} {{ text }}'
    """
    source = _COMMENT.sub("", source)
    source = _TRIPLE.sub(r"{{ \1 }}", source)
    return _AMPERSAND.sub(r"{{ \1 }}", source)


def format_to_jinja(source: str, rename: Mapping[str, str]) -> str:
    """Rewrite a Python ``str.format`` template (``{var}``, ``{{`` for a brace) into Jinja.

    >>> format_to_jinja("Q: {input} {{x}} A: {completion}", {"completion": "output"})
    "Q: {{ input }} {{ '{' }}x{{ '}' }} A: {{ output }}"
    """
    out = []
    for literal, field_name, _spec, _conv in string.Formatter().parse(source):
        if literal:
            out.append(literal.replace("{", "\x00").replace("}", "{{ '}' }}").replace("\x00", "{{ '{' }}"))
        if field_name is not None:
            if not re.fullmatch(r"[A-Za-z_]\w*", field_name):
                raise ValueError(f"placeholder {{{field_name}}} is not a plain variable name")
            out.append("{{ " + rename.get(field_name, field_name) + " }}")
    return "".join(out)


def _variables_in_order(source: str, names: Iterable[str]) -> list[str]:
    positions = {}
    for name in names:
        match = re.search(r"(?<![\w.])" + re.escape(name) + r"\b", source)
        positions[name] = match.start() if match else len(source)
    return sorted(positions, key=lambda n: (positions[n], n))


# -------------------------------------------------------------------- template
@dataclass(frozen=True)
class JudgeTemplate:
    """A parsed, compiled judge template.

    ``messages`` holds ``(role, content)`` pairs; a plain ``prompt`` is one user
    message. ``choice_scores`` keeps the file's order, which is the enum order.
    Optional settings left as ``None`` fall back to the judge's defaults.
    A template pickles without its compiled Jinja code, which the receiving
    process compiles again on first use.
    """

    name: str
    #: choice → score in [0, 1]; ``None`` for an OpenAI evals spec without scores (supply them when building).
    choice_scores: Mapping[str, float] | None
    messages: tuple[tuple[str, str], ...]
    #: The choices in order (defaults to the keys of ``choice_scores``).
    choices: tuple[str, ...] = ()
    description: str = ""
    use_cot: bool | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    response_mode: str | None = None
    file: str | None = None
    #: ``"autoevals"`` (our DSL, autoevals-compatible) or ``"openai-evals"``.
    format: str = "autoevals"
    _variables: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: Per message: literal text and variable names, when the message is plain ``{{ name }}`` substitution.
    _plain: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    _hash: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        env = _environment()
        from jinja2 import TemplateSyntaxError, meta

        compiled, names = [], set()
        for index, (_role, content) in enumerate(self.messages):
            key = "prompt" if len(self.messages) == 1 and self.format == "autoevals" else f"messages[{index}].content"
            _reject_sections(content, self.where(key))
            try:
                ast = env.parse(content)
                compiled.append(env.from_string(ast))
            except TemplateSyntaxError as exc:
                raise TemplateError(f"{self.where(key)}: template syntax error on line {exc.lineno}: {exc.message}",
                                    scorer=self.name) from exc
            names |= meta.find_undeclared_variables(ast)
        names.discard("__choices")
        if not self.choices:
            object.__setattr__(self, "choices", tuple(self.choice_scores or ()))
        object.__setattr__(self, "_compiled", tuple(compiled))  # what the lazy attribute would build
        object.__setattr__(self, "_plain", tuple(_plain_parts(content) for _, content in self.messages))
        object.__setattr__(self, "_variables",
                           tuple(_variables_in_order("\n".join(c for _, c in self.messages), names)))

    @lazy
    def _compiled(self) -> tuple[Any, ...]:
        """One compiled Jinja template per message (rebuilt after unpickling; syntax was checked when built)."""
        env = _environment()
        return tuple(env.from_string(content) for _, content in self.messages)

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the compiled Jinja templates, which belong to this process's environment."""
        state = self.__dict__.copy()
        for name in lazy_names(type(self)):
            state.pop(name, None)
        return state

    # ---------------------------------------------------------------- facts
    @property
    def variables(self) -> tuple[str, ...]:
        """Top-level variables the prompt uses, in order of first use."""
        return self._variables

    @property
    def prompt(self) -> str | None:
        """The prompt text when the template is a single user message."""
        if len(self.messages) == 1 and self.messages[0][0] == "user":
            return self.messages[0][1]
        return None

    def content_hash(self) -> str:
        """Short SHA-256 of what decides the judge's verdict: messages and choice_scores."""
        if not self._hash:
            object.__setattr__(self, "_hash", self._compute_hash())
        return self._hash

    def _compute_hash(self) -> str:
        body = json.dumps({"messages": self.messages, "choices": self.choices,
                           "choice_scores": dict(self.choice_scores or {})},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def where(self, key: str = "") -> str:
        """``template 'Name' (file path), key`` for error messages."""
        place = f"template {self.name!r}" + (f" ({self.file})" if self.file else "")
        return f"{place}, key {key!r}" if key else place

    # -------------------------------------------------------------- rendering
    def render(self, variables: Mapping[str, Any]) -> list[dict[str, str]]:
        """Render every message; a missing variable raises :class:`TemplateError` naming it.

        ``None`` counts as missing. The list of choices is available as ``{{__choices}}``.
        """
        context = {k: v for k, v in variables.items() if v is not None}
        for name in self._variables:
            if name not in context:
                missing = [v for v in self._variables if v not in context]
                names = ", ".join(repr(m) for m in missing)
                raise TemplateError(f"{self.name}: missing template variable{'s' if len(missing) > 1 else ''} "
                                    f"{names} ({self.where()})", scorer=self.name)
        context["__choices"] = list(self.choices)
        out = []
        for index, plain in enumerate(self._plain):
            if plain is None:
                content = self._render_jinja(index, context)
            else:  # the text Jinja gives, without building a Jinja context
                pieces = []
                try:
                    for literal, part in plain:
                        if literal:
                            pieces.append(part)
                        else:
                            value = context[part]
                            pieces.append(value if type(value) is str else _render_value(value))
                except (TypeError, ValueError) as exc:
                    raise TemplateError(f"{self.name}: rendering failed: {exc} ({self.where()})",
                                        scorer=self.name) from exc
                content = "".join(pieces)
            out.append({"role": self.messages[index][0], "content": content})
        return out

    def _render_jinja(self, index: int, context: dict[str, Any]) -> str:
        from jinja2 import TemplateError as JinjaTemplateError
        from jinja2.exceptions import SecurityError, UndefinedError

        try:
            return self._compiled[index].render(context)
        except SecurityError as exc:
            raise TemplateError(f"{self.name}: the template tried to reach Python internals, which is not "
                                f"allowed: {exc} ({self.where()})", scorer=self.name) from exc
        except UndefinedError as exc:
            raise TemplateError(f"{self.name}: undefined value while rendering: {exc} ({self.where()})",
                                scorer=self.name) from exc
        except (JinjaTemplateError, TypeError, ValueError) as exc:
            raise TemplateError(f"{self.name}: rendering failed: {exc} ({self.where()})", scorer=self.name) from exc

    def to_classifier(self, **overrides: Any) -> "LLMClassifier":
        """Build the judge; keyword arguments override the template's settings."""
        from .classifier import LLMClassifier

        return LLMClassifier.from_template(self, **overrides)


_PLAIN_TAG = re.compile(r"\{\{-?\s*([A-Za-z_]\w*)\s*-?\}\}")


def _plain_parts(source: str) -> tuple[tuple[bool, str], ...] | None:
    """``(is_literal, text_or_name)`` parts of a template made only of text and ``{{ name }}`` tags, else None."""
    parts: list[tuple[bool, str]] = []
    position = 0
    for match in _PLAIN_TAG.finditer(source):
        parts.append((True, source[position:match.start()]))
        parts.append((False, match.group(1)))
        position = match.end()
    parts.append((True, source[position:]))
    literal = "".join(text for is_literal, text in parts if is_literal)
    if any(marker in literal for marker in ("{{", "{%", "{#", "\r")) or "-}}" in source or "{{-" in source:
        return None
    if any(not is_literal and name in ("true", "false", "none", "True", "False", "None") for is_literal, name in parts):
        return None
    return tuple(p for p in parts if p[1] or not p[0])


def _reject_sections(content: str, where: str) -> None:
    match = _SECTION.search(content)
    if match:
        raise TemplateError(f"{where}: mustache tag {match.group(0)!r} is not supported; "
                            "use Jinja blocks ({% if x %}…{% endif %}, {% for x in xs %}…{% endfor %}) instead")


# ---------------------------------------------------------------------- YAML
def _yaml_loader() -> Any:
    import yaml

    class StrictSafeLoader(yaml.SafeLoader):
        """``yaml.SafeLoader`` that refuses duplicate keys instead of keeping the last one."""

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict:
        loader.flatten_mapping(node)
        seen: set = set()
        for key_node, _value in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        return dict(loader.construct_pairs(node, deep=deep))

    StrictSafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return StrictSafeLoader


def camel_case(stem: str) -> str:
    """File name → scorer name: ``closed_q_a`` → ``ClosedQA``, ``my-judge`` → ``MyJudge``.

    >>> camel_case("closed_q_a"), camel_case("factuality")
    ('ClosedQA', 'Factuality')
    """
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-\s.]+", stem) if part)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_choice_key(key: Any, where: str, problems: _Problems) -> bool:
    if isinstance(key, bool):
        problems.add(where, f"choice key {key!r} is a boolean, not a string: YAML 1.1 reads bare Yes/No/On/Off/"
                            f"True/False as booleans. Quote the key, e.g. \"Yes\": 1")
        return False
    if not isinstance(key, str):
        problems.add(where, f"choice key {key!r} is a {type(key).__name__}, not a string; quote it, e.g. \"{key}\"")
        return False
    if not key.strip() or key != key.strip():
        problems.add(where, f"choice key {key!r} must be non-empty without surrounding spaces")
        return False
    return True


def _parse_choice_scores(raw: Any, problems: _Problems, key: str = "choice_scores") -> dict[str, float] | None:
    if not isinstance(raw, Mapping) or not raw:
        problems.add(key, "must be a non-empty mapping of choice → score")
        return None
    scores: dict[str, float] = {}
    for choice, value in raw.items():
        if not _check_choice_key(choice, key, problems):
            continue
        if not _is_number(value) or not 0 <= value <= 1:
            problems.add(f"{key}.{choice}", f"score must be a number in [0, 1], got {value!r}")
            continue
        scores[choice] = float(value)
    return scores if len(scores) == len(raw) else None


def _parse_messages(raw: Any, problems: _Problems) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(raw, list) or not raw:
        problems.add("messages", "must be a non-empty list of {role, content} mappings")
        return None
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or set(item) != {"role", "content"}:
            problems.add(f"messages[{i}]", "must be a mapping with exactly the keys role and content")
            continue
        if item["role"] not in _ROLES:
            problems.add(f"messages[{i}].role", f"must be one of {', '.join(_ROLES)}, got {item['role']!r}")
            continue
        if not isinstance(item["content"], str) or not item["content"].strip():
            problems.add(f"messages[{i}].content", "must be non-empty text")
            continue
        out.append((item["role"], mustache_to_jinja(item["content"].strip())))
    if out and out[-1][0] != "user":
        problems.add("messages", "the last message must have role user (the judge instruction is appended to it)")
    return tuple(out) if len(out) == len(raw) else None


def _check_settings(data: Mapping[str, Any], problems: _Problems) -> None:
    checks: dict[str, tuple[Any, str]] = {
        "name": (lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z][\w\-.]*", v), "a name (letters, digits, _ - .)"),
        "description": (lambda v: isinstance(v, str), "text"),
        "use_cot": (lambda v: isinstance(v, bool), "true or false"),
        "model": (lambda v: isinstance(v, str) and v.strip(), "a model name"),
        "temperature": (lambda v: v is None or (_is_number(v) and 0 <= v <= 2), "a number in [0, 2] or null"),
        "max_tokens": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v > 0),
                       "a positive integer or null"),
        "response_mode": (lambda v: v in RESPONSE_MODES, " | ".join(RESPONSE_MODES)),
    }
    for key, (ok, expected) in checks.items():
        if key in data and not ok(data[key]):
            problems.add(key, f"must be {expected}, got {data[key]!r}")


def _parse_dsl(data: Mapping[str, Any], default_name: str, file: str | None, problems: _Problems) -> JudgeTemplate | None:
    for key in data:
        if key not in _DSL_KEYS:
            problems.add(str(key), f"unknown key (allowed: {', '.join(sorted(_DSL_KEYS))})")
    _check_settings(data, problems)
    has_prompt, has_messages = "prompt" in data, "messages" in data
    messages = None
    if has_prompt == has_messages:
        problems.add("prompt", "give exactly one of prompt or messages")
    elif has_prompt:
        if not isinstance(data["prompt"], str) or not data["prompt"].strip():
            problems.add("prompt", "must be non-empty text")
        else:
            messages = (("user", mustache_to_jinja(data["prompt"].strip())),)
    else:
        messages = _parse_messages(data["messages"], problems)
    scores = _parse_choice_scores(data.get("choice_scores"), problems) if "choice_scores" in data else None
    if "choice_scores" not in data:
        problems.add("choice_scores", "is required")
    if problems or messages is None or scores is None:
        return None
    name = data.get("name") or default_name
    return _build(problems, name=name, choice_scores=scores, messages=messages, description=data.get("description", ""),
                  use_cot=data.get("use_cot"), model=data.get("model"), temperature=data.get("temperature"),
                  max_tokens=data.get("max_tokens"), response_mode=data.get("response_mode"), file=file)


def _build(problems: _Problems, **kwargs: Any) -> JudgeTemplate | None:
    try:
        return JudgeTemplate(**kwargs)
    except TemplateError as exc:
        message = str(exc)
        key = re.search(r"key '([^']+)'", message)
        problems.add(key.group(1) if key else "prompt", message.split(": ", 1)[-1])
        return None


def _evals_choice_strings(raw: Any, problems: _Problems, key: str) -> list[str] | None:
    if isinstance(raw, str):
        if raw.startswith("from_n"):
            problems.add(key, f"{raw!r} needs the number of completions (multi-completion specs are not supported); "
                              "list the choices instead")
            return None
        choices = list(raw)
    elif isinstance(raw, list) and raw:
        choices = raw
    else:
        problems.add(key, "must be a list of choices or a string of one-character choices like \"ABCDE\"")
        return None
    good = []
    for choice in choices:
        if _check_choice_key(choice, key, problems):
            if any(c in string.punctuation for c in choice):
                problems.add(key, f"choice {choice!r} contains punctuation, which the reply parser strips")
            else:
                good.append(choice)
    if len(set(good)) != len(good):
        problems.add(key, "choices must be distinct")
        return None
    return good if len(good) == len(choices) else None


def _parse_evals_spec(spec_name: str, data: Any, file: str | None, problems: _Problems) -> JudgeTemplate | None:
    """One OpenAI evals model-graded spec → template (``completion`` → ``output``, ``ideal`` → ``expected``)."""
    prefix = f"{spec_name}."
    if not isinstance(data, Mapping):
        problems.add(spec_name, "must be a mapping (an OpenAI evals model-graded spec)")
        return None
    for key in data:
        if key not in _EVALS_KEYS:
            problems.add(prefix + str(key), f"unknown key (allowed: {', '.join(sorted(_EVALS_KEYS))})")
    for key in ("prompt", "choice_strings"):
        if key not in data:
            problems.add(prefix + key, "is required")
    io = data.get("input_outputs", {})
    if not isinstance(io, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in io.items()):
        problems.add(prefix + "input_outputs", "must map sample keys to completion variable names")
        io = {}
    rename = {"ideal": "expected"}
    if len(io) == 1:
        (sample_key, completion), = io.items()
        rename.update({completion: "output", sample_key: "input"})
    choices = _evals_choice_strings(data["choice_strings"], problems, prefix + "choice_strings") \
        if "choice_strings" in data else None
    scores: dict[str, float] | None = None
    description = f"OpenAI evals model-graded spec {spec_name!r}"
    raw_scores = data.get("choice_scores")
    if choices is not None and raw_scores is not None:
        if raw_scores == "from_strings":
            try:
                values = {c: float(c) for c in choices}
            except ValueError:
                problems.add(prefix + "choice_scores", "from_strings needs numeric choice strings")
                values = None
        elif isinstance(raw_scores, Mapping) and set(map(str, raw_scores)) == set(choices) \
                and all(_is_number(v) for v in raw_scores.values()):
            values = {c: float(raw_scores[c]) for c in choices}
        else:
            problems.add(prefix + "choice_scores", "must be \"from_strings\" or map every choice string to a number")
            values = None
        if values is not None:
            low, high = min(values.values()), max(values.values())
            if low < 0 or high > 1:
                if high == low:
                    problems.add(prefix + "choice_scores", "all choices have the same score")
                    values = None
                else:
                    values = {c: (v - low) / (high - low) for c, v in values.items()}
                    description += f"; scores rescaled from [{low:g}, {high:g}] to [0, 1]"
            scores = values
    elif choices is not None:
        description += "; the spec has no choice_scores: pass choice_scores={...} when building it"
    raw_prompt = data.get("prompt")
    try:
        if isinstance(raw_prompt, str) and raw_prompt.strip():
            messages = (("user", format_to_jinja(raw_prompt.strip(), rename)),)
        elif isinstance(raw_prompt, list) and raw_prompt and all(
                isinstance(m, Mapping) and m.get("role") in _ROLES and isinstance(m.get("content"), str)
                for m in raw_prompt):
            messages = tuple((m["role"], format_to_jinja(m["content"].strip(), rename)) for m in raw_prompt)
        else:
            problems.add(prefix + "prompt", "must be text or a list of {role, content} chat messages")
            messages = None
    except ValueError as exc:
        problems.add(prefix + "prompt", str(exc))
        messages = None
    if messages and messages[-1][0] != "user":
        messages = messages + (("user", "Answer now."),)
    if problems or messages is None or choices is None:
        return None
    eval_type = data.get("eval_type")
    return _build(problems, name=spec_name, choice_scores=scores, choices=tuple(choices), messages=messages,
                  description=description, use_cot=(eval_type or "").startswith("cot_classify") or None,
                  file=file, format="openai-evals")


def _parse_document(data: Any, path: Path | None, problems: _Problems) -> list[JudgeTemplate]:
    file = str(path) if path else None
    default_name = camel_case(path.stem) if path else "Judge"
    if not isinstance(data, Mapping):
        problems.add("", "a template file must be a YAML mapping")
        return []
    if {"prompt", "messages", "choice_scores"} & set(data) and "choice_strings" not in data:
        template = _parse_dsl(data, default_name, file, problems)
        return [template] if template else []
    if "choice_strings" in data:  # one OpenAI evals spec at the top level
        template = _parse_evals_spec(path.stem if path else "spec", data, file, problems)
        return [template] if template else []
    if data and all(isinstance(v, Mapping) for v in data.values()):
        out = []
        for spec_name, spec in data.items():
            spec_problems = _Problems(problems.file)
            template = _parse_evals_spec(str(spec_name), spec, file, spec_problems)
            problems.extend(spec_problems)
            if template:
                out.append(template)
        return out
    problems.add("", "not a judge template: expected prompt (or messages) and choice_scores, "
                     "or OpenAI evals model-graded specs")
    return []


def _read(path: Path, problems: _Problems) -> list[JudgeTemplate]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.add("", f"cannot read the file: {exc}")
        return []
    try:
        data = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.add("", f"invalid YAML: {getattr(exc, 'problem', None) or exc}", mark.line + 1 if mark else None)
        return []
    return _parse_document(data, path, problems)


def parse_template(data: Mapping[str, Any], *, name: str = "Judge", file: str | None = None) -> JudgeTemplate:
    """Parse one template given as a mapping (our DSL / autoevals format); raises :class:`TemplateError`."""
    problems = _Problems(file or "<template>")
    template = _parse_dsl(data, name, file, problems)
    if template is None:
        raise TemplateError("invalid judge template:\n  " + "\n  ".join(map(str, problems)), scorer=name)
    return template


def load_template_file(path: str | os.PathLike[str]) -> list[JudgeTemplate]:
    """Every template in one YAML file (one for our DSL, several for an OpenAI evals spec file).

    Raises :class:`TemplateError` listing every problem with its file and key.
    """
    problems = _Problems(str(path))
    templates = _read(Path(path), problems)
    if problems:
        raise TemplateError(f"invalid judge template file {path}:\n  " + "\n  ".join(map(str, problems)))
    return templates


# ------------------------------------------------------------------ discovery
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

    Checks YAML syntax, keys, types, choice keys, template syntax and names taken twice.
    """
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for path in template_files(template_dirs() if paths is None else paths):
        file_problems = _Problems(str(path))
        if not path.exists():
            file_problems.add("", "no such file or directory")
        else:
            for template in _read(path, file_problems):
                other = seen.setdefault(template.name.lower(), str(path))
                if other != str(path):
                    file_problems.add("name", f"{template.name!r} is already defined in {other}")
        problems += file_problems
    return problems


# ---------------------------------------------------------------- registration
def _register_files(registry: "Registry", files: Iterable[Path], source: str) -> None:
    from ..errors import ConfigError
    from ..registry import Entry

    for path in files:
        problems = _Problems(str(path))
        templates = _read(path, problems)
        if problems:
            error = TemplateError(f"invalid judge template file {path}:\n  " + "\n  ".join(map(str, problems)))
            try:  # `get(name)` then explains what is wrong with the file
                registry.add(Entry(name=camel_case(path.stem), factory=_raiser(error), kind="llm",
                                   description=f"INVALID template ({path}); run `python -m scorers check`",
                                   source=str(path)))
            except ConfigError:
                warnings.warn(str(error), stacklevel=2)
            continue
        for template in templates:
            try:
                registry.add(Entry(name=template.name, factory=_template_factory(template), kind="llm",
                                   description=_one_line(template.description) or f"LLM judge from {path.name}",
                                   source=source if source == "builtin" else str(path)))
            except ConfigError as exc:
                warnings.warn(f"judge template {template.name!r} in {path} is not registered: {exc}", stacklevel=2)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _raiser(error: TemplateError) -> Any:
    def invalid(**_params: Any) -> Any:
        raise error

    return invalid


def _template_factory(template: JudgeTemplate) -> Any:
    def build(**overrides: Any) -> "LLMClassifier":
        return template.to_classifier(**overrides)

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


def _install() -> None:
    from ..registry import registry

    registry.add_loader(_load_default_dirs)


_install()
