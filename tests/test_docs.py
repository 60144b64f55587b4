"""The docs site (mkdocs.yml over docs/) builds with ``mkdocs build --strict``: every page in the nav, every link
and cross-reference resolved, the API reference generated from the docstrings, and nothing fetched from the network
(Material's fonts are off). The code blocks of the pages run in tests/test_readme.py."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

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
    assert _nav_pages(config["nav"]) == {p.name for p in DOCS.glob("*.md")}
    assert config["theme"]["font"] is False, "Material would fetch Google Fonts"
    assert config["strict"] is True


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
    assert (site / "report.png").is_file() and 'src="../report.png"' in (site / "compare" / "index.html").read_text()
    for page in site.rglob("*.html"):
        assert "fonts.googleapis.com" not in page.read_text(encoding="utf-8"), f"{page} loads Google Fonts"


def test_doctest_examples_become_code_blocks() -> None:
    spec = importlib.util.spec_from_file_location("griffe_doctests", DOCS / "griffe_doctests.py")
    if importlib.util.find_spec("griffe") is None:
        pytest.fail("griffe (mkdocstrings[python]) is not installed: pip install -e '.[dev]'")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "Scores.\n\n>>> [1, 2][0]\n1\n>>> f(\n...     2)\n[1.0, 0.0]\n\nAfter."
    assert module.fence_doctests(text) == (
        "Scores.\n\n```pycon\n>>> [1, 2][0]\n1\n>>> f(\n...     2)\n[1.0, 0.0]\n```\n\nAfter."
    )
    assert module.fence_doctests("  >>> x\n  1") == "  ```pycon\n  >>> x\n  1\n  ```"
