"""A template kind's constructor, derived from its spec model: the parameters and the ``__init__`` that binds them.

A kind's own parameters are its spec model's fields that :class:`~scorers.judges.spec.TemplateSpec` does not
have (keyword-only, typed and defaulted as the model declares them), or what its ``_parameters`` declares; they
sit between the template parameters of :meth:`TemplatedJudge.__init__ <scorers.judges.TemplatedJudge>` and the
request settings. :func:`kind_constructor` makes the kind's ``__init__``: ordinary Python that binds the
arguments to that signature (``inspect.signature`` shows it) and builds the judge.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .._util import annotation_text, spell_out_keywords
from .spec import RequestSettings, TemplateSpec, kind_fields

__all__ = ["kind_parameters", "kind_constructor"]


def kind_parameters(cls: type[Any], model: type[TemplateSpec]) -> tuple[inspect.Parameter, ...]:
    """The kind's own constructor parameters: its ``_parameters``' (after ``self``), or one keyword-only
    parameter per field of ``model`` that :class:`TemplateSpec` does not have, typed and defaulted as there."""
    own = list(kind_fields(model))
    declared = cls.__dict__.get("_parameters")
    if declared is None:
        return tuple(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty
                if field.is_required()
                else field.get_default(call_default_factory=True),
                annotation=annotation_text(field.annotation),
            )
            for name, field in ((name, model.model_fields[name]) for name in own)
        )
    parameters = tuple(inspect.signature(declared).parameters.values())[1:]
    if sorted(p.name for p in parameters) != sorted(own):
        raise TypeError(
            f"{cls.__qualname__}._parameters declares {[p.name for p in parameters]}, "
            f"but its spec model's own fields are {own}"
        )
    return parameters


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
