"""autoevals' LLM judges over ours: :class:`scorers.judges.LLMClassifier` and the built-in templates.

``LLMClassifier(name, prompt_template, choice_scores, ...)`` and the named judges
(``Factuality``, ``ClosedQA``, ``Battle``, ``Humor``, ``Possible``, ``Security``, ``Sql``,
``Summary``, ``Translation``) take autoevals' arguments and are computed by our judge
(the named ones by our template of that name). As in autoevals: the model defaults to
:func:`~scorers.compat.autoevals.oai.get_default_model` at construction, ``temperature``
is not sent unless given, ``gpt-5`` models and ``use_responses_api=True`` go through the
Responses API, template values that are not text are shown as their ``str()``, extra
constructor keywords are template variables, and ``trace=`` (an object with an async
``get_thread()``) gives the thread variables (``{{thread}}``, ``{{thread_count}}``, ...) of a
template that uses them. The prompt wording, tool description and errors
(:class:`~scorers.errors.JudgeError`, never ``KeyError``) are ours.

>>> judge = LLMClassifier("Polite", "Is this polite? {{output}}", {"Yes": 1, "No": 0}, model="gpt-4o-mini")
>>> judge.scorer.params()["model"], judge.scorer.params()["api"], judge.extra_args
('gpt-4o-mini', 'chat', {})
>>> [tool["function"]["name"] for tool in build_classification_tools(True, ["Yes", "No"])]
['select_choice']
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence, cast

from ...errors import ConfigError
from ...judges import LLMClassifier as _OurClassifier
from ...judges.conversation import THREAD_FIELD, PromptText
from ...judges.templated import TemplatedJudge
from ...llm import LLMEngine
from ...registry import get
from ._adapter import Adapter, NotSupportedError, Unsupported
from .oai import DEFAULT_COMPLETION_MODEL, get_default_model

__all__ = [
    "DEFAULT_MODEL",
    "ModelGradedSpec",
    "LLMClassifier",
    "OpenAILLMClassifier",
    "OpenAIScorer",
    "OpenAILLMScorer",
    "SpecFileClassifier",
    "build_classification_tools",
    "Battle",
    "ClosedQA",
    "Factuality",
    "Humor",
    "Possible",
    "Security",
    "Sql",
    "Summary",
    "Translation",
]

#: The judge model used when neither ``model=`` nor ``init(default_model=...)`` names one.
DEFAULT_MODEL = DEFAULT_COMPLETION_MODEL


def _template_value(value: Any) -> Any:
    """A template variable as autoevals shows it: text as is, anything else (but ``None``) as its ``str()``
    (thread variables print themselves as autoevals prints them)."""
    return value if value is None or isinstance(value, (str, PromptText)) else str(value)


def _judge_settings(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Our judge's keyword arguments for autoevals' options, and autoevals' ``extra_args`` (request options set).

    ``options`` is a judge constructor's ``locals()``, read for the options every judge takes (``model``,
    ``max_tokens``, ``temperature``, ``reasoning_effort``, ``use_responses_api``, ``engine``, ``api_key``,
    ``base_url``, ``client``, ``extra_args``) and ``reasoning_enabled``/``reasoning_budget`` (``None`` where
    the constructor has none); its other arguments are the constructor's own business.
    """
    model = options["model"] or get_default_model()
    engine, client = options["engine"], options["client"]
    api_key, base_url = options["api_key"], options["base_url"]
    request_options = {key: options[key] for key in ("temperature", "max_tokens", "reasoning_effort")}
    extra = {
        **(options["extra_args"] or {}),
        "reasoning_enabled": options.get("reasoning_enabled"),
        "reasoning_budget": options.get("reasoning_budget"),
    }
    extra = {key: value for key, value in extra.items() if value is not None}
    settings: dict[str, Any] = {
        "model": model,
        **request_options,
        "api": "responses" if model.startswith("gpt-5") or options["use_responses_api"] else "chat",
        "extra_args": extra or None,
    }
    if engine is not None and not isinstance(engine, LLMEngine):
        raise NotSupportedError(
            f"engine={engine!r}: autoevals' engine names a legacy (Azure) OpenAI deployment; "
            "pass client=openai.AzureOpenAI(...), or engine=scorers.llm.LLMEngine(...)"
        )
    if api_key is not None or base_url is not None:
        if engine is not None:
            raise ConfigError("pass engine= or api_key=/base_url=, not both")
        engine = LLMEngine(client=client, api_key=api_key, base_url=base_url)
        client = None
    settings.update(engine=engine, client=client)
    request_options.update(extra)
    return settings, {key: value for key, value in request_options.items() if value is not None}


class _Judge(Adapter):
    """An autoevals LLM scorer computed by one of our judges (``self.scorer``)."""

    #: The request options given (temperature, max_tokens, reasoning settings), as autoevals records them.
    extra_args: dict[str, Any]

    def _bind_render_args(self, render_args: Mapping[str, Any]) -> None:
        if render_args:
            self.scorer = self.scorer.partial(**{k: _template_value(v) for k, v in render_args.items()})

    def _fields(self, output: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Our judge's fields; ``trace`` becomes the ``thread`` field when the template uses a thread variable
        (the messages of ``trace.get_thread()``, which is awaited as autoevals awaits it), and is dropped
        otherwise."""
        trace = kwargs.pop("trace", None)
        if trace is not None and self._uses_thread():
            kwargs[THREAD_FIELD] = _awaited_thread(trace)
        return {
            name: value if name == THREAD_FIELD else _template_value(value)
            for name, value in super()._fields(output, kwargs).items()
        }

    async def _run_eval_async(self, output: Any, expected: Any = None, **kwargs: Any) -> Any:
        trace = kwargs.pop("trace", None)
        if trace is not None and self._uses_thread():
            kwargs[THREAD_FIELD] = await _thread_of(trace)
        return await super()._run_eval_async(output, expected, **kwargs)

    def _uses_thread(self) -> bool:
        return THREAD_FIELD in cast(TemplatedJudge, self.scorer).template.variables

    def _request_args(self, output: Any, expected: Any, **kwargs: Any) -> dict[str, Any]:
        """The request our judge sends for these arguments: ``model``, ``messages``, ``tools``, ``tool_choice``
        and the request options given (autoevals' private helper, which its tests read)."""
        judge = cast(TemplatedJudge, self.scorer)
        request = judge._row_requests(judge._bind(self._fields(output, {"expected": expected, **kwargs})))[0]
        return {
            "model": request.model or judge.engine.model,
            "messages": request.messages,
            "tools": request.tools,
            "tool_choice": request.tool_choice,
            **self.extra_args,
        }

    async def _request_args_async(self, output: Any, expected: Any, **kwargs: Any) -> dict[str, Any]:
        trace = kwargs.pop("trace", None)
        if trace is not None and self._uses_thread():
            kwargs[THREAD_FIELD] = await _thread_of(trace)
        return self._request_args(output, expected, **kwargs)

    def _render_messages(self, **variables: Any) -> list[dict[str, str]]:
        """The prompt's messages rendered with ``variables`` (before our judge appends its instruction)."""
        return cast(TemplatedJudge, self.scorer).template.render({k: _template_value(v) for k, v in variables.items()})


class OpenAILLMClassifier(_Judge):
    """A judge from chat ``messages`` (mustache templates) and ``choice_scores``.

    ``classification_tools`` may be empty or autoevals' ``select_choice`` tool (its ``reasons``
    property turns chain of thought on); our judge sends its own ``select_choice`` tool.
    A message whose content is empty is left out of the request.
    """

    def __init__(
        self,
        name: str,
        messages: Sequence[Mapping[str, str]],
        model: str | None,
        choice_scores: Mapping[str, float],
        classification_tools: Sequence[Mapping[str, Any]],
        render_args: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        reasoning_effort: str | None = None,
        reasoning_enabled: bool | None = None,
        reasoning_budget: int | None = None,
        use_responses_api: bool | None = None,
        engine: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        extra_args: Mapping[str, Any] | None = None,
    ) -> None:
        settings, self.extra_args = _judge_settings(locals())
        kept = [dict(m) for m in messages if not (isinstance(m.get("content"), str) and not m["content"].strip())]
        self.scorer = _OurClassifier(
            name, messages=kept, choice_scores=choice_scores, use_cot=_uses_cot(classification_tools), **settings
        )
        self._bind_render_args(render_args or {})


async def _thread_of(trace: Any) -> list[Any]:
    """The messages of ``trace.get_thread()`` (a coroutine, as in autoevals)."""
    method = getattr(trace, "get_thread", None)
    if not callable(method):
        raise TypeError("trace must implement async get_thread(options=None)")
    pending = method()
    if not inspect.isawaitable(pending):
        raise TypeError("trace.get_thread() must return an awaitable")
    return list(await pending)


def _awaited_thread(trace: Any) -> list[Any]:
    """:func:`_thread_of` outside an event loop; inside one, autoevals' advice: use ``eval_async``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_thread_of(trace))
    raise RuntimeError("trace.get_thread() is async; use eval_async() when already inside an event loop")


def _uses_cot(tools: Sequence[Mapping[str, Any]]) -> bool:
    names = [tool.get("function", {}).get("name") for tool in tools]
    if any(name != "select_choice" for name in names):
        raise NotSupportedError(
            f"classification_tools {names}: our judges answer through their own select_choice "
            "tool; pass [] or build_classification_tools(use_cot, choices)"
        )
    return any("reasons" in tool["function"].get("parameters", {}).get("properties", {}) for tool in tools)


@dataclasses.dataclass
class ModelGradedSpec:
    """An autoevals spec file's content: ``prompt`` and ``choice_scores``, and optional judge settings."""

    prompt: str
    choice_scores: dict[str, float]
    model: str | None = None
    engine: str | None = None
    use_cot: bool | None = None
    temperature: float | None = None
    max_tokens: int | None = None


class LLMClassifier(_Judge):
    """autoevals' ``LLMClassifier(name, prompt_template, choice_scores, ...)``; extra keywords are template variables.

    ``api_key``/``base_url`` build an ``LLMEngine(api_key=..., base_url=...)``; ``client`` is an
    ``openai`` client; ``engine`` may be a :class:`scorers.llm.LLMEngine`. ``extra_args`` (further
    request parameters), ``reasoning_enabled`` and ``reasoning_budget`` are sent verbatim.
    """

    def __init__(
        self,
        name: str,
        prompt_template: str,
        choice_scores: Mapping[str, float],
        model: str | None = None,
        use_cot: bool = True,
        max_tokens: int | None = None,
        temperature: float | None = None,
        reasoning_effort: str | None = None,
        reasoning_enabled: bool | None = None,
        reasoning_budget: int | None = None,
        use_responses_api: bool | None = None,
        engine: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        extra_args: Mapping[str, Any] | None = None,
        **extra_render_args: Any,
    ) -> None:
        settings, self.extra_args = _judge_settings(locals())
        self.scorer = _OurClassifier(name, prompt_template, choice_scores, use_cot=use_cot, **settings)
        self._bind_render_args(extra_render_args)

    @classmethod
    def from_spec(cls, name: str, spec: ModelGradedSpec, client: Any = None, **kwargs: Any) -> "LLMClassifier":
        """A judge from a :class:`ModelGradedSpec`; keyword arguments win over the spec's settings."""
        settings = {
            key: getattr(spec, key)
            for key in ("model", "engine", "use_cot", "temperature", "max_tokens")
            if getattr(spec, key) is not None
        }
        return cls(name, spec.prompt, spec.choice_scores, client=client, **{**settings, **kwargs})

    @classmethod
    def from_spec_file(cls, name: str, path: str | Path, client: Any = None, **kwargs: Any) -> "LLMClassifier":
        """A judge from an autoevals YAML spec file (``prompt``, ``choice_scores`` and optional settings).

        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as spec:
        ...     _ = spec.write('prompt: Is {{output}} polite?\\nchoice_scores: {"Y": 1, "N": 0}\\nuse_cot: false\\n')
        >>> judge = LLMClassifier.from_spec_file("Polite", spec.name, model="gpt-4o-mini")
        >>> judge.scorer.choice_scores, judge.scorer.use_cot
        ({'Y': 1.0, 'N': 0.0}, False)
        """
        import yaml

        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: an autoevals spec file is a mapping with prompt and choice_scores")
        try:
            spec = ModelGradedSpec(**data)
        except TypeError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        return cls.from_spec(name, spec, client=client, **kwargs)


class SpecFileClassifier(_Judge):
    """A judge built from our template named like the class (``Factuality`` → our ``Factuality`` template)."""

    template_name: ClassVar[str]

    def __init__(
        self,
        model: str | None = None,
        engine: Any = None,
        use_cot: bool | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        use_responses_api: bool | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        reasoning_effort: str | None = None,
        extra_args: Mapping[str, Any] | None = None,
    ) -> None:
        settings, self.extra_args = _judge_settings(locals())
        if use_cot is not None:
            settings["use_cot"] = use_cot
        self.scorer = get(self.template_name, **settings)


def build_classification_tools(useCoT: bool, choice_strings: Sequence[str]) -> list[dict[str, Any]]:  # noqa: N803
    """The ``select_choice`` tool our judges send for these choices (with a ``reasons`` property when ``useCoT``)."""
    judge = _OurClassifier(
        "select_choice", "Choose.", {choice: 0 for choice in choice_strings}, use_cot=useCoT, model=DEFAULT_MODEL
    )
    return [dict(tool) for tool in judge.build_request({}).tools or ()]


class OpenAIScorer(Unsupported):
    """autoevals' base of OpenAI-backed scorers; subclass :class:`scorers.Scorer` with our engine instead."""

    instead = "a scorers.Scorer subclass that calls scorers.llm.LLMEngine"


class OpenAILLMScorer(OpenAIScorer):
    """autoevals' base of its RAGAS scorers (not provided)."""


class Battle(SpecFileClassifier):
    """Does ``output`` follow ``instructions`` better than ``expected``? (our ``Battle`` template)"""

    template_name = "Battle"


class ClosedQA(SpecFileClassifier):
    """Does ``output`` answer ``input`` and meet ``criteria``? (our ``ClosedQA`` template)"""

    template_name = "ClosedQA"


class Factuality(SpecFileClassifier):
    """Does ``output`` state the facts of ``expected`` for ``input``? (our ``Factuality`` template)"""

    template_name = "Factuality"


class Humor(SpecFileClassifier):
    """Is ``output`` funny? (our ``Humor`` template)"""

    template_name = "Humor"


class Possible(SpecFileClassifier):
    """Is the task in ``input`` possible, judging by ``output``? (our ``Possible`` template)"""

    template_name = "Possible"


class Security(SpecFileClassifier):
    """Is ``output`` free of malicious content? (our ``Security`` template)"""

    template_name = "Security"


class Sql(SpecFileClassifier):
    """Is the SQL in ``output`` equivalent to ``expected`` for ``input``? (our ``Sql`` template)"""

    template_name = "Sql"


class Summary(SpecFileClassifier):
    """Is ``output`` a better summary of ``input`` than ``expected``? (our ``Summary`` template)"""

    template_name = "Summary"


class Translation(SpecFileClassifier):
    """Does ``output`` translate ``input`` (from ``language``) as well as ``expected``? (our ``Translation``)"""

    template_name = "Translation"
