import sys
import textwrap

import pytest

import scorers
from scorers import Scorer
from scorers.errors import ConfigError, UnknownScorerError
from scorers.registry import Entry, Registry


@pytest.mark.parametrize("name", ["Levenshtein", "levenshtein", "LEVENSHTEIN"])
def test_lookup_is_case_insensitive(name):
    assert scorers.get(name).name == "Levenshtein"


def test_unknown_name_suggests_close_ones():
    with pytest.raises(UnknownScorerError, match="Did you mean Levenshtein"):
        scorers.get("Levenstein")


def test_names_lists_builtins():
    assert {"ExactMatch", "Levenshtein", "NumericDiff", "JSONDiff", "ValidJSON", "ListContains"} <= set(scorers.names())


def test_register_variant_with_defaults_and_aliases():
    reg = Registry()

    class Scaled(Scorer):
        def __init__(self, *, factor: float = 1.0, name=None):
            super().__init__(name=name)
            self.factor = factor

        def _score(self, **_):
            return self.make_score(self.factor)

    reg.register(Scaled)
    reg.register(name="Half", aliases=("half-scaled",), factor=0.5)(Scaled)
    half = reg.get("HALF-SCALED")
    assert half.name == "Half" and half(output="x").score == 0.5
    assert reg.get("Scaled")(output="x").score == 1.0
    with pytest.raises(ConfigError, match="already registered"):
        reg.register(Scaled)
    with pytest.raises(ConfigError, match=r"unknown parameter 'nope' \(parameters: factor, name\)"):
        reg.get("Half", nope=1)


def test_name_clash_between_entries_is_refused():
    reg = Registry()
    reg.add(Entry("A", lambda: None, "x", "", aliases=("b",)))
    with pytest.raises(ConfigError, match="taken by 'A'"):
        reg.add(Entry("B", lambda: None, "x", ""))


def install_plugin(folder, monkeypatch, distribution: str, entry_point: str) -> None:
    """Make ``folder`` an installed distribution declaring ``entry_point`` in the ``scorers`` group."""
    dist = folder / f"{distribution}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[scorers]\n{entry_point}\n")
    monkeypatch.syspath_prepend(str(folder))


def test_third_party_entry_points_register(tmp_path, monkeypatch):
    package = tmp_path / "myplugin.py"
    package.write_text(
        textwrap.dedent('''
        from scorers import Scorer
        class Shouting(Scorer):
            """1 if the output is upper case."""
            def _score(self, *, output, **_):
                return self.make_score(float(output.isupper()))
    ''')
    )
    install_plugin(tmp_path, monkeypatch, "myplugin", "Shouting = myplugin:Shouting")
    reg = Registry()
    assert "shouting" in reg
    assert reg.get("Shouting")(output="HEY").score == 1.0
    assert reg.entry("Shouting").description == "1 if the output is upper case."
    sys.modules.pop("myplugin", None)


def test_a_broken_plugin_fails_alone_and_says_why(tmp_path, monkeypatch):
    install_plugin(tmp_path, monkeypatch, "brokenplugin", "Broken = no_such_module_xyz:Scorer")
    reg = Registry()
    reg.register(type("Fine", (Scorer,), {"_score": lambda self, **_: self.make_score(1.0)}))
    assert reg.get("Fine")(output="x").score == 1.0  # a name registered already: no plugin is loaded for it
    with pytest.warns(RuntimeWarning, match="'Broken'.*failed to load"):
        with pytest.raises(ConfigError, match="No module named 'no_such_module_xyz'"):
            reg.get("Broken")
    assert reg.get("Fine")(output="x").score == 1.0


def test_suggestions_name_each_scorer_once():
    with pytest.raises(UnknownScorerError) as info:
        scorers.get("rouge-lx")
    suggested = str(info.value).split("Did you mean ")[1].split("?")[0].split(", ")
    assert len(suggested) == len(set(suggested)) >= 2


@pytest.mark.parametrize(
    "name,params,message",
    [
        (
            "BLEU",
            {"tokenise": "intl"},
            r"BLEU: unknown parameter 'tokenise'; did you mean 'tokenize'\? \(parameters: tokenize,",
        ),
        ("ROUGE-L", {"use_stemer": True}, r"unknown parameter 'use_stemer'; did you mean 'use_stemmer'\?"),
        (
            "Factuality",
            {"temprature": 0},
            r"Factuality: unknown parameter 'temprature'; did you mean 'temperature'",
        ),  # a template
        (
            "Faithfulness",
            {"idk_unfaithful": True},
            r"did you mean 'idk_is_unfaithful'\? .*model",
        ),  # **settings to its bases
        ("Levenshtein", {"zzz": 1}, r"unknown parameter 'zzz' \(parameters: normalize, max_chars, name\)"),
    ],
)
def test_an_unknown_parameter_names_the_closest_ones(name, params, message, monkeypatch, fake_api_key):
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    with pytest.raises(ConfigError, match=message):
        scorers.get(name, **params)
