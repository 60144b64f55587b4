"""The readers keep a conversation's images, audio and documents as its messages' attachments (they were dropped):
OpenAI chat, Responses, Anthropic and LangChain parts; a file stored with the provider (an id) has no bytes here
and is skipped; a broken one is the field's error naming where it is."""

from __future__ import annotations

import pickle

import pytest

from scorers.agents.readers import read_conversation
from scorers.attachments import TINY_PNG, Attachment
from scorers.errors import ScorerInputError
from scorers.judges.conversation import transcript

IMAGE = Attachment.from_base64(TINY_PNG, "image/png")


def read(value):
    return read_conversation(value, scorer="Demo", field="conversation")


def test_an_openai_message_keeps_its_image():
    conversation = read(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image_url", "image_url": {"url": IMAGE.data_uri(), "detail": "low"}},
                ],
            },
            {"role": "assistant", "content": "One transparent pixel."},
        ]
    )
    first = conversation.messages[0]
    assert (first.content, first.attachments) == ("What is in this picture?", (IMAGE,))
    assert conversation.to_list()[0]["content"] == [{"type": "text", "text": "What is in this picture?"}, IMAGE.part()]
    assert read(conversation.to_list()) == conversation  # what a results file holds reads back the same
    assert pickle.loads(pickle.dumps(conversation)) == conversation and hash(conversation.messages[0])


def test_an_anthropic_message_keeps_its_image():
    conversation = read(
        {
            "system": "You describe images.",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": TINY_PNG}},
                        {"type": "image", "source": {"type": "url", "url": "https://example.com/photo"}},
                        {"type": "text", "text": "Compare these."},
                    ],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "Both are tiny."}]},
            ],
        }
    )
    user = conversation.messages[1]
    assert user.content == "Compare these."
    assert [a.media_type for a in user.attachments] == ["image/png", "image/*"]
    assert user.attachments[0] == IMAGE and user.attachments[1].url == "https://example.com/photo"


def test_responses_and_langchain_parts_are_kept_and_hosted_files_skipped():
    responses = read(
        [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Read the invoice."},
                    {"type": "input_image", "image_url": IMAGE.data_uri(), "detail": "auto"},
                    {"type": "input_file", "file_id": "file-abc"},
                ],
            }
        ]
    )
    assert responses.messages[0].attachments == (IMAGE,)
    langchain = read([{"type": "human", "content": [{"type": "image", "base64": TINY_PNG, "mime_type": "image/png"}]}])
    assert langchain.messages[0].attachments == (IMAGE,) and langchain.messages[0].content is None


def test_a_broken_image_is_the_fields_error_naming_where():
    broken = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}]}]
    with pytest.raises(ScorerInputError, match=r"field 'conversation' at message 0, part 0: is not valid base64"):
        read(broken)


def test_a_transcript_outside_a_prompt_names_the_attachment():
    shown = transcript([{"role": "user", "content": [{"type": "text", "text": "See:"}, IMAGE.part()]}])
    assert shown == "user: See:\n  [image/png attachment]"
