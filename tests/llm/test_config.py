"""The LLM settings are declared once (``LLMSettings``): configure(), validation, the environment, masking, scopes."""

from __future__ import annotations

import inspect
import threading

import pytest

from scorers.errors import ConfigError
from scorers.llm import LLMEngine, config, configure
from scorers.llm.config import FORWARDED_ENV, LLMSettings, configured_values, resolve, scoped


def test_configure_takes_every_setting_and_nothing_else():
    parameters = inspect.signature(configure).parameters
    assert list(parameters) == [*LLMSettings.model_fields, "reset"]
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters.values())
    with pytest.raises(TypeError, match="configure\\(\\) got an unexpected keyword argument 'modle'"):
        configure(modle="gpt-4o")


def test_the_defaults_are_the_models():
    settings = resolve(api_key="sk-x")
    for name, field in LLMSettings.model_fields.items():
        if name not in ("api_key", "cache", "prices"):
            assert getattr(settings, name) == field.default, name


@pytest.mark.parametrize(
    "name,value,message",
    [
        ("max_concurrency", 0, "LLM setting 'max_concurrency' must be an integer >= 1, got 0"),
        ("timeout", 0, "LLM setting 'timeout' must be a finite number of seconds > 0, got 0"),
        ("backoff_base", float("nan"), "LLM setting 'backoff_base' must be a finite number of seconds >= 0, got nan"),
        ("max_reasks", True, "LLM setting 'max_reasks' must be an integer in [0, 50], got True"),
        ("transport", "curl", "LLM setting 'transport' must be one of auto, aiohttp, httpx, got 'curl'"),
        ("api_key", " ", "LLM setting 'api_key' must be a non-empty string"),
        ("base_url", 3, "LLM setting 'base_url' must be a non-empty string, got 3"),
        ("client", object(), "LLM setting 'client' must be an openai.AsyncOpenAI or openai.OpenAI client, got object"),
    ],
)
def test_a_bad_value_names_the_setting_and_what_it_must_be(name, value, message):
    for call in (lambda: configure(**{name: value}), lambda: LLMEngine(**{name: value})):
        with pytest.raises(ConfigError) as info:
            call()
        assert str(info.value) == message


def test_the_environment_is_read_as_each_field_declares(monkeypatch):
    monkeypatch.setenv("SCORERS_MODEL", " env-model ")
    monkeypatch.setenv("SCORERS_HTTP_TRANSPORT", "HTTPX")
    monkeypatch.setenv("SCORERS_CACHE", "off")
    assert LLMSettings.from_environment() == {"model": "env-model", "transport": "httpx", "cache": False}
    settings = resolve(api_key="sk-x")
    assert (settings.model, settings.transport, settings.cache) == ("env-model", "httpx", None)
    configure(model="configured", transport="aiohttp")
    assert (resolve(api_key="sk-x").model, resolve(api_key="sk-x").transport) == ("configured", "aiohttp")
    monkeypatch.setenv("SCORERS_HTTP_TRANSPORT", "curl")
    configure(transport="auto")  # auto: the environment decides
    with pytest.raises(ConfigError, match=r"got 'curl' \(read from SCORERS_HTTP_TRANSPORT\)"):
        resolve(api_key="sk-x")


def test_engines_forward_exactly_the_declared_variables_and_the_docstring_names_them():
    declared = {v for s in LLMSettings.settings.values() for v in s.env}
    assert set(FORWARDED_ENV) == declared
    assert all(f"``{name}``" in config.__doc__ for name in FORWARDED_ENV)


def test_repr_masks_url_credentials_and_leaves_secrets_out(fake_api_key):
    settings = resolve(api_key=fake_api_key, base_url="http://user:pw@127.0.0.1:9/v1", cache="redis://:pw@h:1/0")
    for text in (repr(settings), str(settings)):
        assert fake_api_key not in text and "pw" not in text
        assert "base_url='http://user:***@127.0.0.1:9/v1'" in text


def test_a_scope_replaces_configure_and_the_environment_in_its_context_only(monkeypatch):
    configure(model="process-model", max_concurrency=3)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-process")
    seen = {}
    with scoped({"model": "scoped-model"}, {"OPENAI_API_KEY": "sk-scoped", "OPENAI_BASE_URL": None}):
        settings = resolve()
        assert (settings.model, settings.api_key, settings.max_concurrency) == ("scoped-model", "sk-scoped", 32)
        assert configured_values() == {"model": "scoped-model"}
        other = threading.Thread(target=lambda: seen.update(model=resolve().model, key=resolve().api_key))
        other.start()
        other.join()
    assert seen == {"model": "process-model", "key": "sk-process"}  # another thread: the process's settings
    assert (resolve().model, resolve().api_key) == ("process-model", "sk-process")
    assert configured_values() == {"model": "process-model", "max_concurrency": 3}
    with pytest.raises(ConfigError, match="must be an integer >= 1"), scoped({"max_concurrency": 0}):
        pass
