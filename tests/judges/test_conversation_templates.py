"""Judge templates over conversations: fields declared ``conversation``, autoevals' thread variables, the budget.

Judges answer from a LoopbackLLM over real HTTP; ``python -m scorers run`` runs over examples/conversations.jsonl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scorers.errors import ScorerInputError, TemplateError
from scorers.judges import LLMClassifier
from scorers.judges.conversation import DEFAULT_MAX_TOKENS, count_tokens, thread_variables, transcript
from scorers.judges.discovery import build_judge, parse_template
from scorers.judges.template import JudgeTemplate
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, Reply

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "agents" / "fixtures"
FORMATS = ["openai_chat", "openai_responses", "anthropic", "langchain", "langchain_serialised", "otel_genai"]
EXAMPLES = REPO / "examples" / "conversations.jsonl"

HELPFUL = {
    "name": "ConversationHelpful",
    "fields": {"conversation": "conversation"},
    "prompt": (
        "Here is a conversation between a user and an assistant with tools:\n{{conversation}}\n"
        "Tools called:{% for call in conversation.tool_calls %}\n- {{call.name}} {{call.arguments}} "
        "returned {{call.result}}{% endfor %}\n"
        "Turns:{% for m in conversation.messages %} {{m.index}}:{{m.role}}{% endfor %}\n"
        "Did the assistant help the user?"
    ),
    "choice_scores": {"Y": 1, "N": 0},
}


def judge_from(data: dict[str, Any], **overrides: Any) -> Any:
    return build_judge(parse_template(data, name=data.get("name", "Judge")), **overrides)


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def prompt_of(judge: Any, **fields: Any) -> str:
    return judge.template.render(fields)[-1]["content"]


# ------------------------------------------------------------ conversation fields
@pytest.mark.parametrize("as_text", [False, True], ids=["value", "json-text"])
@pytest.mark.parametrize("name", FORMATS)
def test_a_conversation_field_renders_the_same_prompt_from_each_format(name: str, as_text: bool) -> None:
    judge = judge_from(HELPFUL)
    value = fixture(name)
    got = prompt_of(judge, conversation=json.dumps(value) if as_text else value)
    assert got == prompt_of(judge, conversation=fixture("openai_chat"))
    assert "  call get_weather(" in got and "- get_time " in got


def test_the_transcript_shows_roles_text_calls_and_results() -> None:
    assert transcript(fixture("openai_chat")) == (
        "system: You are a travel assistant.\n"
        "user: What's the weather in Paris and in Tokyo, and what time is it in Tokyo?\n"
        "assistant: Let me check.\n"
        '  call get_weather({"city": "Paris", "unit": "celsius"})\n'
        '  call get_weather({"city": "Tokyo", "unit": "celsius"})\n'
        '  call get_time({"timezone": "Asia/Tokyo"})\n'
        "tool get_weather: 18°C, cloudy\n"
        "tool get_weather: 24°C, sunny\n"
        "tool get_time: 21:05\n"
        "assistant: Paris is 18°C and cloudy; Tokyo is 24°C and sunny, and it is 21:05 there."
    )
    failed = [
        {"role": "user", "content": "line one\nline two"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "run", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}],
        },
    ]
    assert transcript(failed) == "user: line one\n  line two\nassistant:\n  call run({})\ntool run (error): boom"


def test_loops_see_each_message_and_call() -> None:
    judge = judge_from(
        {
            **HELPFUL,
            "prompt": "{% for m in conversation.messages %}[{{m.role}}|{{m.content}}|{{m.tool_calls|length}}]"
            "{% endfor %}{% for c in conversation.tool_calls %}<{{c.name}}:{{c.arguments.get('city', '')}}:{{c.id}}:"
            "{{c.result}}:{{c.is_error}}>{% endfor %}{{conversation.messages[1]}}",
        }
    )
    conversation = fixture("openai_chat")[:5]
    assert prompt_of(judge, conversation=conversation) == (
        "[system|You are a travel assistant.|0][user|What's the weather in Paris and in Tokyo, and what time is it "
        "in Tokyo?|0][assistant|Let me check.|3][tool|18°C, cloudy|0][tool|24°C, sunny|0]"
        "<get_weather:Paris:call_1:18°C, cloudy:false><get_weather:Tokyo:call_2:24°C, sunny:false>"
        "<get_time::call_3::false>"
        "user: What's the weather in Paris and in Tokyo, and what time is it in Tokyo?"
    )


def test_a_malformed_conversation_is_the_rows_input_error_naming_the_field_and_message() -> None:
    judge = judge_from(HELPFUL)
    bad = [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]
    with pytest.raises(ScorerInputError, match=r"field 'conversation' at message 1: unknown role 'robot'"):
        prompt_of(judge, conversation=bad)
    with pytest.raises(ScorerInputError, match=r"field 'conversation' is text that is not JSON"):
        prompt_of(judge, conversation="user: hi")


def test_a_conversation_over_its_budget_is_refused_with_how_to_raise_it() -> None:
    long = [{"role": "user", "content": "word " * 50_000}]
    judge = judge_from(HELPFUL)
    with pytest.raises(ScorerInputError) as caught:
        prompt_of(judge, conversation=long)
    message = str(caught.value)
    assert f"over its budget of {DEFAULT_MAX_TOKENS:,}" in message
    assert "may be up to 250,006 tokens (its UTF-8 bytes)" in message
    assert "fields: {conversation: {type: conversation, max_tokens: 300000}}" in message
    roomy = judge_from({**HELPFUL, "fields": {"conversation": {"type": "conversation", "max_tokens": 300_000}}})
    assert "word word" in prompt_of(roomy, conversation=long)  # never cut
    tight = judge_from({**HELPFUL, "fields": {"conversation": {"type": "conversation", "max_tokens": 10}}})
    with pytest.raises(ScorerInputError, match="over its budget of 10"):
        prompt_of(tight, conversation=fixture("openai_chat"))


def test_the_thread_has_a_budget_too() -> None:
    judge = judge_from(
        {
            "prompt": "{{thread}}",
            "fields": {"thread": {"type": "conversation", "max_tokens": 5}},
            "choice_scores": {"Y": 1},
        }
    )
    with pytest.raises(ScorerInputError, match=r"field 'thread' may be up to \d+ tokens .* over its budget of 5"):
        prompt_of(judge, thread=[{"role": "user", "content": "a longer message than five tokens"}])


#: Texts of one character per 1 (ASCII), 2 (Cyrillic), 3 (CJK) and 4 (emoji) UTF-8 bytes, and a ZWJ emoji sequence.
TEXTS = {
    "english": "The weather in Paris is mild. ",
    "russian": "Погода в Париже мягкая. ",
    "japanese": "パリの天気は穏やかです。",
    "emoji": "🙂🌧️🌍",
    "family": "👨‍👩‍👧‍👦",
}


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_the_token_count_is_never_below_a_byte_level_tokenizers(text: str) -> None:
    """The worst case of a byte-level BPE (GPT, Llama 3, Qwen) is one token per byte: a tokenizer with no merges.
    characters / 4 counted a Japanese text at 1/12 and an emoji at 1/16 of that."""
    tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face's tokenizers (the bert extra) is the reference")
    Tokenizer, models, pre_tokenizers = tokenizers.Tokenizer, tokenizers.models, tokenizers.pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    worst = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    worst.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert count_tokens(text * 10) >= len(worst.encode(text * 10).ids)
    assert count_tokens(text * 10) >= -(-len(text * 10) // 4)


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_a_conversation_is_within_its_budget_by_its_bytes(llm_server: LoopbackLLM, text: str) -> None:
    """Over real HTTP: the transcript's UTF-8 bytes decide; one byte over the budget is refused, unsent."""
    conversation = [{"role": "user", "content": text * 20}]
    size = len(transcript(conversation).encode())
    engine = LLMEngine(base_url=llm_server.base_url, api_key="placeholder", cache=False)
    fits = judge_from(
        {**HELPFUL, "fields": {"conversation": {"type": "conversation", "max_tokens": size}}}, engine=engine
    )
    llm_server.default = Reply.choice("Y")
    score = fits(conversation=conversation)
    assert score.metadata["conversation_tokens"] == {"counted_as": "utf8_bytes", "budgets": {"conversation": size}}
    assert len(llm_server.chat_requests) == 1
    short = judge_from(
        {**HELPFUL, "fields": {"conversation": {"type": "conversation", "max_tokens": size - 1}}}, engine=engine
    )
    with pytest.raises(ScorerInputError, match=f"may be up to {size:,} tokens \\(its UTF-8 bytes\\)"):
        short(conversation=conversation)
    assert len(llm_server.chat_requests) == 1


def test_the_declaration_is_checked() -> None:
    with pytest.raises(TemplateError, match="'history' declared a conversation but not used"):
        parse_template({**HELPFUL, "fields": {"conversation": "conversation", "history": "conversation"}})
    with pytest.raises(TemplateError, match="fields.conversation"):
        parse_template({**HELPFUL, "fields": {"conversation": "transcript"}})
    with pytest.raises(TemplateError, match="max_tokens"):
        parse_template({**HELPFUL, "fields": {"conversation": {"type": "conversation", "max_tokens": 0}}})


def test_the_declaration_is_part_of_the_template_hash_and_undeclared_fields_render_as_before() -> None:
    plain = judge_from(
        {key: value for key, value in HELPFUL.items() if key != "fields"} | {"prompt": "{{conversation}}"}
    )
    declared = judge_from(HELPFUL | {"prompt": "{{conversation}}"})
    messages = [{"role": "user", "content": "hi"}]
    assert prompt_of(plain, conversation=messages) == json.dumps(messages)
    assert prompt_of(declared, conversation=messages) == "user: hi"
    assert plain.template.content_hash() != declared.template.content_hash()
    roomy = judge_from(
        HELPFUL
        | {"prompt": "{{conversation}}", "fields": {"conversation": {"type": "conversation", "max_tokens": 10**6}}}
    )
    assert roomy.template.content_hash() == declared.template.content_hash()  # a budget changes no verdict
    assert (
        plain.template.content_hash()
        == JudgeTemplate(
            name="X", messages=(("user", "{{conversation}}"),), choice_scores={"Y": 1.0, "N": 0.0}
        ).content_hash()
    )


@pytest.mark.slow
def test_rendering_is_linear_in_the_conversations_size() -> None:
    judge = judge_from({**HELPFUL, "fields": {"conversation": {"type": "conversation", "max_tokens": 10**6}}})

    def seconds(turns: int) -> float:
        conversation = [
            message
            for turn in range(turns)
            for message in (
                {"role": "user", "content": f"question {turn}"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"c{turn}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": f"c{turn}", "content": "ok"},
            )
        ]
        started = time.perf_counter()
        prompt_of(judge, conversation=conversation)
        return time.perf_counter() - started

    seconds(100)
    small, large = min(seconds(500) for _ in range(3)), min(seconds(5_000) for _ in range(3))
    assert large < 30 * small  # 10x the turns: linear is 10x, quadratic 100x


# ---------------------------------------------------------------- thread variables
def test_thread_variables_come_from_the_thread_field() -> None:
    judge = judge_from(
        {
            "prompt": "{{thread}}|{{thread_count}}|{{first_message}}|{{last_message}}|{{user_messages}}|"
            "{{assistant_messages}}|{{human_ai_pairs}}|{% for m in thread %}<{{m.role}}>{% endfor %}",
            "choice_scores": {"Y": 1},
        }
    )
    assert judge.variables() == ("thread",)
    thread = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    assert prompt_of(judge, thread=thread) == (
        "User:\n  Hi\n\nAssistant:\n  Hello|2|user: Hi|assistant: Hello|User:\n  Hi|Assistant:\n  Hello|"
        "[{'human': {'role': 'user', 'content': 'Hi'}, 'assistant': {'role': 'assistant', 'content': 'Hello'}}]|"
        "<user><assistant>"
    )
    assert prompt_of(judge, thread=json.dumps(thread)) == prompt_of(judge, thread=thread)
    with pytest.raises(ScorerInputError, match=r"field 'thread' at message 0"):
        prompt_of(judge, thread=[{"role": "robot"}])


def test_a_thread_in_another_format_is_read_as_openai_chat_messages() -> None:
    variables = thread_variables(fixture("anthropic"), scorer="T")
    assert variables["thread_count"] == len(thread_variables(fixture("openai_chat"), scorer="T")["thread"])
    assert str(variables["first_message"]).startswith("user: What's the weather in Paris")


def test_a_thread_variable_given_explicitly_wins_and_thread_text_is_shown_as_it_is() -> None:
    judge = judge_from({"prompt": "{{thread}} ({{thread_count}} turns)", "choice_scores": {"Y": 1}})
    assert prompt_of(judge, thread=[{"role": "user", "content": "Hi"}], thread_count=7) == "User:\n  Hi (7 turns)"
    assert prompt_of(judge, thread="User: hi", thread_count=1) == "User: hi (1 turns)"
    with pytest.raises(ScorerInputError, match="thread_count need the thread as a list of messages"):
        prompt_of(judge, thread="User: hi")


# ------------------------------------------------------------------- end to end
def test_a_judge_over_conversations_through_loopback_over_http() -> None:
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    assert 6 <= len(rows) <= 10
    rows.append({"id": "malformed", "conversation": [{"role": "robot", "content": "beep"}]})
    with LoopbackLLM(default=Reply.choice("Y", reasons="helpful")) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="loopback", cache=False)
        judge = judge_from(HELPFUL, engine=engine)
        scores = judge.score_batch([{"conversation": row["conversation"]} for row in rows])
        prompts = [request.last_user_message for request in server.chat_requests]
    assert [getattr(s, "score", None) for s in scores[:-1]] == [1.0] * (len(rows) - 1)
    assert isinstance(scores[-1], ScorerInputError) and "at message 0" in str(scores[-1])
    assert len(prompts) == len(rows) - 1
    assert sorted(p.split("\n", 2)[1] for p in prompts) == sorted(
        transcript(row["conversation"]).split("\n", 1)[0] for row in rows[:-1]
    )


@pytest.mark.slow
def test_python_m_scorers_run_over_a_jsonl_of_conversations(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "conversation_helpful.yaml").write_text(json.dumps(HELPFUL), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with LoopbackLLM(default=Reply.choice("Y", reasons="helpful")) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "loopback",
            "SCORERS_CACHE": "off",
        }
        run = subprocess.run(
            [sys.executable, "-m", "scorers", "run", str(EXAMPLES), "--templates", str(templates)]
            + ["-s", "ConversationHelpful", "-o", str(out), "--no-progress"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        prompts = [request.last_user_message for request in server.chat_requests]
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["scores"]["ConversationHelpful"] for r in results] == [1.0] * len(results)
    assert any("tool get_time: 21:05" in prompt for prompt in prompts)  # the Anthropic row
    assert any("call search(" in prompt for prompt in prompts)  # the Responses row


def test_a_judge_built_in_code_takes_a_template_with_conversation_fields() -> None:
    template = JudgeTemplate(
        name="Helpful",
        messages=(("user", "{{conversation}}\nHelpful?"),),
        choice_scores={"Y": 1, "N": 0},
        conversations=(("conversation", 1_000),),
    )
    judge = LLMClassifier("Helpful", template=template)
    assert prompt_of(judge, conversation=[{"role": "user", "content": "Hi"}]) == "user: Hi\nHelpful?"


# ------------------------------------------------------------------ mustache sections
def test_mustache_sections_and_jinja_loops_give_the_same_prompt() -> None:
    mustache = judge_from(
        {
            **HELPFUL,
            "prompt": "Turns:\n{{#conversation.messages}}\n- {{role}}: {{content}}\n{{/conversation.messages}}\n"
            "Calls:{{#conversation.tool_calls}} {{name}}={{result}}{{/conversation.tool_calls}}"
            "{{^conversation.tool_calls}} none{{/conversation.tool_calls}}",
        }
    )
    jinja = judge_from(
        {
            **HELPFUL,
            "prompt": "Turns:\n{% for m in conversation.messages %}- {{m.role}}: {{m.content}}\n{% endfor %}"
            "Calls:{% for c in conversation.tool_calls %} {{c.name}}={{c.result}}{% endfor %}"
            "{% if not conversation.tool_calls %} none{% endif %}",
        }
    )
    for name in FORMATS:
        assert prompt_of(mustache, conversation=fixture(name)) == prompt_of(jinja, conversation=fixture(name))
    chat = [{"role": "user", "content": "Hi"}]
    assert prompt_of(mustache, conversation=chat) == "Turns:\n- user: Hi\nCalls: none"


SECTIONS = [
    ("Messages:{{#thread}}\n- {{role}}: {{content}}{{/thread}}", {"thread": [{"role": "user", "content": "Hi"}]}),
    ("A\n  {{#items}}\n  - {{.}}\n  {{/items}}\nB", {"items": ["x", "y"]}),
    ("{{#flag}}yes {{name}}{{/flag}}{{^flag}}no{{/flag}}", {"flag": {"name": "N"}}),
    ("{{#flag}}yes{{/flag}}{{^flag}}no{{/flag}}", {"flag": False}),
    ("{{#a.b}}[{{c}}]{{/a.b}}", {"a": {"b": [{"c": 1}, {"c": 2}]}}),
    ("{{#xs}}{{#ys}}{{x}}{{y}}{{out}} {{/ys}}{{/xs}}", {"xs": [{"x": 1, "ys": [{"y": "a"}]}, {"x": 2}], "out": "!"}),
    ("{{#items}}\n{{.}},\n{{/items}}\n{{^items}}none{{/items}}!", {"items": []}),
]


@pytest.mark.parametrize("text, variables", SECTIONS)
def test_mustache_sections_render_as_mustache_renders_them(text: str, variables: dict[str, Any]) -> None:
    chevron = pytest.importorskip("chevron")
    judge = judge_from({"prompt": text, "choice_scores": {"Y": 1}})
    expected = chevron.render(text, variables)
    assert prompt_of(judge, **variables) == expected


def test_a_name_missing_inside_a_section_is_a_template_error() -> None:
    judge = judge_from({"prompt": "{{#items}}{{nothing}}{{/items}}", "choice_scores": {"Y": 1}})
    with pytest.raises(TemplateError, match="'nothing' is not a key of the section's item nor a template variable"):
        prompt_of(judge, items=[{"a": 1}])
    with pytest.raises(TemplateError, match="has no matching closing tag"):
        parse_template({"prompt": "{{#items}}{{.}}", "choice_scores": {"Y": 1}})
