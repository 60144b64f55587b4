"""Attachments in judge prompts, through the real openai client over HTTP against the loopback server: the request
carries the image as a content part where the template shows its field, the score is what the server's verdict
gives, the cache key follows the bytes (never the path), and a row whose attachment cannot be read or sent is that
row's ScorerInputError naming the scorer, the field and the limit, before any request."""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers import Attachment
from scorers.attachments import TINY_PNG
from scorers.errors import ConfigError, ScorerInputError, TemplateError
from scorers.judges import LLMClassifier
from scorers.judges.discovery import build_judge, parse_template
from scorers.llm import LLMEngine
from scorers.llm.protocols import PROTOCOLS, wire
from scorers.testing import LoopbackLLM, Reply

CHART = Path(__file__).resolve().parents[2] / "examples" / "chart.png"
QUESTION = "Which quarter had the most sales?"


def engine(server: LoopbackLLM, key: str, **options: Any) -> LLMEngine:
    return LLMEngine(base_url=server.base_url, api_key=key, cache=options.pop("cache", False), **options)


def content(server: LoopbackLLM, index: int = -1) -> Any:
    return server.requests[index].body["messages"][-1]["content"]


@pytest.mark.parametrize("verdict,score", [("Y", 1.0), ("N", 0.0)])
def test_image_answers_question_sends_the_chart_and_scores_the_verdict(llm_server, fake_api_key, verdict, score):
    llm_server.default = Reply.choice(verdict, reasons="The tallest bar is Q2.")
    judge = scorers.get("ImageAnswersQuestion", engine=engine(llm_server, fake_api_key))
    result = judge(input=QUESTION, output=str(CHART))
    assert result.score == score
    parts = content(llm_server)
    assert [part["type"] for part in parts] == ["text", "image_url", "text"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": Attachment.from_path(CHART).data_uri()}}
    assert QUESTION in parts[0]["text"] and parts[0]["text"].endswith("The image given in reply:\n")
    assert parts[2]["text"].startswith("\n\nThe image answers the question") and "select_choice" in parts[2]["text"]
    assert str(CHART) not in str(llm_server.requests[-1].body) + result.to_json()


@pytest.mark.parametrize(
    "image",
    [
        lambda: "data:image/png;base64," + base64.b64encode(CHART.read_bytes()).decode(),
        lambda: {"data": base64.b64encode(CHART.read_bytes()).decode(), "media_type": "image/png"},
        lambda: Attachment.from_path(CHART),
        lambda: CHART,
    ],
    ids=["data-uri", "base64", "attachment", "path-object"],
)
def test_caption_faithful_reads_every_form_of_the_image(llm_server, fake_api_key, image):
    llm_server.default = Reply.choice("B", reasons="There is no legend in the image.")
    judge = scorers.get("CaptionFaithful", engine=engine(llm_server, fake_api_key))
    result = judge(input=image(), output="A bar chart of sales by quarter, with a legend.")
    assert result.score == 0.3
    assert content(llm_server)[1]["image_url"]["url"] == Attachment.from_path(CHART).data_uri()


def test_a_url_is_sent_as_the_url(llm_server, fake_api_key):
    llm_server.default = Reply.choice("A")
    judge = scorers.get("CaptionFaithful", engine=engine(llm_server, fake_api_key))
    assert judge(input="https://example.com/charts/q3.png", output="A chart.").score == 1.0
    assert content(llm_server)[1] == {"type": "image_url", "image_url": {"url": "https://example.com/charts/q3.png"}}


def test_the_cache_key_follows_the_bytes_not_the_path(llm_server, fake_api_key, tmp_path):
    llm_server.default = Reply.choice("Y")
    judge = scorers.get("ImageAnswersQuestion", engine=engine(llm_server, fake_api_key, cache=tmp_path / "c.sqlite"))
    copy = tmp_path / "elsewhere" / "renamed.png"
    copy.parent.mkdir()
    shutil.copy(CHART, copy)
    first = judge(input=QUESTION, output=str(CHART))
    again = judge(input=QUESTION, output=str(copy))  # other path, same bytes: the cached verdict
    assert len(llm_server.requests) == 1 and again.score == first.score
    copy.write_bytes(base64.b64decode(TINY_PNG))  # same path, other bytes: asked again
    judge(input=QUESTION, output=str(copy))
    assert len(llm_server.requests) == 2


def test_a_bad_row_is_that_rows_error_and_the_batch_goes_on(llm_server, fake_api_key, tmp_path):
    llm_server.default = Reply.choice("Y")
    judge = scorers.get("ImageAnswersQuestion", engine=engine(llm_server, fake_api_key))
    (tmp_path / "notes.txt").write_text("not an image")
    rows = [
        {"input": QUESTION, "output": str(CHART)},
        {"input": QUESTION, "output": str(tmp_path / "missing.png")},
        {"input": QUESTION, "output": "data:image/png;base64,%%%"},
        {"input": QUESTION, "output": str(tmp_path / "notes.txt")},
        {"input": QUESTION, "output": 42},
    ]
    results = judge.score_batch(rows)
    assert results[0].score == 1.0 and len(llm_server.requests) == 1
    problems = [str(result) for result in results[1:]]
    assert all(isinstance(result, ScorerInputError) and result.field == "output" for result in results[1:])
    assert problems[0].startswith("ImageAnswersQuestion: field 'output' cannot read the file")
    assert "is not valid base64" in problems[1]
    assert "has no media type" in problems[2]
    assert "is a int, not an attachment" in problems[3]


def test_a_limit_of_the_protocol_refuses_the_row_before_any_request(llm_server, fake_api_key, monkeypatch):
    chat = type(wire("chat"))
    limited = dataclasses.replace(chat.capabilities, attachment_bytes=(("image/*", 100),))
    monkeypatch.setattr(chat, "capabilities", limited)
    judge = scorers.get("ImageAnswersQuestion", engine=engine(llm_server, fake_api_key))
    size = CHART.stat().st_size
    with pytest.raises(ScorerInputError) as caught:
        judge(input=QUESTION, output=str(CHART))
    assert str(caught.value) == (
        f"ImageAnswersQuestion: field 'output' holds {size} bytes of image/png, above the chat protocol's limit of "
        "100 bytes for image/png"
    )
    monkeypatch.setattr(chat, "capabilities", dataclasses.replace(limited, attachments=frozenset({"image/jpeg"})))
    with pytest.raises(ScorerInputError, match="is image/png, which the chat protocol does not take"):
        judge(input=QUESTION, output=str(CHART))
    assert llm_server.requests == []


def test_the_responses_api_gets_its_own_parts(llm_server, fake_api_key):
    llm_server.default = Reply.choice("Y")
    judge = scorers.get("ImageAnswersQuestion", api="responses", engine=engine(llm_server, fake_api_key))
    assert judge(input=QUESTION, output=str(CHART)).score == 1.0
    parts = llm_server.requests[-1].body["input"][-1]["content"]
    assert [part["type"] for part in parts] == ["input_text", "input_image", "input_text"]
    assert parts[1] == {"type": "input_image", "image_url": Attachment.from_path(CHART).data_uri(), "detail": "auto"}


def test_any_attachment_value_is_shown_as_a_part_without_a_declaration(llm_server, fake_api_key):
    llm_server.default = Reply.choice("Y")
    judge = LLMClassifier(
        "ShowsGrowth",
        "Does this chart show growth? {{chart}}",
        {"Y": 1, "N": 0},
        engine=engine(llm_server, fake_api_key),
    )
    assert judge(chart=Attachment.from_path(CHART)).score == 1.0
    assert [part["type"] for part in content(llm_server)] == ["text", "image_url", "text"]
    judge(chart="examples/chart.png")  # undeclared: text is text, never read as a path
    assert content(llm_server).startswith("Does this chart show growth? examples/chart.png")


def test_an_image_in_a_conversation_reaches_the_judge(llm_server, fake_api_key):
    llm_server.default = Reply.choice("Y")
    definition = parse_template(
        {
            "name": "ScreenshotHelped",
            "fields": {"conversation": "conversation"},
            "prompt": "Did the assistant read the user's screenshot right?\n{{conversation}}",
            "choice_scores": {"Y": 1, "N": 0},
        }
    )
    judge = build_judge(definition, engine=engine(llm_server, fake_api_key))
    image = Attachment.from_path(CHART)
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "What does this show?"}, image.part()]},
        {"role": "assistant", "content": "Sales by quarter; Q2 is highest."},
    ]
    assert judge(conversation=conversation).score == 1.0
    parts = content(llm_server)
    assert [part["type"] for part in parts] == ["text", "image_url", "text"]
    assert parts[0]["text"].endswith("user: What does this show?\n  ") and parts[1] == image.part()
    assert parts[2]["text"].startswith("\nassistant: Sales by quarter")


def test_a_declared_attachment_must_be_used_and_has_no_budget():
    with pytest.raises(TemplateError, match="'image' declared an attachment but not used"):
        parse_template({"fields": {"image": "attachment"}, "prompt": "Is {{output}} ok?", "choice_scores": {"Y": 1}})
    with pytest.raises(TemplateError, match="max_tokens is a conversation's budget"):
        parse_template(
            {
                "fields": {"image": {"type": "attachment", "max_tokens": 9}},
                "prompt": "{{image}}?",
                "choice_scores": {"Y": 1},
            }
        )


def test_the_template_hash_says_which_fields_are_attachments():
    plain = parse_template({"name": "J", "prompt": "Is {{image}} ok?", "choice_scores": {"Y": 1}}).template
    declared = parse_template(
        {"name": "J", "fields": {"image": "attachment"}, "prompt": "Is {{image}} ok?", "choice_scores": {"Y": 1}}
    ).template
    assert plain.content_hash() != declared.content_hash()


def test_a_protocol_that_sends_no_attachments_refuses_the_judge_at_construction(monkeypatch):
    chat = type(wire("chat"))
    monkeypatch.setattr(chat, "capabilities", dataclasses.replace(chat.capabilities, attachments=frozenset()))
    with pytest.raises(ConfigError) as caught:
        scorers.get("ImageAnswersQuestion", engine=LLMEngine(api="chat"))
    message = str(caught.value)
    assert message.startswith("ImageAnswersQuestion: template 'ImageAnswersQuestion' (")
    assert "key 'fields' declares attachments (output), which the chat protocol does not send" in message
    assert "use an api that does: responses" in message
    assert scorers.get("Factuality", engine=LLMEngine(api="chat"))  # a judge without attachments is not refused


@pytest.mark.parametrize("api", PROTOCOLS.names())
def test_an_image_in_a_conversation_reaches_the_judge_on_every_protocol(api, fake_api_key, monkeypatch):
    from test_every_judge_protocol import environment

    definition = parse_template(
        {
            "name": "ScreenshotHelped",
            "fields": {"conversation": "conversation"},
            "prompt": "Did the assistant read the user's screenshot right?\n{{conversation}}",
            "choice_scores": {"Y": 1, "N": 0},
        }
    )
    image = Attachment.from_path(CHART)
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "What does this show?"}, image.part()]},
        {"role": "assistant", "content": "Sales by quarter; Q2 is highest."},
    ]
    with LoopbackLLM(default=Reply.choice("Y")) as server, monkeypatch.context() as patch:
        for name, value in environment(PROTOCOLS.get(api), server, fake_api_key).items():
            patch.setenv(name, value)
        judge = build_judge(definition, engine=LLMEngine(api=api, cache=False, max_reasks=0))
        assert judge(conversation=conversation).score == 1.0
        (request,) = [r for r in server.requests if r.api is not None]
        assert image.base64() in json.dumps(request.body)
        assert "user: What does this show?" in request.last_user_message
