"""A judge's prompt as data: messages with variables, compiled once, rendered per row.

Prompts are rendered with Jinja2's sandbox (no HTML escaping, strict undefined):
``{{var}}``, ``{{{var}}}`` and dotted ``{{a.b}}`` work; non-string values render
as JSON; a template cannot reach Python internals, and no template can cost
without bound (:mod:`scorers.judges.sandbox`, limits in :mod:`scorers.judges.limits`).

This module never imports a judge: :mod:`scorers.judges.formats` reads files into
templates and settings, :mod:`scorers.judges.discovery` registers them.

>>> t = JudgeTemplate(name="IsColour", messages=(("user", "Is {{output}} a colour?"),), choice_scores={"Y": 1, "N": 0})
>>> t.variables
('output',)
>>> t.render({"output": "red"})
[{'role': 'user', 'content': 'Is red a colour?'}]
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
import string
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .._util import lazy, lazy_names, memoize
from ..attachments import Attachment, Placement
from ..errors import TemplateError
from .conversation import DEFAULT_MAX_TOKENS, THREAD_FIELD, THREAD_VARIABLES, PromptText, template_context

__all__ = ["JudgeTemplate", "mustache_to_jinja", "format_to_jinja", "template_problems", "render_value"]


# ------------------------------------------------------------------- rendering
def render_value(value: Any) -> Any:
    """How a template shows a value (Jinja ``finalize``): strings as they are, the rest as JSON (never Python repr).

    A value nested too deeply for JSON is a ``ValueError`` (bad input), not a ``RecursionError``.

    >>> render_value("Paris"), render_value({"city": "Paris"}), render_value(None)
    ('Paris', '{"city": "Paris"}', 'null')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, PromptText):  # a conversation or thread variable shows its own text
        return value.prompt_text()
    try:
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    except RecursionError:
        raise ValueError("the value is nested too deeply to show as JSON") from None


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
    """The process-wide bounded sandbox (:class:`~scorers.judges.sandbox.JudgeEnvironment`), built on first use."""
    from jinja2 import StrictUndefined

    from .mustache import HELPERS
    from .sandbox import JudgeEnvironment

    environment = JudgeEnvironment(
        autoescape=False, undefined=StrictUndefined, finalize=render_value, keep_trailing_newline=False
    )
    environment.globals.update(HELPERS)  # what mustache sections are rewritten into
    return environment


@functools.lru_cache(maxsize=256)
def _compile(source: str) -> tuple[Any, frozenset[str], tuple[str, ...]]:
    """``(compiled template, variables, ())`` for one message's text, or ``(None, frozenset(), problems)``.

    Every problem of the text is listed (a syntax error hides what follows it); the compiled
    template is shared by every :class:`JudgeTemplate` with the same text.
    """
    from .sandbox import compile_template

    sections = [
        f"mustache partial {match.group(0)!r} is not supported: a judge prompt is one template"
        if match.group(1) == ">"
        else f"mustache section tag {match.group(0)!r} has no matching "
        f"{'opening' if match.group(1) == '/' else 'closing'} tag (sections nest: {{{{#x}}}}…{{{{/x}}}})"
        for match in _SECTION.finditer(source)
    ]
    if sections:
        return None, frozenset(), tuple(sections)
    compiled, variables, problems = compile_template(_environment(), source)
    several_lines = "\n" in source
    return (
        compiled,
        variables,
        tuple(f"line {line}: {message}" if line and several_lines else message for line, message in problems),
    )


def template_problems(texts: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(key, message)`` for every problem of each ``(key, template text)``, each text checked on its own."""
    return [(key, message) for key, text in texts for message in _compile(text)[2]]


#: The functions mustache sections call (:mod:`.mustache`), not template variables.
_MUSTACHE_HELPERS = ("mustache_section", "mustache_get")
_SECTION = re.compile(r"\{\{\s*([#^/>])\s*([\w.]*)\s*\}\}")


def mustache_to_jinja(source: str) -> str:
    """Rewrite the mustache forms Jinja lacks (``{{{x}}}``, ``{{& x}}``, ``{{! c}}``, sections) into Jinja.

    >>> mustache_to_jinja("{{{language}}} {{& text}}{{! note }}")
    '{{ language }} {{ text }}'
    """
    from .mustache import sections_to_jinja

    source = _strip_comments(source)
    source = _TRIPLE.sub(r"{{ \1 }}", source)
    return sections_to_jinja(_AMPERSAND.sub(r"{{ \1 }}", source))


#: ``{{{ x }}}`` and ``{{& x }}``: the name has no braces, so each opener's match ends at the next brace
#: and matching stays linear in the text.
_TRIPLE = re.compile(r"\{\{\{\s*([^{}\s](?:[^{}\n]*[^{}\s])?)\s*\}\}\}")
_AMPERSAND = re.compile(r"\{\{&\s*([^{}\s](?:[^{}\n]*[^{}\s])?)\s*\}\}")


def _strip_comments(source: str) -> str:
    """``source`` without its ``{{! ... }}`` comments, in one pass (a regex would rescan the text per opener)."""
    kept, position = [], 0
    while (start := source.find("{{!", position)) != -1 and (end := source.find("}}", start + 3)) != -1:
        kept.append(source[position:start])
        position = end + 2
    kept.append(source[position:])
    return "".join(kept)


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


_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def _variables_in_order(source: str, names: Iterable[str]) -> list[str]:
    """``names`` by where each first appears as a whole name (not after a dot) in ``source``; one pass."""
    positions = dict.fromkeys(names, len(source))
    first: dict[str, int] = {}
    for match in _NAME.finditer(source):
        if match.group() in positions:
            first.setdefault(match.group(), match.start())
    positions.update(first)
    return sorted(positions, key=lambda n: (positions[n], n))


# -------------------------------------------------------------------- template
@dataclass(frozen=True)
class JudgeTemplate:
    """A parsed, compiled judge template.

    ``messages`` holds ``(role, content)`` pairs; a plain ``prompt`` is one user
    message. ``choice_scores`` keeps the file's order, which is the enum order.
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
    file: str | None = None
    #: ``"scorers"`` (our DSL, which reads autoevals files unchanged) or ``"openai-evals"``.
    format: str = "scorers"
    #: The fields that hold a conversation, each with its budget in tokens (counted as UTF-8 bytes) (:mod:`.conversation`).
    conversations: tuple[tuple[str, int], ...] = ()
    #: The fields that hold an attachment (:class:`~scorers.attachments.Attachment`): a path, URL or data there
    #: is read as one, and shown as a content part where the field stands.
    attachments: tuple[str, ...] = ()
    #: Labelled examples shown before the instruction (:mod:`scorers.judges.examples`), each a mapping
    #: ``{"variables", "verdict", "rationale"?}``; part of :meth:`content_hash` when there are any.
    examples: tuple[Mapping[str, Any], ...] = ()
    _variables: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: Per message: literal text and variable names, when the message is plain ``{{ name }}`` substitution.
    _plain: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    _hash: str = field(default="", repr=False, compare=False)
    #: The thread variables the messages use (computed from the ``thread`` field when rendering).
    _thread_used: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled, problems = [], []
        names: set[str] = set()
        for index, (_role, content) in enumerate(self.messages):
            template, variables, found = _compile(content)
            key = (
                "prompt" if len(self.messages) == 1 and self.format != "openai-evals" else f"messages[{index}].content"
            )
            problems += [f"{self.where(key)}: {message}" for message in found]
            compiled.append(template)
            names |= variables
        if problems:
            raise TemplateError(
                "\n  ".join(
                    problems if len(problems) == 1 else [f"{len(problems)} problems in {self.where()}:", *problems]
                ),
                scorer=self.name,
            )
        names -= {"__choices", *_MUSTACHE_HELPERS}
        thread_used = tuple(sorted(names & set(THREAD_VARIABLES)))
        object.__setattr__(self, "_thread_used", thread_used)
        if thread_used:  # the thread variables are computed from one field
            names = (names - set(THREAD_VARIABLES)) | {THREAD_FIELD}
        for declared, what in (
            (tuple(name for name, _ in self.conversations), "a conversation"),
            (self.attachments, "an attachment"),
        ):
            unused = [name for name in declared if name not in names]
            if unused:
                raise TemplateError(
                    f"{self.where('fields')}: {', '.join(map(repr, unused))} declared {what} but not used",
                    scorer=self.name,
                )
        if not self.choices:
            object.__setattr__(self, "choices", tuple(self.choice_scores or ()))
        object.__setattr__(self, "_hash", "")  # dataclasses.replace() copies the hash of what it replaced
        object.__setattr__(self, "_compiled", tuple(compiled))  # what the lazy attribute would build
        object.__setattr__(self, "_plain", tuple(_plain_parts(content) for _, content in self.messages))
        object.__setattr__(
            self, "_variables", tuple(_variables_in_order("\n".join(c for _, c in self.messages), names))
        )

    @lazy
    def _compiled(self) -> tuple[Any, ...]:
        """One compiled Jinja template per message (rebuilt after unpickling; problems were checked when built)."""
        return tuple(_compile(content)[0] for _, content in self.messages)

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
        """Short SHA-256 of what decides the judge's verdict: messages, choice_scores and examples."""
        if not self._hash:
            object.__setattr__(self, "_hash", self._compute_hash())
        return self._hash

    def _compute_hash(self) -> str:
        hashed: dict[str, Any] = {
            "messages": self.messages,
            "choices": self.choices,
            "choice_scores": dict(self.choice_scores or {}),
        }
        if self.conversations:
            hashed["conversations"] = [name for name, _ in self.conversations]  # the budgets change no verdict
        if self.attachments:
            hashed["attachments"] = list(self.attachments)
        if self.examples:
            hashed["examples"] = list(self.examples)
        body = json.dumps(hashed, sort_keys=True, ensure_ascii=False, default=_json_default)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def where(self, key: str = "") -> str:
        """``template 'Name' (file path), key`` for error messages."""
        place = f"template {self.name!r}" + (f" ({self.file})" if self.file else "")
        return f"{place}, key {key!r}" if key else place

    def budgets(self) -> dict[str, int]:
        """The token budget of each field read as a conversation: those declared, and ``thread`` when the
        thread variables are used (:data:`~scorers.judges.conversation.DEFAULT_MAX_TOKENS` unless declared)."""
        budgets = dict(self.conversations)
        if self._thread_used:
            budgets.setdefault(THREAD_FIELD, DEFAULT_MAX_TOKENS)
        return budgets

    # -------------------------------------------------------------- rendering
    def render(self, variables: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Render every message; a missing variable raises :class:`TemplateError` naming it.

        ``None`` counts as missing. The list of choices is available as ``{{__choices}}``. A message that shows an
        attachment (a declared attachment field, or any :class:`~scorers.attachments.Attachment` value) has chat
        content parts: its text around each attachment's part.
        """
        placement = Placement.current()
        if placement is None:
            with Placement() as placement:
                return self.render(variables)
        context = {k: v for k, v in variables.items() if v is not None}
        self._place_attachments(context, placement)
        for name in self._variables:
            if name not in context:
                missing = [v for v in self._variables if v not in context]
                names = ", ".join(repr(m) for m in missing)
                raise TemplateError(
                    f"{self.name}: missing template variable{'s' if len(missing) > 1 else ''} {names} ({self.where()})",
                    scorer=self.name,
                )
        context["__choices"] = list(self.choices)
        budgets = self.budgets()
        if budgets:
            context = template_context(
                context,
                scorer=self.name,
                conversations=dict(self.conversations),
                thread_variables_used=self._thread_used,
                thread_max_tokens=budgets.get(THREAD_FIELD, DEFAULT_MAX_TOKENS),
            )
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
                            pieces.append(value if type(value) is str else render_value(value))
                except (TypeError, ValueError) as exc:
                    raise TemplateError(
                        f"{self.name}: rendering failed: {exc} ({self.where()})", scorer=self.name
                    ) from exc
                content = "".join(pieces)
            out.append({"role": self.messages[index][0], "content": placement.parts(content)})
        return out

    def _place_attachments(self, context: dict[str, Any], placement: Any) -> None:
        """Put in ``context`` the marker of each attachment (a declared field's value is read as one), which the
        rendered text is split at (:class:`~scorers.attachments.Placement`)."""
        for name in [n for n, value in context.items() if n in self.attachments or isinstance(value, Attachment)]:
            try:
                attachment = Attachment.of(context[name])
            except ValueError as exc:
                raise TemplateError(f"{self.name}: field {name!r} {exc} ({self.where()})", scorer=self.name) from None
            context[name] = placement.marker(attachment, name)

    def _render_jinja(self, index: int, context: dict[str, Any]) -> str:
        from jinja2 import TemplateError as JinjaTemplateError
        from jinja2.exceptions import SecurityError, UndefinedError

        from .sandbox import LimitExceeded, render

        try:
            return render(self._compiled[index], context)
        except LimitExceeded as exc:
            raise TemplateError(
                f"{self.name}: rendering stopped at a limit: {exc} ({self.where()})", scorer=self.name
            ) from None
        except RecursionError:
            raise TemplateError(
                f"{self.name}: rendering stopped: macros or values nested too deeply ({self.where()})", scorer=self.name
            ) from None
        except SecurityError as exc:
            raise TemplateError(
                f"{self.name}: the template tried to reach Python internals, which is not "
                f"allowed: {exc} ({self.where()})",
                scorer=self.name,
            ) from exc
        except UndefinedError as exc:
            raise TemplateError(
                f"{self.name}: undefined value while rendering: {exc} ({self.where()})", scorer=self.name
            ) from exc
        except (JinjaTemplateError, TypeError, ValueError, ArithmeticError) as exc:
            raise TemplateError(f"{self.name}: rendering failed: {exc} ({self.where()})", scorer=self.name) from exc


_PLAIN_TAG = re.compile(r"\{\{-?\s*([A-Za-z_]\w*)\s*-?\}\}")


def _plain_parts(source: str) -> tuple[tuple[bool, str], ...] | None:
    """``(is_literal, text_or_name)`` parts of a template made only of text and ``{{ name }}`` tags, else None."""
    parts: list[tuple[bool, str]] = []
    position = 0
    for match in _PLAIN_TAG.finditer(source):
        parts.append((True, source[position : match.start()]))
        parts.append((False, match.group(1)))
        position = match.end()
    parts.append((True, source[position:]))
    literal = "".join(text for is_literal, text in parts if is_literal)
    if any(marker in literal for marker in ("{{", "{%", "{#", "\r")) or "-}}" in source or "{{-" in source:
        return None
    if any(not is_literal and name in ("true", "false", "none", "True", "False", "None") for is_literal, name in parts):
        return None
    return tuple(p for p in parts if p[1] or not p[0])
