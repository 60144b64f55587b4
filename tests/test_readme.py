"""The README's Python blocks run, in order, in one namespace; judges answer from a LoopbackLLM."""
from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest

from scorers.testing import LoopbackLLM, Reply

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 4


def test_every_python_block_runs(monkeypatch, fake_api_key):
    namespace: dict = {"__name__": "readme"}
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        server.script(Reply.choice("C", reasons="consistent"), match="Paris")
        monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        for number, block in enumerate(BLOCKS, 1):
            code = compile(block, f"README.md python block {number}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, namespace)  # a coroutine when the block awaits at top level
            if asyncio.iscoroutine(result):
                asyncio.run(result)
        assert server.chat_requests, "the judge examples reached the server"
