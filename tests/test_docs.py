"""The docs site (mkdocs.yml over docs/) builds with ``mkdocs build --strict``: every page in the nav, every link
and cross-reference resolved, the API reference generated from the docstrings, and nothing fetched from the network
(Material's fonts are off). The code blocks of the pages run in tests/test_readme.py."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _nav_pages(nav: list) -> set[str]:
    pages: set[str] = set()
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages |= _nav_pages(value) if isinstance(value, list) else {value}
    return pages


def _config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_every_page_is_in_the_nav_and_the_build_stays_offline() -> None:
    config = _config()
    assert _nav_pages(config["nav"]) == {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert config["theme"]["font"] is False, "Material would fetch Google Fonts"
    assert config["strict"] is True


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    missing = [
        m
        for m in ("mkdocs", "material", "mkdocstrings_handlers.python")
        if importlib.util.find_spec(m.split(".")[0]) is None
    ]
    assert not missing, f"{missing} not installed: pip install -e '.[dev]' (mkdocs-material, mkdocstrings[python])"
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert build.returncode == 0, f"mkdocs build --strict exited {build.returncode}\n{build.stdout}\n{build.stderr}"
    assert "WARNING" not in build.stderr, build.stderr
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("scorers.evaluate", "scorers.errors.ScorerError", "scorers.testing.LoopbackLLM"):
        assert f'id="{name}"' in api, f"the API reference has no {name}"
    assert '<span class="gp">&gt;&gt;&gt; </span>' in api, "doctest examples are not shown as highlighted code"
    # the docstrings' Sphinx roles are links (docs/griffe_sphinx_roles.py), not text such as ":class:<code>X</code>"
    assert re.search(
        r'derives from <a class="autorefs[^>]* href="#scorers\.errors\.ScorerError"><code>ScorerError<', api
    )
    assert (site / "report.png").is_file() and 'src="../report.png"' in (site / "compare" / "index.html").read_text()
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in text, f"{page} loads Google Fonts"
        roles = re.findall(r":(?:class|meth|func|data|attr|mod|exc|obj):(?:<code>|`)[^<`]*", text)
        assert not roles, f"{page} shows {len(roles)} Sphinx roles as text, such as {roles[:3]}"


def _extension(name: str) -> Any:
    """docs/NAME.py, a griffe extension of mkdocs.yml, as a module."""
    if importlib.util.find_spec("griffe") is None:
        pytest.fail("griffe (mkdocstrings[python]) is not installed: pip install -e '.[dev]'")
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doctest_examples_become_code_blocks() -> None:
    module = _extension("griffe_doctests")
    text = "Scores.\n\n>>> [1, 2][0]\n1\n>>> f(\n...     2)\n[1.0, 0.0]\n\nAfter."
    assert module.fence_doctests(text) == (
        "Scores.\n\n```pycon\n>>> [1, 2][0]\n1\n>>> f(\n...     2)\n[1.0, 0.0]\n```\n\nAfter."
    )
    assert module.fence_doctests("  >>> x\n  1") == "  ```pycon\n  >>> x\n  1\n  ```"


def test_sphinx_roles_become_references_resolved_in_their_scope() -> None:
    import griffe

    module = _extension("griffe_sphinx_roles")
    modules = {
        "__init__.py": "from pkg.base import Base\n",
        "base.py": (
            "class Base:\n"
            '    """:meth:`run`, :meth:`~Base.run`, :class:`pkg.base.Base`, :mod:`.base`, :func:`json.dumps`."""\n'
            "    pkg = 1  # a member named like the package: pkg.LIMIT below is still the package's\n"
            "    def run(self):\n"
            '        """:class:`Base` and :data:`pkg.LIMIT`."""\n'
        ),
    }
    extensions = griffe.load_extensions(module.SphinxRoles)
    with griffe.temporary_visited_package("pkg", modules, extensions=extensions) as pkg:
        cls, run = pkg["base.Base"].docstring.value, pkg["base.Base.run"].docstring.value

    def ref(path: str, shown: str) -> str:
        return f'<autoref identifier="{path}" optional><code>{shown}</code></autoref>'

    assert cls == (
        f"{ref('pkg.base.Base.run', 'run')}, {ref('pkg.base.Base.run', 'run')}, "
        f"{ref('pkg.base.Base', 'pkg.base.Base')}, {ref('pkg.base', '.base')}, <code>json.dumps</code>."
    )
    assert run == f"{ref('pkg.base.Base', 'Base')} and {ref('pkg.LIMIT', 'pkg.LIMIT')}."
