"""The bounds on judge template files and on rendering their prompts, declared once.

No template file, however written, may make loading, ``python -m scorers check`` or a
render hang or take a process's memory: a file past a limit is a problem that names
the file and the limit (a :class:`~scorers.errors.TemplateError` when its judge is
used), and a render past a limit is a :class:`~scorers.errors.TemplateError` naming
the template, its file and the limit. Each limit is far above what a judge prompt
needs; the built-in templates use well under 1 % of every one.
"""

from __future__ import annotations

__all__ = [
    "MAX_TEMPLATE_FILE_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "MAX_TEMPLATE_NODES",
    "MAX_TEMPLATE_DEPTH",
    "MAX_RENDERED_CHARS",
    "MAX_RENDER_STEPS",
    "MAX_RENDER_BUILT",
    "MAX_NUMBER_DIGITS",
]

# ---------------------------------------------------------------- template files
#: The largest template file read (1 MiB; the built-in ones are under 2 KB).
MAX_TEMPLATE_FILE_BYTES = 1 << 20
#: The deepest nesting of YAML mappings and sequences in a template file.
MAX_YAML_DEPTH = 64
#: The most YAML nodes a template file may hold, counting each alias (``*name``) as a copy of
#: what it names: a "billion laughs" file of nested aliases stops here instead of expanding.
MAX_YAML_NODES = 100_000
#: The most parts (pieces of text, tags, names, operators: nodes of the parsed template) one
#: message's template may have: Jinja's compiler takes time that grows faster than this number
#: (5,000 ``{% if %}`` blocks on distinct variables take it 20 s; this many, well under 1 s).
MAX_TEMPLATE_NODES = 10_000
#: The deepest nesting of one message's parsed template (blocks in blocks, ``a.b.c``, ``f(g(x))``,
#: ``1 + 2 + 3``): compiling a chain of 300 attributes takes Jinja 15 s; this deep, well under 1 s.
MAX_TEMPLATE_DEPTH = 64

# --------------------------------------------------------------------- rendering
#: The most characters one rendered message may have, and the largest value (characters of text,
#: items of a list or mapping, counted through nested values) a template may build: more than
#: any model's context window holds.
MAX_RENDERED_CHARS = 10_000_000
#: The most steps one message's rendering may take: each loop iteration, call, filter, operator,
#: attribute or item read, and each value output or built is one step.
MAX_RENDER_STEPS = 1_000_000
#: The most characters (and items) one message's rendering may build in all, summed over every
#: value it outputs or builds: what bounds a loop that builds a large value again and again.
MAX_RENDER_BUILT = 100_000_000
#: The most digits of a number a template computes (``**`` and ``*`` on integers): Python's own
#: limit for turning an integer into text.
MAX_NUMBER_DIGITS = 4300
