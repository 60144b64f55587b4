"""The real ``openai`` client pointed at a loopback server, for the tests of the OpenAI protocols."""

from __future__ import annotations

import openai

from scorers.testing import LoopbackLLM

TOOL = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "parameters": {
            "type": "object",
            "properties": {"choice": {"type": "string", "enum": ["A", "B"]}},
            "required": ["choice"],
        },
    },
}


def client(server: LoopbackLLM, **options) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, **options)


def ask(server: LoopbackLLM, text: str, **options):
    return client(server).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}], **options
    )


def respond(server: LoopbackLLM, text: str, **options):
    return client(server).responses.create(model="gpt-4o-mini", input=[{"role": "user", "content": text}], **options)
