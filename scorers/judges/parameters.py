"""A template kind's constructor, derived from its spec model: the parameters and the ``__init__`` that binds them.

A kind's own parameters are its spec model's fields that :class:`~scorers.judges.spec.TemplateSpec` does not
have (keyword-only, typed and defaulted as the model declares them, or as a field's
:class:`~scorers.judges.spec.Argument` says); they
sit between the template parameters of :meth:`TemplatedJudge.__init__ <scorers.judges.TemplatedJudge>` and the
request settings. :func:`kind_constructor` makes the kind's ``__init__``: ordinary Python that binds the
arguments to that signature (``inspect.signature`` shows it) and builds the judge.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Literal, get_args, get_origin

from pydantic.fields import FieldInfo

from .._util import annotation_text, spell_out_keywords
from ..params import REQUIRED, Param
from .spec import Argument, RequestSettings, TemplateSpec, expected_value, kind_fields

__all__ = ["kind_parameters", "kind_constructor", "setting_option"]


def kind_parameters(model: type[TemplateSpec]) -> tuple[inspect.Parameter, ...]:
    """The kind's own constructor parameters: one per field of ``model`` that :class:`TemplateSpec` does not have,
    keyword-only, typed and defaulted as the model declares it or as its :class:`~scorers.judges.spec.Argument`
    says; positional ones (``Argument(positional=True)``) first.

    >>> from scorers.judges.spec import RatingSpec
    >>> [str(p) for p in kind_parameters(RatingSpec)]
    ["scale: 'Mapping[str, int] | Scale'"]
    """
    parameters = [_parameter(name, model.model_fields[name]) for name in kind_fields(model)]
    return tuple(sorted(parameters, key=lambda p: p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD))


def _parameter(name: str, field: FieldInfo) -> inspect.Parameter:
    argument = next((m for m in field.metadata if isinstance(m, Argument)), None)
    if argument is None or argument.takes_model_default:
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
    else:
        default = argument.default
    positional = argument is not None and argument.positional
    return inspect.Parameter(
        name,
        inspect.Parameter.POSITIONAL_OR_KEYWORD if positional else inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=argument.annotation if argument is not None else annotation_text(field.annotation),
    )


def _template_parameters(template_init: Callable[..., None]) -> tuple[list[inspect.Parameter], list[inspect.Parameter]]:
    """The parameters of ``template_init`` (:meth:`TemplatedJudge.__init__`) before the kind's (``self``, ``name``,
    ``prompt_template``) and after them (``messages`` ... ``settings``), the request settings left out."""
    parameters = [
        p
        for p in inspect.signature(template_init).parameters.values()
        if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        and p.name not in RequestSettings.model_fields
    ]
    head = [p for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    return head, [p for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def kind_constructor(cls: type[Any], template_init: Callable[..., None]) -> Callable[..., None]:
    """The ``__init__`` of kind ``cls``: the template parameters (those of ``template_init``, the base's
    ``__init__``) around the kind's own, then the request settings (spelled out in its signature, as
    :func:`~scorers.judges.base.takes_request_settings` does). The arguments are bound to that signature (a
    missing or extra one is a ``TypeError`` naming the kind's ``__init__``) and passed to
    :meth:`TemplatedJudge._construct`."""
    head, tail = _template_parameters(template_init)
    kind = cls._kind_parameters
    by_kind = {p.kind: [q for q in kind if q.kind is p.kind] for p in kind}
    positional = [*head, *by_kind.get(inspect.Parameter.POSITIONAL_OR_KEYWORD, [])]
    keyword = [*by_kind.get(inspect.Parameter.KEYWORD_ONLY, []), *tail]
    if len(positional) + len(keyword) != len(head) + len(kind) + len(tail):
        raise TypeError(f"{cls.__qualname__}: a kind's parameters are positional-or-keyword or keyword-only")
    binding = inspect.Signature(
        [*positional, *keyword, inspect.Parameter("request", inspect.Parameter.VAR_KEYWORD, annotation="Any")],
        return_annotation="None",
    )
    owner = f"{cls.__qualname__}.__init__()"
    kind_names = [p.name for p in kind]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            bound = binding.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{owner} {exc}") from None
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        request = arguments.pop("request")
        self._construct(arguments, {name: arguments.pop(name) for name in kind_names}, request)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    __init__.__doc__ = template_init.__doc__
    __init__.__signature__ = binding  # type: ignore[attr-defined]
    names = cls.request_setting_names()
    spell_out_keywords(
        __init__, {name: RequestSettings.model_fields[name].annotation for name in names}, cls.request_defaults
    )
    return __init__


def setting_option(name: str, field: FieldInfo, default: Any, annotation: Any) -> Param:
    """A judge setting as :meth:`Scorer.options() <scorers.base.Scorer.options>` lists it: the spec model's
    ``field`` (its description is the help, its ``Literal`` values the choices), the constructor's ``default`` and
    ``annotation``.

    >>> from scorers.judges.spec import RequestSettings
    >>> option = setting_option("response_mode", RequestSettings.model_fields["response_mode"], "tools", "str")
    >>> option.default, option.choices, option.allowed
    ('tools', ('tools', 'json', 'json_object', 'text'), 'tools | json | json_object | text')
    """
    members = [a for a in get_args(field.annotation) if a is not type(None)] or [field.annotation]
    literal = members[0] if len(members) == 1 and get_origin(members[0]) is Literal else None
    return Param(
        help=field.description or "(its spec model gives no description)",
        default=REQUIRED if default is inspect.Parameter.empty else default,
        choices=get_args(literal) if literal is not None else None,
        expected=expected_value(name) or (annotation if isinstance(annotation, str) else annotation_text(annotation)),
        name=name,
        annotation=annotation,
    )
