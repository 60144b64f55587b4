"""The one registry type of every plugin point (:class:`scorers.plugins.Registry`): names, aliases, clashes,
suggestions, lazy loaders, and entry points read from a real installed distribution, a broken one isolated."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from scorers.errors import ConfigError
from scorers.plugins import Registry


def install_dist(folder: Path, monkeypatch: pytest.MonkeyPatch, name: str, entry_points: str) -> None:
    """Make ``folder`` an installed distribution ``name`` whose ``entry_points.txt`` is ``entry_points``."""
    dist = folder / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    monkeypatch.syspath_prepend(str(folder))


def test_names_aliases_and_case() -> None:
    numbers: Registry[int] = Registry("number")
    assert numbers.register("Four", 4, aliases=("quad",)) == 4
    numbers.register("five", 5)
    assert numbers.get("QUAD") == numbers.get("four") == 4 and "FIVE" in numbers and "six" not in numbers
    assert numbers.names() == ["Four", "five"] and numbers.items() == [("Four", 4), ("five", 5)]
    numbers.register("five", 5)  # the same value again: nothing changes
    with pytest.raises(ConfigError, match="a number named 'five' is already registered"):
        numbers.register("five", 6)
    with pytest.raises(ConfigError, match="cannot register 'Quad': the name 'Quad' is taken by 'Four'"):
        numbers.register("Quad", 4)
    numbers.register("Four", 44, replace=True)
    assert numbers.get("four") == 44 and "quad" not in numbers and numbers.names() == ["Four", "five"]
    numbers.register("Four", 4, aliases=("quad",), replace=True)
    numbers.remove("Four")
    assert "quad" not in numbers and numbers.names() == ["five"]


def test_case_sensitive_registries_keep_case() -> None:
    commands: Registry[str] = Registry("command", case_sensitive=True)
    commands.register("run", "r")
    assert "Run" not in commands
    with pytest.raises(ConfigError, match=r"unknown command 'Run'; expected run; did you mean 'run'\?$"):
        commands.get("Run")


def test_unknown_names_suggest_the_closest_each_once() -> None:
    engines: Registry[str] = Registry("engine")
    engines.register("local", "l", aliases=("loc", "locale"))
    engines.register("ray", "r")
    assert engines.suggestions("locl") == ["local"]
    with pytest.raises(ConfigError, match=r"unknown engine 'dask'; expected local, ray$"):
        engines.get("dask")
    custom: Registry[str] = Registry("thing", unknown=lambda name, close: KeyError(f"{name}: {close}"))
    custom.register("alpha", "a")
    with pytest.raises(KeyError, match=r"alpah: \['alpha'\]"):
        custom.get("alpah")


def test_loaders_run_once_on_a_miss_or_a_listing() -> None:
    calls = []
    shapes: Registry[int] = Registry("shape")
    shapes.register("square", 4)
    shapes.add_loader(lambda: calls.append(shapes.register("triangle", 3)))
    assert shapes.get("square") == 4 and calls == []  # a name registered already needs no loader
    assert shapes.registered("Triangle") is None and calls == []  # what registration code asks: nothing loads
    assert shapes.get("triangle") == 3 and shapes.names() == ["square", "triangle"] and calls == [3]


def test_entry_points_load_lazily_and_a_broken_one_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shapeplugin.py").write_text("HEXAGON = 6\nPENTAGON = 5\n")
    install_dist(
        tmp_path,
        monkeypatch,
        "shapeplugin",
        """
        [test.shapes]
        hexagon = shapeplugin:HEXAGON
        square = shapeplugin:PENTAGON
        broken = no_such_module_xyz:THING
        odd = shapeplugin:__name__
        [other.group]
        circle = shapeplugin:HEXAGON
        """,
    )

    def accept(entry_point: object, loaded: object) -> int:
        if not isinstance(loaded, int):
            raise TypeError(f"{loaded!r} is not a number of sides")
        return loaded

    shapes: Registry[int] = Registry("shape", group="test.shapes", accept=accept)
    shapes.register("square", 4)
    assert shapes.get("square") == 4  # a plugin never replaces a name, and a known name reads no entry point
    with pytest.warns(RuntimeWarning) as caught:
        assert shapes.names() == ["square", "hexagon", "broken", "odd"]
    messages = [str(warning.message) for warning in caught]
    assert messages == [
        "shape entry point 'broken' (no_such_module_xyz:THING) failed to load: "
        "ModuleNotFoundError: No module named 'no_such_module_xyz'",
        "shape entry point 'odd' (shapeplugin:__name__) failed to load: "
        "TypeError: 'shapeplugin' is not a number of sides",
    ]
    assert shapes.get("HEXAGON") == 6 and "circle" not in shapes
    assert shapes.failures() == {"broken": messages[0], "odd": messages[1]}
    with pytest.raises(ConfigError, match="No module named 'no_such_module_xyz'"):
        shapes.get("broken")
    placeheld: Registry[str] = Registry(
        "shape", group="test.shapes", placeholder=lambda entry_point, message: f"failed: {entry_point.name}"
    )
    with pytest.warns(RuntimeWarning):
        assert placeheld.get("broken") == "failed: broken" and placeheld.failures() == {}
    sys.modules.pop("shapeplugin", None)
