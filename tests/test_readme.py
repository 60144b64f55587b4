"""Every code block of README.md and of each docs/*.md page runs as printed, each on its own, in a fresh
interpreter.

- A ```python block is written to a file, unchanged, and run with ``python FILE``; a block that defines
  top-level ``test_*`` functions is a pytest file and runs with ``python -m pytest FILE``.
- A ```bash block runs with ``bash -euo pipefail -c BLOCK``, unless the line just above its fence is
  ``<!-- not-run: REASON -->`` (for what must not run in a test: apt-get, the test command itself, synopses
  with placeholders, commands on the reader's own files).
- A Python block runs in an empty folder (the user's project); a bash block in a folder laid out like the
  clone's top folder (symbolic links to its entries), so ``examples/...`` works and what it writes stays out of
  the clone.
- A README block runs with only what the README's first command installs: a sitecustomize on ``PYTHONPATH``
  hides the packages of the extras it leaves out, so an example that needs one fails here as it would for a new
  user. The docs pages' blocks run with every extra (each page says which one it needs).
- A user who calls a judge has ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``: here the URL is a LoopbackLLM this
  test starts, which answers every judge with a valid choice. Blocks that start their own server ignore it.
- ``pip`` is a stand-in on ``PATH`` that installs nothing: it checks that each requirement is this clone (never
  a package index's name), that each extra exists and is already installed here (the test
  command installs every extra), and that each file an option names exists.

A failure names the block by its file and line (the test id ``README.md-L123`` / ``docs/judges.md-L120``).

With ``SCORERS_BLOCK_OUTPUTS=DIR`` set, each block's stdout, stderr and the files it wrote are kept under
``DIR/<file>-<hash of the block's text>/``: run it before and after a refactoring and ``diff -r`` the two folders
to check that every documented command still prints and writes the same bytes (docs/development.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scorers.testing import LoopbackLLM, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the Markdown files whose blocks run: the README and every page of the docs site (docs/providers/ too)
FILES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.*?)\s*-->$")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
TIMEOUT_S = 300


@dataclasses.dataclass(frozen=True)
class Block:
    file: str  #: the Markdown file, relative to the clone's top folder (``README.md``, ``docs/judges.md``)
    line: int  #: the line of the opening fence, counted from 1
    lang: str
    text: str
    not_run: str | None  #: the reason given in a ``<!-- not-run: ... -->`` line just above the fence

    @property
    def id(self) -> str:
        return f"{self.file}-L{self.line}"

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"

    @property
    def is_pytest_file(self) -> bool:
        return re.search(r"^def test_\w*\(", self.text, flags=re.M) is not None


def readme_blocks(text: str, file: str = "README.md") -> list[Block]:
    """The fenced code blocks of a Markdown text (the file ``file``), in order."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        assert end is not None, f"{file} line {i + 1}: a code block that is never closed"
        marker = NOT_RUN.match(lines[i - 1].strip()) if i else None
        blocks.append(
            Block(
                file=file,
                line=i + 1,
                lang=opening["lang"],
                text="\n".join(lines[i + 1 : end]) + "\n",
                not_run=marker["reason"] if marker else None,
            )
        )
        i = end + 1
    return blocks


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


BLOCKS = [block for path in FILES for block in readme_blocks(path.read_text(encoding="utf-8"), _name(path))]
RUN = [b for b in BLOCKS if b.lang in ("python", "bash") and b.not_run is None]


def test_the_docs_have_examples_and_every_not_run_block_says_why() -> None:
    assert len(FILES) >= 10, "the docs/ pages are missing"
    assert sum(b.lang == "python" for b in RUN) >= 8 and sum(b.lang == "bash" for b in RUN) >= 4
    readme = [b for b in RUN if b.file == "README.md"]
    assert sum(b.lang == "python" for b in readme) >= 1 and sum(b.lang == "bash" for b in readme) >= 3
    for block in BLOCKS:
        if block.not_run is not None:
            assert block.lang == "bash", f"{block.where}: only bash blocks may be marked not-run"
            assert len(block.not_run) >= 10, f"{block.where}: say why the block does not run"
    for path in FILES:
        markers = [
            n + 1 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()) if NOT_RUN.match(line.strip())
        ]
        assert markers == [b.line - 1 for b in BLOCKS if b.file == _name(path) and b.not_run is not None], (
            f"{_name(path)}: a not-run marker not above a fence"
        )


def test_a_not_run_marker_applies_to_its_block_only() -> None:
    text = "a\n<!-- not-run: installs packages -->\n```bash\napt-get install x\n```\n\n```bash\nls\n```\n"
    first, second = readme_blocks(text)
    assert (first.id, first.not_run, first.text) == ("README.md-L3", "installs packages", "apt-get install x\n")
    assert (second.line, second.not_run, second.text) == (7, None, "ls\n")


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "yaml"], ids=lambda b: b.id)
def test_yaml_block_parses(block: Block) -> None:
    assert isinstance(yaml.safe_load(block.text), dict)


# ----------------------------------------------------------------------------- what a user has around a block
def _answer(request: RecordedRequest) -> Reply:
    """A valid answer to any classifier or pairwise judge: a consistent, agreeing or first choice."""
    body = request.body if isinstance(request.body, dict) else {}
    for tool in body.get("tools") or []:
        function = tool.get("function", tool)  # chat: {"function": {...}}; Responses: the function itself
        properties = (function.get("parameters") or {}).get("properties") or {}
        choices = (properties.get("choice") or {}).get("enum") or []
        if choices:
            choice = next((c for c in ("C", "Y", "A") if c in choices), choices[0])
            return Reply.choice(
                choice,
                reasons="tests/test_readme.py's scripted verdict" if "reasons" in properties else None,
                name=function.get("name", "select_choice"),
            )
    return Reply.text("Y")


@pytest.fixture(scope="module")
def judge_server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(default=_answer) as server:
        yield server


PIP_STAND_IN = '''
"""tests/test_readme.py's pip: checks a README pip command against this clone and installs nothing."""
import os, sys
from importlib import metadata
from packaging.requirements import Requirement

ROOT = {root!r}
EXTRAS = metadata.metadata("scorers").get_all("Provides-Extra") or []

def fail(message):
    sys.exit(f"pip (tests/test_readme.py's stand-in): {{message}}: {{' '.join(sys.argv[1:])}}")

def installed(extra, seen):
    """Every requirement of scorers[extra] is installed here, at a version it allows."""
    if extra in seen:
        return
    seen.add(extra)
    for line in metadata.requires("scorers") or []:
        requirement = Requirement(line)
        if requirement.marker is None or not requirement.marker.evaluate({{"extra": extra}}):
            continue
        if requirement.name == "scorers":
            for inner in requirement.extras:
                installed(inner, seen)
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            fail(f"{{requirement}} (extra {{extra}}) is not installed here: does the test command install it?")
        if not requirement.specifier.contains(version, prereleases=True):
            fail(f"{{requirement}} (extra {{extra}}) is installed at {{version}}")

command, *args = sys.argv[1:] or [""]
if command not in ("install", "wheel"):
    fail(f"only install and wheel are known")
takes_value = {{"-c": "file", "--constraint": "file", "-w": "dir", "--wheel-dir": "dir", "--config-settings": "text"}}
flags = {{"-e", "--editable", "-q", "--no-deps"}}
i = 0
while i < len(args):
    arg = args[i]
    if arg in takes_value:
        if i + 1 == len(args):
            fail(f"{{arg}} needs a value")
        if takes_value[arg] == "file" and not os.path.isfile(args[i + 1]):
            fail(f"{{arg}} {{args[i + 1]}}: no such file")
        i += 2
        continue
    if arg.startswith("-"):
        if arg not in flags:
            fail(f"{{arg}} is not an option this stand-in knows (teach it, after checking it with the real pip)")
        i += 1
        continue
    path, _, extras = arg.partition("[")
    if not os.path.isfile(os.path.join(path or ".", "pyproject.toml")):
        fail(f"{{arg}} is not this clone: scorers is not on a package index, a README install names the clone")
    if not os.path.samefile(os.path.join(path, "pyproject.toml"), os.path.join(ROOT, "pyproject.toml")):
        fail(f"{{arg}} is not this clone")
    for extra in filter(None, (e.strip() for e in extras.rstrip("]").split(","))):
        if extra not in EXTRAS:
            fail(f"scorers has no extra {{extra!r}} (pyproject.toml has {{sorted(EXTRAS)}})")
        installed(extra, set())
    i += 1
'''


@pytest.fixture
def clone_folder(tmp_path: Path) -> Path:
    """Where bash blocks run: a folder laid out like the clone's top folder (links to its entries)."""
    folder = tmp_path / "clone"
    folder.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".cache", "build", "dist", ".pytest_cache", ".hypothesis"):
            (folder / entry.name).symlink_to(entry)
    return folder


@pytest.fixture
def project_folder(tmp_path: Path) -> Path:
    """Where Python blocks run: an empty folder, the user's own project (not the clone, whose conftest.py would
    make a test file there hermetic)."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def user_env(tmp_path: Path, judge_server: LoopbackLLM) -> dict[str, str]:
    """The environment of a user with an API key and the ``pip`` stand-in first on ``PATH``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pip = bin_dir / "pip"
    pip.write_text(f"#!{sys.executable} -I\n" + PIP_STAND_IN.format(root=str(ROOT)), encoding="utf-8")
    pip.chmod(0o755)
    env = {**os.environ, "OPENAI_API_KEY": "sk-readme-0123456789", "OPENAI_BASE_URL": judge_server.base_url}
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    for name in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST"):
        env.pop(name, None)
    return env


SITECUSTOMIZE = """
import importlib.machinery, sys
HIDDEN = {hidden!r}

class HidingPathFinder(importlib.machinery.PathFinder):
    \"\"\"tests/test_readme.py: the packages that the README's first command does not install are not found.\"\"\"
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        return None if name.partition(".")[0] in HIDDEN else super().find_spec(name, path, target)

sys.meta_path[:] = [HidingPathFinder if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


def _dependencies(name: str, extras: set[str], seen: set[tuple[str, str]]) -> set[str]:
    """The installed distribution ``name`` (none if it is not installed) and everything it requires with
    ``extras``, each once (``seen``: the (distribution, extra) pairs visited, "" for its plain requirements)."""
    try:
        requires = [Requirement(line) for line in metadata.requires(name) or []]
    except metadata.PackageNotFoundError:
        return set()
    found = {name}
    for extra in {"", *extras} - {e for n, e in seen if n == name}:
        seen.add((name, extra))
        for requirement in requires:
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                found |= _dependencies(canonicalize_name(requirement.name), set(requirement.extras), seen)
    return found


def first_command_hides() -> set[str]:
    """The top-level modules of what scorers' extras install and the README's first command does not (the
    dependency trees of the extras it leaves out, less those of scorers and of the extras it names)."""
    first = next(b for b in RUN if b.file == "README.md")
    named = re.search(r"'\.\[([\w,]*)\]'", first.text)
    installed = _dependencies("scorers", set(named[1].split(",")) if named else set(), set())
    every = _dependencies("scorers", set(metadata.metadata("scorers").get_all("Provides-Extra") or []), set())
    hidden = every - installed - {"pip", "setuptools"}  # a new venv has those
    return {
        module
        for module, dists in metadata.packages_distributions().items()
        if all(canonicalize_name(d) in hidden for d in dists)
    }


@pytest.fixture(scope="module")
def first_command_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PYTHONPATH under which Python finds only what the README's first command installs (a sitecustomize)."""
    folder = tmp_path_factory.mktemp("first-command")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(hidden=sorted(first_command_hides())))
    return os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))


def _env_for(block: Block, user_env: dict[str, str], first_command_path: str) -> dict[str, str]:
    """README blocks run with what the README's first command installs; the docs pages' with every extra."""
    return {**user_env, "PYTHONPATH": first_command_path} if block.file == "README.md" else user_env


def _failure(block: Block, run: subprocess.CompletedProcess[str], what: str | None = None) -> str:
    return (
        f"{block.where} ({block.lang} block) {what or f'exited {run.returncode}'}\n--- block\n"
        f"{textwrap.indent(block.text, '    ')}--- stdout\n{run.stdout[-6000:]}\n--- stderr\n{run.stderr[-6000:]}"
    )


def _run(block: Block, command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as timeout:

        def text(out: str | bytes | None) -> str:
            return out.decode(errors="replace") if isinstance(out, bytes) else out or ""

        pytest.fail(
            _failure(
                block,
                subprocess.CompletedProcess(command, -9, text(timeout.stdout), text(timeout.stderr)),
                f"ran past {TIMEOUT_S} s",
            )
        )


def _keep_outputs(block: Block, run: subprocess.CompletedProcess[str], cwd: Path, skip: set[str]) -> None:
    """Under ``$SCORERS_BLOCK_OUTPUTS``: the block's stdout, stderr and the plain files it wrote in ``cwd``."""
    root = os.environ.get("SCORERS_BLOCK_OUTPUTS")
    if not root:
        return
    digest = hashlib.sha256(block.text.encode()).hexdigest()[:12]
    keep = Path(root) / f"{block.file.replace('/', '_')}-{digest}"
    shutil.rmtree(keep, ignore_errors=True)
    (keep / "files").mkdir(parents=True)
    (keep / "stdout").write_text(run.stdout, encoding="utf-8")
    (keep / "stderr").write_text(run.stderr, encoding="utf-8")
    for folder, dirs, files in os.walk(cwd):  # links (the clone's own entries) are neither followed nor kept
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
        for name in files:
            path = Path(folder) / name
            relative = path.relative_to(cwd).as_posix()
            if not path.is_symlink() and relative not in skip:
                (keep / "files" / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, keep / "files" / relative)


# ----------------------------------------------------------------------------- the blocks
@pytest.mark.slow  # a fresh interpreter per block (about 0.7 s of CPU each)
@pytest.mark.parametrize("block", [b for b in RUN if b.lang == "python"], ids=lambda b: b.id)
def test_python_block_runs_on_its_own(
    block: Block, project_folder: Path, user_env: dict[str, str], judge_server: LoopbackLLM, first_command_path: str
) -> None:
    if block.is_pytest_file:
        path = project_folder / f"test_block_line_{block.line}.py"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path.name]
    else:
        path = project_folder / f"block_line_{block.line}.py"
        command = [sys.executable, path.name]
    path.write_text(block.text, encoding="utf-8")
    before = judge_server.request_count
    run = _run(block, command, project_folder, _env_for(block, user_env, first_command_path))
    _keep_outputs(block, run, project_folder, {path.name})
    assert run.returncode == 0, _failure(block, run)
    if block.is_pytest_file:
        assert re.search(r"\b\d+ passed\b", run.stdout) and " failed" not in run.stdout, _failure(block, run)
    if "Factuality" in block.text and "LoopbackLLM(" not in block.text:
        assert judge_server.request_count > before, f"{block.where}: the judge never asked the server"


@pytest.mark.slow  # a fresh interpreter per block (about 0.7 s of CPU each)
@pytest.mark.parametrize("block", [b for b in RUN if b.lang == "bash"], ids=lambda b: b.id)
def test_bash_block_runs(block: Block, clone_folder: Path, user_env: dict[str, str], first_command_path: str) -> None:
    run = _run(
        block,
        ["bash", "-euo", "pipefail", "-c", block.text],
        clone_folder,
        _env_for(block, user_env, first_command_path),
    )
    _keep_outputs(block, run, clone_folder, set())
    assert run.returncode == 0, _failure(block, run)


def test_the_pip_stand_in_refuses_what_pip_would_not_install(clone_folder: Path, user_env: dict[str, str]) -> None:
    def pip(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["pip", *args], cwd=clone_folder, env=user_env, capture_output=True, text=True, timeout=60
        )

    assert pip("install", "-e", ".[text]", "--config-settings", "editable_mode=compat").returncode == 0
    assert "not this clone" in pip("install", "scorers").stderr
    assert "no extra 'txt'" in pip("install", ".[txt]").stderr
    assert "no such file" in pip("install", ".", "-c", "nowhere.txt").stderr
    assert "not an option" in pip("install", "--pre", ".").stderr
