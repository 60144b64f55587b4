"""The Jinja2 sandbox judge prompts render in: no Python internals, and a bounded cost.

Jinja's own sandbox keeps a template away from Python internals; this module also
keeps any template from hanging a render or taking the process's memory
(the limits are in :mod:`scorers.judges.limits`):

* every operation that can build a value larger than a constant multiple of its
  operands (``*``, ``**``, ``%``, ``str.format``, padding, ``replace``, ``join``, the
  filters ``center``, ``indent``, ``wordwrap``, ``batch``, ``sum`` ...) is sized
  *before* it runs, and refused when the result would pass the value limit;
* a compiled template is rewritten so that each loop iteration and each value it
  outputs or builds (``~``, list and mapping literals) is metered, as are calls,
  filters, operators and attribute reads: a render has a budget of steps and of
  characters built, and its output is cut off at the message limit;
* ``{% include %}``, ``{% import %}`` and ``{% extends %}``, names the sandbox refuses
  and costs visible in the text (``9 ** 9 ** 9``, nested ``range`` loops) are problems
  of the template found when it is compiled, so ``python -m scorers check`` lists them.

A limit reached while rendering raises :class:`LimitExceeded`, which
:mod:`scorers.judges.template` turns into a :class:`~scorers.errors.TemplateError`
naming the template and its file.
"""

from __future__ import annotations

import json
import math
import operator
import re
import string
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from jinja2 import nodes, pass_context
from jinja2.exceptions import TemplateSyntaxError
from jinja2.ext import Extension
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import (
    MAX_RANGE,
    UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
    UNSAFE_COROUTINE_ATTRIBUTES,
    UNSAFE_GENERATOR_ATTRIBUTES,
    ImmutableSandboxedEnvironment,
)
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from .limits import (
    MAX_NUMBER_DIGITS,
    MAX_RENDER_BUILT,
    MAX_RENDER_STEPS,
    MAX_RENDERED_CHARS,
    MAX_TEMPLATE_DEPTH,
    MAX_TEMPLATE_NODES,
)

__all__ = ["JudgeEnvironment", "LimitExceeded", "compile_template", "render", "bounded_json"]


class LimitExceeded(Exception):
    """A template reached one of the limits of :mod:`scorers.judges.limits`; the message says which."""


# ------------------------------------------------------------------ the budget
@dataclass
class _Budget:
    """What one render has spent: steps, characters built, and the sizes measured so far."""

    steps: int = 0
    built: int = 0
    #: ``id(value) -> (value, size)``; holding the value keeps its id from being reused during the render.
    sizes: dict[int, tuple[Any, int]] = field(default_factory=dict)


_BUDGET: ContextVar[_Budget | None] = ContextVar("scorers_render_budget", default=None)


def _step() -> None:
    """Count one step of the render under way (none while a template is compiled)."""
    budget = _BUDGET.get()
    if budget is not None:
        budget.steps += 1
        if budget.steps > MAX_RENDER_STEPS:
            raise LimitExceeded(
                f"the render took more than {MAX_RENDER_STEPS:,} steps (loop iterations, calls, "
                "filters, operators, values built)"
            )


def _check_size(size: int, what: str) -> None:
    """Refuse a value of ``size`` characters (or items) before ``what`` builds it."""
    if size > MAX_RENDERED_CHARS:
        raise LimitExceeded(
            f"{what} would build a value of {size:,} characters or items; the limit is {MAX_RENDERED_CHARS:,}"
        )


def _charged(value: Any, what: str) -> Any:
    """``value``, after counting its size against the value limit and the render's budget."""
    budget = _BUDGET.get()
    size = value_size(value, budget.sizes if budget is not None else {})
    _check_size(size, what)
    if budget is not None:
        budget.built += size
        if budget.built > MAX_RENDER_BUILT:
            raise LimitExceeded(f"the render built more than {MAX_RENDER_BUILT:,} characters in all")
    return value


def _metered(iterable: Iterable[Any]) -> Iterator[Any]:
    """``iterable``, one step per item."""
    for item in iterable:
        _step()
        yield item


# ---------------------------------------------------------------------- sizes
_SCALARS = (float, bool, type(None))
#: The size of any other object (its text is its repr, a few dozen characters).
_OBJECT_SIZE = 32


def value_size(value: Any, memo: dict[int, tuple[Any, int]]) -> int:
    """Characters of text (digits of an integer, items of a container), counted through nested values.

    A value that holds the same list many times counts it each time, as its text would;
    ``memo`` makes that cheap and stops counting past the value limit.
    """
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, _SCALARS):
        return len(repr(value))
    if isinstance(value, int):
        return _digits(value) + 1
    if not isinstance(value, (list, tuple, set, frozenset, Mapping)):
        return _OBJECT_SIZE
    known = memo.get(id(value))
    if known is not None:
        return known[1]
    memo[id(value)] = (value, 0)  # a value that contains itself counts once
    items = [item for pair in value.items() for item in pair] if isinstance(value, Mapping) else value
    total = 1
    for item in items:
        total += value_size(item, memo)
        if total > MAX_RENDERED_CHARS:
            break
    memo[id(value)] = (value, total)
    return total


def _digits(number: int) -> int:
    return math.ceil(number.bit_length() * math.log10(2)) if number else 1


def _int(value: Any) -> int:
    """``value`` when it is an integer, else 0 (the operation itself then refuses it)."""
    return value if isinstance(value, int) else 0


def _number(digits: str) -> int:
    """A run of digits as a number, without converting more digits than Python allows."""
    return int(digits) if len(digits) < 18 else 10**18


def _sizes(values: Iterable[Any]) -> list[int]:
    memo: dict[int, tuple[Any, int]] = {}
    return [value_size(v, memo) for v in values]


# ------------------------------------------------------- sizing before building
def check_binop(symbol: str, left: Any, right: Any) -> None:
    """Refuse ``left <symbol> right`` before it runs when its result would pass a limit."""
    if symbol == "*":
        for sequence, count in ((left, right), (right, left)):
            if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int) and count > 1:
                _check_size(value_size(sequence, {}) * count, "'*'")
        if isinstance(left, int) and isinstance(right, int):
            _check_digits(_digits(left) + _digits(right), "'*'")
    elif symbol == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        _check_digits(math.ceil(right * math.log10(abs(left))), "'**'")
    elif symbol == "%" and isinstance(left, (str, bytes)):
        fmt = left if isinstance(left, str) else left.decode("latin-1")
        _check_size(printf_bound(fmt, right), "'%' formatting")


def _check_digits(digits: int, what: str) -> None:
    if digits > MAX_NUMBER_DIGITS:
        raise LimitExceeded(
            f"{what} would compute a number of about {digits:,} digits; the limit is {MAX_NUMBER_DIGITS:,}"
        )


_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


def printf_bound(fmt: str, args: Any) -> int:
    """The longest text ``fmt % args`` can give: its text, widths and precisions, each spec's longest value."""
    values = list(args.values()) if isinstance(args, Mapping) else list(args) if isinstance(args, tuple) else [args]
    specs = _PRINTF_SPEC.findall(fmt)
    widths = sum(_number(n) for spec in specs for n in spec if n.isdigit())
    if any("*" in spec for spec in specs):
        widths += sum(abs(v) for v in values if isinstance(v, int))
    return len(fmt) + widths + len(specs) * max(_sizes(values), default=0)


def format_bound(fmt: str, values: Iterable[Any]) -> int:
    """The longest text ``fmt.format(...)`` can give with ``values``: like :func:`printf_bound`."""
    values = list(values)
    try:
        specs = [spec or "" for _, name, spec, _ in string.Formatter().parse(fmt) if name is not None]
    except ValueError:  # a malformed format: the call itself says so
        return len(fmt)
    widths = sum(_number(n) for spec in specs for n in re.findall(r"\d+", spec))
    if any("{" in spec for spec in specs):  # a width given as an argument: {:{width}}
        widths += sum(abs(v) for v in values if isinstance(v, int))
    return len(fmt) + widths + len(specs) * max(_sizes(values), default=0)


def replace_bound(text: Any, old: Any, new: Any, count: Any = -1) -> int:
    """The longest text ``text.replace(old, new, count)`` can give."""
    try:
        hits = len(text) + 1 if not old else text.count(old)
    except TypeError:  # the call itself refuses these types
        return len(text)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(len(new) - len(old), 0)


def join_bound(separator: Any, items: list[Any]) -> int:
    """The longest text joining ``items`` with ``separator`` can give."""
    return len(str(separator)) * max(len(items) - 1, 0) + sum(_sizes(items))


def _fill_bound(text: Any, width: Any = 0, *_: Any) -> int:
    return max(len(text), _int(width))


def _tabs_bound(text: Any, tabsize: Any = 8) -> int:
    return len(text) + text.count("\t" if isinstance(text, str) else b"\t") * max(_int(tabsize), 0)


def _translate_bound(text: Any, table: Any = None, *_: Any) -> int:
    longest = (
        max((len(v) for v in table.values() if isinstance(v, str)), default=1) if isinstance(table, Mapping) else 1
    )
    return len(text) * max(longest, 1)


#: str and bytes methods whose result can outgrow their operands, and the longest result each can give.
_TEXT_METHOD_BOUNDS: dict[str, Callable[..., int]] = {
    "center": _fill_bound,
    "ljust": _fill_bound,
    "rjust": _fill_bound,
    "zfill": _fill_bound,
    "expandtabs": _tabs_bound,
    "replace": replace_bound,
    "translate": _translate_bound,
    "join": lambda separator, items: join_bound(separator, items),
}


def _batch_bound(value: Any, linecount: Any = 0, fill_with: Any = None) -> int:
    return _int(linecount) if fill_with is not None else 0


def _center_bound(value: Any, width: Any = 80) -> int:
    return max(len(str(value)), _int(width))


def _format_filter_bound(value: Any, *args: Any, **kwargs: Any) -> int:
    return printf_bound(str(value), kwargs or args)


def _indent_bound(s: Any, width: Any = 4, first: Any = False, blank: Any = False) -> int:
    text = str(s)
    return len(text) + (text.count("\n") + 1) * (len(width) if isinstance(width, str) else _int(width))


def _join_filter_bound(value: Any, d: Any = "", attribute: Any = None) -> int:
    return join_bound(d, list(value))


def _replace_filter_bound(s: Any, old: Any, new: Any, count: Any = None) -> int:
    return replace_bound(str(s), str(old), str(new), -1 if count is None else count)


def _sum_bound(iterable: Any, attribute: Any = None, start: Any = 0) -> int:
    if isinstance(start, (int, float)):
        return 0
    items = list(iterable)  # summing sequences copies the running total once per item
    return len(items) * (sum(_sizes(items)) + value_size(start, {}))


def _urlize_bound(
    value: Any,
    trim_url_limit: Any = None,
    nofollow: Any = False,
    target: Any = None,
    rel: Any = None,
    extra_schemes: Any = None,
) -> int:
    text = str(value)
    links = text.count(".") + text.count("@") + text.count(":") + 1  # every link has one of these
    return 2 * len(text) + links * (64 + len(str(target or "")) + len(str(rel or "")))


def _wordwrap_bound(
    s: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None, break_on_hyphens: Any = True
) -> int:
    text = str(s)
    lines = 2 * len(text) // max(_int(width), 1) + text.count("\n") + 1 if break_long_words else len(text) + 1
    return len(text) + lines * (1 if wrapstring is None else len(str(wrapstring)))


#: Filters whose result can outgrow their arguments, and the largest result each can give
#: (for ``sum``: the items its running total copies). A filter not listed here gives at most a
#: small multiple of its arguments' size.
_FILTER_BOUNDS: dict[str, Callable[..., int]] = {
    "batch": _batch_bound,
    "center": _center_bound,
    "format": _format_filter_bound,
    "indent": _indent_bound,
    "join": _join_filter_bound,
    "replace": _replace_filter_bound,
    "sum": _sum_bound,
    "urlize": _urlize_bound,
    "wordwrap": _wordwrap_bound,
}

#: What Jinja passes a filter before its value, by the filter's ``pass_*`` decorator.
_PASSED = {
    "context": lambda c: (c,),
    "eval_context": lambda c: (c.eval_ctx,),
    "environment": lambda c: (c.environment,),
}


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` as a filter that is sized first when it can outgrow its arguments, and metered.

    Every bounded filter takes the render context, so none is run while a template is compiled.
    """
    bound = _FILTER_BOUNDS.get(name)
    passed = _PASSED.get(getattr(getattr(function, "jinja_pass_arg", None), "name", ""), lambda c: ())

    @pass_context
    def bounded(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        _step()
        if bound is not None:
            if isinstance(value, Iterator):
                value = list(value)
            _check_size(bound(value, *args, **kwargs), f"the {name!r} filter")
        result = function(*passed(context), value, *args, **kwargs)
        return _metered(result) if isinstance(result, Iterator) else _charged(result, f"the {name!r} filter")

    bounded.__name__ = bounded.__qualname__ = name
    return bounded


def _cut(text: str, opener: str, closer: str) -> str:
    """``text`` without its ``opener ... closer`` spans, up to the first opener left open, in one pass."""
    kept, position = [], 0
    while (start := text.find(opener, position)) != -1 and (end := text.find(closer, start)) != -1:
        kept.append(text[position:start])
        position = end + len(closer)
    kept.append(text[position:])
    return "".join(kept)


def _striptags(value: Any) -> str:
    """Jinja's ``striptags`` (comments and tags removed, whitespace collapsed, entities unescaped) in linear time."""
    return Markup(" ".join(_cut(_cut(str(value), "<!--", "-->"), "<", ">").split())).unescape()


def bounded_json(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, refused once the text passes the value limit (``tojson``'s encoder)."""
    chunks, size = [], 0
    for chunk in json.JSONEncoder(**options).iterencode(value):
        size += len(chunk)
        if size > MAX_RENDERED_CHARS:
            raise LimitExceeded(f"the JSON text would have more than {MAX_RENDERED_CHARS:,} characters")
        chunks.append(chunk)
    return "".join(chunks)


# ----------------------------------------------------------------- environment
class RenderMeter(Extension):
    """The callables the metering rewrite inserts (see :class:`_Metering`); a template cannot name them."""

    def value(self, value: Any) -> Any:
        """A value output or built: the sandbox's ``call`` charges its step and size."""
        return value

    def loop(self, iterable: Any) -> Iterator[Any]:
        """A loop's items, one step each."""
        return _metered(iterable)


class JudgeEnvironment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, bounded: sized operations, a metered render, no ``lipsum``.

    ``{{a.b}}`` on a mapping reads the key ``b`` first (``{{d.items}}`` is the item, not the method).
    Immutable: a template cannot change the row it renders (``list.append``, ``dict.update`` ...).
    """

    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(extensions=[RenderMeter], **options)
        del self.globals["lipsum"]  # placeholder text, whose size is its argument
        self.filters["striptags"] = _striptags
        self.filters = {name: _bounded_filter(name, function) for name, function in self.filters.items()}
        self.policies["json.dumps_function"] = bounded_json

    def getattr(self, obj: Any, attribute: str) -> Any:
        _step()
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _step()
        return super().getitem(obj, argument)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _step()
        check_binop(operator, left, right)
        return _charged(super().call_binop(context, operator, left, right), f"{operator!r}")

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _step()
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, RenderMeter):  # inserted by the metering rewrite: safe, and called once per value
            return _charged(__obj(*args), "the template")
        if isinstance(__obj, LoopContext) and args:  # loop(children) in a recursive loop
            args = (_metered(args[0]), *args[1:])
        bound = _TEXT_METHOD_BOUNDS.get(getattr(__obj, "__name__", ""))
        if bound is not None and isinstance(owner, (str, bytes)):
            args = tuple(list(a) if isinstance(a, Iterator) else a for a in args)
            _check_size(bound(owner, *args, **kwargs), f"{__obj.__name__}()")
        return _charged(super().call(__context, __obj, *args, **kwargs), f"{getattr(__obj, '__name__', 'a call')}()")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        formatted = super().wrap_str_format(value)
        if formatted is None:
            return None
        text, by_name = value.__self__, value.__name__ == "format_map"

        def bounded_format(*args: Any, **kwargs: Any) -> str:
            values = (
                list(args[0].values())
                if by_name and args and isinstance(args[0], Mapping)
                else [*args, *kwargs.values()]
            )
            _check_size(format_bound(text, values), f"{value.__name__}()")
            return formatted(*args, **kwargs)

        return bounded_format


# ------------------------------------------------------------- compiling
class _Metering(NodeTransformer):
    """Route every loop's items and every value output or built through :class:`RenderMeter`."""

    def _through(self, method: str, node: nodes.Node) -> nodes.Expr:
        meter = nodes.ExtensionAttribute(RenderMeter.identifier, method, lineno=node.lineno)
        return nodes.Call(meter, [node], [], None, None, lineno=node.lineno)

    def visit_For(self, node: nodes.For) -> nodes.For:
        self.generic_visit(node)
        node.iter = self._through("loop", node.iter)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Output:
        self.generic_visit(node)
        node.nodes = [
            child
            if _is_metered(child)
            else self._through(
                "value",
                nodes.Const(child.data, lineno=child.lineno) if isinstance(child, nodes.TemplateData) else child,
            )
            for child in node.nodes
        ]
        return node

    def _built(self, node: nodes.Expr) -> nodes.Expr:
        self.generic_visit(node)
        if isinstance(node, nodes.Tuple) and node.ctx != "load":  # an assignment target
            return node
        return self._through("value", node)

    visit_Concat = visit_List = visit_Tuple = visit_Dict = _built


def _is_metered(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Call) and isinstance(node.node, nodes.ExtensionAttribute)


_UNSUPPORTED_TAGS = {
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "from ... import",
    nodes.Extends: "extends",
}
#: Attribute names the sandbox refuses on Python objects besides those starting with ``_``.
_INTERNAL_NAMES = (
    UNSAFE_GENERATOR_ATTRIBUTES
    | UNSAFE_COROUTINE_ATTRIBUTES
    | UNSAFE_ASYNC_GENERATOR_ATTRIBUTES
    | {"mro", "tb_frame", "tb_next", "f_back", "f_builtins", "f_code", "f_globals", "f_locals"}
)
_UNKNOWN = object()  # a value known only when rendering
_ARITHMETIC = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


def static_problems(ast: nodes.Template) -> list[tuple[int | None, str]]:
    """``(line, message)`` for what the sandbox would refuse or stop at when rendering, seen in the text."""
    found: dict[tuple[int | None, str], None] = {}

    def add(node: nodes.Node, message: str) -> None:
        found.setdefault((node.lineno, message), None)

    for node in ast.find_all(tuple(_UNSUPPORTED_TAGS)):
        add(
            node,
            f"{{% {_UNSUPPORTED_TAGS[type(node)]} %}} is not supported: a judge prompt is one template "
            "that cannot load others",
        )
    for getattr_node in ast.find_all(nodes.Getattr):
        if _is_internal(getattr_node.attr):
            add(getattr_node, _internal_message(getattr_node.attr))
    for filter_node in ast.find_all(nodes.Filter):
        if (
            filter_node.name == "attr"
            and filter_node.args
            and isinstance(filter_node.args[0], nodes.Const)
            and isinstance(filter_node.args[0].value, str)
            and _is_internal(filter_node.args[0].value)
        ):
            add(filter_node, _internal_message(filter_node.args[0].value))
    for expr in ast.find_all((nodes.BinExpr, nodes.Filter, nodes.Call)):
        try:
            _static_value(expr)
        except LimitExceeded as exc:
            add(expr, f"{exc} (a render would stop here)")
    _loop_problems(ast, 1, add)
    return list(found)


def _is_internal(name: str) -> bool:
    return name.startswith("_") or name in _INTERNAL_NAMES


def _internal_message(name: str) -> str:
    return (
        f"attribute {name!r} is refused by the sandbox (it can reach Python internals); "
        f"to read a key of that name, write x[{name!r}]"
    )


def _static_value(node: nodes.Node) -> Any:
    """The value of a constant expression, sized as a render sizes it; ``_UNKNOWN`` when it depends on data.

    Text and lists are sized but not built (a check must not build what it refuses).
    """
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg):
        value = _static_value(node.node)
        return -value if isinstance(value, (int, float)) else _UNKNOWN
    if isinstance(node, nodes.BinExpr):
        return _static_binop(node)
    if isinstance(node, nodes.Filter) and node.name in _FILTER_BOUNDS and node.node is not None:
        _check_filter_size(node, node.node)
        return _UNKNOWN
    if isinstance(node, nodes.Call):
        length = _range_length(node)
        if length is not None and length > MAX_RANGE:
            raise LimitExceeded(f"range() of {length:,} numbers is refused; the sandbox allows {MAX_RANGE:,}")
    return _UNKNOWN


def _static_binop(node: nodes.BinExpr) -> Any:
    """:func:`_static_value` of a binary operation: its operands' sizes checked, its value when both are numbers."""
    left, right = _static_value(node.left), _static_value(node.right)
    if left is _UNKNOWN or right is _UNKNOWN:
        return _UNKNOWN
    check_binop(node.operator, left, right)
    if not (isinstance(left, (int, float)) and isinstance(right, (int, float))):
        return _UNKNOWN
    try:
        return _ARITHMETIC[node.operator](left, right)
    except (ArithmeticError, ValueError):
        return _UNKNOWN


def _check_filter_size(node: nodes.Filter, operand: nodes.Node) -> None:
    """Refuse a sized filter (``_FILTER_BOUNDS``) of ``operand`` whose constant arguments make its result too
    large."""
    value = _static_value(operand)
    args = [_static_value(a) for a in node.args]
    # Keyword nodes (str keys), though jinja2 annotates a filter's kwargs as Pair nodes
    kwargs = {k.key: _static_value(k.value) for k in node.kwargs}
    if (
        value is _UNKNOWN
        or _UNKNOWN in args
        or _UNKNOWN in kwargs.values()
        or node.dyn_args is not None
        or node.dyn_kwargs is not None
    ):
        return
    try:
        size = _FILTER_BOUNDS[node.name](value, *args, **kwargs)  # type: ignore[arg-type]  # see kwargs
    except (TypeError, ValueError):  # the render reports the wrong arguments
        return
    _check_size(size, f"the {node.name!r} filter")


def _range_length(node: nodes.Node) -> int | None:
    """How many numbers ``range(...)`` with constant arguments gives; ``None`` when ``node`` is not one."""
    if not (
        isinstance(node, nodes.Call)
        and isinstance(node.node, nodes.Name)
        and node.node.name == "range"
        and not node.kwargs
        and node.dyn_args is None
        and node.dyn_kwargs is None
    ):
        return None
    args = [_static_value(a) for a in node.args]
    if not args or not all(isinstance(a, int) for a in args):
        return None
    try:
        numbers = range(*args)
    except (TypeError, ValueError):
        return None
    step = numbers.step
    return max(0, (numbers.stop - numbers.start + step - (1 if step > 0 else -1)) // step)


def _loop_problems(node: nodes.Node, runs: int, add: Callable[[nodes.Node, str], None]) -> None:
    """Loops over constant ranges nested so deep that the body would run more than a render's steps."""
    for child in node.iter_child_nodes():
        length = _range_length(child.iter) if isinstance(child, nodes.For) else None
        if length is None:
            _loop_problems(child, runs, add)
        elif runs * length > MAX_RENDER_STEPS:
            add(
                child,
                f"nested loops run their body {runs * length:,} times; a render stops after {MAX_RENDER_STEPS:,} steps",
            )
        else:
            _loop_problems(child, runs * max(length, 1), add)


def compile_template(
    environment: JudgeEnvironment, source: str
) -> tuple[Any, frozenset[str], list[tuple[int | None, str]]]:
    """``(compiled template, its undeclared variables, [])``, or ``(None, frozenset(), problems)``.

    Each problem is ``(line in source, message)``: a syntax error (which hides the rest of the text),
    a template past :data:`~scorers.judges.limits.MAX_TEMPLATE_NODES` or nested too deeply to
    compile, else everything :func:`static_problems` finds, else what compiling finds (an unknown filter).
    """
    from jinja2 import meta

    try:
        ast = environment.parse(source)
        problems = _size_problems(ast) or static_problems(ast)
        if problems:
            return None, frozenset(), list(problems)
        variables = frozenset(meta.find_undeclared_variables(ast))
        return environment.from_string(_Metering().visit(ast)), variables, []
    except TemplateSyntaxError as exc:
        return None, frozenset(), [(exc.lineno, f"template syntax error: {exc.message}")]
    except (RecursionError, SyntaxError):  # parsing, or Python compiling the generated code
        return None, frozenset(), [(None, _TOO_DEEP)]


_TOO_DEEP = (
    f"the template nests blocks or expressions too deeply to compile (the limit is {MAX_TEMPLATE_DEPTH} "
    "levels, fewer for parentheses)"
)


def _size_problems(ast: nodes.Template) -> list[tuple[int | None, str]]:
    """A problem when the parsed template has more nodes or deeper nesting than compiling is allowed."""
    count = 0
    stack: list[tuple[nodes.Node, int]] = [(ast, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if depth > MAX_TEMPLATE_DEPTH:
            return [(node.lineno, _TOO_DEEP)]
        if count > MAX_TEMPLATE_NODES:
            return [
                (
                    None,
                    f"the template has more than {MAX_TEMPLATE_NODES:,} parts (text, tags, names, "
                    "operators), the limit for one message",
                )
            ]
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())
    return []


def render(compiled: Any, context: Mapping[str, Any]) -> str:
    """Render ``compiled`` with a fresh budget, stopping once the output passes the message limit."""
    token = _BUDGET.set(_Budget())
    try:
        chunks, size = [], 0
        for chunk in compiled.generate(context):
            size += len(chunk)
            if size > MAX_RENDERED_CHARS:
                raise LimitExceeded(f"the rendered message would have more than {MAX_RENDERED_CHARS:,} characters")
            chunks.append(chunk)
        return "".join(chunks)
    finally:
        _BUDGET.reset(token)
